import { pricesAtPrompt, type CatalogueModel, type ModelHost } from '../catalogue/catalogue';
import type { TokenPrices } from '../ledger/money';

/**
 * Routing, decided: which hosts of a model are tried for one request and in which order, from the
 * client's provider preferences (OpenRouter's `provider` object), the hosts' prices for the request
 * (a long-context band's when its estimated prompt is above the band's threshold) and measured
 * health, the credentials they have left and the host that served the conversation last. Pure:
 * the shell gathers what it reads (stickiness, key pools, health) and calls hosts in this order.
 */

export type ProviderSort = 'price' | 'latency' | 'throughput';

export const PROVIDER_SORTS: readonly ProviderSort[] = ['price', 'latency', 'throughput'];

/** A request's provider preferences, read from its `provider` object (see preferences.ts). */
export interface ProviderPreferences {
  /** Host ids to try first, in this order. */
  order?: string[];
  /** Only these hosts may serve. */
  only?: string[];
  /** These hosts may not serve. */
  ignore?: string[];
  /** False: no host beyond those `order` names (without `order`: beyond the first). True when not given. */
  allowFallbacks: boolean;
  sort?: ProviderSort;
  /** Highest prices accepted, in nano-credits per million tokens: hosts whose prices for the request are above either are not used. */
  maxPrice?: { prompt?: number; completion?: number };
}

export const NO_PREFERENCES: ProviderPreferences = { allowFallbacks: true };

/**
 * Host health as measured (rolling, per host and catalogue model): what `sort` by latency or
 * throughput reads, in the shape of the measured health's reader (`HostHealth.of`). A host with no
 * reading yet sorts after those with one.
 */
export interface HostHealthReader {
  of(hostId: string, model: string): { firstByteMs: number | null; outputTokensPerSecond: number | null } | null;
}

/** What the shell read for this request beside the catalogue. */
export interface RouteContext {
  /** Per model slug, the host that served the conversation last while its cache lives. */
  sticky?: ReadonlyMap<string, string>;
  /** Hosts with no credential left (all taken out after a 401/403): not tried. */
  out?: ReadonlySet<string>;
  /** Hosts whose every credential is cooling down (a 429): tried only after the others. */
  cooling?: ReadonlySet<string>;
  health?: HostHealthReader;
}

/** The hosts of one model to try in order, or why none may serve. */
export type HostsRouted =
  | { kind: 'routed'; hosts: ModelHost[] }
  /** `max_price`: hosts would have served but for the price limit; `preferences`: `only`/`ignore`/`order` left none. */
  | { kind: 'none'; reason: 'max_price' | 'preferences' };

/** Sorts by a key, lower first; hosts without one keep their order after those with one (a stable sort). */
function sortedBy(hosts: ModelHost[], key: (host: ModelHost) => number | undefined): ModelHost[] {
  const keyed = hosts.map((host, i) => ({ host, i, key: key(host) }));
  keyed.sort((a, b) => {
    if (a.key === undefined || b.key === undefined) return a.key === b.key ? a.i - b.i : a.key === undefined ? 1 : -1;
    return a.key - b.key || a.i - b.i;
  });
  return keyed.map((k) => k.host);
}

type SortKey = (host: ModelHost) => number | undefined;

/** What a sort reads of a host beside the host itself: the model's measured health, the request's prices there. */
interface SortInputs {
  model: string;
  health: HostHealthReader | undefined;
  prices: (host: ModelHost) => TokenPrices;
}

/** Price sorts by the input and output prices together (a request's typical mix weighs both). */
const SORT_KEYS: Record<ProviderSort, (at: SortInputs) => SortKey> = {
  price: (at) => (h) => inputAndOutput(at.prices(h)),
  latency: (at) => (h) => at.health?.of(h.host.id, at.model)?.firstByteMs ?? undefined,
  throughput: (at) => (h) => {
    const tps = at.health?.of(h.host.id, at.model)?.outputTokensPerSecond;
    return tps === null || tps === undefined ? undefined : -tps;
  },
};

const inputAndOutput = (p: TokenPrices): number => p.input + p.output;

/**
 * The hosts of `model` to try for a request whose prompt is estimated at `estimatedPrompt` tokens,
 * in order: its usable hosts allowed by `only` and `ignore` and under `max_price`; those `order`
 * names first, in its order; the rest sorted by `sort` (else in the catalogue's order), the host
 * that served the conversation last first unless an order is given; hosts with every credential
 * cooling down last. Without fallbacks, only the ordered hosts (or the first). `max_price` and a
 * price sort compare each host's prices for this prompt: its band's above the band's threshold.
 */
export function routeHosts(
  model: CatalogueModel,
  preferences: ProviderPreferences,
  estimatedPrompt: number,
  context: RouteContext = {},
): HostsRouted {
  const { order, only, ignore, allowFallbacks, sort, maxPrice } = preferences;
  const allowed = model.hosts.filter(
    (h) =>
      h.host.usable &&
      !context.out?.has(h.host.id) &&
      (only === undefined || only.includes(h.host.id)) &&
      !ignore?.includes(h.host.id),
  );
  // Each host at the prices this request takes there: its band's when the estimated prompt (the
  // hold's estimate, with the same threshold test) is above the band's threshold.
  const prices = (h: ModelHost) => pricesAtPrompt(h, estimatedPrompt);
  const affordable = maxPrice
    ? allowed.filter((h) => {
        const p = prices(h);
        return (
          (maxPrice.prompt === undefined || p.input <= maxPrice.prompt) &&
          (maxPrice.completion === undefined || p.output <= maxPrice.completion)
        );
      })
    : allowed;
  const ordered = (order ?? [])
    .map((id) => affordable.find((h) => h.host.id === id))
    .filter((h, i, all): h is ModelHost => h !== undefined && all.indexOf(h) === i);
  let rest = affordable.filter((h) => !ordered.includes(h));
  if (sort) rest = sortedBy(rest, SORT_KEYS[sort]({ model: model.slug, health: context.health, prices }));
  if (order === undefined) {
    // The conversation's host first while its cache lives, whatever the sort: a cache read saves
    // more than a slightly better price or speed. Only an explicit order wins over it.
    const stuck = context.sticky?.get(model.slug);
    const at = rest.findIndex((h) => h.host.id === stuck);
    if (at > 0) rest = [rest[at], ...rest.slice(0, at), ...rest.slice(at + 1)];
  }
  let hosts = [...ordered, ...rest];
  if (!allowFallbacks) hosts = order !== undefined ? ordered : hosts.slice(0, 1);
  // A host whose keys all wait out a 429 is worth a call only once the others have failed.
  const cooling = context.cooling;
  if (cooling && cooling.size > 0)
    hosts = [...hosts.filter((h) => !cooling.has(h.host.id)), ...hosts.filter((h) => cooling.has(h.host.id))];
  if (hosts.length > 0) return { kind: 'routed', hosts };
  return { kind: 'none', reason: allowed.length > affordable.length ? 'max_price' : 'preferences' };
}

/** One host of one model, as a request's attempt calls it. */
export interface Route {
  model: CatalogueModel;
  served: ModelHost;
}

/** The models a request may be served by, in order, each with its hosts in order; or why none may. */
export type ModelsRouted = { kind: 'routed'; routes: Route[] } | { kind: 'none'; reason: 'max_price' | 'preferences' };

/**
 * Routes every model a request names (the one asked for, then its `models` fallbacks), in turn:
 * the attempt moves to the next model once every host of one has failed. A model none of whose
 * hosts the preferences allow is passed over; when none is left, the reason is `max_price` if the
 * price limit took out a host that would otherwise have served. `estimatedPrompt`: see routeHosts.
 */
export function routeModels(
  models: CatalogueModel[],
  preferences: ProviderPreferences,
  estimatedPrompt: number,
  context: RouteContext = {},
): ModelsRouted {
  const routes: Route[] = [];
  let priced = false;
  for (const model of models) {
    const routed = routeHosts(model, preferences, estimatedPrompt, context);
    if (routed.kind === 'none') priced ||= routed.reason === 'max_price';
    else for (const served of routed.hosts) routes.push({ model, served });
  }
  if (routes.length > 0) return { kind: 'routed', routes };
  return { kind: 'none', reason: priced ? 'max_price' : 'preferences' };
}
