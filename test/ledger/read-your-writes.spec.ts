import { OtherInstance, startGateway, startOtherInstance, TEST_MODELS, TestGateway } from '../support/gateway';
import { describeWithRedis } from '../support/redis';

/**
 * Read your writes: once a client has the end of a reply, its charge (or, for a failure, the
 * release of its hold) shows in the balance of another instance sharing the log and Redis.
 */

const M = TEST_MODELS;
// The fake's default usage (12 input, 6 output): on test/gpt 12 × $1/M + 6 × $2/M = $24/M; on test/claude 12 × $3/M + 6 × $15/M = $126/M.
const CHARGE = { gpt: 24_000, claude: 126_000 };

interface Case {
  name: string;
  send: (g: TestGateway) => Promise<Response>;
  /** Nano-credits the request must have been charged. */
  charge: number;
}

const json = (g: TestGateway, path: string, body: object, headers: Record<string, string>) =>
  fetch(`${g.baseUrl}/api/v1/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
const bearer = (g: TestGateway) => ({ authorization: `Bearer ${g.key}` });
const messagesKey = (g: TestGateway) => ({ 'x-api-key': g.key, 'anthropic-version': '2023-06-01' });
const ask = [{ role: 'user', content: 'Hi' }];

const CASES: Case[] = [false, true].flatMap((stream) => [
  {
    name: `chat-completions${stream ? ', streamed' : ''}`,
    send: (g) => json(g, 'chat/completions', { model: M.gpt.slug, messages: ask, stream }, bearer(g)),
    charge: CHARGE.gpt,
  },
  {
    name: `messages${stream ? ', streamed' : ''}`,
    send: (g) => json(g, 'messages', { model: M.claude.slug, max_tokens: 50, messages: ask, stream }, messagesKey(g)),
    charge: CHARGE.claude,
  },
  {
    name: `native${stream ? ', streamed' : ''}`,
    send: (g) => json(g, `models/${encodeURIComponent(M.gpt.slug)}/chat`, { messages: ask, stream }, bearer(g)),
    charge: CHARGE.gpt,
  },
  // Both hosts fail before output (a 502): the hold is released, nothing charged.
  {
    name: `a failure${stream ? ', streamed' : ''}`,
    send: (g) => json(g, 'chat/completions', { model: M.fallback.slug, messages: ask, stream }, bearer(g)),
    charge: 0,
  },
]);

describeWithRedis('read your writes', () => {
  let g: TestGateway;
  let other: OtherInstance;

  beforeAll(async () => {
    g = await startGateway({ redis: true });
    other = await startOtherInstance(g);
  });
  afterAll(async () => {
    await other.close();
    await g.close();
  });

  it('500 requests on every surface, streamed and not, and failures: the other instance shows each charge or release at once', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
    g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
    g.fake.on('fake-first', { kind: 'status', status: 503 });
    g.fake.on(M.fallback.hostModel, { kind: 'status', status: 500 });
    const credits = async () => {
      const res = await fetch(`${other.url}/api/v1/credits`, { headers: bearer(g) });
      const { data } = (await res.json()) as { data: { total_usage: number; reserved: number } };
      return { spent: Math.round(data.total_usage * 1e9), reserved: Math.round(data.reserved * 1e9) };
    };
    let spent = (await credits()).spent;
    const misses: string[] = [];
    for (let i = 0; i < 500; i++) {
      const c = CASES[i % CASES.length];
      const res = await c.send(g);
      await res.text(); // the whole reply, to its last byte
      const seen = await credits();
      spent += c.charge;
      if (seen.spent !== spent || seen.reserved !== 0)
        misses.push(`#${i} ${c.name} (${res.status}): ${JSON.stringify(seen)}, expected spent ${spent}`);
    }
    expect(misses).toEqual([]);
  });
});

describe('never served unbilled', () => {
  let g: TestGateway;
  let failSettlements = false;

  beforeAll(async () => {
    // Short reservations, swept often: a hold whose settlement never lands expires within the test.
    g = await startGateway({
      sweep: true,
      env: { REQUEST_TIMEOUT_MS: '2000', RESERVATION_TTL_MS: '2500', SWEEP_INTERVAL_MS: '50' },
    });
    // The log refusing settlements (as a full disk would), and nothing else.
    const events = g.t.runtime.events;
    const append = events.append.bind(events);
    events.append = (stream, batch, expected) =>
      failSettlements && batch.some((e) => e.type === 'ReservationSettled')
        ? Promise.reject(new Error('SQLITE_FULL: database or disk is full'))
        : append(stream, batch, expected);
  });
  afterAll(() => g.close());

  it('withdraws a reply whose charge the log cannot take: a 503 or an in-stream error, nothing billed, the hold expired', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'An answer nobody pays for.' } });
    failSettlements = true;
    const whole = await json(g, 'chat/completions', { model: M.gpt.slug, messages: ask }, bearer(g));
    expect(whole.status).toBe(503);
    expect(await whole.json()).toMatchObject({ error: { message: expect.stringContaining('could not be recorded') } });

    const streamed = await json(g, 'chat/completions', { model: M.gpt.slug, messages: ask, stream: true }, bearer(g));
    const text = await streamed.text();
    expect(text).toContain('could not be recorded');
    expect(text).not.toContain('data: [DONE]');
    failSettlements = false;

    await g.settled();
    const balance = await g.t.runtime.projections.balance(g.orgId);
    expect(balance).toMatchObject({ spent: 0, reserved: 0 });
    expect((await g.audit()).differences).toEqual([]);
  });
});
