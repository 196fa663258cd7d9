import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp } from '../../src/app';
import { listenOn } from '../../src/http/http-adapter';
import { FakeUpstream, startFakeUpstream } from '../support/fake-upstream';
import { testCatalogue } from '../support/gateway';
import { createKey } from '../support/keys';
import { fundedOrganization, openTestRuntime, TestRuntime } from '../support/runtime';
import { chatCompletion } from '../support/streams';
import { WebhookReceiver } from './webhook-receiver';

/**
 * The gateway's alert follower saves its state in the data directory when the application closes, and
 * a gateway started again on it follows the log from there (not from its start): what crosses a line
 * after the restart is told once, and what was told before is not told again.
 */

const C = 1_000_000_000;

let fake: FakeUpstream;
let t: TestRuntime;
let receiver: WebhookReceiver;
let gateway: { app: NestFastifyApplication; base: string } | null = null;

beforeAll(async () => {
  fake = await startFakeUpstream();
  // The receiver is on 127.0.0.1: a loopback address alerts reach only where the operator allows it.
  t = await openTestRuntime({ env: { ALERT_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32' } });
  receiver = await WebhookReceiver.start();
});
afterAll(async () => {
  await gateway?.app.close();
  await receiver.close();
  await fake.close();
  await t.cleanup();
});

async function started() {
  const app = await createApp(t.runtime, { logger: false, catalogue: testCatalogue(fake) });
  await app.listen(listenOn(0, '127.0.0.1'));
  return { app, base: `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}` };
}

it('a restarted gateway follows the log for alerts from its saved checkpoint and tells the crossing after the restart once', async () => {
  const orgId = await fundedOrganization(t.runtime, 10 * C);
  const { secret: management } = await createKey(t.runtime, orgId, 'platform', { kind: 'management' });
  const { secret: key } = await createKey(t.runtime, orgId, 'tests');
  const call = (base: string, method: string, path: string, body?: unknown) =>
    fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${management}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  gateway = await started();
  // At the balance: the first charge takes it below.
  expect((await call(gateway.base, 'PUT', '/api/v1/alerts', { url: receiver.url, balance_below: '10' })).status).toBe(200);
  expect((await call(gateway.base, 'POST', '/api/v1/alerts/test')).status).toBe(202);
  await receiver.until((r) => r.length === 1);
  await gateway.app.close();
  gateway = null;
  const saved = JSON.parse(readFileSync(join(t.env.DATA_DIR, 'alerts.snapshot.json'), 'utf8')) as { position: number };
  expect(saved.position).toBeGreaterThan(5);

  const subscribed = jest.spyOn(t.runtime.events, 'subscribe');
  gateway = await started();
  const res = await chatCompletion(gateway.base, key, { max_tokens: 6 });
  expect(res.status).toBe(200);
  await res.text();
  await receiver.until((r) => r.length === 2);
  await new Promise((resolve) => setTimeout(resolve, 300));
  // The projector's subscription runs on: the one subscription made is the follower's, from its checkpoint.
  expect(subscribed.mock.calls.map(([after]) => after)).toEqual([saved.position]);
  expect(receiver.received.map((r) => (JSON.parse(r.body) as { type: string }).type)).toEqual(['test', 'balance.below']);
  expect(receiver.ids()).toHaveLength(2);
});
