import { person } from '../support/dashboard';
import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { createKey } from '../support/keys';
import { chatCompletion } from '../support/streams';

/** Credit notes in the dashboard: owners (who manage billing) issue them; the usage view shows refunds. */

const M = TEST_MODELS;

let g: TestGateway;
beforeAll(async () => {
  g = await startGateway({ credits: 0 });
});
afterAll(async () => {
  expect((await g.audit()).differences).toEqual([]);
  await g.close();
});

it('owners refund a generation and adjust the balance, once per idempotency key; members may not; the usage view shows the refund', async () => {
  const owner = await person(g, 'owner@example.com');
  const dev = await person(g, 'dev@example.com');
  const org = await owner.post('/organizations', { name: 'Billed' }).expect(201);
  const orgId: string = org.body.id;
  await g.t.runtime.ledger.grant(orgId, 10_000_000_000, 'test');
  await owner.post('/members', { email: 'dev@example.com', manageKeys: true }).expect(201);
  await dev.post('/organizations/active', { orgId }).expect(200);
  const key = await owner.post('/keys', { name: 'prod' }).expect(201);

  g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.', usage: { input: 2000, output: 1000 } } });
  const served = await chatCompletion(g.baseUrl, key.body.secret, { max_tokens: 2000 });
  expect(served.status).toBe(200);
  const requestId = served.headers.get('x-request-id')!;
  await g.settled();
  const row = (await owner.get('/usage').expect(200)).body.data.find((r: { requestId: string }) => r.requestId === requestId);
  expect(row).toMatchObject({ refundedNano: 0, estimated: [] });

  const refund = { kind: 'refund', generation: requestId, amount: '0.000001', reason: 'dispute', idempotency_key: 'click-1' };
  const refused = await dev.post('/credit-notes', refund).expect(403);
  expect(refused.body).toEqual({ error: { code: 'forbidden', message: "only the organization's owners manage its billing" } });
  const issued = await owner.post('/credit-notes', refund).expect(201);
  expect(issued.body).toMatchObject({ kind: 'refund', amount_nano: 1000, issued_by: expect.any(String), already_issued: false });
  const again = await owner.post('/credit-notes', refund).expect(200);
  expect(again.body).toMatchObject({ id: issued.body.id, already_issued: true });
  const bad = await owner.post('/credit-notes', { ...refund, reason: 'because', idempotency_key: 'click-2' }).expect(400);
  expect(bad.body.error.code).toBe('invalid_request');
  await owner.post('/credit-notes', { ...refund, amount: '100', idempotency_key: 'click-3' }).expect(400);

  const shown = (await owner.get('/usage').expect(200)).body.data.find((r: { requestId: string }) => r.requestId === requestId);
  expect(shown).toMatchObject({ refundedNano: 1000, refunded: 0.000001 });
  // The page's spend is net of the refund, to the nano-credit of the ledger's (total_usage, the FOCUS export).
  const { spent } = await g.t.runtime.projections.balance(orgId);
  expect(spent).toBe(row.costNano - 1000);
  const usage = (await owner.get('/usage').expect(200)).body;
  expect(usage.totals.costNano).toBe(spent);
  expect(usage.spendPerDay.reduce((n: number, d: { costNano: number }) => n + d.costNano, 0)).toBe(spent);
  expect((await owner.get(`/usage?keyId=${key.body.id}`).expect(200)).body.totals.costNano).toBe(spent);

  await owner
    .post('/credit-notes', { kind: 'adjustment', amount: '-1', reason: 'correction', idempotency_key: 'adj-1' })
    .expect(201);
  const balance = await g.t.runtime.projections.balance(orgId);
  expect(balance.granted).toBe(9_000_000_000);

  // Billing rights for a management key: the operator gives them; neither an owner nor a member may.
  const refusedRights = await owner.post('/keys', { name: 'finance', management: true, billing: true }).expect(403);
  expect(refusedRights.body.error.message).toMatch(/operator only: model-gateway keys create --management --billing/);
  await dev.post('/keys', { name: 'mine', management: true, billing: true }).expect(403);
  const finance = await createKey(g.t.runtime, orgId, 'finance', { kind: 'management', billing: true });
  await g.t.runtime.projector.catchUp();
  const byKey = await fetch(`${g.baseUrl}/api/v1/credit-notes`, {
    method: 'POST',
    headers: { authorization: `Bearer ${finance.secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ kind: 'adjustment', amount: 1, reason: 'goodwill', idempotency_key: 'api-1' }),
  });
  expect(byKey.status).toBe(201);
});
