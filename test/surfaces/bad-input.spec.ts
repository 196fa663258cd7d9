import { once } from 'node:events';
import { connect } from 'node:net';
import { startGateway, TEST_EMBEDDING_MODELS, TEST_MODELS, TestGateway } from '../support/gateway';
import { nested } from '../support/fuzz';

const M = TEST_MODELS;
/** A key secret someone pasted where it does not belong (never a real key of this gateway). */
const PASTED = `sk-svc-${'Zq9'.repeat(15)}`;
/** The fake host's key, as the test catalogue reads it from its environment. */
const HOST_KEY = 'upstream-openai-key';

/** What the log holds, as text: nothing of a secret may be in it. */
async function logText(g: TestGateway): Promise<string> {
  const events = await g.t.runtime.events.readAll(0, 1_000_000);
  return JSON.stringify(events);
}

/** Sends raw bytes and reads the whole answer (the server closes the connection after it). */
async function raw(g: TestGateway, bytes: string): Promise<{ status: number; headers: Record<string, string>; body: any }> {
  const socket = connect(Number(new URL(g.baseUrl).port), '127.0.0.1');
  socket.write(bytes);
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  await once(socket, 'close');
  const text = Buffer.concat(chunks).toString('utf8');
  const [head, body] = text.split('\r\n\r\n');
  const [statusLine, ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) };
}

describe('API surfaces: bad input is a 4xx, and secrets are masked before they are stored or echoed', () => {
  let g: TestGateway;
  beforeAll(async () => {
    g = await startGateway({ env: { REQUEST_READ_TIMEOUT_MS: '500' } });
  });
  afterAll(async () => {
    await g.settled();
    expect((await g.audit()).differences).toEqual([]);
    await g.close();
  });

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${g.baseUrl}/api/v1${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${g.key}`,
        'anthropic-version': '2023-06-01',
        ...headers,
      },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const hello = [{ role: 'user', content: 'hi' }];

  it.each(['/chat/completions', '/messages', '/responses'])(
    'answers a wrong key with a bad body 401, and the right key with it 400 (%s)',
    async (path) => {
      // A body no surface takes: model a number, no messages or input.
      const bad = { model: 42, max_tokens: 10 };
      const wrong = await post(path, bad, { authorization: `Bearer sk-svc-${'x'.repeat(45)}` });
      expect(wrong.status).toBe(401);
      expect(JSON.stringify(await wrong.json())).toContain('invalid or revoked API key');
      const right = await post(path, bad);
      expect(right.status).toBe(400);
      await right.text();
    },
  );

  it.each([M.gpt.slug, M.claude.slug])(
    'refuses a messages tool_result whose content holds null with 400 (model %s)',
    async (model) => {
      const res = await post('/messages', {
        model,
        max_tokens: 10,
        messages: [
          { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'f', input: {} }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [null] }] },
        ],
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        type: 'error',
        error: { type: 'invalid_request_error', message: expect.any(String) },
        request_id: res.headers.get('x-request-id'),
      });
    },
  );

  it.each([
    [
      'chat-completions tool parameters',
      '/chat/completions',
      (deep: string) =>
        `{"model":"${M.gpt.slug}","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":${deep}}}]}`,
    ],
    [
      'messages tool input_schema',
      '/messages',
      (deep: string) =>
        `{"model":"${M.gpt.slug}","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":${deep}}]}`,
    ],
    [
      'messages tool_use input',
      '/messages',
      (deep: string) =>
        `{"model":"${M.gpt.slug}","max_tokens":10,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":${deep}}]}]}`,
    ],
  ])('refuses %s nested 5,000 levels deep with 400 in the surface format', async (_what, path, bodyWith) => {
    for (const depth of [5_000, 50_000]) {
      const res = await post(path, bodyWith(nested(depth, 'object')));
      expect(res.status).toBe(400);
      expect(res.headers.get('x-request-id')).toMatch(/^req_/);
      const body = (await res.json()) as any;
      const message = path === '/messages' ? body.error.message : body.error.message;
      expect(message).toMatch(/more than 128 levels deep/);
      if (path === '/messages') expect(body.type).toBe('error');
      else expect(body.error.code).toBe('invalid_request');
    }
  });

  it('masks a secret pasted into the model field or the native path: not echoed in the 404, not in the log, the request log or the usage', async () => {
    const chat = await post('/chat/completions', { model: PASTED, messages: hello });
    const native = await fetch(`${g.baseUrl}/api/v1/models/${PASTED}/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${g.key}` },
      body: JSON.stringify({ messages: hello }),
    });
    const messages = await post('/messages', { model: `vendor/${PASTED}`, max_tokens: 5, messages: hello });
    for (const res of [chat, native, messages]) {
      expect(res.status).toBe(404);
      const text = await res.text();
      expect(text).toContain('sk-svc-…');
      expect(text).not.toContain(PASTED.slice(7));
    }
    const entry = await g.logged(chat.headers.get('x-request-id')!);
    expect(entry).toMatchObject({ model: 'sk-svc-…', status: 'model_not_found' });
    await g.logged(native.headers.get('x-request-id')!);
    await g.logged(messages.headers.get('x-request-id')!);
    const requestLog = JSON.stringify(await g.t.runtime.projections.recentRequests(g.orgId, 100));
    expect(requestLog).not.toContain(PASTED.slice(7));
    expect(await logText(g)).not.toContain(PASTED.slice(7));
    // What every member of the organization sees in the dashboard's usage.
    await g.t.runtime.identity.registerUser('member@example.com', 'a member password');
    await g.t.runtime.identity.addMember(g.orgId, 'member@example.com');
    await g.t.runtime.projector.catchUp();
    const fastify = g.app.getHttpAdapter().getInstance();
    const signin = await fastify.inject({
      method: 'POST',
      url: '/dashboard/api/signin',
      payload: { email: 'member@example.com', password: 'a member password' },
    });
    const cookie = /mg_session=[^;]+/.exec(String(signin.headers['set-cookie']))![0];
    const usage = await fastify.inject({ method: 'GET', url: '/dashboard/api/usage', headers: { cookie } });
    expect(usage.statusCode).toBe(200);
    expect(usage.body).toContain('sk-svc-…');
    expect(usage.body).not.toContain(PASTED.slice(7));
  });

  it.each([false, true])(
    'masks our key secrets and the host key in an upstream error message (stream %s), to the client and in the log',
    async (stream) => {
      g.fake.on(M.gpt.hostModel, {
        kind: 'status',
        status: 500,
        body: JSON.stringify({
          error: { message: `key ${PASTED} rejected; we got ${HOST_KEY} and sk-proj-${'x'.repeat(30)}`, type: 'server_error' },
        }),
      });
      const res = await post('/chat/completions', { model: M.gpt.slug, messages: hello, stream });
      const text = await res.text();
      expect(res.status).toBe(502);
      expect(text).toContain('sk-svc-…');
      expect(text).toContain('[host key]');
      for (const secret of [PASTED.slice(7), HOST_KEY, 'x'.repeat(30)]) expect(text).not.toContain(secret);
      await g.settled();
      await g.logged(res.headers.get('x-request-id')!);
      const log = await logText(g);
      for (const secret of [PASTED.slice(7), HOST_KEY, 'x'.repeat(30)]) expect(log).not.toContain(secret);
    },
  );

  it('masks our key secrets and the host key in an upstream error message on embeddings too, to the client and in the log', async () => {
    g.fake.on(TEST_EMBEDDING_MODELS.embed.hostModel, {
      kind: 'status',
      status: 500,
      body: JSON.stringify({ error: { message: `key ${PASTED} rejected; we got ${HOST_KEY}`, type: 'server_error' } }),
    });
    const res = await post('/embeddings', { model: TEST_EMBEDDING_MODELS.embed.slug, input: 'hello' });
    const text = await res.text();
    expect(res.status).toBe(502);
    expect(text).toContain('sk-svc-…');
    expect(text).toContain('[host key]');
    for (const secret of [PASTED.slice(7), HOST_KEY]) expect(text).not.toContain(secret);
    await g.logged(res.headers.get('x-request-id')!);
    const log = await logText(g);
    for (const secret of [PASTED.slice(7), HOST_KEY]) expect(log).not.toContain(secret);
  });

  it('does not take a client request id that holds a secret', async () => {
    const res = await post('/chat/completions', { model: 'nobody/nothing', messages: hello }, { 'x-request-id': PASTED });
    expect(res.status).toBe(404);
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
    await g.logged(res.headers.get('x-request-id')!);
    expect(await logText(g)).not.toContain(PASTED.slice(7));
  });

  it.each([
    [
      'chat-completions',
      '/api/v1/chat/completions',
      (b: any) =>
        expect(b).toEqual({
          error: { message: expect.any(String), type: 'invalid_request_error', param: null, code: expect.any(String) },
        }),
    ],
    [
      'messages',
      '/api/v1/messages',
      (b: any, id: string) =>
        expect(b).toEqual({
          type: 'error',
          error: { type: 'invalid_request_error', message: expect.any(String) },
          request_id: id,
        }),
    ],
    [
      'dashboard',
      '/dashboard/api/signin',
      (b: any) => expect(b).toEqual({ error: { code: expect.any(String), message: expect.any(String) } }),
    ],
  ])(
    'answers what Node itself refuses (not HTTP, a body that stops coming) with x-request-id, in the %s format',
    async (_surface, path, expectFormat) => {
      // A request Node cannot parse (a bad Content-Length): 400.
      const bad = await raw(g, `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n`);
      expect(bad.status).toBe(400);
      expect(bad.headers['x-request-id']).toMatch(/^req_/);
      expectFormat(bad.body, bad.headers['x-request-id']);
      // A body that stops arriving: 408 once the read limit passes.
      const slow = await raw(
        g,
        `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"model":`,
      );
      expect(slow.status).toBe(408);
      expect(slow.headers['x-request-id']).toMatch(/^req_/);
      expectFormat(slow.body, slow.headers['x-request-id']);
      expect(JSON.stringify(slow.body)).toMatch(/not received in time/);
      if (!path.includes('messages')) expect(JSON.stringify(slow.body)).toMatch(/request_timeout/);
    },
  );

  it('answers headers too large with 431 and an id, in the format of the surface named', async () => {
    const res = await raw(g, `POST /api/v1/messages HTTP/1.1\r\nHost: x\r\nx-big: ${'a'.repeat(40_000)}\r\n\r\n`);
    expect(res.status).toBe(431);
    expect(res.headers['x-request-id']).toMatch(/^req_/);
    expect(res.body).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringMatching(/headers are too large/) },
      request_id: res.headers['x-request-id'],
    });
  });

  it('answers bytes that are not HTTP at all with 400 and an id, in the default format', async () => {
    const res = await raw(g, 'HELLO THERE\r\n\r\n');
    expect(res.status).toBe(400);
    expect(res.headers['x-request-id']).toMatch(/^req_/);
    expect(res.body.error).toMatchObject({ code: 'invalid_request' });
  });
});
