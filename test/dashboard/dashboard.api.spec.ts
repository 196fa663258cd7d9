import OpenAI from 'openai';
import request from 'supertest';
import { PLAIN_GPT, plainGptModel, startGateway, testCatalogueWith, TEST_MODELS, TestGateway } from '../support/gateway';
import { person } from '../support/dashboard';
import { eventually } from '../support/processes';

const M = TEST_MODELS;

describe('dashboard API', () => {
  let g: TestGateway;
  beforeAll(async () => {
    g = await startGateway({ credits: 0, catalogue: testCatalogueWith(plainGptModel()) });
  });
  afterAll(async () => {
    expect((await g.audit()).differences).toEqual([]);
    await g.close();
  });

  it('signs up with a session cookie that is HttpOnly and SameSite, and refuses changes without the CSRF token', async () => {
    const ada = await person(g, 'ada@example.com');
    expect(ada.cookie).toMatch(/mg_session=[^;]+; Max-Age=43200; Path=\/dashboard; HttpOnly; SameSite=Strict/);
    const session = await ada.get('/session').expect(200);
    expect(session.body).toMatchObject({ user: { email: 'ada@example.com' }, organizations: [], activeOrg: null });
    await ada.agent.post('/dashboard/api/organizations').send({ name: 'No token' }).expect(403);
    await ada.agent.post('/dashboard/api/organizations').set('x-csrf-token', 'forged').send({ name: 'Wrong token' }).expect(403);
    const created = await ada.post('/organizations', { name: 'Ada Labs' }).expect(201);
    const after = await ada.get('/session').expect(200);
    expect(after.body.organizations).toEqual([{ id: created.body.id, name: 'Ada Labs' }]);
    expect(after.body.activeOrg).toMatchObject({ id: created.body.id, name: 'Ada Labs', credits: { available: 0 } });
    // Duplicate email (answered as any sign-up: no account is revealed, none is changed), signing in, signing out.
    const duplicate = await request(g.baseUrl)
      .post('/dashboard/api/signup')
      .send({ email: 'ADA@example.com', password: 'another long one' })
      .expect(202);
    expect(duplicate.headers['set-cookie']).toBeUndefined();
    await request(g.baseUrl)
      .post('/dashboard/api/signin')
      .send({ email: 'ada@example.com', password: 'another long one' })
      .expect(401);
    const again = request.agent(g.baseUrl);
    const signin = await again
      .post('/dashboard/api/signin')
      .send({ email: 'ada@example.com', password: 'correct horse battery' })
      .expect(200);
    expect((await again.get('/dashboard/api/session').expect(200)).body.activeOrg.id).toBe(created.body.id);
    await again.post('/dashboard/api/signout').set('x-csrf-token', signin.body.csrf).expect(204);
    await again.get('/dashboard/api/session').expect(401);
  });

  it('manages keys: the secret is shown once, a revoked key is refused by the API', async () => {
    const bob = await person(g, 'bob@example.com');
    const org = await bob.post('/organizations', { name: 'Bob Co' }).expect(201);
    await g.t.runtime.ledger.grant(org.body.id, 1_000_000_000, 'test');
    const key = await bob.post('/keys', { name: 'laptop' }).expect(201);
    expect(key.body).toMatchObject({
      name: 'laptop',
      secret: expect.stringMatching(/^sk-svc-/),
      prefix: key.body.secret.slice(0, 13),
    });
    const list = await bob.get('/keys').expect(200);
    expect(list.body.data).toEqual([
      expect.objectContaining({ id: key.body.id, name: 'laptop', status: 'active', lastUsedAt: null }),
    ]);
    expect(JSON.stringify(list.body)).not.toContain(key.body.secret);

    const client = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: key.body.secret, maxRetries: 0 });
    await client.chat.completions.create({ model: M.gpt.slug, messages: [{ role: 'user', content: 'hi' }] });
    await g.settled();
    expect((await bob.get('/keys')).body.data[0].lastUsedAt).toEqual(expect.any(String));

    // A credit limit: set, shown with what it counts, refused when not an amount, cleared.
    const limited = await bob.post(`/keys/${key.body.id}/limit`, { limit: '2.5', reset: 'daily' }).expect(200);
    expect(limited.body).toMatchObject({ limit: '2.5', limitReset: 'daily', limitUsage: expect.any(String) });
    expect(
      (await bob.post(`/keys/${key.body.id}/limit`, { limit: 'lots', reset: 'daily' }).expect(400)).body.error.message,
    ).toMatch(/not an amount of credits/);
    await bob.post(`/keys/${key.body.id}/limit`, { limit: '1', reset: 'hourly' }).expect(400);
    expect((await bob.post(`/keys/${key.body.id}/limit`, { limit: null, reset: 'never' }).expect(200)).body.limit).toBeNull();
    await bob.post(`/keys/00000000-0000-4000-8000-000000000000/limit`, { limit: '1', reset: 'never' }).expect(404);

    await bob.post(`/keys/${key.body.id}/revoke`).expect(200);
    expect((await bob.get('/keys')).body.data[0].status).toBe('revoked');
    const revokedAt = Date.now();
    const refused = await client.chat.completions
      .create({ model: M.gpt.slug, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(refused.status).toBe(401);
    expect(Date.now() - revokedAt).toBeLessThan(1000);
  });

  it('keeps organizations apart: no route lets one member list, read or revoke another organization’s keys or usage', async () => {
    const alice = await person(g, 'alice@example.com');
    const mallory = await person(g, 'mallory@example.com');
    const aliceOrg = (await alice.post('/organizations', { name: 'Alice Inc' }).expect(201)).body.id;
    await mallory.post('/organizations', { name: 'Mallory Ltd' }).expect(201);
    const aliceKey = (await alice.post('/keys', { name: 'prod' }).expect(201)).body;

    // Switching to someone else's organization: refused.
    await mallory.post('/organizations/active', { orgId: aliceOrg }).expect(404);
    // Revoking someone else's key by id: not found, and the key stays active.
    await mallory.post(`/keys/${aliceKey.id}/revoke`).expect(404);
    expect((await alice.get('/keys')).body.data[0].status).toBe('active');
    // Listing: only one's own.
    expect(JSON.stringify((await mallory.get('/keys')).body)).not.toContain(aliceKey.id);
    expect((await mallory.get('/usage')).body.data).toEqual([]);
    // A forged session (activeOrgId edited in the cookie) fails its signature.
    const token = /mg_session=([^;]+)/.exec(mallory.cookie)![1];
    const [body, mac] = token.split('.');
    const forged = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString()), activeOrgId: aliceOrg }),
    ).toString('base64url');
    await request(g.baseUrl).get('/dashboard/api/keys').set('cookie', `mg_session=${forged}.${mac}`).expect(401);
    // An API key is not a session, and a session is not an API key.
    await request(g.baseUrl).get('/dashboard/api/keys').set('authorization', `Bearer ${aliceKey.secret}`).expect(401);
    await request(g.baseUrl).get('/api/v1/credits').set('cookie', `mg_session=${token}`).expect(401);
    // No route shows the secret again.
    for (const path of ['/session', '/keys', '/usage', '/models']) {
      expect(JSON.stringify((await alice.get(path)).body)).not.toContain(aliceKey.secret);
    }
  });

  it('slows down repeated failed sign-ins', async () => {
    await person(g, 'victim@example.com');
    const attempt = () =>
      request(g.baseUrl).post('/dashboard/api/signin').send({ email: 'victim@example.com', password: 'wrong guess!' });
    for (let i = 0; i < 4; i++) expect((await attempt()).status).toBe(401);
    const throttled = await attempt();
    expect(throttled.status).toBe(429);
    expect(throttled.body).toMatchObject({ error: { code: 'rate_limited' }, retryAfterSeconds: expect.any(Number) });
    expect(throttled.headers['retry-after']).toBe(String(throttled.body.retryAfterSeconds));
    // Unknown emails answer the same way as wrong passwords.
    const unknown = await request(g.baseUrl)
      .post('/dashboard/api/signin')
      .send({ email: 'nobody@example.com', password: 'whatever!' });
    expect(unknown.status).toBe(401);
    expect(unknown.body.error.message).toBe('wrong email or password');
  });

  it('shows usage newest first, filtered and paginated, with spend per day that agrees with the ledger', async () => {
    const carol = await person(g, 'carol@example.com');
    const orgId = (await carol.post('/organizations', { name: 'Carol' }).expect(201)).body.id;
    await g.t.runtime.ledger.grant(orgId, 5_000_000_000, 'test');
    await g.t.runtime.projector.catchUp();
    const k1 = (await carol.post('/keys', { name: 'one' })).body;
    const k2 = (await carol.post('/keys', { name: 'two' })).body;
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'ok', usage: { input: 1000, output: 100 } } });
    g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'ok', usage: { input: 10, output: 1 } } });
    for (const [key, model] of [
      [k1, M.gpt],
      [k2, M.gpt],
      [k1, M.claude],
      [k2, M.claude],
      [k1, M.gpt],
    ] as const) {
      await new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: key.secret, maxRetries: 0 }).chat.completions.create({
        model: model.slug,
        messages: [{ role: 'user', content: 'hi' }],
      });
    }
    await g.settled();
    const all = (await carol.get('/usage?pageSize=2').expect(200)).body;
    expect(all.total).toBe(5);
    expect(all.data).toHaveLength(2);
    expect(all.data[0]).toMatchObject({
      keyName: 'one',
      model: M.gpt.slug,
      host: 'fake-openai',
      inputTokens: 1000,
      outputTokens: 100,
      cost: 0.0012,
      status: 'ok',
      surface: 'chat-completions',
    });
    expect(Date.parse(all.data[0].time)).toBeGreaterThanOrEqual(Date.parse(all.data[1].time));
    const page3 = (await carol.get('/usage?pageSize=2&page=3')).body;
    expect(page3.data).toHaveLength(1);
    expect((await carol.get(`/usage?keyId=${k2.id}`)).body.total).toBe(2);
    expect((await carol.get(`/usage?model=${encodeURIComponent(M.claude.slug)}`)).body.total).toBe(2);
    expect((await carol.get('/usage?from=2000-01-01&to=2000-01-02')).body.total).toBe(0);
    await carol.get('/usage?from=yesterday').expect(400);
    // To the unit: the days' spend and the totals equal what the ledger says was spent.
    const { spent } = await g.t.runtime.projections.balance(orgId);
    const usage = (await carol.get('/usage')).body;
    expect(usage.spendPerDay.reduce((n: number, d: { costNano: number }) => n + d.costNano, 0)).toBe(spent);
    expect(usage.totals.costNano).toBe(spent);
    expect(usage.spendPerDay).toHaveLength(14);
  });

  it('runs the playground on the active organization, streaming, and the stop aborts the upstream', async () => {
    const dan = await person(g, 'dan@example.com');
    const created = await dan.post('/organizations', { name: 'Dan' }).expect(201);
    const orgId = created.body.id;
    // The session now names the new organization: the browser keeps the newest cookie.
    const cookie = /mg_session=[^;]+/.exec(String(created.headers['set-cookie']))![0];
    await dan.post('/playground', { model: M.gpt.slug, messages: [{ role: 'user', content: 'hi' }] }).expect(402);
    await g.t.runtime.ledger.grant(orgId, 1_000_000_000, 'test');
    await g.t.runtime.projector.catchUp();
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'alpha beta gamma', usage: { input: 5, output: 3 } } });
    const playground = (body: unknown, signal?: AbortSignal) =>
      fetch(`${g.baseUrl}/dashboard/api/playground`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': dan.csrf },
        body: JSON.stringify(body),
        signal,
      });
    const res = await playground({ model: M.gpt.slug, system: 'Be nice.', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('event: delta');
    expect(text).toMatch(
      /event: done\ndata: \{"finish_reason":"stop","usage":\{"input_tokens":5,"output_tokens":3,"cache_read_tokens":0,"cache_write_tokens":0\},"cost":0\.000011/,
    );
    expect(g.fake.requests[g.fake.requests.length - 1].body.messages[0]).toEqual({ role: 'system', content: 'Be nice.' });
    await g.settled();
    expect((await dan.get('/usage')).body.data[0]).toMatchObject({
      surface: 'playground',
      keyName: 'Playground',
      cost: 0.000011,
    });

    // Stop: the browser aborts its fetch; the upstream call is aborted too (a model that does not
    // reason: a reasoning model's is read to its end, billing.spec.ts).
    g.fake.on(M.gpt.hostModel, {
      kind: 'reply',
      reply: { text: Array.from({ length: 300 }, (_, i) => `w${i}`).join(' '), usage: null },
      chunkDelayMs: 10,
    });
    const index = g.fake.requests.length;
    const abort = new AbortController();
    const stream = await playground({ model: PLAIN_GPT.slug, messages: [{ role: 'user', content: 'long' }] }, abort.signal);
    const reader = stream.body!.getReader();
    await reader.read();
    await reader.read();
    abort.abort();
    await g.fake.closed(index);
    await g.settled();
    await eventually(async () => (await dan.get('/usage')).body.data[0]?.status === 'client_abort', 15_000);
    expect((await dan.get('/usage')).body.data[0]).toMatchObject({ surface: 'playground', status: 'client_abort' });
  });

  it('can turn sign-up off', async () => {
    const closed = await startGateway({ env: { DASHBOARD_SIGNUP: 'off' } });
    try {
      expect((await request(closed.baseUrl).get('/dashboard/api/config')).body.signupEnabled).toBe(false);
      await request(closed.baseUrl)
        .post('/dashboard/api/signup')
        .send({ email: 'x@example.com', password: 'long enough pw' })
        .expect(403);
    } finally {
      await closed.close();
    }
  });
});
