import { startGateway, TEST_MODELS, TestGateway, testCatalogueWith } from '../support/gateway';

/**
 * Anthropic's 1M-context beta through the messages surface: a host that takes it bills every token of
 * a prompt past 200K at its long-context price, so admission sends it only to a host whose catalogue
 * entry gives that price (`longContext`). With none, the client gets a 400 naming the beta before
 * anything is held or any host is called. Hosts of another format never get the betas, and serve.
 */
const BETA = 'context-1m-2025-08-07';
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
/** The test catalogue's Claude has no band. */
const UNPRICED = TEST_MODELS.claude;

const chatModel = (m: { slug: string; id: string }, hosts: object[]) => ({
  slug: m.slug,
  id: m.id,
  name: m.slug,
  contextLength: 1_000_000,
  maxOutputTokens: 1000,
  hosts,
});

let g: TestGateway;
beforeAll(async () => {
  g = await startGateway({
    catalogue: testCatalogueWith(
      chatModel(PRICED, [{ host: 'fake-anthropic', model: PRICED.hostModel, pricing: PRICING, longContext: BAND }]),
      chatModel(TWO_HOSTS, [
        { host: 'fake-anthropic', model: TWO_HOSTS.unpriced, pricing: PRICING },
        { host: 'fake-anthropic-flaky', model: TWO_HOSTS.priced, pricing: PRICING, longContext: BAND },
      ]),
    ),
  });
});
afterAll(async () => {
  await g.settled();
  const report = await g.audit();
  expect(report.differences).toEqual([]);
  await g.close();
});

/** A messages client's request of `model`, with `betas` in its `anthropic-beta` header. */
const ask = (model: string, betas: string[] = ['interleaved-thinking-2025-05-14', BETA]) =>
  fetch(`${g.baseUrl}/api/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': g.key,
      'anthropic-version': '2023-06-01',
      'anthropic-beta': betas.join(','),
    },
    body: JSON.stringify({ model, max_tokens: 100, messages: [{ role: 'user', content: 'Read the whole repository.' }] }),
  });

const balance = () => g.t.runtime.projections.balance(g.orgId);
const reservations = async () =>
  (await g.t.runtime.events.readAll(0, 100_000)).filter((e) => e.type === 'CreditsReserved').length;
const callsFor = (hostModel: string) => g.fake.requests.filter((r) => r.body?.model === hostModel).length;

describe('a messages request with the 1M-context beta', () => {
  it('toward a host whose long-context price is configured is served, the beta passed on', async () => {
    const res = await ask(PRICED.slug);
    expect(res.status).toBe(200);
    await res.text();
    const upstream = await g.fake.received(PRICED.hostModel);
    expect(upstream.headers['anthropic-beta']).toBe(`interleaved-thinking-2025-05-14,${BETA}`);
  });

  it('toward a model whose host has no long-context price is refused (400, messages format) naming the beta: no host called, nothing held or billed', async () => {
    await g.settled();
    const before = await balance();
    const reserved = await reservations();
    const calls = g.fake.requests.length;
    const res = await ask(UNPRICED.slug);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message:
          `no host of model "${UNPRICED.slug}" takes this request: anthropic-beta: ${BETA}: the long-context price of host ` +
          `fake-anthropic (${UNPRICED.hostModel}) is not configured (no "longContext" in its catalogue entry): ` +
          'leave the beta out, or use a model whose host has one',
      },
    });
    expect(g.fake.requests.length).toBe(calls);
    expect(await reservations()).toBe(reserved);
    await g.t.runtime.projector.catchUp();
    expect(await balance()).toEqual(before);
  });

  it('toward a model with a host that has the price and one that has not, goes to the one that has it', async () => {
    const res = await ask(TWO_HOSTS.slug);
    expect(res.status).toBe(200);
    await res.text();
    expect(callsFor(TWO_HOSTS.priced)).toBe(1);
    expect(callsFor(TWO_HOSTS.unpriced)).toBe(0);
    // Without the beta, the first host serves as usual.
    const plain = await ask(TWO_HOSTS.slug, ['interleaved-thinking-2025-05-14']);
    expect(plain.status).toBe(200);
    await plain.text();
    expect(callsFor(TWO_HOSTS.unpriced)).toBe(1);
  });

  it('toward a chat-completions host is served without the betas, which that format has no header for', async () => {
    const res = await ask(TEST_MODELS.gpt.slug);
    expect(res.status).toBe(200);
    await res.text();
    expect(g.fake.requests.at(-1)!.headers).not.toHaveProperty('anthropic-beta');
  });

  it('in the body (Bedrock’s `anthropic_beta`) is refused naming the field, toward any host: no host called', async () => {
    const calls = g.fake.requests.length;
    const res = await fetch(`${g.baseUrl}/api/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': g.key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: UNPRICED.slug,
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
