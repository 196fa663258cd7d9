import { TEST_MODELS, TestGateway } from '../support/gateway';
import { LeveledLines } from '../support/leveled-lines';
import { LogCapture } from '../support/log-capture';
import { hasRedisServer } from '../support/own-redis';
import { gatewayOnOwnRedis, GatewayOnOwnRedis } from '../support/gateway-on-own-redis';

/**
 * What an operator is told while the read models' store (a Redis of the test's own, killed under
 * the gateway) is down: the scrape, the request lines, the runtime's lines and their levels.
 */

/** The samples of one metric in a Prometheus text exposition. */
const samples = (text: string, name: string) =>
  text.split('\n').filter((line) => line.startsWith(`${name} `) || line.startsWith(`${name}{`));

(hasRedisServer ? describe : describe.skip)('Redis down under the gateway: what the operator is told', () => {
  let own: GatewayOnOwnRedis;
  let g: TestGateway;
  const log = new LogCapture();
  const runtimeLog = new LeveledLines();

  beforeAll(async () => {
    own = await gatewayOnOwnRedis({ sweep: true, logStream: log, runtimeLog });
    g = own.g;
    g.fake.on(TEST_MODELS.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
  });
  afterAll(() => own.close());

  const scrape = async () => {
    const res = await fetch(`${g.baseUrl}/metrics`);
    return { status: res.status, text: await res.text() };
  };
  const chat = () =>
    fetch(`${g.baseUrl}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${g.key}` },
      body: JSON.stringify({ model: TEST_MODELS.gpt.slug, messages: [{ role: 'user', content: 'Hi' }] }),
    });

  it('/metrics still answers: every other series served, the Redis-backed gauges left out, the store said to be down', async () => {
    expect((await chat()).status).toBe(200);
    const up = await scrape();
    expect(up.status).toBe(200);
    expect(samples(up.text, 'gateway_read_model_store_up')).toEqual(['gateway_read_model_store_up 1']);
    expect(samples(up.text, 'gateway_reservations_held')).toEqual(['gateway_reservations_held 0']);

    await own.stopRedis();
    const ready = await fetch(`${g.baseUrl}/health/ready`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { reasons: string[] }).reasons).toEqual([
      expect.stringMatching(/^read models: their store does not answer \(Redis: /),
    ]);
    const down = await scrape();
    expect(down.status).toBe(200);
    expect(samples(down.text, 'gateway_read_model_store_up')).toEqual(['gateway_read_model_store_up 0']);
    // No value rather than a stale one: the gauge is left out of this scrape.
    expect(samples(down.text, 'gateway_reservations_held')).toEqual([]);
    // Everything else is still there: the requests counted, the log's lag (read from the log), the process's own.
    expect(samples(down.text, 'gateway_requests_total')).toEqual([expect.stringContaining('status="200"')]);
    expect(samples(down.text, 'gateway_read_model_lag_events')).toHaveLength(1);
    expect(samples(down.text, 'process_resident_memory_bytes')).toHaveLength(1);
  });

  it('a 503 because Redis is down carries its outcome and what the client was told in its request line, at error', async () => {
    const res = await chat();
    expect(res.status).toBe(503);
    const requestId = res.headers.get('x-request-id');
    const line = await log.waitFor((l) => l.msg === 'request' && l.requestId === requestId);
    expect(line).toMatchObject({
      level: 50,
      status: 503,
      outcome: 'unavailable',
      error: expect.stringMatching(/cannot reach its balance store \(Redis\)/),
    });
    expect(JSON.stringify(line)).not.toContain(g.key);
  });

  it("the runtime's lines say it is Redis, at warn while it retries and at error for what is not done", async () => {
    // An event to apply: the projector meets Redis down, and retries.
    await g.t.runtime.identity.createOrganization('Appended while Redis is down');
    await runtimeLog.waitFor((l) => l.level === 'warn' && /^projector: Redis: .*; retrying$/.test(l.line));
    // The sweeper's due expiries are not made while Redis is away: funds stay held.
    await runtimeLog.waitFor((l) => l.level === 'error' && /^sweeper: Redis: /.test(l.line));
    expect(runtimeLog.lines.filter((l) => /retrying/.test(l.line) && l.level !== 'warn')).toEqual([]);
  });
});
