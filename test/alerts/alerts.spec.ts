import { Webhook } from 'standardwebhooks';
import type { RecordedEvent } from '../../src/eventstore/event-store';
import type { CreditsReserved, ReservationSettled } from '../../src/ledger/ledger.events';
import { formatCredits } from '../../src/ledger/money';
import { startGateway, startOtherInstance, TestGateway } from '../support/gateway';
import { createKey } from '../support/keys';
import { eventually } from '../support/processes';
import { chatCompletion } from '../support/streams';
import { WebhookReceiver } from './webhook-receiver';

/**
 * Alerts' webhooks, end to end: a gateway serving requests, a real local HTTP receiver, the alerts
 * derived from the log and delivered signed (Standard Webhooks, checked with its reference library).
 */

const TIMING = { ALERT_RETRY_BASE_MS: '20', ALERT_ATTEMPT_TIMEOUT_MS: '2000', ALERT_MAX_ATTEMPTS: '3' };
/**
 * The receiver listens on 127.0.0.1, a loopback address alerts reach only where the operator allows
 * it; test alerts go as fast as these tests ask (alerts-destinations.spec.ts shows both bounds).
 */
const OPERATOR = { ALERT_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32', ALERT_TEST_INTERVAL_MS: '0' };

let g: TestGateway;
let receiver: WebhookReceiver;
let management: string;

beforeEach(async () => {
  g = await startGateway({ env: { ...TIMING, ...OPERATOR } });
  receiver = await WebhookReceiver.start();
  management = (await createKey(g.t.runtime, g.orgId, 'platform', { kind: 'management' })).secret;
  await g.t.runtime.projector.catchUp();
});
afterEach(async () => {
  await g.close();
  await receiver.close();
});

const call = async (method: string, path: string, body?: unknown, base = g.baseUrl) => {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${management}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
};

async function logged<T extends RecordedEvent>(type: string): Promise<T[]> {
  return (await g.t.runtime.events.readAll(0, 100_000)).filter((e) => e.type === type) as T[];
}

async function chat(): Promise<void> {
  const res = await chatCompletion(g.baseUrl, g.key, { max_tokens: 6 });
  expect(res.status).toBe(200);
  await res.text();
}

const bodies = () => receiver.received.map((r) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> });

it('each kind fires once, at the crossing: balance below, the day’s spend above, a key at 80 % and 100 %; every delivery verifies', async () => {
  // One request before any alert is set, to learn what one costs (c) and holds.
  await chat();
  await g.settled();
  const [first] = await logged<RecordedEvent<string, ReservationSettled['data']>>('ReservationSettled');
  const [reserved] = await logged<RecordedEvent<string, CreditsReserved['data']>>('CreditsReserved');
  const c = first.data.amount;
  expect(c).toBeGreaterThan(0);
  expect(reserved.data.amount).toBeLessThanOrEqual(c); // so that a key may be charged right up to its limit
  const balance = 100_000_000_000 - c;

  const set = await call('PUT', '/api/v1/alerts', {
    url: receiver.url,
    balance_below: formatCredits(balance - 2.5 * c),
    day_spend_above: Number(formatCredits(4.5 * c)),
    key_limits: true,
  });
  expect(set.status).toBe(200);
  expect(set.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  expect(set.body.data).toMatchObject({ url: receiver.url, key_limits: true, day_spend_above: formatCredits(4.5 * c) });
  expect((await call('GET', '/api/v1/alerts')).body.data).toEqual(set.body.data); // never the secret
  expect(JSON.stringify((await g.t.runtime.events.readAll(0, 100_000)).map((e) => e.data))).not.toContain(
    set.body.secret.slice(6),
  );
  expect((await call('PATCH', `/api/v1/keys/${g.keyId}`, { limit: Number(formatCredits(10 * c)) })).status).toBe(200);

  // Nine more: the balance crosses at the 3rd, the day's spend at the 4th (5 c > 4.5 c), the key 80 % at the 7th, 100 % at the 9th.
  for (let i = 0; i < 9; i++) await chat();
  await receiver.until((r) => r.length >= 4);
  await eventually(async () => (await logged('AlertDelivered')).length === 4);

  const webhook = new Webhook(set.body.secret);
  for (const r of receiver.received) expect(() => webhook.verify(r.body, r.headers)).not.toThrow();
  const byType = bodies().map((b) => [b.type, b.data]);
  expect(byType).toEqual(
    expect.arrayContaining([
      [
        'balance.below',
        { org_id: g.orgId, balance: formatCredits(balance - 3 * c), threshold: formatCredits(balance - 2.5 * c) },
      ],
      ['spend.daily', expect.objectContaining({ spent: formatCredits(5 * c), threshold: formatCredits(4.5 * c) })],
      [
        'key.limit',
        expect.objectContaining({ key_id: g.keyId, percent: 80, spent: formatCredits(8 * c), limit: formatCredits(10 * c) }),
      ],
      ['key.limit', expect.objectContaining({ key_id: g.keyId, percent: 100, spent: formatCredits(10 * c) })],
    ]),
  );
  expect(receiver.received).toHaveLength(4);
  expect(receiver.ids()).toHaveLength(4);
  // A tampered body, or another secret, does not verify.
  const [one] = receiver.received;
  expect(() => webhook.verify(one.body.replace('"data"', '"data" '), one.headers)).toThrow();
  expect(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(one.body, one.headers)).toThrow();
  // Nothing more comes: the balance stays below, the day's and the key's are told.
  await g.t.runtime.ledger.grant(g.orgId, 1, 'still below');
  expect((await call('POST', '/api/v1/alerts/test')).status).toBe(202);
  await receiver.until((r) => r.length === 5);
  expect(bodies()[4].type).toBe('test');
});

it('tried again after 500s, then delivered with the same id; given up after the bound, and that is recorded', async () => {
  receiver.answer = (i) => (i < 2 ? 500 : 200);
  const { secret } = (await call('PUT', '/api/v1/alerts', { url: receiver.url })).body;
  const sent = await call('POST', '/api/v1/alerts/test');
  expect(sent).toMatchObject({ status: 202, body: { alert_id: expect.stringMatching(/^al_\d+_test$/) } });
  await receiver.until((r) => r.length === 3);
  expect(receiver.ids()).toEqual([sent.body.alert_id]);
  for (const r of receiver.received) new Webhook(secret).verify(r.body, r.headers);
  await eventually(async () => (await logged('AlertDelivered')).length === 1);
  expect(
    (await logged<RecordedEvent<string, { attempt: number; status: number }>>('AlertAttemptFailed')).map((e) => e.data.status),
  ).toEqual([500, 500]);
  expect((await logged<RecordedEvent<string, { attempt: number }>>('AlertDelivered'))[0].data.attempt).toBe(3);

  // A receiver that always fails: three attempts (ALERT_MAX_ATTEMPTS), then given up.
  receiver.answer = () => 503;
  const failing = await call('POST', '/api/v1/alerts/test');
  await eventually(async () => (await logged('AlertAbandoned')).length === 1);
  const [abandoned] =
    await logged<RecordedEvent<string, { alertId: string; attempts: number; reason: string }>>('AlertAbandoned');
  expect(abandoned.data).toMatchObject({ alertId: failing.body.alert_id, attempts: 3, reason: 'attempts_exhausted' });
  expect(receiver.received.filter((r) => r.headers['webhook-id'] === failing.body.alert_id)).toHaveLength(3);
  // The metrics count every attempt: 1 delivered, 2 + 3 failed, 1 given up.
  const metrics = await (await fetch(`${g.baseUrl}/metrics`)).text();
  expect(metrics).toContain('gateway_alert_deliveries_total{outcome="delivered"} 1');
  expect(metrics).toContain('gateway_alert_deliveries_total{outcome="failed"} 5');
  expect(metrics).toContain('gateway_alert_deliveries_total{outcome="abandoned"} 1');
});

it('two instances on one log: each alert delivered once', async () => {
  const other = await startOtherInstance(g);
  try {
    await call('PUT', '/api/v1/alerts', { url: receiver.url });
    const ids: string[] = [];
    for (let i = 0; i < 20; i++)
      ids.push((await call('POST', '/api/v1/alerts/test', undefined, i % 2 ? other.url : g.baseUrl)).body.alert_id);
    await eventually(async () => (await logged('AlertDelivered')).length === 20);
    expect(receiver.received).toHaveLength(20);
    expect(receiver.ids().sort()).toEqual([...ids].sort());
    const claims = await logged<RecordedEvent<string, { alertId: string; instance: string }>>('AlertClaimed');
    // Of the instances racing for each alert, one claim went in (the other's append found the stream moved on).
    expect(new Set(claims.map((c) => c.data.alertId)).size).toBe(20);
    expect(claims).toHaveLength(20);
  } finally {
    await other.close();
  }
});

it('bad settings are refused in the caller’s format, never echoing the URL; unset alerts are not found', async () => {
  expect((await call('GET', '/api/v1/alerts')).status).toBe(404);
  expect((await call('POST', '/api/v1/alerts/test')).status).toBe(404);
  const bad = await call('PUT', '/api/v1/alerts', { url: 'ftp://user:hunter2@example.com/x' });
  expect(bad.status).toBe(400);
  expect(bad.body.error).toMatchObject({ type: 'invalid_request_error', param: 'url' });
  expect(JSON.stringify(bad.body)).not.toContain('hunter2');
  expect((await call('PUT', '/api/v1/alerts', { url: receiver.url, balance_below: -1 })).status).toBe(400);
  expect((await call('PUT', '/api/v1/alerts', { url: receiver.url, balance_below: '1.0000000001' })).status).toBe(400);
  expect((await call('PUT', '/api/v1/alerts', { url: receiver.url, whatever: 1 })).status).toBe(400);
  // Set, a new secret (the old one no longer verifies), off.
  const { secret } = (await call('PUT', '/api/v1/alerts', { url: receiver.url })).body;
  expect((await call('PUT', '/api/v1/alerts', { url: receiver.url })).body.secret).toBeUndefined();
  const rotated = await call('POST', '/api/v1/alerts/secret');
  expect(rotated.body.secret).not.toBe(secret);
  await call('POST', '/api/v1/alerts/test');
  await receiver.until((r) => r.length === 1);
  expect(() => new Webhook(secret).verify(receiver.received[0].body, receiver.received[0].headers)).toThrow();
  new Webhook(rotated.body.secret).verify(receiver.received[0].body, receiver.received[0].headers);
  expect((await call('DELETE', '/api/v1/alerts')).status).toBe(204);
  expect((await call('GET', '/api/v1/alerts')).status).toBe(404);
});
