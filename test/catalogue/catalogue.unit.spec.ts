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

  it("gives a host's per-use prices of hosted tools in nano-credits per 1,000 uses, listed as written", () => {
    const pricing = { input: '2.00', output: '8.00', cacheRead: '0.5', webSearch: '10.00', fileSearch: '2.5' };
    const catalogue = Catalogue.parse(file(undefined, [model({ hosts: [{ host: 'up', model: 'model-a', pricing }] })]), {});
    const [served] = catalogue.models[0].hosts;
    expect(served.prices.hostedToolUses).toEqual({ webSearch: 10_000_000_000, fileSearch: 2_500_000_000 });
    expect(served.listPrices.hostedToolUses).toEqual({ webSearch: '10.00', fileSearch: '2.5' });
    // None given: no per-use price at all (its hosted tools are then never run on that host).
    expect(Catalogue.parse(file(), {}).models[0].hosts[0].prices).not.toHaveProperty('hostedToolUses');
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

  it("the shipped catalogue prices the hosted tools at the hosts' list prices: web search $10 per 1,000 (Anthropic, OpenAI)", () => {
    const shipped = Catalogue.load(join(__dirname, '../../catalogue/default.json'), {});
    const perUse = (slug: string) => shipped.find(slug)!.hosts[0].prices.hostedToolUses;
    expect(perUse('anthropic/claude-sonnet-4')).toEqual({ webSearch: 10_000_000_000, webFetch: 0 });
    expect(perUse('anthropic/claude-3.5-haiku')).toEqual({ webSearch: 10_000_000_000, webFetch: 0 });
    expect(perUse('openai/gpt-5')).toEqual({ webSearch: 10_000_000_000, fileSearch: 2_500_000_000 });
    expect(shipped.find('openai/gpt-5')!.hosts[0].host.kind).toBe('openai-responses');
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
    [
      'a per-use price that is a number',
      file(undefined, [model({ hosts: [{ host: 'up', model: 'm', pricing: { input: '1', output: '1', webSearch: 10 } }] })]),
      'pricing.webSearch must be a decimal string of US dollars per 1,000 uses',
    ],
    [
      'a per-use price that is not a price',
      file(undefined, [model({ hosts: [{ host: 'up', model: 'm', pricing: { input: '1', output: '1', fileSearch: '-2.5' } }] })]),
      'pricing.fileSearch "-2.5" is not a price (a decimal of US dollars per 1,000 uses such as "10.00", at most 9 decimals)',
    ],
    [
      'a pricing field it does not know (a misspelt class would never be billed)',
      file(undefined, [model({ hosts: [{ host: 'up', model: 'm', pricing: { input: '1', output: '1', websearch: '10' } }] })]),
      'pricing has no field "websearch" (it takes "input", "cacheRead", "cacheWrite", "cacheWrite1h", "output", "webSearch", "webFetch", "codeExecution", "fileSearch", "imageGeneration")',
    ],
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

describe("catalogue: a host's retries", () => {
  it('are the defaults when the entry says nothing, and take what it says field by field', () => {
    expect(Catalogue.parse(file()).hosts[0].retry).toEqual({ attempts: 2, baseMs: 250, maxMs: 5_000 });
    expect(Catalogue.parse(file([host({ retry: { attempts: 0 } })])).hosts[0].retry).toEqual({
      attempts: 0,
      baseMs: 250,
      maxMs: 5_000,
    });
    expect(Catalogue.parse(file([host({ retry: { attempts: 4, baseMs: 100, maxMs: 100 } })])).hosts[0].retry).toEqual({
      attempts: 4,
      baseMs: 100,
      maxMs: 100,
    });
  });

  it.each([
    [{ retry: 2 }, '"retry" must be {"attempts": n, "baseMs": ms, "maxMs": ms} (each optional)'],
    [{ retry: { attempts: -1 } }, '"retry.attempts" must be a whole number from 0 to 10'],
    [{ retry: { attempts: 11 } }, '"retry.attempts" must be a whole number from 0 to 10'],
    [{ retry: { baseMs: 1.5 } }, '"retry.baseMs" must be a whole number from 0 to 600000'],
    [{ retry: { maxMs: '5s' } }, '"retry.maxMs" must be a whole number from 0 to 600000'],
    [{ retry: { baseMs: 500, maxMs: 100 } }, '"retry.maxMs" must not be below "retry.baseMs"'],
    [{ retry: { tries: 3 } }, '"retry.tries" is not a retry setting (attempts, baseMs, maxMs)'],
  ])('refuses %j: %s', (fields, message) => {
    expect(failure(file([host(fields)]))).toBe(`catalogue: hosts[0] (up): ${message}`);
  });
});

describe('catalogue: long-context price bands', () => {
  /** A model on `kind`'s host with `pricing` and `longContext` as given. */
  const banded = (
    longContext: unknown,
    pricing: Record<string, string> = { input: '1.25', output: '10.00', cacheRead: '0.125' },
    kind = 'gemini',
  ) =>
    file(
      [host({ kind, baseUrl: 'http://127.0.0.1:9/v1beta' })],
      [model({ hosts: [{ host: 'up', model: 'model-a', pricing, longContext }] })],
    );

  it('gives a band its threshold and exact prices, and lists them as written', () => {
    const catalogue = Catalogue.parse(
      banded({ aboveInputTokens: 200_000, input: '2.50', output: '15.00', cacheRead: '0.25' }),
      {},
    );
    const [served] = catalogue.models[0].hosts;
    // Gemini hosts price no cache writes: at the band's input price, as the base's are at the base's.
    expect(served.bands).toEqual([
      {
        aboveInputTokens: 200_000,
        prices: {
          input: 2_500_000_000,
          cacheRead: 250_000_000,
          cacheWrite: 2_500_000_000,
          cacheWrite1h: 2_500_000_000,
          output: 15_000_000_000,
        },
      },
    ]);
    expect(served.listBands).toEqual([
      {
        aboveInputTokens: 200_000,
        prices: { input: '2.50', cacheRead: '0.25', cacheWrite: '2.5', cacheWrite1h: '2.5', output: '15.00' },
      },
    ]);
    // A host without bands has none, and its base prices are untouched.
    expect(Catalogue.parse(file(), {}).models[0].hosts[0].bands).toEqual([]);
    expect(served.prices.input).toBe(1_250_000_000);
  });

  it("derives an anthropic band's cache prices from its input price as Anthropic lists them (0.1×, 1.25×, 2×)", () => {
    const catalogue = Catalogue.parse(
      banded({ aboveInputTokens: 200_000, input: '6.00', output: '22.50' }, { input: '3.00', output: '15.00' }, 'anthropic'),
      {},
    );
    expect(catalogue.models[0].hosts[0].bands[0].prices).toEqual({
      input: 6_000_000_000,
      cacheRead: 600_000_000,
      cacheWrite: 7_500_000_000,
      cacheWrite1h: 12_000_000_000,
      output: 22_500_000_000,
    });
  });

  it('takes a list of bands by ascending threshold', () => {
    const bands = [
      { aboveInputTokens: 32_000, input: '2.00', output: '12.00', cacheRead: '0.2' },
      { aboveInputTokens: 128_000, input: '4.00', output: '24.00', cacheRead: '0.4' },
    ];
    const [served] = Catalogue.parse(banded(bands), {}).models[0].hosts;
    expect(served.bands.map((b) => [b.aboveInputTokens, b.prices.input])).toEqual([
      [32_000, 2_000_000_000],
      [128_000, 4_000_000_000],
    ]);
  });

  it('the shipped catalogue bands Gemini 2.5 Pro and Claude Sonnet 4 and 4.5 on every host above 200,000 prompt tokens, and no other model', () => {
    const shipped = Catalogue.load(join(__dirname, '../../catalogue/default.json'), {});
    const banded = shipped.models.filter((m) => m.hosts.some((h) => h.bands.length > 0)).map((m) => m.slug);
    expect(banded).toEqual(['anthropic/claude-sonnet-4', 'anthropic/claude-sonnet-4.5', 'google/gemini-2.5-pro']);
    // The version's prices, as its CatalogueLoaded records them: the bands beside the prices of the
    // hosts that have them, nothing more for the others (a catalogue without bands records as before).
    const recorded = shipped.loaded!.prices();
    expect(recorded.filter((p) => p.longContext !== undefined).map((p) => `${p.model} on ${p.host}`)).toEqual([
      'anthropic/claude-sonnet-4 on anthropic',
      'anthropic/claude-sonnet-4 on bedrock',
      'anthropic/claude-sonnet-4 on vertex',
      'anthropic/claude-sonnet-4.5 on anthropic',
      'anthropic/claude-sonnet-4.5 on vertex',
      'google/gemini-2.5-pro on gemini',
      'google/gemini-2.5-pro on vertex',
    ]);
    expect(Object.keys(recorded.find((p) => p.model === 'openai/gpt-4.1')!)).toEqual(['model', 'host', 'hostModel', 'prices']);
    for (const h of shipped.find('google/gemini-2.5-pro')!.hosts)
      expect(h.bands).toEqual([
        {
          aboveInputTokens: 200_000,
          prices: {
            input: 2_500_000_000,
            cacheRead: 250_000_000,
            cacheWrite: 2_500_000_000,
            cacheWrite1h: 2_500_000_000,
            output: 15_000_000_000,
          },
        },
      ]);
    for (const slug of ['anthropic/claude-sonnet-4', 'anthropic/claude-sonnet-4.5'])
      for (const h of shipped.find(slug)!.hosts)
        expect(h.bands).toEqual([
          {
            aboveInputTokens: 200_000,
            prices: {
              input: 6_000_000_000,
              cacheRead: 600_000_000,
              cacheWrite: 7_500_000_000,
              cacheWrite1h: 12_000_000_000,
              output: 22_500_000_000,
            },
          },
        ]);
  });

  const at = 'catalogue: models[0] (vendor/model-a) hosts[0]:';
  it.each([
    ['an empty list', [], '"longContext" must be {"aboveInputTokens": n, "input": "…", "output": "…"}'],
    ['a band that is not an object', ['2.50'], '"longContext" must be {"aboveInputTokens": n'],
    [
      'no threshold',
      { input: '2.50', output: '15.00', cacheRead: '0.25' },
      'longContext.aboveInputTokens must be a positive whole number',
    ],
    [
      'a threshold of 0',
      { aboveInputTokens: 0, input: '2.50', output: '15.00', cacheRead: '0.25' },
      'longContext.aboveInputTokens must be a positive whole number',
    ],
    [
      'a fractional threshold',
      { aboveInputTokens: 1.5, input: '2.50', output: '15.00', cacheRead: '0.25' },
      'longContext.aboveInputTokens must be a positive whole number',
    ],
    [
      'no input price',
      { aboveInputTokens: 200_000, output: '15.00', cacheRead: '0.25' },
      'longContext.input must be a decimal string of US dollars per million tokens',
    ],
    [
      'no output price',
      { aboveInputTokens: 200_000, input: '2.50', cacheRead: '0.25' },
      'longContext.output must be a decimal string',
    ],
    [
      'a price that is not one',
      { aboveInputTokens: 200_000, input: '2,50', output: '15.00', cacheRead: '0.25' },
      'longContext.input "2,50" is not a price',
    ],
    [
      'a misspelt field',
      { aboveInputTokens: 200_000, input: '2.50', output: '15.00', cacheread: '0.25' },
      'longContext has no field "cacheread"',
    ],
    [
      'a hosted tool price',
      { aboveInputTokens: 200_000, input: '2.50', output: '15.00', cacheRead: '0.25', webSearch: '35.00' },
      'longContext has no field "webSearch"',
    ],
    [
      'a cache read price the base states and the band does not',
      { aboveInputTokens: 200_000, input: '2.50', output: '15.00' },
      'longContext must give "cacheRead", as "pricing" does',
    ],
    [
      'bands out of order',
      [
        { aboveInputTokens: 128_000, input: '4.00', output: '24.00', cacheRead: '0.4' },
        { aboveInputTokens: 128_000, input: '2.00', output: '12.00', cacheRead: '0.2' },
      ],
      'longContext[1].aboveInputTokens must be above the band before it (128000)',
    ],
  ])('refuses %s', (_, longContext, message) => {
    expect(failure(banded(longContext))).toContain(`${at} ${message}`);
  });
});
