import { hashKeySecret, keyPrefixOf, newKeySecret } from '../../src/identity/secrets';
import { apiKeyStream } from '../../src/keys/api-key/api-key.events';
import { person } from '../support/dashboard';
import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { createKey } from '../support/keys';
import { chatCompletion } from '../support/streams';

/**
 * Credit notes and the dashboard: anyone may sign up and own an organization, so no owner issues a
 * note nor gives a key billing rights there (the operator does); owners see the notes issued.
 */

const M = TEST_MODELS;
const OPERATOR_TOOL = /operator.*model-gateway credits refund \/ credits adjust/;

let g: TestGateway;
beforeAll(async () => {
  g = await startGateway({ credits: 0 });
});
afterAll(async () => {
  expect((await g.audit()).differences).toEqual([]);
  await g.close();
});

/** A note asked of the management API with `secret`. */
const issueWith = async (secret: string, body: unknown) => {
  const res = await fetch(`${g.baseUrl}/api/v1/credit-notes`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
};

it("an owner issues no credit note from the dashboard (403 naming the operator tool), and sees the operator's in the usage view", async () => {
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
  const before = await g.t.runtime.projections.balance(orgId);

  // The review's findings: a free refund of one's own usage, and credits minted by an adjustment.
  const refund = { kind: 'refund', generation: requestId, reason: 'dispute', idempotency_key: 'click-1' };
  const mint = { kind: 'adjustment', amount: '5000000', reason: 'goodwill', idempotency_key: 'click-2' };
  for (const asked of [refund, mint, { nonsense: true }]) {
    for (const who of [owner, dev]) {
      const refused = await who.post('/credit-notes', asked).expect(403);
      expect(refused.body.error).toEqual({ code: 'forbidden', message: expect.stringMatching(OPERATOR_TOOL) });
    }
  }
  expect(await g.t.runtime.projections.balance(orgId)).toEqual(before);

  // The operator's notes (here through a management key the operator made with billing rights)
  // show to the owner: the refund beside its request, the spend net of it.
  const finance = await createKey(g.t.runtime, orgId, 'finance', { kind: 'management', billing: true });
  await g.t.runtime.projector.catchUp();
  const issued = await issueWith(finance.secret, { ...refund, amount: '0.000001', idempotency_key: 'op-1' });
  expect(issued.status).toBe(201);
  expect(issued.body.data).toMatchObject({ kind: 'refund', amount_nano: 1000, key_id: key.body.id, issued_by: finance.keyId });
  const shown = (await owner.get('/usage').expect(200)).body.data.find((r: { requestId: string }) => r.requestId === requestId);
  expect(shown).toMatchObject({ refundedNano: 1000, refunded: 0.000001 });
  const { spent } = await g.t.runtime.projections.balance(orgId);
  expect(spent).toBe(row.costNano - 1000);
  const usage = (await owner.get('/usage').expect(200)).body;
  expect(usage.totals.costNano).toBe(spent);
  expect(usage.spendPerDay.reduce((n: number, d: { costNano: number }) => n + d.costNano, 0)).toBe(spent);
  // The keys page shows which key the operator gave billing rights.
  const listed = (await owner.get('/keys').expect(200)).body.data;
  expect(listed.find((k: { id: string }) => k.id === finance.keyId)).toMatchObject({ kind: 'management', billing: true });
});

it('an owner cannot give a management key billing rights (403 naming the operator tool); a member who manages keys makes no management key', async () => {
  const owner = await person(g, 'ann@example.com');
  const dev = await person(g, 'ben@example.com');
  const org = await owner.post('/organizations', { name: 'Keys' }).expect(201);
  await owner.post('/members', { email: 'ben@example.com', manageKeys: true }).expect(201);
  await dev.post('/organizations/active', { orgId: org.body.id }).expect(200);

  const refused = await owner.post('/keys', { name: 'finance', management: true, billing: true }).expect(403);
  expect(refused.body.error).toEqual({
    code: 'forbidden',
    message: expect.stringMatching(/given by the gateway's operator only: model-gateway keys create --management --billing/),
  });
  await owner.post('/keys', { name: 'finance', billing: true }).expect(400); // billing rights are for a management key only
  const byMember = await dev.post('/keys', { name: 'mine', management: true }).expect(403);
  expect(byMember.body.error).toEqual({ code: 'forbidden', message: "only the organization's owners make management keys" });
  await dev.post('/keys', { name: 'mine', management: true, billing: true }).expect(403);
  expect((await owner.get('/keys').expect(200)).body.data).toEqual([]);

  // An owner's management key manages keys, and issues no credit note.
  const platform = await owner.post('/keys', { name: 'platform', management: true }).expect(201);
  expect(platform.body).toMatchObject({ kind: 'management', billing: false });
  const note = await issueWith(platform.body.secret, {
    kind: 'adjustment',
    amount: 1,
    reason: 'goodwill',
    idempotency_key: 'a-1',
  });
  expect(note.status).toBe(403);
  expect(note.body.error.message).toMatch(/billing rights by the gateway's operator/);
  // The member still makes ordinary keys; changes no management key (an owner may have stopped it), may revoke one.
  await dev.post('/keys', { name: 'mine' }).expect(201);
  const change = await dev.post(`/keys/${platform.body.id}/expiry`, { expiresAt: null }).expect(403);
  expect(change.body.error.message).toBe("only the organization's owners change management keys");
  await owner.post(`/keys/${platform.body.id}/expiry`, { expiresAt: null }).expect(200);
  await dev.post(`/keys/${platform.body.id}/revoke`).expect(200);
});

it('a billing-rights key an owner made in the dashboard before (an event that names no maker) issues no credit note', async () => {
  const owner = await person(g, 'cleo@example.com');
  const org = await owner.post('/organizations', { name: 'Before' }).expect(201);
  const orgId: string = org.body.id;
  // The key as the dashboard wrote it before this version: billing rights, and no word of who made it.
  const secret = newKeySecret();
  const keyId = 'made-in-the-dashboard-before';
  const data = {
    ...{ keyId, orgId, name: 'finance', hash: hashKeySecret(secret), prefix: keyPrefixOf(secret), createdAt: Date.now() },
    ...{ kind: 'management' as const, billing: true as const },
  };
  await g.t.runtime.events.append(apiKeyStream(keyId), [{ type: 'ApiKeyCreated', data }], 'no_stream');
  await g.t.runtime.projector.catchUp();

  const before = await g.t.runtime.projections.balance(orgId);
  const refused = await issueWith(secret, { kind: 'adjustment', amount: 5_000_000, reason: 'goodwill', idempotency_key: 'm-1' });
  expect(refused.status).toBe(403);
  expect(refused.body.error).toMatchObject({ code: 'forbidden', type: 'permission_error' });
  expect(await g.t.runtime.projections.balance(orgId)).toEqual(before);
  // Still a management key: it manages keys; the page shows no billing rights on it.
  const keys = await fetch(`${g.baseUrl}/api/v1/keys`, { headers: { authorization: `Bearer ${secret}` } });
  expect(keys.status).toBe(200);
  await keys.text();
  expect((await owner.get('/keys').expect(200)).body.data).toEqual([
    expect.objectContaining({ id: keyId, kind: 'management', billing: false }),
  ]);
});
