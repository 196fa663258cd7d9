import { settledCharge, type ReservationSettled } from '../../src/ledger/ledger.events';
import { DEFAULT_REPLY, type FakeUpstream } from '../support/fake-upstream';
import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { LogCapture } from '../support/log-capture';
import { catalogueWithNewKinds, NEW_KIND_KEYS, NEW_KIND_MODELS, receivedFor, useAwsTestCredentials } from '../support/new-kinds';

/**
 * Anthropic's 1M-context beta through the messages surface: a host that takes it bills every token of
 * a prompt past 200K at its long-context price, so admission sends it only to a host whose catalogue
 * entry gives that price (`longContext`) when the model has one. When none has, the request is served
 * with the beta left out of the call (the other betas passed on), which keeps the prompt to the host's
 * usual window and its base price: the reply's `x-gateway-omitted-betas` and the request's log line
 * name it. Hosts of another format never get the betas, and serve.
 */
const BETA = 'context-1m-2025-08-07';
const OTHER = 'interleaved-thinking-2025-05-14';
const OMITTED = 'x-gateway-omitted-betas';
/** Claude Sonnet 4's prices on Anthropic: $3 / $15, above 200K input tokens $6 / $22.50. */
const PRICING = { input: '3.00', output: '15.00' };
const BAND = { aboveInputTokens: 200_000, input: '6.00', output: '22.50' };

/** On the anthropic host, with the long-context band. */
const PRICED = { slug: 'test/claude-1m', id: 'c1c1c1c1-c1c1-4c1c-8c1c-c1c1c1c1c1c1', hostModel: 'fake-claude-1m' };
/** Two anthropic hosts: the first (tried first without the beta) has no band, the second has one. */
const TWO_HOSTS = {
  slug: 'test/claude-two-hosts',
  id: 'c2c2c2c2-c2c2-4c2c-8c2c-c2c2c2c2c2c2',
  unpriced: 'fake-claude-unpriced',
  priced: 'fake-claude-priced',
};
/** On the anthropic host without a band, whose fake refuses every prompt as too long (what a host does past its window). */
const WINDOW = { slug: 'test/claude-window', id: 'c3c3c3c3-c3c3-4c3c-8c3c-c3c3c3c3c3c3', hostModel: 'fake-claude-window' };
/** The test catalogue's Claude has no band. */
const UNPRICED = TEST_MODELS.claude;
/** InvokeModel (Anthropic's body, the betas in it as `anthropic_beta`), no band. */
const INVOKE = NEW_KIND_MODELS.bedrockInvoke;

const chatModel = (m: { slug: string; id: string }, hosts: object[]) => ({
  slug: m.slug,
  id: m.id,
  name: m.slug,
  contextLength: 1_000_000,
  maxOutputTokens: 1000,
  hosts,
});

function catalogue(fake: FakeUpstream) {
  const file = catalogueWithNewKinds(fake);
  return {
    ...file,
    models: [
      ...file.models,
      chatModel(PRICED, [{ host: 'fake-anthropic', model: PRICED.hostModel, pricing: PRICING, longContext: BAND }]),
      chatModel(TWO_HOSTS, [
        { host: 'fake-anthropic', model: TWO_HOSTS.unpriced, pricing: PRICING },
        { host: 'fake-anthropic-flaky', model: TWO_HOSTS.priced, pricing: PRICING, longContext: BAND },
      ]),
      chatModel(WINDOW, [{ host: 'fake-anthropic', model: WINDOW.hostModel, pricing: PRICING }]),
    ],
  };
}

let g: TestGateway;
let restoreAws: () => void;
const log = new LogCapture();
beforeAll(async () => {
  restoreAws = useAwsTestCredentials();
  g = await startGateway({ catalogue, hostKeys: NEW_KIND_KEYS, logStream: log });
});
afterAll(async () => {
  await g.settled();
  const report = await g.audit();
  expect(report.differences).toEqual([]);
  await g.close();
  restoreAws();
});

/** A messages client's request of `model`, with `betas` in its `anthropic-beta` header. */
const ask = (model: string, betas: string[] = [OTHER, BETA], stream = false) =>
  fetch(`${g.baseUrl}/api/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': g.key,
      'anthropic-version': '2023-06-01',
      'anthropic-beta': betas.join(','),
    },
    body: JSON.stringify({ model, max_tokens: 100, stream, messages: [{ role: 'user', content: 'Read the whole repository.' }] }),
  });

const balance = () => g.t.runtime.projections.balance(g.orgId);
const callsFor = (hostModel: string) => g.fake.requests.filter((r) => r.body?.model === hostModel).length;
/** The settlement of the request a reply names. */
async function settlementOf(res: Response): Promise<ReservationSettled['data']> {
  const requestId = res.headers.get('x-request-id')!;
  await g.logged(requestId);
  const events = await g.t.runtime.events.readAll(0, 100_000);
  const settled = events.find(
    (e) => e.type === 'ReservationSettled' && (e.data as { requestId: string }).requestId === requestId,
  );
  return settled!.data as ReservationSettled['data'];
}

describe('a messages request with the 1M-context beta', () => {
  it('toward a host whose long-context price is configured is served, the beta passed on and nothing left out', async () => {
    const res = await ask(PRICED.slug);
    expect(res.status).toBe(200);
    expect(res.headers.has(OMITTED)).toBe(false);
    await res.text();
    const upstream = await g.fake.received(PRICED.hostModel);
    expect(upstream.headers['anthropic-beta']).toBe(`${OTHER},${BETA}`);
  });

  it.each([
    ['whole', false],
    ['streamed', true],
  ])(
    'toward a model whose host has no long-context price is served %s with the beta left out of the call, the reply and the log line naming it, billed at the base prices',
    async (_name, stream) => {
      const before = g.fake.requests.length;
      const res = await ask(UNPRICED.slug, [OTHER, BETA], stream);
      expect(res.status).toBe(200);
      expect(res.headers.get(OMITTED)).toBe(BETA);
      await res.text();
      const [upstream] = g.fake.requests.slice(before);
      expect(upstream.body.model).toBe(UNPRICED.hostModel);
      // The host got the other betas, and not the one left out.
      expect(upstream.headers['anthropic-beta']).toBe(OTHER);
      const line = await log.request(res.headers.get('x-request-id')!);
      expect(line).toMatchObject({ status: 200, outcome: 'ok', omittedBetas: [BETA] });
      // The fake's usage, 12 input and 6 output tokens: 12 × $3 + 6 × $15 = $126 per million tokens,
      // 126,000 nano-credits, at the base prices; and so from the event alone.
      const settled = await settlementOf(res);
      expect(settled).toMatchObject({
        host: 'fake-anthropic',
        inputTokens: 12,
        outputTokens: 6,
        prices: { input: 3_000_000_000, output: 15_000_000_000 },
        amount: 126_000,
      });
      expect(settledCharge(settled)).toBe(settled.amount);
    },
  );

  it('with no other beta asked for, reaches the host with no anthropic-beta header at all', async () => {
    const before = g.fake.requests.length;
    const res = await ask(UNPRICED.slug, [BETA]);
    expect(res.status).toBe(200);
    expect(res.headers.get(OMITTED)).toBe(BETA);
    await res.text();
    expect(g.fake.requests.slice(before).map((r) => r.headers)).toEqual([
      expect.not.objectContaining({ 'anthropic-beta': expect.anything() }),
    ]);
  });

  it('toward a Bedrock InvokeModel host without the price is served with the beta left out of the body’s `anthropic_beta`, the others in it', async () => {
    const before = g.fake.requests.length;
    const res = await ask(INVOKE.slug);
    expect(res.status).toBe(200);
    expect(res.headers.get(OMITTED)).toBe(BETA);
    await res.text();
    const [upstream] = receivedFor(g, INVOKE, before);
    expect(upstream.body.anthropic_beta).toEqual([OTHER]);
    const only = g.fake.requests.length;
    const alone = await ask(INVOKE.slug, [BETA]);
    expect(alone.status).toBe(200);
    await alone.text();
    expect(receivedFor(g, INVOKE, only)[0].body).not.toHaveProperty('anthropic_beta');
  });

  it('past the host’s usual window, gets the host’s own 400 (the reply naming the beta left out): nothing held stays, nothing billed', async () => {
    g.fake.on(WINDOW.hostModel, {
      kind: 'status',
      status: 400,
      body: JSON.stringify({
        type: 'error',
        error: { type: 'invalid_request_error', message: 'prompt is too long: 250000 tokens > 200000 maximum' },
      }),
    });
    await g.settled();
    const before = await balance();
    const res = await ask(WINDOW.slug);
    expect(res.status).toBe(400);
    expect(res.headers.get(OMITTED)).toBe(BETA);
    const { error } = (await res.json()) as { error: { type: string; message: string } };
    expect(error.type).toBe('invalid_request_error');
    expect(error.message).toBe(
      'provider fake-anthropic rejected the request: prompt is too long: 250000 tokens > 200000 maximum',
    );
    expect((await g.fake.received(WINDOW.hostModel)).headers['anthropic-beta']).toBe(OTHER);
    await g.settled();
    await g.t.runtime.projector.catchUp();
    expect(await balance()).toEqual(before);
  });

  it('toward a model with a host that has the price and one that has not, goes to the one that has it, nothing left out', async () => {
    const res = await ask(TWO_HOSTS.slug);
    expect(res.status).toBe(200);
    expect(res.headers.has(OMITTED)).toBe(false);
    await res.text();
    expect(callsFor(TWO_HOSTS.priced)).toBe(1);
    expect(callsFor(TWO_HOSTS.unpriced)).toBe(0);
    expect((await g.fake.received(TWO_HOSTS.priced)).headers['anthropic-beta']).toBe(`${OTHER},${BETA}`);
    // Without the beta, the first host serves as usual.
    const plain = await ask(TWO_HOSTS.slug, [OTHER]);
    expect(plain.status).toBe(200);
    await plain.text();
    expect(callsFor(TWO_HOSTS.unpriced)).toBe(1);
  });

  it('toward a chat-completions host is served without the betas, which that format has no header for, nothing named left out', async () => {
    const res = await ask(TEST_MODELS.gpt.slug);
    expect(res.status).toBe(200);
    expect(res.headers.has(OMITTED)).toBe(false);
    await res.text();
    expect(g.fake.requests.at(-1)!.headers).not.toHaveProperty('anthropic-beta');
  });

  it('counted (count_tokens, which bills nothing) reaches a host without the price with every beta', async () => {
    g.fake.on(UNPRICED.hostModel, { kind: 'count', inputTokens: 4242 });
    const res = await fetch(`${g.baseUrl}/api/v1/messages/count_tokens`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': g.key,
        'anthropic-version': '2023-06-01',
        'anthropic-beta': `${OTHER},${BETA}`,
      },
      body: JSON.stringify({ model: UNPRICED.slug, messages: [{ role: 'user', content: 'Read the whole repository.' }] }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.has(OMITTED)).toBe(false);
    expect(await res.json()).toEqual({ input_tokens: 4242 });
    expect(g.fake.requests.at(-1)!.headers['anthropic-beta']).toBe(`${OTHER},${BETA}`);
    g.fake.on(UNPRICED.hostModel, { kind: 'reply', reply: DEFAULT_REPLY });
  });

  it('in the body (Bedrock’s `anthropic_beta`) is refused naming the field, toward any host: no host called', async () => {
    const calls = g.fake.requests.length;
    const res = await fetch(`${g.baseUrl}/api/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': g.key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: INVOKE.slug,
        max_tokens: 100,
        anthropic_beta: [BETA],
        messages: [{ role: 'user', content: 'Read the whole repository.' }],
      }),
    });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { type: string; message: string } };
    expect(error.type).toBe('invalid_request_error');
    expect(error.message).toMatch(/anthropic_beta.*is not taken in the body: send betas in the anthropic-beta header/);
    expect(g.fake.requests.length).toBe(calls);
  });
});
