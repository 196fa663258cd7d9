import { randomUUID } from 'node:crypto';
import { ReservationReleased, ReservationSettled, settledUsage } from '../../../src/ledger/ledger.events';
import type { TokenUsage } from '../../../src/ledger/money';
import type { FakeUpstream, FakeUsage, ReceivedRequest } from '../../support/fake-upstream';
import { auditThenClose, startGateway, TestGateway } from '../../support/gateway';
import { createKey } from '../../support/keys';
import { eventually } from '../../support/processes';
import { fundedOrganization } from '../../support/runtime';
import { callSurface, CHAT_COMPLETIONS, CHAT_SURFACES, Asked, Surface, WEATHER } from '../../support/surfaces';
import { ContractKind, CONTRACT_KINDS, KindFixture, ListPrices } from './kinds';

/**
 * The host contract: what every host kind does through the real gateway, against its fake, from
 * every client surface — text, a tool call with its arguments streamed, reasoning, images; each
 * token class billed at its price, whole and streamed; a cut stream billed for what was
 * delivered; each upstream error status answered in the caller's format, the ones worth it
 * falling back to the next host; absurd usage not believed; the cap lowered; the ledger clean.
 * Run once per entry of CONTRACT_KINDS, each on its own gateway and fake.
 */

/** The catalogue's output limit for the contract's models: room to think (a low effort is a fifth of the cap, Anthropic takes 1,024 at least). */
const MAX_OUTPUT = 16_000;
const TEXT = 'Sunny in Paris today.';
const THINKING = 'The user wants the weather.';
const CALL = { id: 'call_weather_1', name: WEATHER.name, arguments: '{"city":"Paris"}' };
/** A 1×1 transparent PNG, inline. */
const IMAGE =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
/** The error statuses a host answers with; all but a 400 (the request's own fault) make the gateway try the next host. */
const STATUSES = [400, 401, 403, 404, 429, 500, 503];
const FALLBACK_STATUSES = STATUSES.filter((status) => status !== 400);

/** The contract's model on a kind: its one host, and a second model whose first host fails before the kind's host serves it. */
const modelsOf = (k: ContractKind) => {
  const named = k.hostModel ?? ((name: string) => name);
  return {
    host: `contract-${k.kind}`,
    firstHost: `contract-${k.kind}-first`,
    slug: `contract/${k.kind}`,
    hostModel: named(`${k.kind}-model`),
    fallbackSlug: `contract/${k.kind}-fallback`,
    firstHostModel: named(`${k.kind}-first`),
    secondHostModel: named(`${k.kind}-second`),
  };
};

function catalogueOf(k: ContractKind, fake: FakeUpstream, fixture: KindFixture | undefined) {
  const m = modelsOf(k);
  // Called once per request: the fallback is what this suite checks (retries are test/routing's).
  const host = (id: string) => ({ ...k.host(fake, id), retry: { attempts: 0 }, ...fixture?.hostFields });
  const model = (slug: string, hosts: unknown[]) => ({
    slug,
    id: randomUUID(),
    name: slug,
    contextLength: 128_000,
    maxOutputTokens: MAX_OUTPUT,
    reasoning: k.supports.reasoning,
    hosts,
  });
  return {
    hosts: [host(m.host), host(m.firstHost)],
    models: [
      model(m.slug, [{ host: m.host, model: m.hostModel, pricing: k.prices }]),
      model(m.fallbackSlug, [
        // Dear, so that a charge at its prices would show.
        { host: m.firstHost, model: m.firstHostModel, pricing: { input: '9.00', output: '9.00' } },
        { host: m.host, model: m.secondHostModel, pricing: k.prices },
      ]),
    ],
  };
}

/** A list price (US dollars per million tokens) in nano-credits per million tokens, exactly. */
function nanoPerMillion(price: string): bigint {
  const [whole, fraction = ''] = price.split('.');
  return BigInt(whole) * 1_000_000_000n + BigInt(fraction.padEnd(9, '0'));
}

const tokensOf = (u: FakeUsage): TokenUsage => ({
  inputTokens: u.input,
  cacheReadTokens: u.cacheRead ?? 0,
  cacheWriteTokens: u.cacheWrite ?? 0,
  cacheWrite1hTokens: u.cacheWrite1h ?? 0,
  outputTokens: u.output,
});

/** The token classes (hosted-tool uses are priced per use, not here). */
type TokenClass = Exclude<keyof TokenUsage, 'hostedToolUses'>;

const PRICE_OF: Record<TokenClass, keyof ListPrices> = {
  inputTokens: 'input',
  cacheReadTokens: 'cacheRead',
  cacheWriteTokens: 'cacheWrite',
  cacheWrite1hTokens: 'cacheWrite1h',
  outputTokens: 'output',
};

/** Σ tokens × price (nano-credits per million), before dividing by a million; every class with tokens must have a listed price. */
function chargeTimesMillion(tokens: TokenUsage, prices: ListPrices): bigint {
  let sum = 0n;
  for (const [cls, n] of Object.entries(tokens) as Array<[TokenClass, number]>) {
    if (n === 0) continue;
    const price = prices[PRICE_OF[cls]];
    if (price === undefined) throw new Error(`the contract entry reports ${cls} but lists no ${PRICE_OF[cls]} price`);
    sum += BigInt(n) * nanoPerMillion(price);
  }
  return sum;
}

/** ceil(Σ tokens × price / 1e6) nano-credits. */
const chargeOf = (tokens: TokenUsage, prices: ListPrices): number => {
  const sum = chargeTimesMillion(tokens, prices);
  return Number((sum + 999_999n) / 1_000_000n);
};

/** Each request is sent with its own id, to find its events by. */
const newRequestId = () => `req_contract_${randomUUID().replace(/-/g, '')}`;

describe.each(CONTRACT_KINDS)('the $kind host kind', (k) => {
  const m = modelsOf(k);
  let g: TestGateway;
  let fixture: KindFixture | undefined;

  beforeAll(async () => {
    fixture = await k.setup?.();
    g = await startGateway({ catalogue: (fake) => catalogueOf(k, fake, fixture), hostKeys: fixture?.hostKeys });
  });
  afterAll(async () => {
    try {
      await auditThenClose(g);
    } finally {
      await fixture?.close();
    }
  });

  async function call(surface: Surface, slug: string, stream: boolean, asked: Asked = {}, key = g.key) {
    const requestId = newRequestId();
    const answer = await callSurface(g.baseUrl, key, surface, slug, stream, asked, requestId);
    return { ...answer, requestId };
  }

  /** The ledger's resolution of a request: its settlement, or its release. */
  async function resolutionOf(requestId: string): Promise<ReservationSettled | ReservationReleased> {
    let found: { type: string; data: unknown } | undefined;
    await eventually(async () => {
      const log = await g.t.runtime.events.readAll(0, 1_000_000);
      found = log.find(
        (e) =>
          (e.type === 'ReservationSettled' || e.type === 'ReservationReleased') &&
          (e.data as { requestId: string }).requestId === requestId,
      );
      return found !== undefined;
    }, 15_000);
    return found as ReservationSettled | ReservationReleased;
  }

  async function settlementOf(requestId: string): Promise<ReservationSettled['data']> {
    const resolution = await resolutionOf(requestId);
    expect(resolution.type).toBe('ReservationSettled');
    return (resolution as ReservationSettled).data;
  }

  /** The requests the fake received for a host model, and the last of them. */
  const modelOf = k.modelOf ?? ((r: ReceivedRequest) => r.body?.model);
  const received = (hostModel: string) => g.fake.requests.filter((r) => modelOf(r) === hostModel);
  const sent = (hostModel: string) => received(hostModel).at(-1)!;

  it('lists prices that make the rounding up show: Σ tokens × price is not a whole million', () => {
    expect(chargeTimesMillion(tokensOf(k.usage), k.prices) % 1_000_000n).not.toBe(0n);
  });

  describe.each(CHAT_SURFACES)('from the $name surface', (surface) => {
    describe.each([false, true])('streamed: %s', (stream) => {
      it('answers with the host’s text, called on the kind’s route with its credentials', async () => {
        g.fake.on(m.hostModel, { kind: 'reply', reply: { text: TEXT } });
        const { res, text } = await call(surface, m.slug, stream);
        expect(res.status).toBe(200);
        expect(surface.read(text, stream).text).toBe(TEXT);
        const upstream = sent(m.hostModel);
        expect(upstream.path).toBe(k.path(m.hostModel, stream));
        expect(k.authorized(upstream)).toBe(true);
      });

      if (k.supports.tools) {
        it('carries the tools offered and a call with its arguments, streamed in pieces (whole from a host that sends them so)', async () => {
          g.fake.on(m.hostModel, { kind: 'reply', reply: { toolCalls: [CALL] } });
          const { res, text } = await call(surface, m.slug, stream, { tools: true });
          expect(res.status).toBe(200);
          expect(k.sent.tools(sent(m.hostModel).body)).toEqual([WEATHER.name]);
          const out = surface.read(text, stream);
          expect(out.calls).toEqual([CALL]);
          if (stream) expect(out.argumentPieces).toBeGreaterThanOrEqual(k.wholeCalls ? 1 : 2);
        });
      }

      if (k.supports.reasoning) {
        it('asks for reasoning, and carries it before the text', async () => {
          g.fake.on(m.hostModel, { kind: 'reply', reply: { thinking: THINKING, text: TEXT } });
          const { res, text } = await call(surface, m.slug, stream);
          expect(res.status).toBe(200);
          expect(k.sent.reasoning(sent(m.hostModel).body)).toBe(true);
          expect(surface.read(text, stream)).toMatchObject({ reasoning: THINKING, text: TEXT });
        });
      }

      if (k.supports.images && surface.images) {
        it('carries an image to the host', async () => {
          g.fake.on(m.hostModel, { kind: 'reply', reply: { text: TEXT } });
          const { res } = await call(surface, m.slug, stream, { image: IMAGE });
          expect(res.status).toBe(200);
          expect(k.sent.images(sent(m.hostModel).body)).toEqual([IMAGE]);
        });
      }

      it('bills every token class the kind reports at its price: ceil(Σ tokens × price / 1e6)', async () => {
        g.fake.on(m.hostModel, { kind: 'reply', reply: { text: TEXT, usage: k.usage } });
        const { res, text, requestId } = await call(surface, m.slug, stream);
        expect(res.status).toBe(200);
        // The client is shown the output, reasoning included, and how much of it was reasoning.
        expect(surface.usage(text, stream)).toEqual({ output: k.usage.output, reasoning: k.usage.reasoning ?? 0 });
        const tokens = tokensOf(k.usage);
        const amount = chargeOf(tokens, k.prices);
        expect(await settlementOf(requestId)).toMatchObject({
          status: 'ok',
          host: m.host,
          hostModel: m.hostModel,
          ...tokens,
          amount,
        });
        // The request log shows the same, the cache's writes of both lifetimes together.
        expect(await g.logged(requestId)).toMatchObject({
          inputTokens: tokens.inputTokens,
          cacheReadTokens: tokens.cacheReadTokens,
          cacheWriteTokens: tokens.cacheWriteTokens + tokens.cacheWrite1hTokens,
          outputTokens: tokens.outputTokens,
          cost: amount,
        });
      });

      it('does not believe absurd usage: 10^12 output tokens are billed as the text delivered', async () => {
        g.fake.on(m.hostModel, { kind: 'reply', reply: { text: TEXT, wireUsage: k.wireUsage('12', '1e12') } });
        const { res, text, requestId } = await call(surface, m.slug, stream);
        expect(res.status).toBe(200);
        expect(surface.read(text, stream).text).toBe(TEXT);
        const settled = await settlementOf(requestId);
        expect(settled.usageFlag).toMatch(/exceed the cap/);
        const tokens = tokensOf({ input: 12, output: Math.ceil(TEXT.length / 4) });
        expect(settled).toMatchObject({ ...tokens, amount: chargeOf(tokens, k.prices) });
      });
    });

    it.each(STATUSES)('answers a host’s %d in the caller’s format, billing nothing, whole and streamed', async (status) => {
      for (const stream of [false, true]) {
        g.fake.on(m.hostModel, { kind: 'status', status });
        const { res, text, requestId } = await call(surface, m.slug, stream);
        // The host refusing the request itself is the caller's to fix; any other failure is the provider's.
        const refused = status === 400;
        expect(res.status).toBe(refused ? 400 : 502);
        const error = surface.error(text);
        expect(error.type).toBe(ERROR_TYPES[surface.name][refused ? 'refused' : 'failed']);
        // What the host said, read from its error body in the kind's format.
        expect(error.message).toContain(`provider ${m.host}`);
        expect(error.message).toContain(`Fake upstream error (HTTP ${status}).`);
        const resolution = await resolutionOf(requestId);
        expect(resolution.type).toBe('ReservationReleased');
      }
    });

    it.each(FALLBACK_STATUSES)('falls back to the next host on a %d before output, whole and streamed', async (status) => {
      for (const stream of [false, true]) {
        g.fake.on(m.firstHostModel, { kind: 'status', status });
        g.fake.on(m.secondHostModel, { kind: 'reply', reply: { text: TEXT, usage: k.usage } });
        const tried = received(m.firstHostModel).length;
        const { res, text, requestId } = await call(surface, m.fallbackSlug, stream);
        expect(res.status).toBe(200);
        expect(surface.read(text, stream).text).toBe(TEXT);
        // The first host was called, once, on the kind's route.
        expect(received(m.firstHostModel)).toHaveLength(tried + 1);
        expect(sent(m.firstHostModel).path).toBe(k.path(m.firstHostModel, stream));
        const tokens = tokensOf(k.usage);
        // Billed by the host that served, at its prices.
        expect(await settlementOf(requestId)).toMatchObject({
          host: m.host,
          hostModel: m.secondHostModel,
          ...tokens,
          amount: chargeOf(tokens, k.prices),
        });
      }
    });

    it('does not fall back on a 400: the request itself was refused, and the next host would refuse it too', async () => {
      g.fake.on(m.firstHostModel, { kind: 'status', status: 400 });
      const served = received(m.secondHostModel).length;
      const { res, text, requestId } = await call(surface, m.fallbackSlug, false);
      expect(res.status).toBe(400);
      expect(surface.error(text).message).toContain(`provider ${m.firstHost} rejected the request`);
      expect(received(m.secondHostModel)).toHaveLength(served);
      expect((await resolutionOf(requestId)).type).toBe('ReservationReleased');
    });

    it('bills a cut stream for what was delivered', async () => {
      g.fake.on(m.hostModel, { kind: 'cut', reply: { text: 'one two three four five six', usage: k.usage }, afterPieces: 3 });
      const { res, text, requestId } = await call(surface, m.slug, true);
      expect(res.status).toBe(200);
      expect(surface.read(text, true).text).toBe('one two three');
      const settled = await settlementOf(requestId);
      expect(settled.status).toBe('provider_error');
      // The output is the gateway's count of the three words delivered (4 characters a token), the
      // input the host's when it counted it up front, else the gateway's estimate; each at its price.
      expect(settled.outputTokens).toBe(Math.ceil('one two three'.length / 4));
      expect(settled.inputTokens).toBeGreaterThan(0);
      expect(settled.amount).toBe(chargeOf(settledUsage(settled), k.prices));
    });

    it('ends a stream whose host fails after output with an error in the caller’s format, billing what was delivered', async () => {
      g.fake.on(m.hostModel, { kind: 'stream_error', afterPieces: 2 });
      const { res, text, requestId } = await call(surface, m.slug, true);
      expect(res.status).toBe(200);
      // The fake's default reply, cut after its first two words by the host's error event.
      expect(surface.read(text, true).text).toBe('Hello from');
      const error = surface.streamError(text);
      expect(error).not.toBeNull();
      expect(error!.type).toBe(ERROR_TYPES[surface.name].failed);
      expect(error!.message).toContain(`provider ${m.host}`);
      const settled = await settlementOf(requestId);
      expect(settled.status).toBe('provider_error');
      expect(settled.outputTokens).toBe(Math.ceil('Hello from'.length / 4));
    });

    it('lowers a cap above the model’s limit to it, in the kind’s own field', async () => {
      g.fake.on(m.hostModel, { kind: 'reply', reply: { text: TEXT } });
      const { res } = await call(surface, m.slug, false, { maxTokens: 32_000 });
      expect(res.status).toBe(200);
      expect(k.sent.cap(sent(m.hostModel).body)).toBe(MAX_OUTPUT);
    });
  });

  it('refuses what the balance cannot cover with the output tokens it affords; asked for that many, the host gets that cap', async () => {
    // A balance for the input and about 300 output tokens at the output price.
    const output = Number(nanoPerMillion(k.prices.output));
    const orgId = await fundedOrganization(g.t.runtime, Math.ceil((300 * output) / 1e6) + 100_000);
    const { secret } = await createKey(g.t.runtime, orgId, 'a small balance');
    await g.t.runtime.projector.catchUp();
    const before = g.fake.requests.length;

    const refused = await call(CHAT_COMPLETIONS, m.slug, false, { maxTokens: MAX_OUTPUT }, secret);
    expect(refused.res.status).toBe(402);
    const affords = /enough for at most (\d+) output tokens/.exec(CHAT_COMPLETIONS.error(refused.text).message);
    expect(affords).not.toBeNull();
    const cap = Number(affords![1]);
    expect(cap).toBeGreaterThan(0);
    expect(cap).toBeLessThan(MAX_OUTPUT);
    expect(g.fake.requests.length).toBe(before);

    g.fake.on(m.hostModel, { kind: 'reply', reply: { text: TEXT } });
    const served = await call(CHAT_COMPLETIONS, m.slug, false, { maxTokens: cap }, secret);
    expect(served.res.status).toBe(200);
    expect(k.sent.cap(sent(m.hostModel).body)).toBe(cap);
    expect((await settlementOf(served.requestId)).orgId).toBe(orgId);
  });
});

/** The error type each surface answers with: the host refused the request, or failed. */
const ERROR_TYPES: Record<Surface['name'], { refused: string; failed: string }> = {
  'chat-completions': { refused: 'invalid_request_error', failed: 'provider_error' },
  responses: { refused: 'invalid_request_error', failed: 'provider_error' },
  messages: { refused: 'invalid_request_error', failed: 'api_error' },
  native: { refused: 'invalid_request', failed: 'provider_error' },
};
