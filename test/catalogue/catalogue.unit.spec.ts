import { join } from 'node:path';
import { Catalogue, CatalogueError } from '../../src/catalogue/catalogue';

const MODEL_ID = '0b5c1a52-8f3e-4d8e-9d1c-2a4b6c8d0e1f';

const host = (over: Record<string, unknown> = {}) => ({ id: 'up', kind: 'openai', baseUrl: 'http://127.0.0.1:9/v1', ...over });
const model = (over: Record<string, unknown> = {}) => ({
  slug: 'vendor/model-a',
  id: MODEL_ID,
  name: 'Model A',
  contextLength: 8192,
  maxOutputTokens: 1024,
  hosts: [{ host: 'up', model: 'model-a', pricing: { input: '0.15', output: '0.6' } }],
  ...over,
});
const file = (hosts: unknown[] = [host()], models: unknown[] = [model()]) => ({ hosts, models });

/** The message of the CatalogueError a catalogue fails with. */
const failure = (json: unknown, env: Record<string, string> = {}): string => {
  try {
    Catalogue.parse(json, env);
  } catch (error) {
    expect(error).toBeInstanceOf(CatalogueError);
    return (error as Error).message;
  }
  throw new Error('the catalogue was accepted');
};

describe('catalogue: a valid file', () => {
  it('gives models with exact prices in nano-credits per million tokens, and the list prices as written', () => {
    const pricing = { input: '0.15', output: '0.6', cacheRead: '0.075', cacheWrite: '0.15', cacheWrite1h: '0.3' };
    const catalogue = Catalogue.parse(file(undefined, [model({ hosts: [{ host: 'up', model: 'model-a', pricing }] })]), {});
    const [entry] = catalogue.models;
    expect(entry.hosts[0].prices).toEqual({
      input: 150_000_000,
      cacheRead: 75_000_000,
      cacheWrite: 150_000_000,
      cacheWrite1h: 300_000_000,
      output: 600_000_000,
    });
    expect(entry.hosts[0].listPrices).toEqual(pricing);
    expect(entry.hosts[0].cachePricesAssumed).toBe(false);
    expect(entry.created).toBe(0);
  });

  it('finds a model by slug (any case, trimmed) or UUID, and nothing else', () => {
    const catalogue = Catalogue.parse(file(), {});
    expect(catalogue.find(' Vendor/Model-A ')?.id).toBe(MODEL_ID);
    expect(catalogue.find(MODEL_ID.toUpperCase())?.slug).toBe('vendor/model-a');
    expect(catalogue.find('vendor/other')).toBeNull();
  });

  it('fills ${VAR} and ${VAR:-default} in base URLs from the environment and drops trailing slashes', () => {
    const json = file([host({ baseUrl: '${UP_URL:-http://localhost:1234}/v1/' }), host({ id: 'b', baseUrl: '${B_URL}/v1' })]);
    const fromDefault = Catalogue.parse(json, { B_URL: 'http://b.example' });
    expect(fromDefault.hosts.map((h) => h.baseUrl)).toEqual(['http://localhost:1234/v1', 'http://b.example/v1']);
    const fromEnv = Catalogue.parse(json, { UP_URL: 'https://up.example', B_URL: 'http://b.example' });
    expect(fromEnv.hosts[0].baseUrl).toBe('https://up.example/v1');
  });

  it('reads a host key from the variable it names; a host whose variable is unset cannot serve, and its models are not servable', () => {
    const json = file([host({ apiKeyEnv: 'UP_KEY' })]);
    const withKey = Catalogue.parse(json, { UP_KEY: ' secret ' });
    expect(withKey.hosts[0]).toMatchObject({ apiKeyEnv: 'UP_KEY', apiKey: 'secret', usable: true });
    expect(withKey.servable()).toHaveLength(1);
    const without = Catalogue.parse(json, {});
    expect(without.hosts[0]).toMatchObject({ apiKey: null, usable: false });
    expect(without.servable()).toHaveLength(0);
  });

  it('needs no key for a host that names no variable', () => {
    expect(Catalogue.parse(file(), {}).hosts[0]).toMatchObject({ apiKeyEnv: null, apiKey: null, usable: true });
  });

  it('the shipped catalogue is valid, and states a cache read price for every model on a chat-completions host', () => {
    const shipped = Catalogue.load(join(__dirname, '../../catalogue/default.json'), {});
    expect(shipped.find('simulated/chat')).not.toBeNull();
    expect(shipped.cachePricesAssumed()).toEqual([]);
  });
});

describe("catalogue: the cache's prices where an entry states none", () => {
  const served = (kind: string, pricing: Record<string, string>) =>
    Catalogue.parse(file([host({ kind })], [model({ hosts: [{ host: 'up', model: 'model-a', pricing }] })]), {}).models[0]
      .hosts[0];

  describe('given a model on an anthropic host', () => {
    it("when only input and output are stated, then reads cost 0.1×, 5-minute writes 1.25× and 1-hour writes 2× the input price, Anthropic's list", () => {
      const entry = served('anthropic', { input: '3.00', output: '15.00' });
      expect(entry.prices).toEqual({
        input: 3_000_000_000,
        cacheRead: 300_000_000,
        cacheWrite: 3_750_000_000,
        cacheWrite1h: 6_000_000_000,
        output: 15_000_000_000,
      });
      expect(entry.listPrices).toMatchObject({ cacheRead: '0.3', cacheWrite: '3.75', cacheWrite1h: '6' });
      expect(entry.cachePricesAssumed).toBe(false);
    });

    it('when a multiple is not a whole nano-credit per million, then it is rounded up', () => {
      // $0.000000015/M = 15 nano-credits: a tenth is 1.5 → 2; five quarters 18.75 → 19; twice 30.
      expect(served('anthropic', { input: '0.000000015', output: '1' }).prices).toMatchObject({
        cacheRead: 2,
        cacheWrite: 19,
        cacheWrite1h: 30,
      });
    });

    it('when a cache price is stated, then it wins', () => {
      expect(served('anthropic', { input: '3', output: '15', cacheRead: '0.25' }).prices).toMatchObject({
        cacheRead: 250_000_000,
        cacheWrite: 3_750_000_000,
      });
    });
  });

  describe('given a model on an openai host', () => {
    it('when no cache read price is stated, then cached tokens cost the input price, and the catalogue names the model for a warning', () => {
      const catalogue = Catalogue.parse(file(), {});
      expect(catalogue.models[0].hosts[0].prices).toMatchObject({
        cacheRead: 150_000_000,
        cacheWrite: 150_000_000,
        cacheWrite1h: 150_000_000,
      });
      expect(catalogue.models[0].hosts[0].cachePricesAssumed).toBe(true);
      expect(catalogue.cachePricesAssumed()).toEqual(['vendor/model-a']);
    });

    it('when the cache read price is stated, then writes cost the input price and nothing is assumed', () => {
      const entry = served('openai', { input: '2.50', output: '10.00', cacheRead: '1.25' });
      expect(entry.prices).toMatchObject({ cacheRead: 1_250_000_000, cacheWrite: 2_500_000_000, cacheWrite1h: 2_500_000_000 });
      expect(entry.cachePricesAssumed).toBe(false);
    });
  });
});

describe('catalogue: an openai-responses host', () => {
  it('is accepted, its cached input at the stated read price, else (named for a warning) at the input price', () => {
    const file_ = (pricing: Record<string, string>) =>
      file([host({ kind: 'openai-responses' })], [model({ hosts: [{ host: 'up', model: 'gpt-x', pricing }] })]);
    const stated = Catalogue.parse(file_({ input: '1.25', output: '10.00', cacheRead: '0.125' }), {});
    expect(stated.models[0].hosts[0].host.kind).toBe('openai-responses');
    expect(stated.models[0].hosts[0].prices).toMatchObject({
      input: 1_250_000_000,
      cacheRead: 125_000_000,
      output: 10_000_000_000,
    });
    const unstated = Catalogue.parse(file_({ input: '1.25', output: '10.00' }), {});
    expect(unstated.models[0].hosts[0].prices).toMatchObject({ cacheRead: 1_250_000_000 });
    expect(unstated.cachePricesAssumed()).toEqual(['vendor/model-a']);
  });

  it('serves no embedding model (its upstream has no /embeddings here)', () => {
    const json = file(
      [host({ kind: 'openai-responses' })],
      [model({ kind: 'embedding', maxOutputTokens: undefined, hosts: [{ host: 'up', model: 'e', pricing: { input: '0.02' } }] })],
    );
    expect(() => Catalogue.parse(json, {})).toThrow(/"openai-responses" hosts do not/);
  });
});

describe('catalogue: a bad file stops start-up with a message naming the entry', () => {
  it.each([
    ['not the expected shape', [], 'catalogue: file: expected {"hosts": [...], "models": [...]}'],
    ['a host that is not an object', file(['up']), 'hosts[0]: must be an object'],
    ['a host without an id', file([host({ id: '' })]), 'hosts[0]: "id" must be a non-empty string'],
    ['a duplicate host id', file([host(), host()]), 'hosts[1] (up): duplicate host id'],
    ['an unknown kind of host', file([host({ kind: 'carrier-pigeon' })]), 'hosts[0] (up): "kind" must be'],
    ['a base URL that is not a URL', file([host({ baseUrl: 'not a url' })]), 'hosts[0] (up): "baseUrl" "not a url" is not a URL'],
    ['a base URL that is not http(s)', file([host({ baseUrl: 'ftp://x/v1' })]), '"baseUrl" must be http(s)'],
    ['a key in the file', file([host({ apiKey: 'sk-live' })]), 'keys never go in the catalogue'],
    ['a bad key variable name', file([host({ apiKeyEnv: 'up-key' })]), '"apiKeyEnv" must name an environment variable'],
    [
      'a slug without a vendor',
      file(undefined, [model({ slug: 'model-a' })]),
      'models[0] (model-a): "slug" must look like vendor/model',
    ],
    [
      'a duplicate slug, in any case',
      file(undefined, [model(), model({ slug: 'Vendor/Model-A' })]),
      'models[1] (Vendor/Model-A): duplicate slug',
    ],
    ['an id that is not a UUID', file(undefined, [model({ id: '42' })]), '"id" must be a UUID'],
    [
      'a duplicate id, in any case',
      file(undefined, [model(), model({ slug: 'vendor/b', id: MODEL_ID.toUpperCase() })]),
      'models[1] (vendor/b): duplicate id',
    ],
    ['a model with no host', file(undefined, [model({ hosts: [] })]), '"hosts" must list at least one host'],
    [
      'a model served by an unknown host',
      file(undefined, [model({ hosts: [{ host: 'nowhere', model: 'm', pricing: { input: '1', output: '1' } }] })]),
      'models[0] (vendor/model-a) hosts[0]: unknown host "nowhere"',
    ],
    [
      'a price that is a number, not a decimal string',
      file(undefined, [model({ hosts: [{ host: 'up', model: 'm', pricing: { input: 0.15, output: '1' } }] })]),
      'pricing.input must be a decimal string of US dollars per million tokens',
    ],
    [
      'a price with more than 9 decimals',
      file(undefined, [model({ hosts: [{ host: 'up', model: 'm', pricing: { input: '1', output: '0.0000000001' } }] })]),
      'pricing.output "0.0000000001" is not a price',
    ],
    [
      'a cache price that is not a price',
      file(undefined, [model({ hosts: [{ host: 'up', model: 'm', pricing: { input: '1', output: '1', cacheWrite1h: 2 } }] })]),
      'pricing.cacheWrite1h must be a decimal string of US dollars per million tokens',
    ],
    [
      'pricing missing',
      file(undefined, [model({ hosts: [{ host: 'up', model: 'm' }] })]),
      '"pricing" must be {"input": "…", "output": "…"}',
    ],
    [
      'a context length that is not a positive whole number',
      file(undefined, [model({ contextLength: 0 })]),
      '"contextLength" must be a positive whole number',
    ],
    [
      'an output cap that is fractional',
      file(undefined, [model({ maxOutputTokens: 1.5 })]),
      '"maxOutputTokens" must be a positive whole number',
    ],
    ['a creation time that is negative', file(undefined, [model({ created: -1 })]), '"created" must be a positive whole number'],
  ])('%s', (_case, json, expected) => {
    expect(failure(json)).toContain(expected);
  });

  it('names the file when it is not JSON', () => {
    expect(() => Catalogue.load(join(__dirname, 'catalogue.unit.spec.ts'), {})).toThrow(CatalogueError);
  });
});

describe('catalogue: embedding models', () => {
  const embedding = (over: Record<string, unknown> = {}) =>
    model({
      kind: 'embedding',
      maxOutputTokens: undefined,
      hosts: [{ host: 'up', model: 'embed-a', pricing: { input: '0.02' } }],
      ...over,
    });

  it('a model is a chat model unless it says "kind": "embedding"', () => {
    expect(Catalogue.parse(file(), {}).models[0].kind).toBe('chat');
    expect(Catalogue.parse(file(undefined, [model({ kind: 'chat' })]), {}).models[0].kind).toBe('chat');
  });

  it('an embedding model is priced by input only: no output price, no output cap, no cache price assumed', () => {
    const catalogue = Catalogue.parse(file(undefined, [embedding()]), {});
    const [entry] = catalogue.models;
    expect(entry).toMatchObject({ kind: 'embedding', maxOutputTokens: 0 });
    expect(entry.hosts[0].prices).toEqual({
      input: 20_000_000,
      cacheRead: 20_000_000,
      cacheWrite: 20_000_000,
      cacheWrite1h: 20_000_000,
      output: 0,
    });
    expect(entry.hosts[0].listPrices).toMatchObject({ input: '0.02', output: '0' });
    expect(catalogue.cachePricesAssumed()).toEqual([]);
  });

  it('an output price, when given, is still checked', () => {
    const priced = embedding({ hosts: [{ host: 'up', model: 'embed-a', pricing: { input: '0.02', output: 'free' } }] });
    expect(failure(file(undefined, [priced]))).toMatch(/pricing\.output "free" is not a price/);
  });

  it('refuses a kind it does not know, saying which there are', () => {
    expect(failure(file(undefined, [model({ kind: 'rerank' })]))).toBe(
      'catalogue: models[0] (vendor/model-a): "kind" must be "chat" or "embedding" (chat when absent)',
    );
  });

  it('refuses an embedding model on a host kind that serves no embeddings (anthropic)', () => {
    const json = file([host({ kind: 'anthropic' })], [embedding()]);
    expect(failure(json)).toBe(
      'catalogue: models[0] (vendor/model-a) hosts[0]: an embedding model needs a host that serves embeddings: "anthropic" hosts do not',
    );
  });

  it('a chat model still needs its output price and cap', () => {
    expect(failure(file(undefined, [model({ maxOutputTokens: undefined })]))).toMatch(/"maxOutputTokens" must be a positive/);
    const noOutput = model({ hosts: [{ host: 'up', model: 'model-a', pricing: { input: '0.15' } }] });
    expect(failure(file(undefined, [noOutput]))).toMatch(/pricing\.output must be a decimal string/);
  });

  it('the shipped catalogue has a simulated embedding model and OpenAI text-embedding-3-small at $0.02/M', () => {
    const shipped = Catalogue.load(join(__dirname, '../../catalogue/default.json'), {});
    expect(shipped.find('simulated/embedding')).toMatchObject({ kind: 'embedding' });
    const small = shipped.find('openai/text-embedding-3-small');
    expect(small).toMatchObject({ kind: 'embedding' });
    expect(small!.hosts[0]).toMatchObject({ model: 'text-embedding-3-small', prices: { input: 20_000_000, output: 0 } });
  });
});
