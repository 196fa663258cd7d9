import type { HostAttempt, ReservationSettled } from '../../src/ledger/ledger.events';
import type { FakeUpstream, ReceivedRequest } from '../support/fake-upstream';
import { auditThenClose, startGateway, TEST_HOST_KEYS, TestGateway } from '../support/gateway';
import { CHAT_COMPLETIONS, MESSAGES, sseEvents } from '../support/surfaces';

/**
 * Retries with backoff, against a fake host that rate-limits then serves, fails for a while then
 * recovers, or stays down: the timings read from the fake's log of arrivals, the attempts from the
 * ledger, the request log and GET /generation.
 */

/** The policy of the hosts below: two retries, backoff from 200 ms, at most 1.5 s. */
const RETRY = { attempts: 2, baseMs: 200, maxMs: 1_500 };
/** Timers fire late, never early; a loaded machine makes them later still. */
const LATE_MS = 400;

const MODELS = {
  /** One host (`retry-one`) with RETRY. */
  single: { slug: 'test/retried', hostModel: 'fake-retried' },
  /** A first host with one retry (`retry-first`, at $9/M), then `retry-second` at $0.50/M and $0.75/M. */
  two: { slug: 'test/retried-then-next', firstHostModel: 'fake-retried-first', hostModel: 'fake-retried-second' },
  /** An embedding model on `retry-one`. */
  embed: { slug: 'test/retried-embed', hostModel: 'fake-retried-embed' },
} as const;

function catalogue(fake: FakeUpstream) {
  const host = (id: string, retry: object) => ({
    id,
    kind: 'openai',
    baseUrl: `${fake.url}/v1`,
    apiKeyEnv: 'FAKE_OPENAI_KEY',
    retry,
  });
  const model = (slug: string, id: string, hosts: object[]) => ({
    slug,
    id,
    name: slug,
    contextLength: 128_000,
    maxOutputTokens: 1000,
    hosts,
  });
  return {
    hosts: [host('retry-one', RETRY), host('retry-first', { ...RETRY, attempts: 1 }), host('retry-second', RETRY)],
    models: [
      model(MODELS.single.slug, 'aaaaaaaa-1111-4111-8111-111111111111', [
        { host: 'retry-one', model: MODELS.single.hostModel, pricing: { input: '1.00', output: '2.00' } },
      ]),
      {
        slug: MODELS.embed.slug,
        kind: 'embedding',
        id: 'aaaaaaaa-3333-4333-8333-333333333333',
        name: MODELS.embed.slug,
        contextLength: 8192,
        hosts: [{ host: 'retry-one', model: MODELS.embed.hostModel, pricing: { input: '0.10' } }],
      },
      model(MODELS.two.slug, 'aaaaaaaa-2222-4222-8222-222222222222', [
        { host: 'retry-first', model: MODELS.two.firstHostModel, pricing: { input: '9.00', output: '9.00' } },
        { host: 'retry-second', model: MODELS.two.hostModel, pricing: { input: '0.50', output: '0.75' } },
      ]),
    ],
  };
}

/** Answers the first `failures` calls with `status` (and its headers), then replies. */
function failingThen(failures: number, status: number, headers?: Record<string, string>) {
  let calls = 0;
  return (_req: ReceivedRequest) =>
    calls++ < failures
      ? { kind: 'status' as const, status, headers }
      : { kind: 'reply' as const, reply: { text: 'Served after all.' } };
}

/** The gaps between the arrivals of the fake's calls for `hostModel`, in ms. */
function gaps(fake: FakeUpstream, hostModel: string): number[] {
  const at = fake.requests.filter((r) => r.body?.model === hostModel).map((r) => r.at);
  return at.slice(1).map((t, i) => t - at[i]);
}

describe('retries with backoff', () => {
  let g: TestGateway;

  beforeEach(async () => {
    g = await startGateway({ catalogue });
  });
  afterEach(() => auditThenClose(g));

  const ask = (slug: string, stream = false, surface = CHAT_COMPLETIONS) =>
    fetch(`${g.baseUrl}/api/v1/${surface.path(slug)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...surface.headers(g.key) },
      body: JSON.stringify(surface.body(slug, stream)),
    });

  /** The settlement of request `requestId`, as the log holds it. */
  async function settlementOf(requestId: string): Promise<ReservationSettled['data']> {
    await g.settled();
    const events = await g.t.runtime.events.readAll(0, 100_000);
    const settled = events.find(
      (e) => e.type === 'ReservationSettled' && (e.data as ReservationSettled['data']).requestId === requestId,
    );
    expect(settled).toBeDefined();
    return settled!.data as ReservationSettled['data'];
  }

  it('a host answering 429 with Retry-After twice: called again after each wait it asked, then serves; every call on the record', async () => {
    g.fake.on(MODELS.single.hostModel, failingThen(2, 429, { 'retry-after': '1' }));
    const res = await ask(MODELS.single.slug);
    const body = await res.text();
    expect(res.status).toBe(200);
    expect(CHAT_COMPLETIONS.read(body, false).text).toBe('Served after all.');

    // Each retry waited the second the host asked for (not the 200 ms backoff), and not much more.
    const waited = gaps(g.fake, MODELS.single.hostModel);
    expect(waited).toHaveLength(2);
    for (const gap of waited) {
      expect(gap).toBeGreaterThanOrEqual(1_000 - 5);
      expect(gap).toBeLessThan(1_000 + LATE_MS);
    }

    const requestId = res.headers.get('x-request-id')!;
    const settled = await settlementOf(requestId);
    expect(settled.host).toBe('retry-one');
    expect(settled.attempts!.map(({ host, credential, status, reason }) => ({ host, credential, status, reason }))).toEqual([
      { host: 'retry-one', credential: 'FAKE_OPENAI_KEY', status: 429, reason: 'rate_limited' },
      { host: 'retry-one', credential: 'FAKE_OPENAI_KEY', status: 429, reason: 'rate_limited' },
      { host: 'retry-one', credential: 'FAKE_OPENAI_KEY', status: null, reason: 'ok' },
    ]);
    // The key itself is never recorded.
    expect(JSON.stringify(settled)).not.toContain(TEST_HOST_KEYS.FAKE_OPENAI_KEY);

    // The request log and GET /generation show the same attempts.
    expect((await g.logged(requestId)).attempts).toEqual(settled.attempts);
    const generation = await fetch(`${g.baseUrl}/api/v1/generation?id=${requestId}`, {
      headers: { authorization: `Bearer ${g.key}` },
    });
    expect(generation.status).toBe(200);
    const { data } = (await generation.json()) as { data: { attempts: Array<Record<string, unknown>> } };
    expect(data.attempts).toEqual(
      settled.attempts!.map((a) => ({
        host: a.host,
        credential: a.credential,
        status: a.status,
        reason: a.reason,
        duration_ms: a.durationMs,
      })),
    );
  });

  it('a host failing for a while (503) then recovering, streamed: exponential backoff within its ceilings, one clean stream', async () => {
    g.fake.on(MODELS.single.hostModel, failingThen(2, 503));
    const res = await ask(MODELS.single.slug, true);
    const body = await res.text();
    expect(res.status).toBe(200);
    expect(CHAT_COMPLETIONS.read(body, true).text).toBe('Served after all.');
    // Nothing of the failed calls reached the client: one stream, one role chunk, one [DONE].
    const events = sseEvents(body);
    expect(events.filter((e) => e.data !== '[DONE]' && e.data.choices?.[0]?.delta?.role)).toHaveLength(1);
    expect(events.filter((e) => e.data === '[DONE]')).toHaveLength(1);

    // Full jitter: the n-th retry waits anywhere under min(maxMs, baseMs × 2^n).
    const [first, second] = gaps(g.fake, MODELS.single.hostModel);
    expect(first).toBeLessThan(RETRY.baseMs + LATE_MS);
    expect(second).toBeLessThan(RETRY.baseMs * 2 + LATE_MS);

    const settled = await settlementOf(res.headers.get('x-request-id')!);
    expect(settled.attempts!.map((a) => a.reason)).toEqual(['server_error', 'server_error', 'ok']);
  });

  it('a host that stays down: its retries spent, the next host serves and its prices are charged', async () => {
    g.fake.on(MODELS.two.firstHostModel, { kind: 'status', status: 500 });
    const res = await ask(MODELS.two.slug, false, MESSAGES);
    expect(res.status).toBe(200);
    await res.text();
    expect(g.fake.requests.filter((r) => r.body?.model === MODELS.two.firstHostModel)).toHaveLength(2);
    const settled = await settlementOf(res.headers.get('x-request-id')!);
    expect(settled.host).toBe('retry-second');
    expect(settled.prices).toMatchObject({ input: 500_000_000, output: 750_000_000 });
    expect(settled.attempts!.map((a: HostAttempt) => [a.host, a.reason])).toEqual([
      ['retry-first', 'server_error'],
      ['retry-first', 'server_error'],
      ['retry-second', 'ok'],
    ]);
  });

  it('a host asking to be left longer than its cap is not waited for: the next host serves at once', async () => {
    g.fake.on(MODELS.two.firstHostModel, { kind: 'status', status: 429, headers: { 'retry-after': '30' } });
    const started = performance.now();
    const res = await ask(MODELS.two.slug);
    expect(res.status).toBe(200);
    await res.text();
    expect(performance.now() - started).toBeLessThan(RETRY.maxMs);
    expect(g.fake.requests.filter((r) => r.body?.model === MODELS.two.firstHostModel)).toHaveLength(1);
    const settled = await settlementOf(res.headers.get('x-request-id')!);
    expect(settled.attempts!.map((a) => [a.host, a.status, a.reason])).toEqual([
      ['retry-first', 429, 'rate_limited'],
      ['retry-second', null, 'ok'],
    ]);
  });

  it('embeddings too: a host rate-limiting once is called again after the wait it asked, every call on the record', async () => {
    let calls = 0;
    g.fake.on(MODELS.embed.hostModel, () =>
      calls++ === 0 ? { kind: 'status', status: 429, headers: { 'retry-after': '1' } } : { kind: 'reply', reply: { text: '' } },
    );
    const res = await fetch(`${g.baseUrl}/api/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${g.key}` },
      body: JSON.stringify({ model: MODELS.embed.slug, input: 'to embed' }),
    });
    expect(res.status).toBe(200);
    await res.text();
    const [gap] = gaps(g.fake, MODELS.embed.hostModel);
    expect(gap).toBeGreaterThanOrEqual(1_000 - 5);
    expect(gap).toBeLessThan(1_000 + LATE_MS);
    const settled = await settlementOf(res.headers.get('x-request-id')!);
    expect(settled.attempts!.map((a) => [a.host, a.status, a.reason])).toEqual([
      ['retry-one', 429, 'rate_limited'],
      ['retry-one', null, 'ok'],
    ]);
  });

  it('a request that cannot be served (400) is not retried, and its release records the one attempt', async () => {
    g.fake.on(MODELS.single.hostModel, { kind: 'status', status: 400 });
    const res = await ask(MODELS.single.slug);
    expect(res.status).toBe(400);
    await res.text();
    expect(g.fake.requests.filter((r) => r.body?.model === MODELS.single.hostModel)).toHaveLength(1);
    const entry = await g.logged(res.headers.get('x-request-id')!);
    expect(entry.attempts!.map((a) => [a.host, a.status, a.reason])).toEqual([['retry-one', 400, 'rejected']]);
  });
});
