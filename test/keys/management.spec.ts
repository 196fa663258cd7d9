import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { chatCompletion } from '../support/streams';
import { fundedOrganization } from '../support/runtime';
import { createKey } from '../support/keys';

/** The management API (/api/v1/keys): a platform issuing keys per end user, confined to its organization. */

const M = TEST_MODELS;

describe('management API', () => {
  let g: TestGateway;
  let managementA: string;
  let managementB: string;
  let orgB: string;

  beforeAll(async () => {
    g = await startGateway();
    managementA = (await createKey(g.t.runtime, g.orgId, 'platform A', { kind: 'management' })).secret;
    orgB = await fundedOrganization(g.t.runtime, 100_000_000_000);
    managementB = (await createKey(g.t.runtime, orgB, 'platform B', { kind: 'management' })).secret;
    await g.t.runtime.projector.catchUp();
  });
  afterAll(() => g.close());

  const call = async (method: string, path: string, secret: string, body?: unknown) => {
    const res = await fetch(`${g.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${secret}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const chat = (secret: string) => chatCompletion(g.baseUrl, secret);

  it('creates (secret shown once), lists, reads, updates and revokes keys of its organization', async () => {
    const created = await call('POST', '/api/v1/keys', managementA, {
      name: 'end user 42',
      rate_limits: { requests_per_minute: 30 },
      expires_at: '2099-01-01T00:00:00Z',
    });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^sk-svc-/);
    const id = created.body.data.id as string;
    expect(created.body.data).toMatchObject({
      name: 'end user 42',
      status: 'active',
      usage: 0,
      rate_limits: { requests_per_minute: 30, tokens_per_minute: null },
      expires_at: '2099-01-01T00:00:00.000Z',
    });
    // The key it made calls models, billed to the organization.
    const served = await chat(created.body.key);
    expect(served.status).toBe(200);
    expect(served.headers.get('x-ratelimit-limit-requests')).toBe('30');

    const listed = await call('GET', '/api/v1/keys', managementA);
    expect(listed.body.data.map((k: { id: string }) => k.id)).toEqual(expect.arrayContaining([id, g.keyId]));
    expect(JSON.stringify(listed.body)).not.toContain(created.body.key);
    const read = await call('GET', `/api/v1/keys/${id}`, managementA);
    expect(read.body.data.usage).toBeGreaterThan(0);

    const updated = await call('PATCH', `/api/v1/keys/${id}`, managementA, {
      disabled: true,
      rate_limits: null,
      name: 'user 42',
    });
    expect(updated.body.data).toMatchObject({ status: 'disabled', rate_limits: null, name: 'user 42' });
    expect((await chat(created.body.key)).status).toBe(401);
    const revoked = await call('DELETE', `/api/v1/keys/${id}`, managementA);
    expect(revoked.body.data.status).toBe('revoked');
    const changeRevoked = await call('PATCH', `/api/v1/keys/${id}`, managementA, { disabled: false });
    expect(changeRevoked.status).toBe(409);
    expect(changeRevoked.body.error.message).toMatch(/revoked/);
  });

  it("a management key of A cannot read, change or revoke B's keys, nor see them listed", async () => {
    const ofB = await call('POST', '/api/v1/keys', managementB, { name: 'B user' });
    const id = ofB.body.data.id as string;
    for (const [method, body] of [['GET'], ['PATCH', { disabled: true }], ['DELETE']] as const) {
      const res = await call(method, `/api/v1/keys/${id}`, managementA, body);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({
        error: { message: `no key ${id} in this organization`, type: 'invalid_request_error', param: null, code: 'not_found' },
      });
    }
    expect((await call('GET', '/api/v1/keys', managementA)).body.data.map((k: { id: string }) => k.id)).not.toContain(id);
    // Untouched: B's key still serves.
    expect((await chat(ofB.body.key)).status).toBe(200);
    // Nor B's generations.
    const res = await chat(ofB.body.key);
    const generation = await fetch(`${g.baseUrl}/api/v1/generation?id=${res.headers.get('x-request-id')}`, {
      headers: { authorization: `Bearer ${g.key}` },
    });
    expect(generation.status).toBe(404);
  });

  it('a management key cannot call a model or read usage; an ordinary key cannot use the management API', async () => {
    const asModel = await chat(managementA);
    expect(asModel.status).toBe(403);
    expect(await asModel.json()).toMatchObject({
      error: { code: 'forbidden', message: expect.stringContaining('management key') },
    });
    const messages = await fetch(`${g.baseUrl}/api/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': managementA, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: M.claude.slug, max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(messages.status).toBe(403);
    expect(await messages.json()).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
    expect((await fetch(`${g.baseUrl}/api/v1/credits`, { headers: { authorization: `Bearer ${managementA}` } })).status).toBe(
      403,
    );

    const ordinary = await call('GET', '/api/v1/keys', g.key);
    expect(ordinary.status).toBe(403);
    expect(ordinary.body.error.message).toMatch(/needs a management key/);
    expect((await call('POST', '/api/v1/keys', g.key, { name: 'sneaky' })).status).toBe(403);
    expect((await call('GET', '/api/v1/keys', 'sk-svc-unknown')).status).toBe(401);
  });

  it('refuses bad bodies naming the field, and a management key is never listed or managed through the API', async () => {
    const unknownField = await call('POST', '/api/v1/keys', managementA, { name: 'x', budget: 5 });
    expect(unknownField.status).toBe(400);
    expect(unknownField.body.error.message).toBe('budget is not allowed');
    expect(unknownField.body.error.param).toBe('budget');
    expect((await call('POST', '/api/v1/keys', managementA, { name: 'x', expires_at: 'soon' })).body.error.message).toMatch(
      /ISO 8601/,
    );
    expect((await call('POST', '/api/v1/keys', managementA, { name: 'x', rate_limits: { requests_per_minute: 0 } })).status).toBe(
      400,
    );
    expect((await call('PATCH', `/api/v1/keys/${g.keyId}`, managementA, {})).body.error.message).toMatch(
      /^the body must change something: name, limit/,
    );
    expect((await call('PATCH', `/api/v1/keys/${g.keyId}`, managementA, { budget: 5 })).body.error.message).toBe(
      'budget is not allowed',
    );
    const own = (await g.t.runtime.projections.keysOf(g.orgId)).find((k) => k.kind === 'management')!;
    expect((await call('GET', `/api/v1/keys/${own.keyId}`, managementA)).status).toBe(404);
  });

  it("keeps a limit's period when only its amount changes; exact about times and amounts; concurrent changes are never a 500", async () => {
    const created = await call('POST', '/api/v1/keys', managementA, { name: 'monthly', limit: 5, limit_reset: 'monthly' });
    const id = created.body.data.id;
    const raised = await call('PATCH', `/api/v1/keys/${id}`, managementA, { limit: 10 });
    expect(raised.body.data).toMatchObject({ limit: 10, limit_reset: 'monthly' });
    const small = await call('PATCH', `/api/v1/keys/${id}`, managementA, { limit: 0.0000005, limit_reset: 'daily' });
    expect(small.body.data).toMatchObject({ limit: 0.0000005, limit_reset: 'daily' });
    const tooFine = await call('PATCH', `/api/v1/keys/${id}`, managementA, { limit: 0.0000000001 });
    expect(tooFine.body.error.message).toMatch(/at most 9 decimals/);
    for (const expires_at of ['2030-02-30T00:00:00Z', '2030-01-01T00:00:00', '2030-01-01T25:00:00Z']) {
      const refused = await call('PATCH', `/api/v1/keys/${id}`, managementA, { expires_at });
      expect(refused.status).toBe(400);
      expect(refused.body.error.message).toMatch(/ISO 8601 with its zone/);
    }
    const misspelt = await call('PATCH', `/api/v1/keys/${id}`, managementA, { rate_limits: { requests_per_minute: 5, rpm: 3 } });
    expect(misspelt.body.error.message).toBe('rate_limits.rpm is not allowed');
    expect(misspelt.body.error.param).toBe('rate_limits.rpm');
    expect((await call('PATCH', `/api/v1/keys/${id}`, managementA, [1])).body.error.message).toBe(
      'the body must be a JSON object',
    );

    // Eight changes and four revocations at once: each applied, or a 409 to try again; never a 500.
    const changes = await Promise.all(
      Array.from({ length: 8 }, (_, i) => call('PATCH', `/api/v1/keys/${id}`, managementA, { name: `name ${i}` })),
    );
    expect(changes.every((c) => c.status === 200 || c.status === 409)).toBe(true);
    expect(changes.filter((c) => c.status === 200).length).toBeGreaterThan(0);
    const revocations = await Promise.all(Array.from({ length: 4 }, () => call('DELETE', `/api/v1/keys/${id}`, managementA)));
    expect(revocations.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(revocations.every((r) => r.body.data.status === 'revoked')).toBe(true);
  });
});
