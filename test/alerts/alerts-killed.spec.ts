import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../../src/config/config';
import type { RecordedEvent } from '../../src/eventstore/event-store';
import { openRuntime } from '../../src/runtime/runtime';
import { FakeUpstream, startFakeUpstream } from '../support/fake-upstream';
import { serviceEnv } from '../support/gateway';
import { createKey } from '../support/keys';
import { Child, eventually, startService } from '../support/processes';
import { fundedOrganization, openTestRuntime, TestRuntime } from '../support/runtime';
import { WebhookReceiver } from './webhook-receiver';

/**
 * The gateway SIGKILLed between claiming an alert and recording its delivery (the receiver holds the
 * request unanswered): started again on the same log, it claims the alert again once the dead claim
 * lapses and delivers it. The receiver sees the one alert id, twice at most (the attempt cut, the one
 * that ended), and the log says it was delivered once.
 */

// A claim lapses after twice the attempt's timeout and a second: 2 s here.
const TIMING = { ALERT_ATTEMPT_TIMEOUT_MS: '500', ALERT_RETRY_BASE_MS: '20' };
/** The receiver is on 127.0.0.1: a loopback address alerts reach only where the operator allows it. */
const OPERATOR = { ALERT_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32' };

let fake: FakeUpstream;
let t: TestRuntime;
let receiver: WebhookReceiver;
let service: Child | null = null;

beforeAll(async () => {
  fake = await startFakeUpstream();
  t = await openTestRuntime();
  receiver = await WebhookReceiver.start();
});
afterAll(async () => {
  service?.process.kill('SIGKILL');
  await receiver.close();
  await fake.close();
  await t.cleanup();
});

it('an alert claimed when the gateway dies is delivered after the restart, with the same id, and recorded delivered once', async () => {
  const orgId = await fundedOrganization(t.runtime, 1_000_000_000);
  const { secret: management } = await createKey(t.runtime, orgId, 'platform', { kind: 'management' });
  await t.runtime.close();
  const env = serviceEnv(t, fake, { ...TIMING, ...OPERATOR });
  const call = async (base: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${management}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return (await res.json()) as any;
  };

  let started = await startService(env);
  service = started.service;
  const { secret } = await call(started.base, 'PUT', '/api/v1/alerts', { url: receiver.url });
  receiver.answer = (i) => (i === 0 ? 'hold' : 200);
  const { alert_id: alertId } = await call(started.base, 'POST', '/api/v1/alerts/test');
  // The first attempt has reached the receiver, unanswered: the claim is in the log, no end is.
  await receiver.until((r) => r.length === 1);
  service.process.kill('SIGKILL');
  await service.exited();

  started = await startService(env);
  service = started.service;
  await receiver.until((r) => r.length === 2, 20_000);
  expect(receiver.ids()).toEqual([alertId]);
  for (const r of receiver.received) new Webhook(secret).verify(r.body, r.headers);

  const runtime = await openRuntime(loadConfig({ ...env }), { sweep: false });
  try {
    const ofAlert = async () =>
      (await runtime.events.readStream(`alert-${alertId}`)) as RecordedEvent<string, { attempt: number; instance?: string }>[];
    await eventually(async () => (await ofAlert()).some((e) => e.type === 'AlertDelivered'), 10_000);
    const events = await ofAlert();
    expect(events.map((e) => [e.type, e.data.attempt])).toEqual([
      ['AlertClaimed', 1],
      ['AlertClaimed', 2],
      ['AlertDelivered', 2],
    ]);
    // Two processes: the dead one's claim, the restarted one's.
    expect(events[0].data.instance).not.toBe(events[1].data.instance);
    // Recorded delivered: no attempt is left to make.
    expect(receiver.received).toHaveLength(2);
  } finally {
    await runtime.close();
  }
});
