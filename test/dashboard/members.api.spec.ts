import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { chatCompletion } from '../support/streams';
import { person } from '../support/dashboard';

/**
 * Members in the dashboard: owners add people by email, remove them and choose who may manage
 * keys; keys are created, changed and revoked only by owners and the members they allow.
 */

let g: TestGateway;
beforeAll(async () => {
  g = await startGateway({ credits: 0 });
});
afterAll(async () => {
  expect((await g.audit()).differences).toEqual([]);
  await g.close();
});

it('owners add members by email, choose who manages keys, and remove them; members only look', async () => {
  const owner = await person(g, 'owner@example.com');
  const dev = await person(g, 'dev@example.com');
  const other = await person(g, 'other@example.com');
  const org = await owner.post('/organizations', { name: 'Team' }).expect(201);

  // Added by email (signed up first), as a member who may not manage keys. An email with no account
  // is told as what to do, not as "no user with this email".
  const unknown = await owner.post('/members', { email: 'nobody@example.com' }).expect(404);
  expect(unknown.body.error.message).toBe(
    'nobody@example.com cannot be added yet: people are added once they have signed up with this email (ask them to sign up, then add them again)',
  );
  await owner.post('/members', { email: 'not an email' }).expect(400);
  const added = await owner.post('/members', { email: 'DEV@example.com' }).expect(201);
  expect(added.body).toMatchObject({ email: 'dev@example.com', role: 'member', manageKeys: false, you: false });
  await owner.post('/members', { email: 'dev@example.com' }).expect(409);
  const devId: string = added.body.userId;

  // The member sees the organization, its members and its keys, and changes nothing.
  await dev.post('/organizations/active', { orgId: org.body.id }).expect(200);
  const devSession = (await dev.get('/session').expect(200)).body;
  expect(devSession.activeOrg).toMatchObject({ id: org.body.id, role: 'member', manageKeys: false });
  expect((await dev.get('/members').expect(200)).body.data.map((m: { email: string }) => m.email)).toEqual([
    'owner@example.com',
    'dev@example.com',
  ]);
  const ownersKey = await owner.post('/keys', { name: 'prod' }).expect(201);
  expect((await dev.get('/keys').expect(200)).body.data).toHaveLength(1);
  const refused = await dev.post('/keys', { name: 'mine' }).expect(403);
  expect(refused.body.error.message).toMatch(/owners, and members they allow, manage its keys/);
  await dev.post(`/keys/${ownersKey.body.id}/revoke`).expect(403);
  await dev.post(`/keys/${ownersKey.body.id}/limit`, { limit: '1', reset: 'never' }).expect(403);
  await dev.post('/members', { email: 'other@example.com' }).expect(403);
  // The same to an email with no account: a member learns nothing of who has one.
  await dev.post('/members', { email: 'nobody@example.com' }).expect(403);
  await dev.post(`/members/${devId}/key-access`, { manageKeys: true }).expect(403);

  // Allowed to manage keys: creates, limits and revokes them; still not an owner.
  const allowed = await owner.post(`/members/${devId}/key-access`, { manageKeys: true }).expect(200);
  expect(allowed.body).toMatchObject({ manageKeys: true, role: 'member' });
  expect((await dev.get('/session').expect(200)).body.activeOrg.manageKeys).toBe(true);
  const devKey = await dev.post('/keys', { name: 'mine' }).expect(201);
  // Not a management key, which reaches what only owners see (alerts, the ledger).
  const management = await dev.post('/keys', { name: 'platform', management: true }).expect(403);
  expect(management.body.error.message).toBe("only the organization's owners make management keys");
  await dev.post(`/keys/${devKey.body.id}/limit`, { limit: '1', reset: 'monthly' }).expect(200);
  await dev.post(`/keys/${ownersKey.body.id}/revoke`).expect(200);
  await dev.post('/members', { email: 'other@example.com' }).expect(403);

  // Someone outside the organization sees none of it.
  await other.post('/organizations/active', { orgId: org.body.id }).expect(404);

  // The last owner stays; a second owner may remove the first; a removed member loses the organization at once.
  const ownerId = (await owner.get('/members').expect(200)).body.data[0].userId;
  await owner.post(`/members/${ownerId}/remove`).expect(409);
  await owner.post(`/members/${devId}/key-access`, { manageKeys: false }).expect(200);
  await owner.post(`/members/${ownerId}/key-access`, { manageKeys: true }).expect(400);
  await owner.post(`/members/${devId}/remove`).expect(200);
  // Their sessions end with it; signed in again, they see the organization no more.
  await dev.get('/keys').expect(401);
  await dev.get('/session').expect(401);
  const devAgain = await person(g, 'dev@example.com');
  expect((await devAgain.get('/session').expect(200)).body.organizations).toEqual([]);
  await owner.post(`/members/${devId}/remove`).expect(404);
  await owner.post('/members', { email: 'other@example.com', role: 'owner' }).expect(201);
  await other.post('/organizations/active', { orgId: org.body.id }).expect(200);
  await other.post(`/members/${ownerId}/remove`).expect(200);
  expect((await other.get('/members').expect(200)).body.data).toEqual([
    expect.objectContaining({ email: 'other@example.com', role: 'owner', manageKeys: true, you: true }),
  ]);
});

it('keys get their own rate limits, an expiry, or are made as management keys, from the dashboard', async () => {
  const ann = await person(g, 'ann@example.com');
  const org = await ann.post('/organizations', { name: 'Ann Co' }).expect(201);
  await g.t.runtime.ledger.grant(org.body.id, 1_000_000_000, 'test');
  const key = await ann.post('/keys', { name: 'limited' }).expect(201);
  const limited = await ann.post(`/keys/${key.body.id}/rate-limits`, { requestsPerMinute: 1, tokensPerMinute: null }).expect(200);
  expect(limited.body).toMatchObject({ rateLimits: { requestsPerMinute: 1 }, kind: 'ordinary' });
  await ann.post(`/keys/${key.body.id}/rate-limits`, { requestsPerMinute: 0 }).expect(400);
  await ann.post(`/keys/${key.body.id}/rate-limits`, { requestsPerMinute: 1.5 }).expect(400);

  const chat = (secret: string) => chatCompletion(g.baseUrl, secret, { max_tokens: 5 });
  g.fake.on(TEST_MODELS.gpt.hostModel, { kind: 'reply', reply: { text: 'ok' } });
  const first = await chat(key.body.secret);
  expect(first.status).toBe(200);
  expect(first.headers.get('x-ratelimit-limit-requests')).toBe('1');
  await first.text();
  expect((await chat(key.body.secret)).status).toBe(429);
  expect((await ann.post(`/keys/${key.body.id}/rate-limits`, {}).expect(200)).body.rateLimits).toBeNull();
  const served = await chat(key.body.secret);
  expect(served.status).toBe(200);
  await served.text();

  // An expiry: in the past refused; in the future shown; cleared.
  await ann.post(`/keys/${key.body.id}/expiry`, { expiresAt: '2001-01-01T00:00:00Z' }).expect(400);
  await ann.post(`/keys/${key.body.id}/expiry`, { expiresAt: 'tomorrow' }).expect(400);
  const future = new Date(Date.now() + 86_400_000).toISOString();
  expect((await ann.post(`/keys/${key.body.id}/expiry`, { expiresAt: future }).expect(200)).body.expiresAt).toBe(future);
  expect((await ann.post(`/keys/${key.body.id}/expiry`, { expiresAt: null }).expect(200)).body.expiresAt).toBeNull();

  // A management key manages keys through the API and cannot call models.
  const manager = await ann.post('/keys', { name: 'platform', management: true }).expect(201);
  expect(manager.body.kind).toBe('management');
  expect((await chat(manager.body.secret)).status).toBe(403);
  const listed = await fetch(`${g.baseUrl}/api/v1/keys`, { headers: { authorization: `Bearer ${manager.body.secret}` } });
  expect(listed.status).toBe(200);
  expect(((await listed.json()) as { data: Array<{ name: string }> }).data.map((k) => k.name)).toEqual(['limited']);
  await g.settled();
});

it('adding members is throttled (it tells whether an email has an account): a member added gives the attempt back', async () => {
  const owner = await person(g, 'prober@example.com');
  await owner.post('/organizations', { name: 'Probe' }).expect(201);
  for (const email of ['amy@example.com', 'bob@example.com', 'cat@example.com'])
    await g.t.runtime.identity.registerUser(email, 'a long enough password');
  for (let i = 0; i < 4; i += 1) await owner.post('/members', { email: `guess-${i}@example.com` }).expect(404);
  // People added count for nothing.
  for (const email of ['amy@example.com', 'bob@example.com', 'cat@example.com'])
    await owner.post('/members', { email }).expect(201);

  // 50 guesses at once: the 6 attempts left are tried, the rest refused at once, saying how long to wait.
  const guesses = await Promise.all(
    Array.from({ length: 50 }, (_, i) => owner.post('/members', { email: `burst-${i}@example.com` })),
  );
  expect(guesses.filter((r) => r.status === 404)).toHaveLength(6);
  const throttled = guesses.filter((r) => r.status === 429);
  expect(throttled).toHaveLength(44);
  expect(Number(throttled[0].headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect(throttled[0].body.error).toEqual({
    code: 'rate_limited',
    message: expect.stringMatching(/too many attempts to add members/),
  });
  expect(throttled[0].body.retryAfterSeconds).toBeGreaterThanOrEqual(1);
  // Until the wait is over, no email is tried, one with an account neither.
  await g.t.runtime.identity.registerUser('dan@example.com', 'a long enough password');
  await owner.post('/members', { email: 'dan@example.com' }).expect(429);
  expect((await owner.get('/members').expect(200)).body.data).toHaveLength(4);
  // Counted per owner and per organization: another owner (from the same address) adds at once.
  const elsewhere = await person(g, 'elsewhere@example.com');
  await elsewhere.post('/organizations', { name: 'Elsewhere' }).expect(201);
  await elsewhere.post('/members', { email: 'dan@example.com' }).expect(201);
});
