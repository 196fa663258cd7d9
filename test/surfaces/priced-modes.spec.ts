import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';

const M = TEST_MODELS;

/**
 * Modes a host prices apart from the model's list price (OpenAI's service tiers, Anthropic's fast
 * mode and US-only inference): the catalogue prices the standard mode only, and a host of the
 * client's format gets the body whole, so another mode is refused before any host is called.
 */
describe('API surfaces: modes priced apart from the list price are refused, the standard ones carried', () => {
  let g: TestGateway;
  beforeAll(async () => {
    g = await startGateway();
  });
  afterAll(async () => {
    await g.settled();
    expect((await g.audit()).differences).toEqual([]);
    await g.close();
  });

  const post = (path: string, body: unknown) =>
    fetch(`${g.baseUrl}/api/v1${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${g.key}`, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
    });
  const chat = (extra: object, model: string = M.gpt.slug) => ({
    model,
    max_tokens: 10,
    messages: [{ role: 'user', content: 'hi' }],
    ...extra,
  });
  const responses = (extra: object) => ({ model: M.gpt.slug, max_output_tokens: 10, input: 'hi', ...extra });

  it.each([
    ['/chat/completions', chat({ service_tier: 'priority' }), 'service_tier'],
    ['/chat/completions', chat({ service_tier: 'flex' }), 'service_tier'],
    ['/chat/completions', chat({ service_tier: 'fast' }), 'service_tier'],
    ['/responses', responses({ service_tier: 'scale' }), 'service_tier'],
    ['/messages', chat({ speed: 'fast' }, M.claude.slug), 'speed'],
    ['/messages', chat({ inference_geo: 'us' }, M.claude.slug), 'inference_geo'],
  ])('%s refuses %j with a 400 naming the field, calling no host and charging nothing', async (path, body, field) => {
    const calls = g.fake.requests.length;
    const spent = (await g.t.runtime.projections.balance(g.orgId)).spent;
    const res = await post(path, body);
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text).toContain(field);
    expect(text).toMatch(/priced|bills/);
    if (path === '/messages') expect(JSON.parse(text)).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    else expect(JSON.parse(text).error).toMatchObject({ type: 'invalid_request_error', param: field });
    expect(g.fake.requests.length).toBe(calls);
    expect((await g.t.runtime.projections.balance(g.orgId)).spent).toBe(spent);
  });

  it('carries the standard modes to a host of the same format, whole', async () => {
    const tiered = await post('/chat/completions', chat({ service_tier: 'default' }));
    expect(tiered.status).toBe(200);
    const sent = g.fake.requests.at(-1)!;
    expect(sent.body).toMatchObject({ model: M.gpt.hostModel, service_tier: 'default' });

    const standard = await post('/messages', chat({ speed: 'standard', inference_geo: 'global' }, M.claude.slug));
    expect(standard.status).toBe(200);
    expect(g.fake.requests.at(-1)!.body).toMatchObject({ model: M.claude.hostModel, speed: 'standard', inference_geo: 'global' });

    expect((await post('/responses', responses({ service_tier: 'auto' }))).status).toBe(200);
  });
});
