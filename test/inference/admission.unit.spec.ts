import type { CanonicalRequest } from '../../src/canonical/canonical';
import type { ModelHost } from '../../src/catalogue/catalogue';
import type { HostKindName } from '../../src/hosts/hosts';
import { highestPrices, insufficientCredits, planAdmission } from '../../src/inference/admission';
import { estimateInputTokens } from '../../src/inference/tokens';
import { chargeFor, reservationFor, TokenPrices, uncachedUsage } from '../../src/ledger/money';
import { catalogueModel, modelHost } from '../support/catalogue-entries';

/** A host whose cache's classes cost the input price unless `cache` says otherwise. */
const host = (id: string, usable: boolean, input: number, output: number, cache: Partial<TokenPrices> = {}): ModelHost =>
  modelHost(id, { usable, input, output, cache });
const model = catalogueModel;

const request = (maxTokens?: number): CanonicalRequest => ({
  system: ['Be brief.'],
  messages: [{ role: 'user', content: 'Hello there' }],
  tools: [],
  maxTokens,
  stop: [],
  stream: true,
});

describe('admission', () => {
  describe('given the model asked for is not in the catalogue', () => {
    it('refuses with 404, logged under the name asked for', () => {
      expect(planAdmission('nobody/nothing', null, request())).toEqual({
        kind: 'refuse',
        model: 'nobody/nothing',
        error: expect.objectContaining({
          code: 'model_not_found',
          message: 'model "nobody/nothing" is not in the catalogue (GET /api/v1/models lists them)',
        }),
      });
    });
  });

  describe('given a model none of whose hosts is configured', () => {
    it('refuses with 404, logged under its slug', () => {
      const unhosted = model([host('a', false, 1, 1)]);
      expect(planAdmission(unhosted.id, unhosted, request())).toEqual({
        kind: 'refuse',
        model: 'vendor/model',
        error: expect.objectContaining({
          code: 'model_not_found',
          message: 'model "vendor/model" is not available here: none of its hosts is configured',
        }),
      });
    });
  });

  describe('given an embedding model on a chat route', () => {
    it('refuses with 400 naming the route that serves it, before any host is looked at', () => {
      const embedding = { ...model([host('a', false, 1, 0)]), kind: 'embedding' as const };
      expect(planAdmission(embedding.slug, embedding, request())).toEqual({
        kind: 'refuse',
        model: 'vendor/model',
        error: expect.objectContaining({
          code: 'invalid_request',
          message: 'model "vendor/model" is an embedding model: it is served by POST /api/v1/embeddings only',
        }),
      });
    });
  });

  describe('given an output cap above the model limit', () => {
    it('lowers the cap to the limit: hosts get it and the reservation is sized by it', () => {
      const m = model([host('a', true, 1_000_000_000, 2_000_000_000)]);
      const plan = planAdmission(m.slug, m, request(32_000));
      if (plan.kind !== 'reserve') throw new Error('refused');
      expect(plan.request.maxTokens).toBe(1000);
      expect(plan.estimate.outputTokens).toBe(1000);
      expect(plan.amount).toBe(chargeFor(uncachedUsage(plan.estimate.inputTokens, 1000), plan.prices));
    });

    it('raises a cap below the least a host takes to it, for that host only: the reservation is sized by it', () => {
      const responses = (settings: Record<string, string>) => {
        const h = modelHost('r', {
          kind: settings.endpoint ? 'azure' : 'openai-responses',
          input: 1_000_000_000,
          output: 2_000_000_000,
        });
        return { ...h, host: { ...h.host, settings } };
      };
      const kinds = [
        responses({}),
        responses({ endpoint: 'https://r.openai.azure.com', route: 'v1', api: 'responses', auth: 'api-key' }),
      ];
      for (const first of kinds) {
        // The Responses API's least is 16; a chat-completions fallback takes the cap as asked.
        const m = model([first, host('chat', true, 1, 1)]);
        const plan = planAdmission(m.slug, m, request(1));
        if (plan.kind !== 'reserve') throw new Error('refused');
        expect(plan.routes.map((r) => r.request.maxTokens)).toEqual([16, 1]);
        expect(plan.estimate.outputTokens).toBe(16);
        expect(plan.amount).toBe(chargeFor(uncachedUsage(plan.estimate.inputTokens, 16), plan.prices));
      }
      // Azure's chat-completions API takes any cap.
      const chat = model([
        responses({ endpoint: 'https://r.openai.azure.com', route: 'v1', api: 'chat-completions', auth: 'api-key' }),
      ]);
      const plan = planAdmission(chat.slug, chat, request(1));
      expect(plan.kind === 'reserve' && plan.routes[0].request.maxTokens).toBe(1);
    });

    it('keeps a cap at or below the limit as it is', () => {
      const m = model([host('a', true, 1, 1)]);
      for (const cap of [1, 999, 1000]) {
        const plan = planAdmission(m.slug, m, request(cap));
        expect(plan.kind === 'reserve' && plan.request.maxTokens).toBe(cap);
      }
    });
  });

  describe('given a servable model', () => {
    const cheap = host('cheap', true, 100_000_000, 900_000_000);
    const down = host('down', false, 5_000_000_000, 5_000_000_000);
    const dear = host('dear', true, 300_000_000, 600_000_000);
    const m = model([cheap, down, dear]);

    it('plans to call its usable hosts in catalogue order', () => {
      const plan = planAdmission(m.slug, m, request(200));
      expect(plan.kind === 'reserve' && plan.hosts).toEqual([cheap, dear]);
    });

    it("fills in the model's default cap when the client gave none, leaving the client's request as it was", () => {
      const asked = request();
      const plan = planAdmission(m.slug, m, asked);
      expect(plan.kind === 'reserve' && plan.request).toEqual({ ...asked, maxTokens: 1000 });
      expect(asked.maxTokens).toBeUndefined();
    });

    it('estimates the input from the request and the output at the cap', () => {
      const plan = planAdmission(m.slug, m, request(200));
      expect(plan.kind === 'reserve' && plan.estimate).toEqual({
        inputTokens: estimateInputTokens(request(200)),
        outputTokens: 200,
      });
    });

    it("reserves the estimate at the highest of the usable hosts' prices (a fallback stays covered)", () => {
      const plan = planAdmission(m.slug, m, request(200));
      if (plan.kind !== 'reserve') throw new Error('refused');
      expect(plan.prices).toMatchObject({ input: 300_000_000, output: 900_000_000 });
      expect(plan.amount).toBe(chargeFor(uncachedUsage(plan.estimate.inputTokens, plan.estimate.outputTokens), plan.prices));
    });
  });

  describe('given hosts whose cache writes cost more than their input', () => {
    // $3/M input, $0.30 reads, $3.75 5-minute writes, $6 1-hour writes, $15 output.
    const anthropic = host('anthropic', true, 3_000_000_000, 15_000_000_000, {
      cacheRead: 300_000_000,
      cacheWrite: 3_750_000_000,
      cacheWrite1h: 6_000_000_000,
    });
    const m = model([anthropic]);

    it('when admitted, then the estimated input is reserved at the dearest input class: any of it may be written to the cache', () => {
      const plan = planAdmission(m.slug, m, request(200));
      if (plan.kind !== 'reserve') throw new Error('refused');
      const input = estimateInputTokens(request(200));
      // input × $6/M (1-hour writes) + 200 × $15/M, rounded up once
      expect(plan.amount).toBe(Math.ceil((input * 6_000_000_000 + 200 * 15_000_000_000) / 1e6));
      expect(plan.amount).toBeGreaterThan(chargeFor(uncachedUsage(input, 200), anthropic.prices));
    });

    it('when the balance falls short, then the 402 counts the input at that price too', () => {
      const plan = planAdmission(m.slug, m, request(200));
      if (plan.kind !== 'reserve') throw new Error('refused');
      const inputCost = Math.ceil((plan.estimate.inputTokens * 6_000_000_000) / 1e6);
      // What remains after the input buys output at $15/M: 10 output tokens' worth (150,000 nano-credits).
      const error = insufficientCredits(inputCost + 150_000, plan.estimate, plan.prices);
      expect(error.message).toMatch(/enough for at most 10 output tokens on this request \(asked for 200\)/);
    });
  });

  describe('given hosted tools offered', () => {
    /** $10 per 1,000 web searches, in nano-credits per 1,000 uses. */
    const SEARCH = 10_000_000_000;
    const responsesHost = (id: string, perUse: TokenPrices['hostedToolUses'] = { webSearch: SEARCH }) =>
      modelHost(id, { kind: 'openai-responses', input: 1_000_000_000, output: 2_000_000_000, cache: { hostedToolUses: perUse } });
    const offered = (required: 'any' | { hosted: string } | null = null): CanonicalRequest => ({
      ...request(100),
      tools: [{ name: 'f', parameters: {} }],
      original: {
        format: 'responses',
        body: { tools: [{ type: 'web_search' }, { type: 'image_generation' }, { type: 'function', name: 'f' }] },
      },
      hostedTools: { hosted: ['web_search', 'image_generation'], clientTools: true, required },
    });

    it('carries those every host runs and prices, leaves out the others (also of the body passed whole), and holds for the uses allowed', () => {
      const m = model([responsesHost('r')]);
      const plan = planAdmission(m.slug, m, offered(), { maxUses: 5 });
      if (plan.kind !== 'reserve') throw new Error('refused');
      expect(plan.request.carriedTools).toEqual({ classes: ['webSearch'], maxUses: 5 });
      expect(plan.omittedTools).toEqual(['image_generation']);
      expect(plan.request.original!.body).toEqual({ tools: [{ type: 'web_search' }, { type: 'function', name: 'f' }] });
      expect(plan.estimate.hostedToolUses).toEqual({ webSearch: 5 });
      // The tokens, plus 5 searches at $10/1,000 (50,000,000 nano-credits), rounded up once.
      const tokens = plan.estimate.inputTokens * 1_000_000_000 + 100 * 2_000_000_000;
      expect(plan.amount).toBe(Math.ceil((tokens + 5 * SEARCH * 1000) / 1e6));
    });

    it('leaves a tool out when one of the hosts does not run it (a fallback must), or its entry gives no price', () => {
      for (const hosts of [[responsesHost('r'), host('chat', true, 1, 1)], [responsesHost('r', {})]]) {
        const m = model(hosts);
        const plan = planAdmission(m.slug, m, offered(), { maxUses: 5 });
        if (plan.kind !== 'reserve') throw new Error('refused');
        expect(plan.request.carriedTools).toBeUndefined();
        expect(plan.omittedTools).toEqual(['web_search', 'image_generation']);
        expect(plan.estimate.hostedToolUses).toBeUndefined();
      }
    });

    it('refuses a request requiring one its hosts do not run, naming it and the models that do', () => {
      const m = model([host('chat', true, 1, 1)]);
      const plan = planAdmission(m.slug, m, offered({ hosted: 'web_search' }), {
        maxUses: 5,
        elsewhere: () => 'models that run it: openai/gpt-5',
      });
      expect(plan).toMatchObject({
        kind: 'refuse',
        error: {
          code: 'invalid_request',
          message: expect.stringMatching(
            /^tool_choice requires the hosted tool "web_search", which the hosts of this model do not run \(models that run it: openai\/gpt-5\)/,
          ),
        },
      });
    });

    it('the highest per-use price among the hosts is held for', () => {
      const a = responsesHost('a', { webSearch: 10 });
      const b = responsesHost('b', { webSearch: 25, fileSearch: 3 });
      expect(highestPrices([a, b]).hostedToolUses).toEqual({ webSearch: 25, fileSearch: 3 });
    });
  });

  describe("given a request breaking a limit of some hosts' APIs", () => {
    const kindHost = (id: string, kind: HostKindName, baseUrl = `http://${id}/v1`): ModelHost => {
      const h = modelHost(id, { kind });
      return { ...h, host: { ...h.host, baseUrl } };
    };
    const gemini = kindHost('gem', 'gemini');
    const openai = kindHost('oai', 'openai', 'https://api.openai.com/v1');
    const compatible = kindHost('vllm', 'openai');
    const converse = kindHost('br', 'bedrock');
    const stops = (n: number): CanonicalRequest => ({ ...request(), stop: Array.from({ length: n }, (_, i) => `S${i}`) });
    const tool = (name: string): CanonicalRequest => ({ ...request(), tools: [{ name, parameters: { type: 'object' } }] });

    it('sends it only to the hosts that take it', () => {
      const m = model([openai, gemini]);
      const plan = planAdmission(m.slug, m, stops(5));
      expect(plan.kind === 'reserve' && plan.routes.map((r) => r.served.host.id)).toEqual(['gem']);
      expect(plan.kind === 'reserve' && plan.hosts.map((h) => h.host.id)).toEqual(['gem']);
    });

    it('refuses it with 400 naming the field, each host and its limit when no host takes it', () => {
      const m = model([openai, gemini]);
      const chat = { ...stops(6), original: { format: 'chat-completions' as const, body: {} } };
      expect(planAdmission(m.slug, m, chat)).toEqual({
        kind: 'refuse',
        model: 'vendor/model',
        error: expect.objectContaining({
          code: 'invalid_request',
          message:
            'no host of model "vendor/model" takes this request: stop has 6 stop sequences, and host oai takes at most 4; ' +
            'stop has 6 stop sequences, and host gem takes at most 5',
        }),
      });
    });

    it('refuses a tool name the hosts do not take, naming the tool and their rule', () => {
      const m = model([converse]);
      const plan = planAdmission(m.slug, m, tool('files.read'));
      expect(plan.kind === 'refuse' && plan.error.message).toBe(
        'no host of model "vendor/model" takes this request: tool "files.read": host br takes tool names of letters, ' +
          'digits, underscores and dashes, at most 64 characters',
      );
      // Google's rule takes dots; a name of 65 characters is too long for OpenAI, not for Gemini.
      expect(planAdmission(m.slug, model([gemini]), tool('files.read')).kind).toBe('reserve');
      expect(planAdmission(m.slug, model([openai]), tool('x'.repeat(65))).kind).toBe('refuse');
      expect(planAdmission(m.slug, model([gemini]), tool('x'.repeat(65))).kind).toBe('reserve');
    });

    it("holds a server compatible with OpenAI's format (vLLM, Groq…) to none of OpenAI's own limits", () => {
      const m = model([compatible]);
      expect(planAdmission(m.slug, m, stops(8)).kind).toBe('reserve');
      expect(planAdmission(m.slug, m, tool('files.read')).kind).toBe('reserve');
    });
  });

  it('takes the highest price of each class separately', () => {
    const a = host('a', true, 1, 9, { cacheRead: 4, cacheWrite1h: 1 });
    const b = host('b', true, 5, 2, { cacheWrite: 7 });
    expect(highestPrices([a, b])).toEqual({ input: 5, cacheRead: 5, cacheWrite: 7, cacheWrite1h: 5, output: 9 });
  });

  describe('given a host with a long-context band', () => {
    // Gemini 2.5 Pro: $1.25/M input, $10/M output; above 200,000 prompt tokens $2.50 and $15 (cache at the input price here).
    const band = { input: 2_500_000_000, cacheRead: 2_500_000_000, cacheWrite: 2_500_000_000, cacheWrite1h: 2_500_000_000 };
    const gemini = modelHost('gemini', {
      input: 1_250_000_000,
      output: 10_000_000_000,
      bands: [{ aboveInputTokens: 200_000, prices: { ...band, output: 15_000_000_000 } }],
    });
    /** A request of `chars` characters in one message (four characters a token, plus framing). */
    const long = (chars: number): CanonicalRequest => ({
      ...request(1000),
      system: [],
      messages: [{ role: 'user', content: 'x'.repeat(chars) }],
    });

    it('when the estimated input is above the threshold, then the hold is at the band’s prices; at it, at the base prices', () => {
      const m = model([gemini]);
      // 4 × 199,993 characters: 199,993 tokens, plus 4 for the message and 3 for the reply's framing: 200,000.
      const at = planAdmission(m.slug, m, long(4 * 199_993));
      const above = planAdmission(m.slug, m, long(4 * 199_994));
      if (at.kind !== 'reserve' || above.kind !== 'reserve') throw new Error('refused');
      expect([at.estimate.inputTokens, above.estimate.inputTokens]).toEqual([200_000, 200_001]);
      // 200,000 × $1.25 + 1,000 × $10 = $260,000 per million tokens: 260,000,000 nano-credits
      expect(at.amount).toBe(260_000_000);
      expect(at.prices).toMatchObject({ input: 1_250_000_000, output: 10_000_000_000 });
      // 200,001 × $2.50 + 1,000 × $15 = $515,002.5 per million tokens: 515,002,500 nano-credits
      expect(above.amount).toBe(515_002_500);
      expect(above.prices).toMatchObject({ input: 2_500_000_000, output: 15_000_000_000 });
      // Never below what the request would be charged as estimated.
      expect(above.amount).toBeGreaterThanOrEqual(chargeFor(uncachedUsage(200_001, 1000), above.prices));
    });

    it('the fallback without bands is held at its own prices beside the band’s', () => {
      const m = model([gemini, host('flat', true, 2_000_000_000, 8_000_000_000)]);
      expect(highestPrices(m.hosts, 250_000)).toMatchObject({ input: 2_500_000_000, output: 15_000_000_000 });
      expect(highestPrices(m.hosts, 150_000)).toMatchObject({ input: 2_000_000_000, output: 10_000_000_000 });
    });
  });
});

describe('admission of the 1M-context beta (a host bills the long prompt it lets in at its long-context price)', () => {
  const BETA = 'context-1m-2025-08-07';
  const OTHER = 'interleaved-thinking-2025-05-14';
  const band = { input: 6, cacheRead: 1, cacheWrite: 8, cacheWrite1h: 12, output: 23 };
  const withBeta = (betas = [OTHER, BETA]): CanonicalRequest => ({
    ...request(100),
    betas,
    original: { format: 'messages', body: {} },
  });
  /** A host of `kind` serving Claude (`claude-…`: Anthropic's publisher on Vertex AI), with a long-context band when `banded`. */
  const claudeOn = (id: string, kind: HostKindName, banded: boolean, settings: Record<string, string> = {}): ModelHost => {
    const h = modelHost(id, { kind, input: 3, output: 15, bands: banded ? [{ aboveInputTokens: 200_000, prices: band }] : [] });
    return { ...h, model: `claude-sonnet-4-${id}`, host: { ...h.host, settings } };
  };
  const reserved = (plan: ReturnType<typeof planAdmission>) => {
    if (plan.kind !== 'reserve') throw new Error(`refused: ${plan.error.message}`);
    return plan;
  };
  const hostsOf = (plan: ReturnType<typeof planAdmission>) => reserved(plan).routes.map((r) => r.served.host.id);
  /** The betas each route's host is sent, by host. */
  const betasSent = (plan: ReturnType<typeof planAdmission>) =>
    Object.fromEntries(reserved(plan).routes.map((r) => [r.served.host.id, r.request.betas]));

  it('sends it only to the hosts whose catalogue entry has a long-context band, and leaves nothing out', () => {
    const m = model([claudeOn('plain', 'anthropic', false), claudeOn('banded', 'anthropic', true)]);
    const plan = planAdmission(m.slug, m, withBeta());
    expect(hostsOf(plan)).toEqual(['banded']);
    expect(betasSent(plan)).toEqual({ banded: [OTHER, BETA] });
    expect(reserved(plan).omittedBetas).toBeUndefined();
    // Without the beta, both serve; another beta does not count.
    expect(hostsOf(planAdmission(m.slug, m, withBeta([OTHER])))).toEqual(['plain', 'banded']);
    // A later version of the beta is the same feature.
    expect(hostsOf(planAdmission(m.slug, m, withBeta(['context-1m-2026-01-01'])))).toEqual(['banded']);
  });

  it("prefers a band among a `models` fallback's hosts too: the hosts without one are not tried", () => {
    const asked = model([claudeOn('plain', 'anthropic', false)]);
    const fallback = { ...model([claudeOn('banded', 'vertex', true)]), slug: 'vendor/fallback' };
    const plan = planAdmission(asked.slug, asked, withBeta(), { fallbacks: [{ requested: fallback.slug, model: fallback }] });
    expect(hostsOf(plan)).toEqual(['banded']);
    expect(reserved(plan).omittedBetas).toBeUndefined();
  });

  it('when no host has a band, leaves it out of the call to every host (the other betas sent) and names it, instead of refusing', () => {
    const m = model([
      claudeOn('claude', 'anthropic', false),
      claudeOn('vertex', 'vertex', false),
      claudeOn('invoke', 'bedrock', false, { api: 'invoke' }),
    ]);
    const plan = reserved(planAdmission(m.slug, m, withBeta()));
    expect(plan.omittedBetas).toEqual([BETA]);
    expect(betasSent(plan)).toEqual({ claude: [OTHER], vertex: [OTHER], invoke: [OTHER] });
    expect(plan.request.betas).toEqual([OTHER]);
    // Every version asked for is left out; with no other beta, none is sent.
    const both = reserved(planAdmission(m.slug, m, withBeta([BETA, 'context-1m-2026-01-01'])));
    expect(both.omittedBetas).toEqual([BETA, 'context-1m-2026-01-01']);
    expect(both.routes.map((r) => r.request.betas)).toEqual([[], [], []]);
  });

  it('when it is left out, holds and bills at the base prices, even for a prompt estimated past the window', () => {
    const m = model([claudeOn('claude', 'anthropic', false)]);
    const long = { ...withBeta(), messages: [{ role: 'user' as const, content: 'x'.repeat(4 * 300_000) }] };
    const plan = reserved(planAdmission(m.slug, m, long));
    expect(plan.prices).toMatchObject({ input: 3, output: 15 });
    expect(plan.amount).toBe(reservationFor(plan.estimate.inputTokens, 100, plan.prices));
  });

  it('does not hold to it the kinds the betas never reach (chat-completions, Converse, Gemini): they serve at their prices, nothing left out', () => {
    for (const h of [
      claudeOn('oai', 'openai', false),
      claudeOn('converse', 'bedrock', false),
      modelHost('gem', { kind: 'gemini' }),
    ]) {
      const plan = planAdmission('vendor/model', model([h]), withBeta());
      expect(hostsOf(plan)).toEqual([h.host.id]);
      expect(reserved(plan).omittedBetas).toBeUndefined();
    }
    // Beside a banded host they serve as well; beside an unbanded one, that one is sent the call without it.
    const converse = claudeOn('converse', 'bedrock', false);
    expect(hostsOf(planAdmission('vendor/model', model([converse, claudeOn('banded', 'anthropic', true)]), withBeta()))).toEqual([
      'converse',
      'banded',
    ]);
    const plain = planAdmission('vendor/model', model([converse, claudeOn('plain', 'anthropic', false)]), withBeta());
    expect(hostsOf(plain)).toEqual(['converse', 'plain']);
    expect(reserved(plain).omittedBetas).toEqual([BETA]);
  });
});

describe('insufficient credits (402)', () => {
  // Prices are per million tokens: 1 and 2 credits a token.
  const prices = host('h', true, 1_000_000_000_000_000, 2_000_000_000_000_000).prices;

  it('given a balance that covers the input and some output, says how many output tokens it could afford', () => {
    const error = insufficientCredits(10_000_000_000, { inputTokens: 4, outputTokens: 100 }, prices);
    expect(error.code).toBe('insufficient_credits');
    expect(error.message).toBe(
      'insufficient credits: 10 credits available, enough for at most 3 output tokens on this request (asked for 100); lower max_tokens or add credits',
    );
  });

  it('given a balance below the least cap its host takes (16 on the Responses API), does not suggest a lower max_tokens', () => {
    const estimate = { inputTokens: 4, outputTokens: 16, leastOutputTokens: 16 };
    expect(insufficientCredits(10_000_000_000, estimate, prices).message).toBe(
      'insufficient credits: 10 credits available, enough for at most 3 output tokens on this request, fewer than the 16 its host is sent at least; add credits',
    );
    expect(insufficientCredits(40_000_000_000, estimate, prices).message).toMatch(
      /enough for at most 18 output tokens .*lower max_tokens/,
    );
  });

  it('given a balance below the input alone, says so', () => {
    const error = insufficientCredits(3_000_000_000, { inputTokens: 4, outputTokens: 100 }, prices);
    expect(error.message).toBe("insufficient credits: 3 credits available, not enough for this request's input; add credits");
  });

  it('given a balance in debt, says it is negative and by how much, whatever the prices', () => {
    const debt =
      'insufficient credits: the balance is negative, 0.000000005 credits in debt (-0.000000005 available); ' +
      'no output tokens are affordable on this request until that is paid off; add credits';
    expect(insufficientCredits(-5, { inputTokens: 4, outputTokens: 100 }, prices).message).toBe(debt);
    // Free output affords no tokens either while the balance is in debt.
    expect(insufficientCredits(-5, { inputTokens: 4, outputTokens: 100 }, host('h', true, 1, 0).prices).message).toBe(debt);
    expect(insufficientCredits(-2_500_000_000, { inputTokens: 4, outputTokens: 100 }, prices).message).toMatch(
      /the balance is negative, 2\.5 credits in debt \(-2\.5 available\)/,
    );
  });

  it('given free output, the whole cap is affordable', () => {
    const error = insufficientCredits(0, { inputTokens: 4, outputTokens: 100 }, host('h', true, 1, 0).prices);
    expect(error.message).toMatch(/enough for at most 100 output tokens on this request \(asked for 100\)/);
  });
});

describe('admission of structured output (a host kind takes the modes its limits say)', () => {
  const asking = (outputFormat: CanonicalRequest['outputFormat'], original?: CanonicalRequest['original']): CanonicalRequest => ({
    ...request(100),
    outputFormat,
    ...(original ? { original } : {}),
  });
  const JSON_MODE = { type: 'json_object' } as const;
  const SCHEMA = { type: 'json_schema', schema: { type: 'object' } } as const;
  const chat = { format: 'chat-completions' as const, body: { response_format: { type: 'json_object' } } };

  it('does not try a host that takes a schema only for JSON mode: the others serve', () => {
    const claude = modelHost('claude', { kind: 'anthropic' });
    const gemini = modelHost('gemini', { kind: 'gemini' });
    const plan = planAdmission('vendor/model', model([claude, gemini]), asking(JSON_MODE, chat));
    expect(plan.kind === 'reserve' && plan.hosts.map((h) => h.host.id)).toEqual(['gemini']);
  });

  it("refuses JSON mode (400) when no host takes it, naming the field in the client's format, the host and what it takes", () => {
    const claude = modelHost('claude', { kind: 'anthropic' });
    const converse = modelHost('converse', { kind: 'bedrock' });
    converse.host.settings = { region: 'us-east-1', api: 'converse' };
    const plan = planAdmission('vendor/model', model([claude, converse]), asking(JSON_MODE, chat));
    expect(plan).toEqual({
      kind: 'refuse',
      model: 'vendor/model',
      error: expect.objectContaining({
        code: 'invalid_request',
        message:
          'no host of model "vendor/model" takes this request: response_format json_object: host claude takes structured output only as json_schema (its output_config.format); ' +
          'response_format json_object: host converse takes structured output only as json_schema (its outputConfig.textFormat)',
      }),
    });
    // A Gemini client (no body of its own) is told in its own terms.
    const gemini = planAdmission('vendor/model', model([claude]), asking(JSON_MODE));
    expect(gemini.kind === 'refuse' && gemini.error.message).toMatch(
      /generationConfig.responseMimeType "application\/json" without a schema: host claude takes structured output only as json_schema/,
    );
  });

  it("does not send JSON mode to OpenAI's API when no message says JSON (its 400): a compatible server, or a message saying it, is served", () => {
    const openai = modelHost('openai', { kind: 'openai' });
    openai.host.baseUrl = 'https://api.openai.com/v1';
    const refused = planAdmission('vendor/model', model([openai]), asking(JSON_MODE));
    expect(refused.kind === 'refuse' && refused.error.message).toMatch(
      /host openai takes JSON mode only when the messages say "JSON" \(say it, or give a schema\)/,
    );
    const saying = { ...asking(JSON_MODE), system: ['Answer in json.'] };
    expect(planAdmission('vendor/model', model([openai]), saying).kind).toBe('reserve');
    expect(planAdmission('vendor/model', model([openai]), asking(SCHEMA)).kind).toBe('reserve');
    expect(planAdmission('vendor/model', model([modelHost('vllm', { kind: 'openai' })]), asking(JSON_MODE)).kind).toBe('reserve');
  });

  it("does not send JSON mode to OpenAI's Responses API (or Azure's) when no input message says JSON: its instructions do not count", () => {
    const responses = modelHost('responses', { kind: 'openai-responses' });
    responses.host.baseUrl = 'https://api.openai.com/v1';
    const azure = modelHost('azure', { kind: 'azure' });
    azure.host.settings = {
      endpoint: 'https://acme.openai.azure.com',
      route: 'deployments',
      api: 'responses',
      apiVersion: '',
      auth: 'api-key',
    };
    // `request` says "Be brief." before a user's "Hello there": no JSON anywhere.
    for (const served of [responses, azure]) {
      const refused = planAdmission('vendor/model', model([served]), asking(JSON_MODE, chat));
      expect(refused.kind === 'refuse' && refused.error.message).toBe(
        `no host of model "vendor/model" takes this request: response_format json_object: host ${served.host.id} takes JSON mode only when the input messages, not the instructions, say "JSON" (say it, or give a schema)`,
      );
    }
    // Leading system text goes as `instructions`: not enough here, where a chat-completions host takes it.
    const openai = modelHost('openai', { kind: 'openai' });
    openai.host.baseUrl = 'https://api.openai.com/v1';
    const instructed = { ...asking(JSON_MODE, chat), system: ['Answer in json.'] };
    expect(planAdmission('vendor/model', model([responses]), instructed).kind).toBe('refuse');
    const either = planAdmission('vendor/model', model([responses, openai]), instructed);
    expect(either.kind === 'reserve' && either.hosts.map((h) => h.host.id)).toEqual(['openai']);
    // Said in a message, it is served; a schema needs no word; a server compatible with the format has no such rule.
    const told = { ...asking(JSON_MODE, chat), messages: [{ role: 'user' as const, content: 'Name an animal, as JSON' }] };
    expect(planAdmission('vendor/model', model([responses, azure]), told).kind).toBe('reserve');
    expect(planAdmission('vendor/model', model([responses, azure]), asking(SCHEMA, chat)).kind).toBe('reserve');
    const compatible = modelHost('vllm', { kind: 'openai-responses' });
    expect(planAdmission('vendor/model', model([compatible]), asking(JSON_MODE, chat)).kind).toBe('reserve');

    // A Responses client's body goes whole: its input is read as sent, its instructions not.
    const whole = (body: Record<string, unknown>): CanonicalRequest => ({
      ...asking(JSON_MODE, { format: 'responses', body: { text: { format: { type: 'json_object' } }, ...body } }),
      system: ['Reply in json.'],
    });
    const inInstructions = whole({ instructions: 'Reply in json.', input: 'Hello there' });
    const refused = planAdmission('vendor/model', model([responses]), inInstructions);
    expect(refused.kind === 'refuse' && refused.error.message).toMatch(
      /: text\.format json_object: host responses takes JSON mode only when the input messages, not the instructions, say "JSON"/,
    );
    const inInput = whole({
      input: [
        { role: 'developer', content: 'Reply in json.' },
        { role: 'user', content: 'Hello there' },
      ],
    });
    expect(planAdmission('vendor/model', model([responses]), inInput).kind).toBe('reserve');
  });

  it('does not send structured output beside function tools to Gemini before 3 (its 400); Gemini 3 takes both', () => {
    const tools = [{ name: 'lookup', description: 'Looks up', parameters: { type: 'object' } }];
    const withTools = { ...asking(SCHEMA), tools } as CanonicalRequest;
    const gemini25 = { ...modelHost('g25', { kind: 'gemini' }), model: 'gemini-2.5-flash' };
    const gemini3 = { ...modelHost('g3', { kind: 'gemini' }), model: 'gemini-3-pro-preview' };
    const plan = planAdmission('vendor/model', model([gemini25, gemini3]), withTools);
    expect(plan.kind === 'reserve' && plan.hosts.map((h) => h.host.id)).toEqual(['g3']);
    const refused = planAdmission('vendor/model', model([gemini25]), withTools);
    expect(refused.kind === 'refuse' && refused.error.message).toMatch(
      /with function tools: host g25 \(gemini-2\.5-flash\) takes structured output only without them/,
    );
    expect(planAdmission('vendor/model', model([gemini25]), asking(SCHEMA)).kind).toBe('reserve');
  });

  it('serves a schema on every kind, translated or whole', () => {
    const kinds = ['openai', 'openai-responses', 'anthropic', 'gemini', 'bedrock'] as HostKindName[];
    const hosts = kinds.map((kind) => modelHost(kind, { kind }));
    hosts[4].host.settings = { region: 'us-east-1', api: 'converse' };
    const plan = planAdmission('vendor/model', model(hosts), asking(SCHEMA, chat));
    expect(plan.kind === 'reserve' && plan.hosts.length).toBe(5);
  });
});
