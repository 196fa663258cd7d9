import request from 'supertest';
import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { createKey } from '../support/keys';
import { LogCapture } from '../support/log-capture';

const M = TEST_MODELS;
const chat = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: 'user', content: 'Say something short' }],
  ...extra,
});

/** The samples of one metric in a Prometheus text exposition, with their labels. */
function samples(text: string, name: string): Array<{ labels: Record<string, string>; value: number }> {
  const found = [];
  for (const line of text.split('\n')) {
    const match = new RegExp(`^${name}(?:\\{(.*)\\})? (\\S+)$`).exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const pair of (match[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)) labels[pair[1]] = pair[2];
    found.push({ labels, value: Number(match[2]) });
  }
  return found;
}

const total = (list: Array<{ value: number }>) => list.reduce((sum, s) => sum + s.value, 0);

describe('GET /metrics (Prometheus, prom-client)', () => {
  let g: TestGateway;

  beforeAll(async () => {
    g = await startGateway();
  });
  afterAll(async () => {
    await g.close();
  });

  it("after a mix of requests, the counters' totals agree with the ledger", async () => {
    const bearer = `Bearer ${g.key}`;
    const served = [
      request(g.baseUrl).post('/api/v1/chat/completions').set('Authorization', bearer).send(chat(M.gpt.slug)),
      request(g.baseUrl)
        .post('/api/v1/chat/completions')
        .set('Authorization', bearer)
        .send(chat(M.gpt.slug, { stream: true })),
      request(g.baseUrl)
        .post('/api/v1/messages')
        .set('x-api-key', g.key)
        .set('anthropic-version', '2023-06-01')
        .send({ ...chat(M.claude.slug), max_tokens: 40 }),
    ];
    for (const res of await Promise.all(served)) expect(res.status).toBe(200);
    g.fake.on('fake-first', { kind: 'status', status: 503 });
    const fallback = await request(g.baseUrl)
      .post('/api/v1/chat/completions')
      .set('Authorization', bearer)
      .send(chat(M.fallback.slug));
    expect(fallback.status).toBe(200);
    const refused = await request(g.baseUrl)
      .post('/api/v1/chat/completions')
      .set('Authorization', bearer)
      .send(chat('nobody/none'));
    expect(refused.status).toBe(404);
    const broke = await g.t.runtime.identity.createOrganization('broke');
    const brokeKey = await createKey(g.t.runtime, broke.orgId, 'broke');
    await g.t.runtime.projector.catchUp();
    const unpaid = await request(g.baseUrl)
      .post('/api/v1/chat/completions')
      .set('Authorization', `Bearer ${brokeKey.secret}`)
      .send(chat(M.gpt.slug));
    expect(unpaid.status).toBe(402);
    // A key past its credit limit (402, counted as key_limit), and one past its rate limit (429).
    const capped = await createKey(g.t.runtime, g.orgId, 'capped', { limit: { amount: 1, reset: 'never' } });
    const throttled = await createKey(g.t.runtime, g.orgId, 'throttled', { rateLimits: { requestsPerMinute: 1 } });
    await g.t.runtime.projector.catchUp();
    const send = (secret: string) =>
      request(g.baseUrl).post('/api/v1/chat/completions').set('Authorization', `Bearer ${secret}`).send(chat(M.gpt.slug));
    expect((await send(capped.secret)).status).toBe(402);
    expect((await send(throttled.secret)).status).toBe(200);
    expect((await send(throttled.secret)).status).toBe(429);
    g.fake.on(M.gpt.hostModel, { kind: 'status', status: 500 });
    const failed = await request(g.baseUrl).post('/api/v1/chat/completions').set('Authorization', bearer).send(chat(M.gpt.slug));
    expect(failed.status).toBe(502);
    await g.settled();

    const res = await request(g.baseUrl).get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    const text = res.text;

    const balance = await g.t.runtime.projections.balance(g.orgId);
    const entries = await g.t.runtime.projections.recentRequests(g.orgId, 100);
    expect(balance.spent).toBeGreaterThan(0);
    expect(total(samples(text, 'gateway_credits_charged_nano_total'))).toBe(balance.spent);
    const tokens = samples(text, 'gateway_tokens_total');
    const ofClass = (c: string) => total(tokens.filter((s) => s.labels.class === c));
    expect(ofClass('output')).toBe(entries.reduce((sum, e) => sum + e.outputTokens, 0));
    expect(ofClass('input')).toBe(entries.reduce((sum, e) => sum + e.inputTokens, 0));

    const requests = samples(text, 'gateway_requests_total');
    expect(total(requests)).toBe(10);
    expect(total(requests.filter((s) => s.labels.status === '200'))).toBe(5);
    expect(requests.find((s) => s.labels.status === '502')?.labels).toMatchObject({ model: M.gpt.slug, host: 'fake-openai' });
    expect(samples(text, 'gateway_fallbacks_total')).toEqual([{ labels: { model: M.fallback.slug }, value: 1 }]);
    const reasons = samples(text, 'gateway_refusals_total').map((r) => [r.labels.reason, r.value]);
    expect(reasons.sort()).toEqual([
      ['insufficient_credits', 1],
      ['key_limit', 1],
      ['model_not_found', 1],
      ['rate_limited', 1],
    ]);
    expect(total(samples(text, 'gateway_request_duration_seconds_count'))).toBe(10);
    expect(total(samples(text, 'gateway_time_to_first_token_seconds_count'))).toBe(5);
    // Each request that reached a host: its last host's call (the fallback's, for the one that fell back).
    const upstream = samples(text, 'gateway_upstream_duration_seconds_count');
    expect(total(upstream)).toBe(6);
    // Every reservation (6), settlement or release (6) and refusal (4) was an append, timed.
    expect(samples(text, 'gateway_event_log_append_seconds_count')[0].value).toBeGreaterThanOrEqual(16);
    expect(samples(text, 'gateway_open_streams')).toEqual([{ labels: {}, value: 0 }]);
    expect(samples(text, 'gateway_reservations_held')).toEqual([{ labels: {}, value: 0 }]);
    expect(samples(text, 'gateway_reservations_expired_total')).toEqual([{ labels: {}, value: 0 }]);
    // Settled and caught up: the read models are behind the log by nothing.
    expect(samples(text, 'gateway_read_model_lag_events')).toEqual([{ labels: {}, value: 0 }]);
  });
});

describe('a request with a key that does not serve', () => {
  it('is logged with its outcome and error, and counted as no organization refusal', async () => {
    const log = new LogCapture();
    const g = await startGateway({ logStream: log });
    try {
      const res = await request(g.baseUrl)
        .post('/api/v1/chat/completions')
        // Made up here, never a literal that looks like a real secret.
        .set('Authorization', `Bearer sk-svc-${'Unmade'.repeat(8)}`)
        .send(chat(M.gpt.slug));
      expect(res.status).toBe(401);
      const line = await log.waitFor((l) => l.msg === 'request' && l.requestId === res.headers['x-request-id']);
      expect(line).toMatchObject({ level: 40, status: 401, outcome: 'invalid_api_key', error: expect.any(String) });
      expect(JSON.stringify(line)).not.toContain('UnmadeUnmade');
      const text = await (await fetch(`${g.baseUrl}/metrics`)).text();
      expect(samples(text, 'gateway_refusals_total')).toEqual([]);
    } finally {
      await g.close();
    }
  });
});

describe("the process's own metrics (prom-client's defaults)", () => {
  it('serves heap, RSS, event-loop lag, GC and open file descriptors beside the gateway series, unlabelled in one process', async () => {
    const g = await startGateway();
    try {
      const text = await (await fetch(`${g.baseUrl}/metrics`)).text();
      for (const name of [
        'process_resident_memory_bytes',
        'process_cpu_seconds_total',
        'process_open_fds',
        'nodejs_heap_size_used_bytes',
        'nodejs_eventloop_lag_p99_seconds',
      ]) {
        expect(samples(text, name)).toEqual([{ labels: {}, value: expect.any(Number) }]);
      }
      expect(text).toContain('# TYPE nodejs_gc_duration_seconds histogram');
      expect(samples(text, 'gateway_read_model_store_up')).toEqual([{ labels: {}, value: 1 }]);
    } finally {
      await g.close();
    }
  });
});

describe('METRICS_PORT', () => {
  it('serves GET /metrics on a port of its own, and not on the service port', async () => {
    const g = await startGateway({ env: { METRICS_PORT: '0' } });
    try {
      const metricsUrl = (g.app.getHttpAdapter().getInstance() as unknown as { metricsUrl: string }).metricsUrl;
      expect(metricsUrl).toMatch(/^http:\/\/[\d.]+:\d+\/metrics$/);
      expect(new URL(metricsUrl).port).not.toBe(new URL(g.baseUrl).port);
      const own = await fetch(metricsUrl);
      expect(own.status).toBe(200);
      expect(await own.text()).toContain('# TYPE gateway_requests_total counter');
      expect((await fetch(`${g.baseUrl}/metrics`)).status).toBe(404);
      expect((await fetch(new URL('/other', metricsUrl))).status).toBe(404);
    } finally {
      await g.close();
    }
  });
});
