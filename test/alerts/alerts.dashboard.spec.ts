import { Webhook } from 'standardwebhooks';
import { person } from '../support/dashboard';
import { startGateway, TestGateway } from '../support/gateway';
import { WebhookReceiver } from './webhook-receiver';

/** Alerts in the dashboard: owners set them, send a test, rotate the secret, turn them off; members may not. */

let g: TestGateway;
let receiver: WebhookReceiver;
beforeAll(async () => {
  // The receiver is on 127.0.0.1: a loopback address alerts reach only where the operator allows it.
  g = await startGateway({ credits: 0, env: { ALERT_RETRY_BASE_MS: '20', ALERT_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32' } });
  receiver = await WebhookReceiver.start();
});
afterAll(async () => {
  await g.close();
  await receiver.close();
});

it("an organization's owners set its alerts and send a test one; its members may not; CSRF is required", async () => {
  const owner = await person(g, 'owner@example.com');
  const dev = await person(g, 'dev@example.com');
  const org = await owner.post('/organizations', { name: 'Team' }).expect(201);
  await owner.post('/members', { email: 'dev@example.com' }).expect(201);
  await dev.post('/organizations/active', { orgId: org.body.id }).expect(200);

  expect((await owner.get('/alerts').expect(200)).body).toEqual({ data: null });
  await owner.agent.post('/dashboard/api/alerts').send({ url: receiver.url }).expect(403); // no CSRF token
  await owner.post('/alerts', { url: receiver.url, balance_below: 'ten' }).expect(400);
  const set = await owner
    .post('/alerts', { url: receiver.url, balance_below: '10', day_spend_above: '2.5', key_limits: true })
    .expect(200);
  expect(set.body.data).toMatchObject({ url: receiver.url, balance_below: '10', day_spend_above: '2.5', key_limits: true });
  expect(set.body.secret).toMatch(/^whsec_/);
  expect((await owner.get('/alerts').expect(200)).body.data).toEqual(set.body.data);

  await dev.get('/alerts').expect(403);
  await dev.post('/alerts', { url: receiver.url }).expect(403);
  await dev.post('/alerts/test').expect(403);

  const { alert_id } = (await owner.post('/alerts/test').expect(202)).body;
  await receiver.until((r) => r.length === 1);
  expect(receiver.ids()).toEqual([alert_id]);
  const payload = new Webhook(set.body.secret).verify(receiver.received[0].body, receiver.received[0].headers);
  expect(payload).toMatchObject({ type: 'test', data: { org_id: org.body.id } });

  const rotated = (await owner.post('/alerts/secret').expect(200)).body.secret;
  expect(rotated).not.toBe(set.body.secret);
  await owner.post('/alerts/off').expect(204);
  expect((await owner.get('/alerts').expect(200)).body).toEqual({ data: null });
  await owner.post('/alerts/test').expect(404);
});
