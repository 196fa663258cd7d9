import { pricesAtPrompt, type CatalogueModel, type ModelHost } from '../../src/catalogue/catalogue';
import { planAdmission } from '../../src/inference/admission';
import type { CanonicalRequest } from '../../src/canonical/canonical';
import { HostHealthReader, NO_PREFERENCES, ProviderPreferences, routeHosts, routeModels } from '../../src/routing/plan';
import { catalogueModel, modelHost } from '../support/catalogue-entries';

const M = 1_000_000_000; // $1 per million tokens, in nano-credits per million
/** A prompt estimated below every long-context threshold of these tests. */
const SHORT = 100;

const a = modelHost('a', { input: 3 * M, output: 15 * M });
const b = modelHost('b', { input: 1 * M, output: 2 * M });
const c = modelHost('c', { input: 2 * M, output: 4 * M });
const model = catalogueModel([a, b, c]);

const ids = (hosts: ModelHost[]) => hosts.map((h) => h.host.id);
const prefs = (over: Partial<ProviderPreferences>): ProviderPreferences => ({ ...NO_PREFERENCES, ...over });
const routed = (m: CatalogueModel, p: ProviderPreferences, context = {}, prompt = SHORT) => {
  const r = routeHosts(m, p, prompt, context);
  if (r.kind !== 'routed') throw new Error(`not routed: ${r.reason}`);
  return ids(r.hosts);
};

describe('routing: provider preferences', () => {
  it('without preferences: the catalogue order', () => {
    expect(routed(model, NO_PREFERENCES)).toEqual(['a', 'b', 'c']);
  });

  it('order: the named hosts first, in its order, then the rest', () => {
    expect(routed(model, prefs({ order: ['c', 'b'] }))).toEqual(['c', 'b', 'a']);
  });

  it('order without fallbacks: only the named hosts; without order: only the first', () => {
    expect(routed(model, prefs({ order: ['c', 'nobody', 'b'], allowFallbacks: false }))).toEqual(['c', 'b']);
    expect(routed(model, prefs({ allowFallbacks: false }))).toEqual(['a']);
    expect(routed(model, prefs({ sort: 'price', allowFallbacks: false }))).toEqual(['b']);
  });

  it('only and ignore filter by host id', () => {
    expect(routed(model, prefs({ only: ['c', 'a'] }))).toEqual(['a', 'c']);
    expect(routed(model, prefs({ ignore: ['a'] }))).toEqual(['b', 'c']);
    expect(routeHosts(model, prefs({ only: ['nobody'] }), SHORT)).toEqual({ kind: 'none', reason: 'preferences' });
  });

  it('sort by price: input and output prices together, cheapest first', () => {
    expect(routed(model, prefs({ sort: 'price' }))).toEqual(['b', 'c', 'a']);
  });

  it('sort by latency or throughput reads the health given; hosts without a reading keep their order after the rest', () => {
    const latency: Record<string, number> = { c: 100, a: 300 };
    const throughput: Record<string, number> = { a: 40, b: 90 };
    const health: HostHealthReader = {
      of: (id, slug) =>
        slug === model.slug ? { firstByteMs: latency[id] ?? null, outputTokensPerSecond: throughput[id] ?? null } : null,
    };
    expect(routed(model, prefs({ sort: 'latency' }), { health })).toEqual(['c', 'a', 'b']);
    expect(routed(model, prefs({ sort: 'throughput' }), { health })).toEqual(['b', 'a', 'c']);
    // No health measured: the catalogue's order.
    expect(routed(model, prefs({ sort: 'latency' }))).toEqual(['a', 'b', 'c']);
  });

  it('max_price: hosts above either limit are left out; none left is a max_price refusal', () => {
    expect(routed(model, prefs({ maxPrice: { prompt: 2 * M } }))).toEqual(['b', 'c']);
    expect(routed(model, prefs({ maxPrice: { prompt: 2 * M, completion: 3 * M } }))).toEqual(['b']);
    expect(routeHosts(model, prefs({ maxPrice: { completion: 1 * M } }), SHORT)).toEqual({ kind: 'none', reason: 'max_price' });
    // Hosts `only` took out do not make it a price refusal.
    expect(routeHosts(model, prefs({ only: ['a'], maxPrice: { prompt: 10 * M } }), SHORT)).toEqual({
      kind: 'routed',
      hosts: [a],
    });
  });
});

describe('routing: what the shell read', () => {
  it('a conversation goes to the host that served it last, whatever the sort, unless an order is given', () => {
    const sticky = new Map([[model.slug, 'c']]);
    expect(routed(model, NO_PREFERENCES, { sticky })).toEqual(['c', 'a', 'b']);
    expect(routed(model, prefs({ order: ['b'] }), { sticky })).toEqual(['b', 'a', 'c']);
    expect(routed(model, prefs({ sort: 'price' }), { sticky })).toEqual(['c', 'b', 'a']);
    // A sticky host the preferences do not allow is not used.
    expect(routed(model, prefs({ ignore: ['c'] }), { sticky })).toEqual(['a', 'b']);
  });

  it('hosts with no credential left are not tried; those whose keys all cool down go last', () => {
    expect(routed(model, NO_PREFERENCES, { out: new Set(['a']), cooling: new Set(['b']) })).toEqual(['c', 'b']);
    const sticky = new Map([[model.slug, 'b']]);
    expect(routed(model, NO_PREFERENCES, { sticky, cooling: new Set(['b']) })).toEqual(['a', 'c', 'b']);
  });
});

describe('routing: models fallbacks', () => {
  const other = { ...catalogueModel([modelHost('d', { input: 10 * M, output: 30 * M })]), slug: 'vendor/other' };

  it('every allowed host of each model in turn', () => {
    const r = routeModels([model, other], prefs({ ignore: ['a'] }), SHORT);
    expect(r.kind === 'routed' && r.routes.map((x) => `${x.model.slug}@${x.served.host.id}`)).toEqual([
      'vendor/model@b',
      'vendor/model@c',
      'vendor/other@d',
    ]);
  });

  it('a model none of whose hosts is allowed is passed over; none at all says why', () => {
    const r = routeModels([model, other], prefs({ only: ['d'] }), SHORT);
    expect(r.kind === 'routed' && r.routes.map((x) => x.served.host.id)).toEqual(['d']);
    expect(routeModels([model, other], prefs({ maxPrice: { prompt: M / 2 } }), SHORT)).toEqual({
      kind: 'none',
      reason: 'max_price',
    });
  });
});

describe('routing: long-context bands', () => {
  // Cheapest at its base prices, dearest above 1,000 prompt tokens; `flat` costs the same whatever the prompt.
  const banded = modelHost('banded', {
    input: 1 * M,
    output: 2 * M,
    bands: [
      {
        aboveInputTokens: 1_000,
        prices: { input: 10 * M, cacheRead: 10 * M, cacheWrite: 10 * M, cacheWrite1h: 10 * M, output: 20 * M },
      },
    ],
  });
  const flat = modelHost('flat', { input: 2 * M, output: 4 * M });
  const longModel = catalogueModel([banded, flat]);

  it('prices a host for routing at its base up to the threshold, at its band from one token above (as settlements do)', () => {
    expect(pricesAtPrompt(banded, 999)).toMatchObject({ input: 1 * M, output: 2 * M });
    expect(pricesAtPrompt(banded, 1_000)).toMatchObject({ input: 1 * M, output: 2 * M });
    expect(pricesAtPrompt(banded, 1_001)).toMatchObject({ input: 10 * M, output: 20 * M });
    expect(pricesAtPrompt(flat, 1_000_000)).toBe(flat.prices);
  });

  it('sort by price ranks a host by its band when the estimated prompt is above its threshold', () => {
    expect(routed(longModel, prefs({ sort: 'price' }), {}, 1_000)).toEqual(['banded', 'flat']);
    expect(routed(longModel, prefs({ sort: 'price' }), {}, 1_001)).toEqual(['flat', 'banded']);
    // Without fallbacks, the one host tried is the cheapest for this prompt.
    expect(routed(longModel, prefs({ sort: 'price', allowFallbacks: false }), {}, 1_001)).toEqual(['flat']);
  });

  it('max_price leaves out a host whose band is above it, only for a prompt above the threshold', () => {
    const capped = prefs({ maxPrice: { prompt: 5 * M } });
    expect(routed(longModel, capped, {}, 1_000)).toEqual(['banded', 'flat']);
    expect(routed(longModel, capped, {}, 1_001)).toEqual(['flat']);
    const completion = prefs({ maxPrice: { completion: 3 * M } });
    expect(routed(longModel, completion, {}, 1_000)).toEqual(['banded']);
    expect(routeHosts(longModel, completion, 1_001)).toEqual({ kind: 'none', reason: 'max_price' });
  });

  it('admission routes by the estimate it holds for: a long prompt goes first to the host cheapest at its band', () => {
    // One user message of `chars` characters: ceil(chars / 4) tokens and 7 of framing.
    const ask = (chars: number): CanonicalRequest => ({
      system: [],
      messages: [{ role: 'user', content: 'x'.repeat(chars) }],
      tools: [],
      stop: [],
      stream: false,
      maxTokens: 100,
    });
    const sorted = { preferences: prefs({ sort: 'price' }), fallbacks: [], context: {} };
    const atThreshold = planAdmission(longModel.slug, longModel, ask(3_972), sorted);
    const above = planAdmission(longModel.slug, longModel, ask(3_976), sorted);
    if (atThreshold.kind !== 'reserve' || above.kind !== 'reserve') throw new Error('refused');
    expect([atThreshold.estimate.inputTokens, above.estimate.inputTokens]).toEqual([1_000, 1_001]);
    expect(ids(atThreshold.hosts)).toEqual(['banded', 'flat']);
    expect(ids(above.hosts)).toEqual(['flat', 'banded']);
    // The hold still covers the fallback at its band.
    expect(above.prices).toMatchObject({ input: 10 * M, output: 20 * M });
    const priced = planAdmission(longModel.slug, longModel, ask(3_976), {
      preferences: prefs({ maxPrice: { completion: 3 * M } }),
      fallbacks: [],
      context: {},
    });
    expect(priced.kind === 'refuse' && [priced.error.status, priced.error.outcome]).toEqual([402, 'max_price']);
  });
});

describe('admission: the reservation is sized for what routing allows', () => {
  const request = (maxTokens?: number): CanonicalRequest => ({
    system: [],
    messages: [{ role: 'user', content: 'hello there' }],
    tools: [],
    stop: [],
    stream: false,
    maxTokens,
  });

  it('at the dearest host the preferences allow, not the dearest of the model', () => {
    const all = planAdmission(model.slug, model, request(100));
    const cheap = planAdmission(model.slug, model, request(100), {
      preferences: prefs({ ignore: ['a'] }),
      fallbacks: [],
      context: {},
    });
    if (all.kind !== 'reserve' || cheap.kind !== 'reserve') throw new Error('refused');
    expect(all.prices.output).toBe(15 * M);
    expect(cheap.prices).toMatchObject({ input: 2 * M, output: 4 * M });
    expect(cheap.amount).toBeLessThan(all.amount);
  });

  it('with fallback models: the dearest model allowed and the largest output cap among them', () => {
    const big = {
      ...catalogueModel([modelHost('d', { input: 10 * M, output: 30 * M })]),
      slug: 'vendor/big',
      maxOutputTokens: 4000,
    };
    const plan = planAdmission(model.slug, model, request(3000), {
      preferences: NO_PREFERENCES,
      fallbacks: [{ requested: 'vendor/big', model: big }],
      context: {},
    });
    if (plan.kind !== 'reserve') throw new Error('refused');
    expect(plan.prices).toMatchObject({ input: 10 * M, output: 30 * M });
    expect(plan.estimate.outputTokens).toBe(3000);
    // Each model's hosts get the cap lowered to its own limit.
    expect(plan.routes.map((r) => [r.served.host.id, r.request.maxTokens])).toEqual([
      ['a', 1000],
      ['b', 1000],
      ['c', 1000],
      ['d', 3000],
    ]);
  });

  it('refuses max_price with a 402 naming it, a fallback not in the catalogue with a 400', () => {
    const priced = planAdmission(model.slug, model, request(), {
      preferences: prefs({ maxPrice: { prompt: 1 } }),
      fallbacks: [],
      context: {},
    });
    expect(priced.kind === 'refuse' && [priced.error.status, priced.error.outcome]).toEqual([402, 'max_price']);
    expect(priced.kind === 'refuse' && priced.error.message).toMatch(/max_price/);
    const unknown = planAdmission(model.slug, model, request(), {
      preferences: NO_PREFERENCES,
      fallbacks: [{ requested: 'nobody/none', model: null }],
      context: {},
    });
    expect(unknown.kind === 'refuse' && [unknown.error.status, unknown.error.message]).toEqual([
      400,
      'models: model "nobody/none" is not in the catalogue (GET /api/v1/models lists them)',
    ]);
    const none = planAdmission(model.slug, model, request(), {
      preferences: prefs({ only: ['nobody'] }),
      fallbacks: [],
      context: {},
    });
    expect(none.kind === 'refuse' && none.error.status).toBe(404);
  });
});
