import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { HostSettings } from '../hosts/host-kind';
import { HOST_KIND_NAMES, HOST_KINDS, HostKindName, isHostKindName } from '../hosts/hosts';
import { rememberHostKey } from '../key-secret/key-secret';
import { HOSTED_TOOL_CLASSES, type HostedToolClass, type WireFormat } from '../canonical/canonical';
import { hostRuns, type ServingHost } from '../canonical/hosted-tools';
import type { CataloguePrice } from '../ledger/catalogue-loaded';
import { formatCredits, HostedToolPrices, parseCredits, scaledPrice, TokenPrices, TokenUsage } from '../ledger/money';
import { holdPricesForPrompt, type PriceBand, pricesForPrompt, promptTokens } from '../ledger/price-bands';
import { DEFAULT_RETRY, RETRY_LIMITS, RetryPolicy } from './retry-policy';
import type { HostEndpoint } from '../hosts/transport';

/**
 * The catalogue: provider hosts and the models they serve, with list prices. Read from a JSON
 * file and checked entry by entry; keys for hosts come from the environment, never the file.
 */
export interface CatalogueHost {
  id: string;
  kind: HostKindName;
  /** Includes the version path: an openai host posts to `{baseUrl}/chat/completions`. */
  baseUrl: string;
  /** The first key variable named (a pool names several: see `credentials`). */
  apiKeyEnv: string | null;
  /** The entry's fields its kind reads (see HostKind.settings): a region, a project, an API version. */
  settings: HostSettings;
  /** The first credential's key; null when the host needs none or none is set. */
  apiKey: string | null;
  /** A host whose key variables are named but all unset cannot serve. */
  usable: boolean;
  /** How a call failing before output is tried again on this host (`retry` in the file; DEFAULT_RETRY for what it leaves out). */
  retry: RetryPolicy;
  /**
   * The credentials calls may use: each key variable that is set (a pool when several), or the one
   * keyless credential of a host that takes no key. Empty when the host is not usable.
   */
  credentials: HostCredential[];
}

/**
 * One credential of a host: the variable naming it is its id in logs and records (never its
 * value). Its endpoint is made once with the catalogue: the transport keeps one authorizer per
 * endpoint object, so every call with this credential must pass this same object.
 */
export interface HostCredential {
  /** The key variable's name; null for a host that takes no key. */
  readonly id: string | null;
  /** Its share of the host's requests, relative to the pool's other credentials (1 when not given). */
  readonly weight: number;
  readonly endpoint: HostEndpoint;
}

export interface ModelHost {
  host: CatalogueHost;
  /** The model's name at that host. */
  model: string;
  /** Nano-credits per million tokens of each class, and per 1,000 uses of each hosted tool priced. */
  prices: TokenPrices;
  /**
   * US dollars per million tokens, for the model list: as written in the catalogue, or as derived
   * for the cache's classes; per 1,000 uses of each hosted tool priced, as written.
   */
  listPrices: Record<Exclude<keyof TokenPrices, 'hostedToolUses'>, string> & {
    hostedToolUses?: Partial<Record<HostedToolClass, string>>;
  };
  /** The catalogue gives no cache read price and the host's kind has no known one: cached input costs the input price. */
  cachePricesAssumed: boolean;
  /**
   * Long-context price bands (`longContext` in the file), by ascending threshold: a request whose
   * prompt is above one is billed at its prices (see price-bands.ts). Empty when the host has none.
   */
  bands: PriceBand[];
  /** The bands' prices as the model list shows them (US dollars per million tokens), in the same order. */
  listBands: ListedBand[];
}

/** A long-context band as the model list shows it: its threshold, and each token class's price as written (or derived). */
export interface ListedBand {
  aboveInputTokens: number;
  prices: Record<keyof PriceBand['prices'], string>;
}

/**
 * The prices a request of `prompt` prompt tokens is billed at on `h`: its band's when the prompt is
 * above one, else the base prices. Routing compares hosts at these for the estimated prompt.
 */
export const pricesAtPrompt = (h: ModelHost, prompt: number): TokenPrices => pricesForPrompt(h.prices, h.bands, prompt);

/** The prices a request that used `usage` is billed at on `h` (see pricesAtPrompt). */
export const billedPrices = (h: ModelHost, usage: TokenUsage): TokenPrices => pricesAtPrompt(h, promptTokens(usage));

/** The prices a hold takes for `h` when the request's prompt is estimated at `estimatedPrompt` tokens (see holdPricesForPrompt). */
export const heldPrices = (h: ModelHost, estimatedPrompt: number): TokenPrices =>
  holdPricesForPrompt(h.prices, h.bands, estimatedPrompt);

/** What a model does: chat (the chat routes) or embedding (POST /embeddings). */
export type ModelKind = 'chat' | 'embedding';

export const MODEL_KINDS: readonly ModelKind[] = ['chat', 'embedding'];

export interface CatalogueModel {
  slug: string;
  /** `"kind"` in the catalogue; chat when absent. */
  kind: ModelKind;
  id: string;
  name: string;
  contextLength: number;
  maxOutputTokens: number;
  /**
   * The model reasons before answering and takes a reasoning effort or thinking budget: reasoning
   * asked for on another format is translated for it (and not sent to models that would refuse it).
   */
  reasoning: boolean;
  created: number;
  hosts: ModelHost[];
}

export class CatalogueError extends Error {
  constructor(where: string, problem: string) {
    super(`catalogue: ${where}: ${problem}`);
    this.name = 'CatalogueError';
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SLUG = /^[a-z0-9][\w.-]*\/[\w.:-]+$/i;
const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;
/** '"kind" must be "openai" or "anthropic" or …': the kinds hosts/ knows. */
const KIND_EXPECTED = `"kind" must be ${HOST_KIND_NAMES.map((name) => `"${name}"`).join(' or ')}`;

type Raw = Record<string, unknown>;
const isObject = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `${VAR}` and `${VAR:-default}` in base URLs, so a catalogue can point at a local server by environment. */
function interpolate(text: string, env: Record<string, string | undefined>): string {
  return text.replace(
    /\$\{([A-Z_][A-Z0-9_]*)(?::-([^}]*))?\}/g,
    (_, name: string, fallback?: string) => env[name] || fallback || '',
  );
}

function text(entry: Raw, field: string, where: string): string {
  const value = entry[field];
  if (typeof value !== 'string' || value.trim() === '') throw new CatalogueError(where, `"${field}" must be a non-empty string`);
  return value;
}

/**
 * The key variables a host entry names in `apiKeyEnv`: one name, or a pool — a list of names or
 * `{"env": NAME, "weight": N}` objects (weight 1 when not given).
 */
function keyVariables(value: unknown, where: string): Array<{ env: string; weight: number }> {
  if (value === undefined || value === null) return [];
  const listed = Array.isArray(value) ? value : [value];
  if (listed.length === 0) throw new CatalogueError(where, '"apiKeyEnv" must name at least one environment variable');
  const named = listed.map((item, i) => {
    const at = Array.isArray(value) ? `apiKeyEnv[${i}]` : 'apiKeyEnv';
    const entry = typeof item === 'string' ? { env: item, weight: 1 } : isObject(item) ? { weight: 1, ...item } : null;
    if (!entry || typeof entry.env !== 'string')
      throw new CatalogueError(where, `"${at}" must be a variable name or {"env": "NAME", "weight": N}`);
    if (!ENV_NAME.test(entry.env)) throw new CatalogueError(where, `"${at}" must name an environment variable (A-Z, 0-9, _)`);
    if (typeof entry.weight !== 'number' || !Number.isFinite(entry.weight) || entry.weight <= 0)
      throw new CatalogueError(where, `"${at}" weight must be a positive number`);
    return { env: entry.env, weight: entry.weight };
  });
  const seen = new Set<string>();
  for (const { env } of named) {
    if (seen.has(env)) throw new CatalogueError(where, `"apiKeyEnv" names ${env} twice`);
    seen.add(env);
  }
  return named;
}

function positiveInteger(entry: Raw, field: string, where: string): number {
  const value = entry[field];
  if (!Number.isSafeInteger(value) || (value as number) <= 0)
    throw new CatalogueError(where, `"${field}" must be a positive whole number`);
  return value as number;
}

/** The fields a host entry of `kind` gives besides the common ones (strings, `${VAR}` interpolated), with their defaults. */
function settingsOf(raw: Raw, kind: HostKindName, where: string, env: Record<string, string | undefined>): HostSettings {
  const settings: Record<string, string> = {};
  for (const setting of HOST_KINDS[kind].settings ?? []) {
    const value = raw[setting.name];
    if (value === undefined && setting.default !== undefined) settings[setting.name] = setting.default;
    else settings[setting.name] = interpolate(text(raw, setting.name, where), env);
    if (setting.values && !setting.values.includes(settings[setting.name]))
      throw new CatalogueError(where, `"${setting.name}" must be ${setting.values.map((v) => `"${v}"`).join(' or ')}`);
  }
  return settings;
}

/** A host entry's `retry` ({attempts, baseMs, maxMs}, each optional): whole numbers within RETRY_LIMITS, DEFAULT_RETRY for any left out. */
function retryOf(raw: Raw, where: string): RetryPolicy {
  if (raw.retry === undefined) return DEFAULT_RETRY;
  const retry = raw.retry;
  if (!isObject(retry))
    throw new CatalogueError(where, '"retry" must be {"attempts": n, "baseMs": ms, "maxMs": ms} (each optional)');
  for (const field of Object.keys(retry))
    if (!(field in DEFAULT_RETRY))
      throw new CatalogueError(where, `"retry.${field}" is not a retry setting (attempts, baseMs, maxMs)`);
  const field = (name: keyof RetryPolicy, most: number): number => {
    const value = retry[name];
    if (value === undefined) return DEFAULT_RETRY[name];
    if (!Number.isSafeInteger(value) || (value as number) < 0 || (value as number) > most)
      throw new CatalogueError(where, `"retry.${name}" must be a whole number from 0 to ${most}`);
    return value as number;
  };
  const policy = {
    attempts: field('attempts', RETRY_LIMITS.attempts),
    baseMs: field('baseMs', RETRY_LIMITS.delayMs),
    maxMs: field('maxMs', RETRY_LIMITS.delayMs),
  };
  if (policy.maxMs < policy.baseMs) throw new CatalogueError(where, '"retry.maxMs" must not be below "retry.baseMs"');
  return policy;
}

type CachePrice = 'cacheRead' | 'cacheWrite' | 'cacheWrite1h';

/**
 * The cache's prices where an entry states none, as fractions of the input price, by host kind.
 * Anthropic's list prices: reads 0.1×, 5-minute writes 1.25×, 1-hour writes 2× the input price.
 * Other kinds (chat-completions hosts each price their cache their own way) bill the cache's
 * tokens at the input price, and start-up names the models that do.
 */
const CACHE_PRICE_FRACTIONS: Partial<Record<HostKindName, Record<CachePrice, [number, number]>>> = {
  anthropic: { cacheRead: [1, 10], cacheWrite: [5, 4], cacheWrite1h: [2, 1] },
};

function price(pricing: Raw, field: string, where: string, per = 'million tokens', within = 'pricing'): number {
  const value = pricing[field];
  if (typeof value !== 'string')
    throw new CatalogueError(where, `${within}.${field} must be a decimal string of US dollars per ${per}`);
  try {
    return parseCredits(value);
  } catch {
    throw new CatalogueError(
      where,
      `${within}.${field} "${value}" is not a price (a decimal of US dollars per ${per} such as "10.00", at most 9 decimals)`,
    );
  }
}

/**
 * The per-use prices a host entry gives (`"webSearch": "10.00"`: US dollars per 1,000 searches), as
 * nano-credits per 1,000 uses. A hosted tool without one is never run on that host (see hosted-tools.ts).
 */
function hostedToolPrices(pricing: Raw, where: string): HostedToolPrices | undefined {
  const prices: HostedToolPrices = {};
  for (const toolClass of HOSTED_TOOL_CLASSES) {
    if (pricing[toolClass] !== undefined) prices[toolClass] = price(pricing, toolClass, where, '1,000 uses');
  }
  return Object.keys(prices).length > 0 ? prices : undefined;
}

/** Every field a host's `pricing` may give: the token classes, then the hosted tools' per-use prices. */
const PRICING_FIELDS = ['input', 'cacheRead', 'cacheWrite', 'cacheWrite1h', 'output', ...HOSTED_TOOL_CLASSES];

/** Every field a long-context band may give: its threshold and the token classes' prices (hosted tools keep theirs). */
const BAND_FIELDS = ['aboveInputTokens', 'input', 'cacheRead', 'cacheWrite', 'cacheWrite1h', 'output'];

/**
 * A host entry's `longContext`: one band or a list of them by ascending threshold, each
 * `{"aboveInputTokens": 200000, "input": "2.50", "output": "15.00", "cacheRead": "0.25"}`. A cache
 * class a band leaves out is derived as the base pricing's are (the kind's fractions of the band's
 * input price; else the band's input price), but a band may not leave out a cache price the base
 * pricing states on a kind without fractions (its cached input would silently cost the band's input price).
 */
function priceBandsOf(
  value: unknown,
  pricing: Raw,
  kind: HostKindName,
  where: string,
): { bands: PriceBand[]; listed: ListedBand[] } {
  if (value === undefined) return { bands: [], listed: [] };
  const shape =
    '"longContext" must be {"aboveInputTokens": n, "input": "…", "output": "…"} (cache prices optional), or a list of them';
  const entries = Array.isArray(value) ? value : [value];
  if (entries.length === 0) throw new CatalogueError(where, shape);
  const bands: PriceBand[] = [];
  const listed: ListedBand[] = [];
  entries.forEach((entry, i) => {
    const within = Array.isArray(value) ? `longContext[${i}]` : 'longContext';
    if (!isObject(entry)) throw new CatalogueError(where, shape);
    const unknown = Object.keys(entry).filter((field) => !BAND_FIELDS.includes(field));
    if (unknown.length > 0)
      throw new CatalogueError(
        where,
        `${within} has no field ${unknown.map((f) => `"${f}"`).join(', ')} (it takes ${BAND_FIELDS.map((f) => `"${f}"`).join(', ')}: a hosted tool's price does not change with the prompt)`,
      );
    const above = entry.aboveInputTokens;
    if (!Number.isSafeInteger(above) || (above as number) <= 0)
      throw new CatalogueError(
        where,
        `${within}.aboveInputTokens must be a positive whole number (the band prices requests whose prompt has more tokens)`,
      );
    const previous = bands.at(-1);
    if (previous !== undefined && (above as number) <= previous.aboveInputTokens)
      throw new CatalogueError(
        where,
        `${within}.aboveInputTokens must be above the band before it (${previous.aboveInputTokens})`,
      );
    const input = price(entry, 'input', where, 'million tokens', within);
    const output = price(entry, 'output', where, 'million tokens', within);
    const fractions = CACHE_PRICE_FRACTIONS[kind];
    const cachePrice = (field: CachePrice): number => {
      if (entry[field] !== undefined) return price(entry, field, where, 'million tokens', within);
      if (fractions) return scaledPrice(input, ...fractions[field]);
      if (pricing[field] !== undefined)
        throw new CatalogueError(
          where,
          `${within} must give "${field}", as "pricing" does: without it that input would cost the band's input price`,
        );
      return input;
    };
    const prices = {
      input,
      cacheRead: cachePrice('cacheRead'),
      cacheWrite: cachePrice('cacheWrite'),
      cacheWrite1h: cachePrice('cacheWrite1h'),
      output,
    };
    bands.push({ aboveInputTokens: above as number, prices });
    const shown = (field: CachePrice): string => {
      const written = entry[field];
      return typeof written === 'string' ? written : formatCredits(prices[field]);
    };
    listed.push({
      aboveInputTokens: above as number,
      prices: {
        input: entry.input as string,
        cacheRead: shown('cacheRead'),
        cacheWrite: shown('cacheWrite'),
        cacheWrite1h: shown('cacheWrite1h'),
        output: entry.output as string,
      },
    });
  });
  return { bands, listed };
}

/** The format whose clients' bodies `h` is sent whole (HostKind.wholeFormat), or null: it translates every format. */
const wholeFormatOf = (h: ModelHost): WireFormat | null =>
  HOST_KINDS[h.host.kind].wholeFormat?.(h.model, h.host.settings) ?? null;

/** Whether `h` is sent a body of a client in `format` whole, rather than translated. */
export const passesWhole = (h: ModelHost, format: WireFormat): boolean => wholeFormatOf(h) === format;

/** A model's host as the hosted-tools decision sees it: what its kind runs, the format it takes whole, which classes its entry prices per use. */
export const servingHostOf = (h: ModelHost): ServingHost => ({
  runs: HOST_KINDS[h.host.kind].hostedTools,
  whole: wholeFormatOf(h),
  priced: new Set(Object.keys(h.prices.hostedToolUses ?? {}) as HostedToolClass[]),
  model: h.model,
});

interface CatalogueContents {
  hosts: CatalogueHost[];
  models: CatalogueModel[];
  bySlug: Map<string, CatalogueModel>;
  byId: Map<string, CatalogueModel>;
  version: string | null;
}

function contentsOf(hosts: CatalogueHost[], models: CatalogueModel[], version: string | null = null): CatalogueContents {
  const bySlug = new Map<string, CatalogueModel>();
  const byId = new Map<string, CatalogueModel>();
  for (const model of models) {
    bySlug.set(model.slug.toLowerCase(), model);
    byId.set(model.id.toLowerCase(), model);
  }
  return { hosts, models, bySlug, byId, version };
}

export class Catalogue {
  private contents: CatalogueContents;

  constructor(hosts: CatalogueHost[], models: CatalogueModel[]) {
    this.contents = contentsOf(hosts, models);
  }

  get hosts(): CatalogueHost[] {
    return this.contents.hosts;
  }

  get models(): CatalogueModel[] {
    return this.contents.models;
  }

  /** A hash of the file's contents it was parsed from (null: built in code): which catalogue priced a request. */
  get version(): string | null {
    return this.contents.version;
  }

  /**
   * The running version and its price list, read together (a reload in between would pair one
   * version with another's prices); null for a catalogue built in code.
   */
  get loaded(): { version: string; prices: () => CataloguePrice[] } | null {
    const { version, models } = this.contents;
    if (version === null) return null;
    const prices = () =>
      models.flatMap((m) =>
        m.hosts.map((h): CataloguePrice => ({
          model: m.slug,
          host: h.host.id,
          hostModel: h.model,
          prices: h.prices,
          // Only a host with bands records them: a catalogue without any is recorded as before.
          ...(h.bands.length === 0 ? {} : { longContext: h.bands }),
        })),
      );
    return { version, prices };
  }

  /**
   * Takes `next`'s hosts and models in one step (a reload): requests already admitted keep the
   * models and hosts they were planned with — their prices and credentials — to the end.
   */
  replace(next: Catalogue): void {
    this.contents = next.contents;
  }

  /** By slug (`vendor/model`, case-insensitive) or catalogue UUID. */
  find(ref: string): CatalogueModel | null {
    const key = ref.trim().toLowerCase();
    return this.contents.bySlug.get(key) ?? this.contents.byId.get(key) ?? null;
  }

  /** Models with a host whose cached input is billed at the input price for want of a cache read price, for a start-up warning. */
  cachePricesAssumed(): string[] {
    return this.models.filter((m) => m.hosts.some((h) => h.cachePricesAssumed)).map((m) => m.slug);
  }

  /** The chat models whose every usable host runs the hosted tool `type` offered in `format`, by slug: where a request requiring it can go. */
  modelsRunning(type: string, format: WireFormat | undefined): string[] {
    return this.servable()
      .filter((m) => m.kind === 'chat')
      .filter((m) => m.hosts.filter((h) => h.host.usable).every((h) => hostRuns(servingHostOf(h), type, format)))
      .map((m) => m.slug);
  }

  /** Models with at least one host able to serve, in catalogue order. */
  servable(): CatalogueModel[] {
    return this.models.filter((m) => m.hosts.some((h) => h.host.usable));
  }

  static parse(json: unknown, env: Record<string, string | undefined> = process.env): Catalogue {
    if (!isObject(json) || !Array.isArray(json.hosts) || !Array.isArray(json.models)) {
      throw new CatalogueError('file', 'expected {"hosts": [...], "models": [...]}');
    }
    const hosts = new Map<string, CatalogueHost>();
    json.hosts.forEach((raw, i) => {
      const where = `hosts[${i}]`;
      if (!isObject(raw)) throw new CatalogueError(where, 'must be an object');
      const id = text(raw, 'id', where);
      const at = `${where} (${id})`;
      if (hosts.has(id)) throw new CatalogueError(at, 'duplicate host id');
      const kind = raw.kind;
      if (!isHostKindName(kind)) throw new CatalogueError(at, KIND_EXPECTED);
      const settings = settingsOf(raw, kind, at, env);
      const derived = raw.baseUrl === undefined ? HOST_KINDS[kind].defaultBaseUrl?.(settings) : undefined;
      const baseUrl = (derived ?? interpolate(text(raw, 'baseUrl', at), env)).replace(/\/+$/, '');
      let parsed: URL;
      try {
        parsed = new URL(baseUrl);
      } catch {
        throw new CatalogueError(at, `"baseUrl" ${JSON.stringify(baseUrl)} is not a URL`);
      }
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new CatalogueError(at, '"baseUrl" must be http(s)');
      if ('apiKey' in raw)
        throw new CatalogueError(at, 'keys never go in the catalogue: name an environment variable in "apiKeyEnv"');
      const named = keyVariables(raw.apiKeyEnv, at);
      // A field the kind needs left empty (`"project": "${GOOGLE_CLOUD_PROJECT}"` with the variable
      // unset) makes the host unusable, as unset keys do.
      const unset = (HOST_KINDS[kind].settings ?? []).some((s) => s.default === undefined && settings[s.name] === '');
      const credentials: HostCredential[] = [];
      for (const { env: name, weight } of named) {
        const apiKey = env[name]?.trim() || null;
        // An upstream that echoes the key (in an error message) must not pass it on.
        rememberHostKey(apiKey);
        if (apiKey !== null && !unset) credentials.push({ id: name, weight, endpoint: { id, baseUrl, apiKey, settings } });
      }
      if (named.length === 0 && !unset)
        credentials.push({ id: null, weight: 1, endpoint: { id, baseUrl, apiKey: null, settings } });
      const retry = retryOf(raw, at);
      hosts.set(id, {
        id,
        kind,
        baseUrl,
        apiKeyEnv: named[0]?.env ?? null,
        settings,
        apiKey: credentials[0]?.endpoint.apiKey ?? null,
        usable: credentials.length > 0,
        retry,
        credentials,
      });
    });

    const slugs = new Set<string>();
    const ids = new Set<string>();
    const models = json.models.map((raw, i): CatalogueModel => {
      const where = `models[${i}]`;
      if (!isObject(raw)) throw new CatalogueError(where, 'must be an object');
      const slug = text(raw, 'slug', where);
      const at = `${where} (${slug})`;
      if (!SLUG.test(slug)) throw new CatalogueError(at, '"slug" must look like vendor/model');
      if (slugs.has(slug.toLowerCase())) throw new CatalogueError(at, 'duplicate slug');
      slugs.add(slug.toLowerCase());
      const id = text(raw, 'id', at);
      if (!UUID.test(id)) throw new CatalogueError(at, '"id" must be a UUID');
      if (ids.has(id.toLowerCase())) throw new CatalogueError(at, 'duplicate id');
      ids.add(id.toLowerCase());
      const kind = raw.kind === undefined ? 'chat' : raw.kind;
      if (!MODEL_KINDS.includes(kind as ModelKind))
        throw new CatalogueError(at, `"kind" must be ${MODEL_KINDS.map((k) => `"${k}"`).join(' or ')} (chat when absent)`);
      const embedding = kind === 'embedding';
      if (!Array.isArray(raw.hosts) || raw.hosts.length === 0)
        throw new CatalogueError(at, '"hosts" must list at least one host');
      const modelHosts = raw.hosts.map((h, j): ModelHost => {
        const hw = `${at} hosts[${j}]`;
        if (!isObject(h)) throw new CatalogueError(hw, 'must be an object');
        const hostId = text(h, 'host', hw);
        const host = hosts.get(hostId);
        if (!host) throw new CatalogueError(hw, `unknown host "${hostId}"`);
        if (embedding && !HOST_KINDS[host.kind].embeddingsRequest)
          throw new CatalogueError(hw, `an embedding model needs a host that serves embeddings: "${host.kind}" hosts do not`);
        if (!isObject(h.pricing))
          throw new CatalogueError(
            hw,
            embedding ? '"pricing" must be {"input": "…"}' : '"pricing" must be {"input": "…", "output": "…"}',
          );
        // A misspelt class (`websearch`) would leave its tool unpriced, and so never run: said at once.
        const unknown = Object.keys(h.pricing).filter((field) => !PRICING_FIELDS.includes(field));
        if (unknown.length > 0)
          throw new CatalogueError(
            hw,
            `pricing has no field ${unknown.map((f) => `"${f}"`).join(', ')} (it takes ${PRICING_FIELDS.map((f) => `"${f}"`).join(', ')})`,
          );
        // An embedding model produces no output tokens: its output price may be left out (0).
        const pricing = embedding && h.pricing.output === undefined ? { ...h.pricing, output: '0' } : h.pricing;
        const input = price(pricing, 'input', hw);
        const fractions = CACHE_PRICE_FRACTIONS[host.kind];
        // A fraction that is not a whole nano-credit per million is rounded up (scaledPrice).
        const cachePrice = (field: CachePrice) =>
          pricing[field] !== undefined ? price(pricing, field, hw) : fractions ? scaledPrice(input, ...fractions[field]) : input;
        const prices: TokenPrices = {
          input,
          cacheRead: cachePrice('cacheRead'),
          cacheWrite: cachePrice('cacheWrite'),
          cacheWrite1h: cachePrice('cacheWrite1h'),
          output: price(pricing, 'output', hw),
        };
        const perUse = hostedToolPrices(pricing, hw);
        if (perUse !== undefined) prices.hostedToolUses = perUse;
        const listed = (field: CachePrice) =>
          typeof pricing[field] === 'string' ? pricing[field] : formatCredits(prices[field]);
        const { bands, listed: listBands } = priceBandsOf(h.longContext, pricing, host.kind, hw);
        return {
          host,
          model: text(h, 'model', hw),
          prices,
          listPrices: {
            input: String(pricing.input),
            cacheRead: listed('cacheRead'),
            cacheWrite: listed('cacheWrite'),
            cacheWrite1h: listed('cacheWrite1h'),
            output: String(pricing.output),
            ...(perUse === undefined
              ? {}
              : { hostedToolUses: Object.fromEntries(Object.keys(perUse).map((c) => [c, String(pricing[c])])) }),
          },
          // An embedding model reads no cache: its input is all at the input price, assumed nothing.
          cachePricesAssumed: !embedding && pricing.cacheRead === undefined && fractions === undefined,
          bands,
          listBands,
        };
      });
      const created = raw.created === undefined ? 0 : positiveInteger(raw, 'created', at);
      if (raw.reasoning !== undefined && typeof raw.reasoning !== 'boolean') {
        throw new CatalogueError(at, '"reasoning" must be true or false');
      }
      return {
        slug,
        kind: kind as ModelKind,
        id: id.toLowerCase(),
        name: text(raw, 'name', at),
        contextLength: positiveInteger(raw, 'contextLength', at),
        // An embedding model has no output: its cap may be left out (0).
        maxOutputTokens: embedding && raw.maxOutputTokens === undefined ? 0 : positiveInteger(raw, 'maxOutputTokens', at),
        reasoning: raw.reasoning === true,
        created,
        hosts: modelHosts,
      };
    });
    return new Catalogue([...hosts.values()], models);
  }

  static load(path: string, env: Record<string, string | undefined> = process.env): Catalogue {
    let text: string;
    let json: unknown;
    try {
      text = readFileSync(path, 'utf8');
      json = JSON.parse(text);
    } catch (error) {
      throw new CatalogueError(path, (error as Error).message);
    }
    const catalogue = Catalogue.parse(json, env);
    catalogue.contents.version = createHash('sha256').update(text).digest('hex').slice(0, 16);
    return catalogue;
  }

  /**
   * Reloads from `path` in place (SIGHUP): the new file's hosts and models for requests from now
   * on; a file that cannot be read or is refused leaves the running catalogue as it was. Returns
   * the new version, or throws the CatalogueError saying why it was refused.
   */
  reload(path: string, env: Record<string, string | undefined> = process.env): string | null {
    const next = Catalogue.load(path, env);
    this.replace(next);
    return next.version;
  }
}
