import request from 'supertest';
import { startGateway, TEST_EMBEDDING_MODELS, TEST_MODELS, TestGateway } from '../support/gateway';
import { LogCapture } from '../support/log-capture';
import { createKey } from '../support/keys';

const M = TEST_MODELS;
const chat = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: 'user', content: 'Say something short' }],
  ...extra,
});

describe('request logs (pino, one JSON line per request)', () => {
  let g: TestGateway;
  const log = new LogCapture();

  beforeAll(async () => {
    g = await startGateway({ logStream: log });
  });
  afterAll(async () => {
    await g.close();
  });

  it('a served request: one info line with who, what, where, tokens, cost, latency and time to first token', async () => {
    const res = await request(g.baseUrl)
      .post('/api/v1/chat/completions')
      .set('Authorization', `Bearer ${g.key}`)
      .send(chat(M.gpt.slug));
    expect(res.status).toBe(200);
    const requestId = res.headers['x-request-id'];
    const line = await log.request(requestId);
    const entry = await g.logged(requestId);
    expect(line).toMatchObject({
      level: 30,
      requestId,
      method: 'POST',
      path: '/api/v1/chat/completions',
      status: 200,
      orgId: g.orgId,
      keyId: g.keyId,
      surface: 'chat-completions',
      model: M.gpt.slug,
      host: 'fake-openai',
      outcome: 'ok',
      inputTokens: entry.inputTokens + entry.cacheReadTokens + entry.cacheWriteTokens,
      cachedTokens: entry.cacheReadTokens,
      outputTokens: entry.outputTokens,
      costNanoCredits: entry.cost,
      fallback: false,
    });
    expect(line.outputTokens).toBeGreaterThan(0);
    expect(line.cost).toBeCloseTo(entry.cost / 1e9, 12);
    expect(line.latencyMs).toBeGreaterThan(0);
    expect(line.ttftMs).toBeGreaterThanOrEqual(0);
    expect(line.ttftMs).toBeLessThanOrEqual(line.latencyMs);
    expect(log.lines.filter((l) => l.requestId === requestId && l.msg === 'request')).toHaveLength(1);
  });

  it('an embeddings request: its line as any other, and an unknown model named as asked (masked), never in the metrics', async () => {
    const res = await request(g.baseUrl)
      .post('/api/v1/embeddings')
      .set('Authorization', `Bearer ${g.key}`)
      .send({ model: TEST_EMBEDDING_MODELS.embed.slug, input: 'Hello' });
    expect(res.status).toBe(200);
    const line = await log.request(res.headers['x-request-id']);
    const entry = await g.logged(res.headers['x-request-id']);
    expect(line).toMatchObject({
      status: 200,
      orgId: g.orgId,
      keyId: g.keyId,
      surface: 'embeddings',
      model: TEST_EMBEDDING_MODELS.embed.slug,
      outcome: 'ok',
      inputTokens: entry.inputTokens,
      costNanoCredits: entry.cost,
    });
    expect(line.host).toEqual(expect.any(String));

    const foreign = 'sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX';
    const unknown = await request(g.baseUrl)
      .post('/api/v1/chat/completions')
      .set('Authorization', `Bearer ${g.key}`)
      .send(chat(`nobody/${foreign}`));
    expect(unknown.status).toBe(404);
    const refused = await log.request(unknown.headers['x-request-id']);
    expect(refused.model).toMatch(/^nobody\/sk-/);
    expect(JSON.stringify(refused)).not.toContain(foreign);
    const metrics = await request(g.baseUrl).get('/metrics');
    expect(metrics.text).not.toContain('nobody/');
    expect(metrics.text).toContain('gateway_requests_total{surface="embeddings"');
  });

  it('a streamed request through a fallback host says so, on the messages surface', async () => {
    g.fake.on('fake-first', { kind: 'status', status: 503 });
    const res = await request(g.baseUrl)
      .post('/api/v1/messages')
      .set('x-api-key', g.key)
      .set('anthropic-version', '2023-06-01')
      .send({ ...chat(M.fallback.slug), max_tokens: 50, stream: true });
    expect(res.status).toBe(200);
    const line = await log.request(res.headers['x-request-id']);
    expect(line).toMatchObject({
      surface: 'messages',
      model: M.fallback.slug,
      host: 'fake-openai',
      fallback: true,
      outcome: 'ok',
    });
    expect(line.ttftMs).toEqual(expect.any(Number));
  });

  it('a stream its client cuts: one line, status 499, outcome client_abort, with what was delivered and billed', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'one two three four five six seven eight' }, chunkDelayMs: 150 });
    const cut = new AbortController();
    const res = await fetch(`${g.baseUrl}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${g.key}` },
      body: JSON.stringify(chat(M.gpt.slug, { stream: true })),
      signal: cut.signal,
    });
    const requestId = res.headers.get('x-request-id')!;
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('"content":"one')) seen += new TextDecoder().decode((await reader.read()).value);
    cut.abort();
    const line = await log.request(requestId);
    const entry = await g.logged(requestId);
    expect(entry.status).toBe('client_abort');
    expect(line).toMatchObject({
      level: 40,
      requestId,
      status: 499,
      outcome: 'client_abort',
      host: 'fake-openai',
      outputTokens: entry.outputTokens,
      costNanoCredits: entry.cost,
    });
    expect(line.outputTokens).toBeGreaterThan(0);
    expect(log.lines.filter((l) => l.requestId === requestId && l.msg === 'request')).toHaveLength(1);
  });

  it('a failed request: an error line with its context and the reason', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'status', status: 500 });
    const res = await request(g.baseUrl)
      .post('/api/v1/chat/completions')
      .set('Authorization', `Bearer ${g.key}`)
      .send(chat(M.gpt.slug));
    expect(res.status).toBe(502);
    const line = await log.request(res.headers['x-request-id']);
    expect(line).toMatchObject({
      level: 50,
      status: 502,
      orgId: g.orgId,
      keyId: g.keyId,
      model: M.gpt.slug,
      host: 'fake-openai',
      outcome: 'provider_error',
      error: expect.stringContaining('fake-openai'),
    });
    expect(line.costNanoCredits).toBeUndefined();
  });

  it('a refused request (unknown model): a warn line with the org, the key and why', async () => {
    const res = await request(g.baseUrl)
      .post('/api/v1/chat/completions')
      .set('Authorization', `Bearer ${g.key}`)
      .send(chat('nobody/nothing'));
    expect(res.status).toBe(404);
    const line = await log.request(res.headers['x-request-id']);
    expect(line).toMatchObject({
      level: 40,
      status: 404,
      orgId: g.orgId,
      keyId: g.keyId,
      model: 'nobody/nothing',
      outcome: 'model_not_found',
      fallback: false,
    });
    expect(line.error).toEqual(expect.any(String));
  });

  it('no line holds a key secret, a host key, a password or a cookie, even where a client put one', async () => {
    const forged = `sk-svc-${'A'.repeat(43)}`;
    const password = 'correct horse battery staple';
    await request(g.baseUrl).post('/api/v1/chat/completions').set('Authorization', `Bearer ${forged}`).send(chat(M.gpt.slug));
    await request(g.baseUrl)
      .post('/api/v1/messages')
      .set('x-api-key', g.key)
      .set('anthropic-version', '2023-06-01')
      .send({ ...chat(M.claude.slug), max_tokens: 20 });
    // A key in the model name ends up in the refusal's message and the line's model field.
    const named = await request(g.baseUrl)
      .post('/api/v1/chat/completions')
      .set('Authorization', `Bearer ${g.key}`)
      .send(chat(`x/${g.key}`));
    expect(named.status).toBe(404);
    // Every other surface, and a rate-limited key, with the key in the header each takes.
    const bearer = `Bearer ${g.key}`;
    await request(g.baseUrl).post('/api/v1/responses').set('Authorization', bearer).send({ model: M.gpt.slug, input: 'Hi' });
    await request(g.baseUrl)
      .post(`/api/v1/models/${M.gpt.slug}/chat`)
      .set('Authorization', bearer)
      .send({ messages: [{ role: 'user', content: 'Hi' }] });
    await request(g.baseUrl)
      .post('/api/v1/messages/count_tokens')
      .set('x-api-key', g.key)
      .set('anthropic-version', '2023-06-01')
      .send({ model: M.claude.slug, messages: [{ role: 'user', content: 'Hi' }] });
    await request(g.baseUrl).post('/api/v1/embeddings').set('Authorization', bearer).send({ model: 'test/embed', input: 'Hi' });
    const limited = await createKey(g.t.runtime, g.orgId, 'limited', { rateLimits: { requestsPerMinute: 1 } });
    await g.t.runtime.projector.catchUp();
    for (let i = 0; i < 2; i++) {
      await request(g.baseUrl)
        .post('/api/v1/chat/completions')
        .set('Authorization', `Bearer ${limited.secret}`)
        .send(chat(M.gpt.slug));
    }
    const signup = await request(g.baseUrl).post('/dashboard/api/signup').send({ email: 'log@example.com', password });
    const cookie = String(signup.headers['set-cookie']);
    await request(g.baseUrl).get('/dashboard/api/session').set('cookie', cookie);
    await log.request(named.headers['x-request-id']);
    const all = log.raw.join('');
    expect(log.lines.filter((l) => l.msg === 'request').length).toBeGreaterThanOrEqual(11);
    expect(log.lines.find((l) => l.msg === 'request' && l.status === 429)).toMatchObject({
      outcome: 'rate_limited',
      keyId: limited.keyId,
    });
    for (const secret of [
      g.key,
      limited.secret,
      forged,
      'upstream-openai-key',
      'upstream-anthropic-key',
      password,
      cookie.split(';')[0],
    ]) {
      expect(all).not.toContain(secret);
    }
    expect(all).toContain('sk-svc-[redacted]');
  });
});
