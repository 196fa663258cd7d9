import type { CanonicalRequest } from '../../src/canonical/canonical';
import {
  CACHE_TTL_1H_MS,
  CACHE_TTL_MS,
  conversationOf,
  fallbackModels,
  providerPreferences,
  routingOfHeaders,
  withoutRouting,
} from '../../src/routing/preferences';
import { MemoryStickyRoutes } from '../../src/routing/sticky';

/** An agent's instructions: long enough for providers to cache. */
const AGENT = `You are an agent. ${'Follow the house rules. '.repeat(200)}`;
const request = (over: Partial<CanonicalRequest> = {}): CanonicalRequest => ({
  system: [AGENT],
  messages: [{ role: 'user', content: 'Fix the bug' }],
  tools: [],
  stop: [],
  stream: false,
  ...over,
});

describe('provider preferences as OpenRouter shapes them', () => {
  it('reads every field; allow_fallbacks is true unless false; sort as a name or {by}', () => {
    expect(
      providerPreferences({
        order: ['a', 'b'],
        only: ['a', 'b', 'c'],
        ignore: ['d'],
        allow_fallbacks: false,
        sort: { by: 'throughput' },
        max_price: { prompt: 1.5, completion: '2' },
        data_collection: 'deny',
      }),
    ).toEqual({
      order: ['a', 'b'],
      only: ['a', 'b', 'c'],
      ignore: ['d'],
      allowFallbacks: false,
      sort: 'throughput',
      maxPrice: { prompt: 1_500_000_000, completion: 2_000_000_000 },
    });
    expect(providerPreferences(undefined)).toEqual({ allowFallbacks: true });
    expect(providerPreferences({ sort: 'price' })).toEqual({ allowFallbacks: true, sort: 'price' });
  });

  it.each([
    [[], 'provider: must be an object'],
    [{ order: 'a' }, 'provider.order: must be an array'],
    [{ allow_fallbacks: 'no' }, 'provider.allow_fallbacks: must be true or false'],
    [{ sort: 'cheapest' }, 'provider.sort: must be "price", "latency", "throughput"'],
    [{ max_price: { prompt: -1 } }, 'provider.max_price.prompt: must be a price'],
    [{ max_price: { request: 0.01 } }, 'provider.max_price.request: is not supported here'],
  ])('refuses %j with a 400 naming the field', (value, message) => {
    let error: unknown;
    try {
      providerPreferences(value);
    } catch (e) {
      error = e;
    }
    expect((error as { status: number }).status).toBe(400);
    expect((error as Error).message).toContain(message);
  });

  it('models: the fallbacks after the model asked for, not it again nor twice', () => {
    expect(fallbackModels(['vendor/a', 'Vendor/B', 'vendor/b', 'vendor/c'], 'vendor/A')).toEqual(['Vendor/B', 'vendor/c']);
    expect(() => fallbackModels(['x', 3], 'a')).toThrow(/models: must be an array/);
  });

  it('the messages surface reads the same JSON from its headers; a models list may be comma-separated', () => {
    const ask = routingOfHeaders('vendor/a', request(), {
      'x-gateway-provider': '{"order": ["h2"], "allow_fallbacks": false}',
      'x-gateway-models': 'vendor/b, vendor/c',
    });
    expect(ask.provider).toEqual({ order: ['h2'], allowFallbacks: false });
    expect(ask.models).toEqual(['vendor/b', 'vendor/c']);
    expect(() => routingOfHeaders('vendor/a', request(), { 'x-gateway-provider': '{order' })).toThrow(/x-gateway-provider/);
  });

  it('hosts of the client format get the body without the routing fields', () => {
    expect(withoutRouting({ model: 'm', provider: { sort: 'price' }, models: ['x'], temperature: 1 })).toEqual({
      model: 'm',
      temperature: 1,
    });
  });
});

describe('the conversation a request continues', () => {
  const original = (body: Record<string, unknown>) => ({ format: 'messages' as const, body });

  it('is named by prompt_cache_key, metadata.user_id or a session header before the prompt prefix', () => {
    const byKey = conversationOf(request({ original: original({ prompt_cache_key: 'k1' }) }), {});
    const byUser = conversationOf(request({ original: original({ metadata: { user_id: 'u1' } }) }), {});
    const bySession = conversationOf(request(), { session_id: 's1' });
    const keys = [byKey, byUser, bySession].map((c) => c!.key);
    expect(new Set(keys).size).toBe(3);
    // The same key, however the prompt grows.
    expect(conversationOf(request({ messages: [], original: original({ prompt_cache_key: 'k1' }) }), {})!.key).toBe(keys[0]);
  });

  it('by prefix: the same while turns are added, another for another conversation', () => {
    const first = conversationOf(request(), {})!;
    const later = conversationOf(
      request({
        messages: [
          { role: 'user', content: 'Fix the bug' },
          { role: 'assistant', content: 'Done', toolCalls: [] },
          { role: 'user', content: 'Thanks' },
        ],
      }),
      {},
    )!;
    expect(later.key).toBe(first.key);
    expect(conversationOf(request({ system: [`${AGENT}!`] }), {})!.key).not.toBe(first.key);
    expect(conversationOf(request({ messages: [] }), {})).toBeNull();
    // A prompt too short to be cached has no host to keep.
    expect(conversationOf(request({ system: ['Be brief.'] }), {})).toBeNull();
  });

  it('lives 5 minutes, or an hour when the request marks 1-hour caching', () => {
    expect(conversationOf(request(), {})!.ttlMs).toBe(CACHE_TTL_MS);
    const marked = original({
      messages: [{ role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral', ttl: '1h' } }] }],
    });
    expect(conversationOf(request({ original: marked }), {})!.ttlMs).toBe(CACHE_TTL_1H_MS);
    expect(conversationOf(request({ original: original({ prompt_cache_retention: '24h' }) }), {})!.ttlMs).toBe(CACHE_TTL_1H_MS);
  });
});

describe('sticky routes in process', () => {
  it('keeps the host per organization, conversation and model until its cache would have expired', async () => {
    let now = 0;
    const routes = new MemoryStickyRoutes(() => now);
    const conversation = { key: 'c1', ttlMs: 1000 };
    await routes.remember('org', conversation, 'vendor/a', 'h2');
    expect(await routes.hostsOf('org', conversation, ['vendor/a', 'vendor/b'])).toEqual(new Map([['vendor/a', 'h2']]));
    expect((await routes.hostsOf('other-org', conversation, ['vendor/a'])).size).toBe(0);
    now = 1000;
    expect((await routes.hostsOf('org', conversation, ['vendor/a'])).size).toBe(0);
  });
});
