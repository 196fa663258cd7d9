import { Webhook } from 'standardwebhooks';
import type { RecordedEvent } from '../../src/eventstore/event-store';
import { AlertsService } from '../../src/alerts/alerts.service';
import { person } from '../support/dashboard';
import { startGateway, TestGateway } from '../support/gateway';
import { createKey } from '../support/keys';
import { eventually } from '../support/processes';
import { WebhookReceiver } from './webhook-receiver';

/**
 * Where alerts' webhooks may go: loopback, private, link-local (cloud metadata) and other special
 * addresses are refused — a literal one when the URL is saved, any address when a delivery connects
 * (a name resolving to 127.0.0.1, `localhost`, saves but is never connected to) — unless the
 * operator allows their network (ALERT_WEBHOOK_ALLOW_CIDRS). Test alerts: one per 10 s for an organization.
 */

interface Gateway {
  g: TestGateway;
  management: string;
  call: (method: string, path: string, body?: unknown) => Promise<{ status: number; headers: Headers; body: any }>;
}

async function gateway(env: Record<string, string> = {}): Promise<Gateway> {
  const g = await startGateway({ env: { ALERT_RETRY_BASE_MS: '20', ALERT_MAX_ATTEMPTS: '3', ...env } });
  const { secret: management } = await createKey(g.t.runtime, g.orgId, 'platform', { kind: 'management' });
  await g.t.runtime.projector.catchUp();
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${g.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${management}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
  };
  return { g, management, call };
}

async function logged<T>(g: TestGateway, type: string): Promise<Array<RecordedEvent<string, T>>> {
  return (await g.t.runtime.events.readAll(0, 100_000)).filter((e) => e.type === type) as Array<RecordedEvent<string, T>>;
}

let receiver: WebhookReceiver;
/** The receiver's port, by a name that resolves to 127.0.0.1 (only: see the connection's lookup), with a token. */
let byName: string;
beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  byName = receiver.url.replace('//127.0.0.1:', '//localhost:');
});
afterAll(async () => {
  await receiver.close();
});
beforeEach(() => {
  receiver.received.length = 0;
});

describe('without the operator’s setting', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await gateway();
  });
  afterAll(async () => {
    await gw.g.close();
  });

  it.each([
    ['loopback', 'http://127.0.0.1:9/hooks?token=t0ken-abc', /loopback address \(127\.0\.0\.0\/8\)/],
    ['loopback, decimal', 'http://2130706433/hooks?token=t0ken-abc', /loopback address \(127\.0\.0\.0\/8\)/],
    ['loopback, IPv6', 'http://[::1]:8080/?token=t0ken-abc', /the loopback address \(::1\)/],
    [
      'loopback, IPv4-mapped IPv6',
      'http://[::ffff:127.0.0.1]/?token=t0ken-abc',
      /loopback address \(127\.0\.0\.0\/8\), in an IPv6 form/,
    ],
    ['cloud metadata', 'http://169.254.169.254/latest/meta-data/iam?token=t0ken-abc', /link-local address/],
    ['cloud metadata, IPv6', 'http://[fd00:ec2::254]/latest?token=t0ken-abc', /unique local, private address \(fc00::\/7\)/],
    ['cloud metadata, NAT64', 'http://[64:ff9b::a9fe:a9fe]/?token=t0ken-abc', /link-local address.*in an IPv6 form/],
    ['private 10/8', 'https://10.1.2.3/?token=t0ken-abc', /private address \(10\.0\.0\.0\/8\)/],
    ['private 172.16/12', 'https://172.31.255.1/?token=t0ken-abc', /private address \(172\.16\.0\.0\/12\)/],
    ['private 192.168/16', 'https://192.168.0.10/?token=t0ken-abc', /private address \(192\.168\.0\.0\/16\)/],
    ['carrier-grade NAT', 'https://100.64.0.1/?token=t0ken-abc', /carrier-grade NAT address/],
    ['unspecified', 'http://0.0.0.0:8080/?token=t0ken-abc', /"this network"/],
    ['link-local IPv6', 'http://[fe80::1]/?token=t0ken-abc', /link-local address \(fe80::\/10\)/],
  ])('a URL whose host is an address alerts may not reach is refused when saved: %s', async (_what, url, why) => {
    const refused = await gw.call('PUT', '/api/v1/alerts', { url });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ type: 'invalid_request_error', param: 'url' });
    expect(refused.body.error.message).toMatch(why);
    expect(refused.body.error.message).toMatch(/ALERT_WEBHOOK_ALLOW_CIDRS/);
    // The URL is never echoed: it may carry a token.
    expect(JSON.stringify(refused.body)).not.toMatch(/t0ken/);
    expect((await gw.call('GET', '/api/v1/alerts')).status).toBe(404);
  });

  it('the dashboard refuses it too, in its format', async () => {
    const owner = await person(gw.g, 'owner@example.com');
    await owner.post('/organizations', { name: 'Team' }).expect(201);
    const refused = await owner.post('/alerts', { url: receiver.url }).expect(400);
    expect(refused.body.error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/loopback address/) });
  });

  it('a name that resolves to a loopback address is saved, and its alert never connected to: given up at once', async () => {
    expect((await gw.call('PUT', '/api/v1/alerts', { url: byName })).status).toBe(200);
    const sent = await gw.call('POST', '/api/v1/alerts/test');
    expect(sent.status).toBe(202);
    await eventually(async () => (await logged(gw.g, 'AlertAbandoned')).length === 1);
    const [abandoned] = await logged<{ alertId: string; attempts: number; reason: string }>(gw.g, 'AlertAbandoned');
    expect(abandoned.data).toMatchObject({ alertId: sent.body.alert_id, attempts: 1, reason: 'forbidden_destination' });
    // It was given up without a connection: the receiver, listening on that address, got nothing.
    expect(receiver.received).toHaveLength(0);
    expect(await logged(gw.g, 'AlertAttemptFailed')).toHaveLength(0);
  });

  it('a literal address saved before the check (in the log as it is) is never connected to either', async () => {
    const stream = `alerts-${gw.g.orgId}`;
    const revision = (await gw.g.t.runtime.events.readStream(stream)).at(-1)!.revision;
    await gw.g.t.runtime.events.append(
      stream,
      [
        {
          type: 'AlertsConfigured',
          data: {
            orgId: gw.g.orgId,
            url: receiver.url,
            balanceBelow: null,
            daySpendAbove: null,
            keyLimits: false,
            by: 'before-the-check',
            configuredAt: Date.now(),
          },
        },
      ],
      revision,
    );
    // The test alert before (from the test above) was a second or less ago: the service is asked with a later clock.
    const { alert_id } = await gw.g.app.get(AlertsService).sendTest(gw.g.orgId, 'test', Date.now() + 10_000);
    await eventually(async () => (await logged(gw.g, 'AlertAbandoned')).length === 2);
    const abandoned = await logged<{ alertId: string; reason: string }>(gw.g, 'AlertAbandoned');
    expect(abandoned[1].data).toMatchObject({ alertId: alert_id, reason: 'forbidden_destination' });
    expect(receiver.received).toHaveLength(0);
  });
});

describe('with the operator’s setting allowing 127.0.0.1', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await gateway({ ALERT_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32' });
  });
  afterAll(async () => {
    await gw.g.close();
  });

  it('a name resolving to it is delivered, and so is the address itself; other loopback and private addresses are still refused', async () => {
    const set = await gw.call('PUT', '/api/v1/alerts', { url: byName });
    expect(set.status).toBe(200);
    const first = await gw.call('POST', '/api/v1/alerts/test');
    expect(first.status).toBe(202);
    await receiver.until((r) => r.length === 1);
    expect(receiver.ids()).toEqual([first.body.alert_id]);
    new Webhook(set.body.secret).verify(receiver.received[0].body, receiver.received[0].headers);
    await eventually(async () => (await logged(gw.g, 'AlertDelivered')).length === 1);

    expect((await gw.call('PUT', '/api/v1/alerts', { url: receiver.url })).status).toBe(200);
    const { alert_id } = await gw.g.app.get(AlertsService).sendTest(gw.g.orgId, 'test', Date.now() + 10_000);
    await receiver.until((r) => r.length === 2);
    expect(receiver.ids()).toEqual([first.body.alert_id, alert_id]);

    for (const url of ['http://127.0.0.2/', 'http://[::1]/', 'http://169.254.169.254/', 'http://10.0.0.1/'])
      expect((await gw.call('PUT', '/api/v1/alerts', { url })).status).toBe(400);
  });
});

describe('test alerts: one per 10 s for an organization', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await gateway({ ALERT_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32' });
    expect((await gw.call('PUT', '/api/v1/alerts', { url: receiver.url })).status).toBe(200);
  });
  afterAll(async () => {
    await gw.g.close();
  });

  it('of 30 asked at once, one is sent; the others are 429 in the caller’s format with Retry-After', async () => {
    const answers = await Promise.all(Array.from({ length: 30 }, () => gw.call('POST', '/api/v1/alerts/test')));
    const sent = answers.filter((a) => a.status === 202);
    const refused = answers.filter((a) => a.status === 429);
    expect(sent).toHaveLength(1);
    expect(refused).toHaveLength(29);
    for (const r of refused) {
      expect(r.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limited' });
      expect(r.body.error.message).toMatch(/^a test alert was sent less than 10 s ago: try again in \d+ s$/);
      const retryAfter = Number(r.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(10);
    }
    await receiver.until((r) => r.length === 1);
    expect(receiver.ids()).toEqual([sent[0].body.alert_id]);
    expect(await logged(gw.g, 'AlertTestRequested')).toHaveLength(1);
  });

  it('the next is taken once 10 s have passed since the last, by its time in the log (every instance’s)', async () => {
    const [last] = await logged<{ requestedAt: number }>(gw.g, 'AlertTestRequested');
    const alerts = gw.g.app.get(AlertsService);
    await expect(alerts.sendTest(gw.g.orgId, 'test', last.data.requestedAt + 9_001)).rejects.toMatchObject({
      code: 'rate_limited',
      headers: { 'retry-after': '1' },
    });
    await expect(alerts.sendTest(gw.g.orgId, 'test', last.data.requestedAt + 10_000)).resolves.toMatchObject({
      alert_id: expect.stringMatching(/^al_\d+_test$/),
    });
  });

  it('the dashboard’s answer is a 429 in its format, with Retry-After', async () => {
    const owner = await person(gw.g, 'owner@example.com');
    await owner.post('/organizations', { name: 'Team' }).expect(201);
    await owner.post('/alerts', { url: receiver.url }).expect(200);
    await owner.post('/alerts/test').expect(202);
    const refused = await owner.post('/alerts/test').expect(429);
    expect(refused.body).toMatchObject({ error: { code: 'rate_limited' }, retryAfterSeconds: expect.any(Number) });
    expect(Number(refused.headers['retry-after'])).toBe(refused.body.retryAfterSeconds);
  });
});
