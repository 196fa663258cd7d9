import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';

const M = TEST_MODELS;

describe('native route POST /api/v1/models/{model}/chat', () => {
  let g: TestGateway;
  beforeAll(async () => {
    g = await startGateway();
  });
  afterAll(async () => {
    expect((await g.audit()).differences).toEqual([]);
    await g.close();
  });

  const chat = (path: string, body: unknown, key: string | null = g.key) =>
    fetch(`${g.baseUrl}/api/v1/models/${path}/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const hello = { messages: [{ role: 'user', content: 'Hello' }] };

  it.each([
    ['the slug, slash and all', M.gpt.slug],
    ['the URL-encoded slug', encodeURIComponent(M.gpt.slug)],
    ['the catalogue UUID', M.gpt.id],
  ])('finds the model by %s, and bills the hand-computed cost', async (_how, path) => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hi!', usage: { input: 2000, output: 500 } } });
    const res = await chat(path, { ...hello, max_tokens: 500, temperature: 0.5 });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    // 2000 × $1/M + 500 × $2/M = 0.002 + 0.001 = 0.003 credits
    expect(body).toEqual({
      id: expect.stringMatching(/^req_/),
      model: M.gpt.slug,
      text: 'Hi!',
      finish_reason: 'stop',
      usage: { input_tokens: 2000, output_tokens: 500, cache_read_tokens: 0, cache_write_tokens: 0 },
      cost: 0.003,
      cost_nano: 3_000_000,
      ledger_position: Number(res.headers.get('x-ledger-position')),
    });
    expect(res.headers.get('x-request-id')).toBe(body.id);
    expect(g.fake.requests[g.fake.requests.length - 1].body).toMatchObject({
      max_tokens: 500,
      temperature: 0.5,
      messages: [{ role: 'user', content: 'Hello' }],
    });
    await g.settled();
    expect((await g.t.runtime.projections.recentRequests(g.orgId, 1))[0]).toMatchObject({ surface: 'native', cost: 3_000_000 });
  });

  it("lowers max_tokens above the model's limit to it", async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'ok' } });
    const res = await chat(M.gpt.slug, { ...hello, max_tokens: 32_000 });
    expect(res.status).toBe(200);
    expect(g.fake.requests[g.fake.requests.length - 1].body.max_tokens).toBe(1000);
  });

  it('streams deltas and ends with usage and cost', async () => {
    g.fake.on(M.claude.hostModel, {
      kind: 'reply',
      reply: { text: 'one two three', finish: 'length', usage: { input: 100, output: 3 } },
    });
    const res = await chat(M.claude.slug, { ...hello, stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const text = await res.text();
    const events = text
      .trim()
      .split('\n\n')
      .map((block) => {
        const event = /^event: (.+)$/m.exec(block)?.[1];
        const data = /^data: (.+)$/m.exec(block)?.[1];
        return { event, data: data ? JSON.parse(data) : null };
      });
    expect(events[0]).toEqual({ event: 'start', data: { id: expect.stringMatching(/^req_/), model: M.claude.slug } });
    expect(
      events
        .filter((e) => e.event === 'delta')
        .map((e) => e.data.text)
        .join(''),
    ).toBe('one two three');
    // 100 × $3/M + 3 × $15/M = 0.0003 + 0.000045
    expect(events[events.length - 1]).toEqual({
      event: 'done',
      data: {
        finish_reason: 'length',
        usage: { input_tokens: 100, output_tokens: 3, cache_read_tokens: 0, cache_write_tokens: 0 },
        cost: 0.000345,
        cost_nano: 345_000,
        ledger_position: expect.any(Number),
      },
    });
  });

  it.each([
    ['missing messages', {}],
    ['empty messages', { messages: [] }],
    ['a system role', { messages: [{ role: 'system', content: 'x' }] }],
    ['empty content', { messages: [{ role: 'user', content: '' }] }],
    ['content that is not a string', { messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }] }],
    ['anything else in a message', { messages: [{ role: 'user', content: 'x', name: 'bob' }] }],
    ['a wrong type for stream', { ...hello, stream: 'yes' }],
    ['a body that is not JSON', '{"messages": ['],
  ])('400 for %s', async (_name, body) => {
    const res = await chat(M.gpt.slug, body);
    expect(res.status).toBe(400);
    expect((await res.json()) as any).toEqual({ error: { code: 'invalid_request', message: expect.any(String) } });
  });

  it('401 for a missing or invalid key', async () => {
    const missing = await chat(M.gpt.slug, hello, null);
    expect(missing.status).toBe(401);
    expect(((await missing.json()) as any).error.code).toBe('invalid_api_key');
    const invalid = await chat(M.gpt.slug, hello, `sk-svc-${'q'.repeat(43)}`);
    expect(invalid.status).toBe(401);
  });

  it('404 for a model not in the catalogue', async () => {
    // A slug encoded twice ("%252F") names a model with "%2F" in its slug: there is none.
    for (const path of [
      'nobody/nothing',
      encodeURIComponent('nobody/nothing'),
      '99999999-9999-4999-8999-999999999999',
      encodeURIComponent(encodeURIComponent(M.gpt.slug)),
    ]) {
      const res = await chat(path, hello);
      expect(res.status).toBe(404);
      expect(((await res.json()) as any).error.code).toBe('model_not_found');
    }
  });

  it('502 when the provider fails', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'status', status: 500 });
    const res = await chat(M.gpt.slug, hello);
    expect(res.status).toBe(502);
    expect(((await res.json()) as any).error.code).toBe('provider_error');
  });

  it('402 when the credits do not cover the request', async () => {
    const poor = await startGateway({ credits: 1000 });
    try {
      const res = await fetch(`${poor.baseUrl}/api/v1/models/${M.gpt.slug}/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${poor.key}` },
        body: JSON.stringify(hello),
      });
      expect(res.status).toBe(402);
      expect(((await res.json()) as any).error).toMatchObject({
        code: 'insufficient_credits',
        message: expect.stringMatching(/credits/),
      });
      expect(poor.fake.requests).toHaveLength(0);
    } finally {
      await poor.close();
    }
  });
});
