import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { startGateway, TestGateway } from '../support/gateway';
import { createKey } from '../support/keys';

/** A lone surrogate as JSON writes it: well-formed JSON, but not well-formed text. */
const LONE = '\\ud800';

/**
 * Every dashboard and management route that takes text, given a lone surrogate: a 400 naming the
 * field, in the route's error format, never a 500, and nothing written to the log.
 */
describe('ill-formed text is a 4xx on every route that takes text', () => {
  let g: TestGateway;
  let fastify: FastifyInstance;
  let signedIn: Record<string, string>;
  let management: Record<string, string>;
  let keyId: string;

  const send = (
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    url: string,
    payload?: string,
    headers: Record<string, string> = {},
  ) =>
    fastify.inject({
      method,
      url,
      ...(payload === undefined ? {} : { payload }),
      headers: { 'content-type': 'application/json', ...headers },
    });

  beforeAll(async () => {
    g = await startGateway({ credits: 0 });
    fastify = g.app.getHttpAdapter().getInstance();
    const credentials = JSON.stringify({ email: 'ada@example.com', password: 'correct horse battery' });
    expect((await send('POST', '/dashboard/api/signup', credentials)).statusCode).toBe(202);
    const signin = await send('POST', '/dashboard/api/signin', credentials);
    const csrf = signin.json<{ csrf: string }>().csrf;
    let cookie = /mg_session=[^;]+/.exec(String(signin.headers['set-cookie']))![0];
    const org = await send('POST', '/dashboard/api/organizations', JSON.stringify({ name: 'Acme' }), {
      cookie,
      'x-csrf-token': csrf,
    });
    cookie = /mg_session=[^;]+/.exec(String(org.headers['set-cookie']))![0];
    signedIn = { cookie, 'x-csrf-token': csrf };
    const orgId = org.json<{ id: string }>().id;
    keyId = (await createKey(g.t.runtime, orgId, 'ordinary')).keyId;
    management = { authorization: `Bearer ${(await createKey(g.t.runtime, orgId, 'platform', { kind: 'management' })).secret}` };
    await g.t.runtime.projector.catchUp();
  });
  afterAll(() => g.close());

  function expectRefused(res: LightMyRequestResponse, field: string | null): void {
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    expect(res.statusCode).toBeLessThan(500);
    const error = res.json<{ error: { message: string } }>().error;
    if (field !== null) {
      expect(res.statusCode).toBe(400);
      expect(error.message).toContain(field);
      expect(error.message).toMatch(/well-formed text/);
    }
  }

  const dashboard: Array<[string, string, string]> = [
    ['/dashboard/api/signup', `{"email":"a${LONE}@x.com","password":"correct horse battery"}`, 'email'],
    ['/dashboard/api/signup', `{"email":"b@x.com","password":"correct ${LONE} horse"}`, 'password'],
    ['/dashboard/api/signin', `{"email":"a${LONE}@x.com","password":"correct horse battery"}`, 'email'],
    ['/dashboard/api/signin', `{"email":"ada@example.com","password":"correct ${LONE} horse"}`, 'password'],
    ['/dashboard/api/members', `{"email":"a${LONE}@x.com"}`, 'email'],
    ['/dashboard/api/members', `{"email":"a@x.com","role":"owner${LONE}"}`, 'role'],
    ['/dashboard/api/organizations', `{"name":"Acme ${LONE}"}`, 'name'],
    ['/dashboard/api/organizations/active', `{"orgId":"${LONE}"}`, 'orgId'],
    ['/dashboard/api/keys', `{"name":"ci ${LONE}"}`, 'name'],
    ['/dashboard/api/keys', `{"name":"ci","x${LONE}":1}`, 'x'],
    ['/dashboard/api/keys/KEY/limit', `{"limit":"1${LONE}","reset":"never"}`, 'limit'],
    ['/dashboard/api/keys/KEY/expiry', `{"expiresAt":"2030-01-01T00:00:00Z${LONE}"}`, 'expiresAt'],
    ['/dashboard/api/members/USER/key-access', `{"manageKeys":true,"note":"${LONE}"}`, 'note'],
    [
      '/dashboard/api/playground',
      `{"model":"test/gpt","messages":[{"role":"user","content":"hi ${LONE}"}]}`,
      'messages.0.content',
    ],
  ];

  it.each(dashboard)('POST %s %s: 400 naming the field', async (url, body, field) => {
    const head = await g.t.runtime.events.headPosition();
    const res = await send('POST', url.replace('KEY', keyId).replace('USER', 'someone'), body, signedIn);
    expectRefused(res, field);
    expect(res.json()).toEqual({ error: { code: 'invalid_request', message: expect.any(String) } });
    expect(await g.t.runtime.events.headPosition()).toBe(head);
  });

  it('a lone surrogate in a path or query is a 4xx too', async () => {
    // %ED%A0%80 is what U+D800 would be in UTF-8 (which UTF-8 forbids).
    for (const url of [
      '/dashboard/api/keys/%ED%A0%80/revoke',
      '/dashboard/api/members/%ED%A0%80/remove',
      '/dashboard/api/keys/%ED%A0%80/limit',
    ]) {
      expectRefused(await send('POST', url, '{"limit":null,"reset":"never"}', signedIn), null);
    }
    const usage = await send('GET', '/dashboard/api/usage?model=%ED%A0%80&keyId=%ED%A0%80', undefined, signedIn);
    expect(usage.statusCode).toBeLessThan(500);
  });

  it.each([
    ['POST', '/api/v1/keys', `{"name":"ci ${LONE}"}`],
    ['PATCH', '/api/v1/keys/KEY', `{"name":"ci ${LONE}"}`],
  ] as const)('%s %s with a lone surrogate in the name: 400 in the chat-completions format', async (method, url, body) => {
    const head = await g.t.runtime.events.headPosition();
    const res = await send(method, url.replace('KEY', keyId), body, management);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ type: 'invalid_request_error', message: 'key name must be well-formed text' });
    expect(await g.t.runtime.events.headPosition()).toBe(head);
  });

  it('the management routes answer a lone surrogate in their path with a 4xx', async () => {
    for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
      const res = await send(method, '/api/v1/keys/%ED%A0%80', method === 'PATCH' ? '{"name":"x"}' : undefined, management);
      expectRefused(res, null);
    }
  });

  it('an operator cannot register an ill-formed email or name an organization so either', async () => {
    await expect(g.t.runtime.identity.registerUser(`a\ud800@x.com`, 'correct horse battery')).rejects.toMatchObject({
      code: 'invalid_email',
    });
    await expect(g.t.runtime.identity.registerUser('c@x.com', 'correct \udfff horse')).rejects.toMatchObject({
      code: 'invalid_password',
    });
    await expect(g.t.runtime.identity.createOrganization('Acme \udc00')).rejects.toMatchObject({ code: 'invalid_name' });
  });
});
