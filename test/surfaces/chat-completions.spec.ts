import { once } from 'node:events';
import { connect } from 'node:net';
import OpenAI from 'openai';
import request from 'supertest';
import type { CreditsReserved } from '../../src/ledger/ledger.events';
import { chargeFor, uncachedUsage } from '../../src/ledger/money';
import { pricesOf } from '../support/ledger';
import { auditThenClose, startGateway, TEST_EMBEDDING_MODELS, TEST_MODELS, TestGateway } from '../support/gateway';
import { expectServedAndBilled, NEW_KIND_MODELS, toolResultsIn, withNewKinds } from '../support/new-kinds';

const M = TEST_MODELS;
const nanoPerM = (dollars: string) => Math.round(Number(dollars) * 1e9);
const priceOf = (m: { input: string; output: string }) => pricesOf(nanoPerM(m.input), nanoPerM(m.output));
const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

describe('chat-completions surface with the official openai client', () => {
  let g: TestGateway;
  let client: OpenAI;

  beforeAll(async () => {
    g = await startGateway({ redis: true });
    client = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: g.key, maxRetries: 0 });
  });
  afterAll(() => auditThenClose(g));

  it('chats, and bills exactly the hand-computed cost of the reported usage', async () => {
    g.fake.on(M.gpt.hostModel, {
      kind: 'reply',
      reply: { text: 'Paris is the capital of France.', usage: { input: 1234, output: 56 } },
    });
    const completion = await client.chat.completions.create({
      model: M.gpt.slug,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Capital of France?' },
      ],
    });
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe(M.gpt.slug);
    expect(completion.choices).toHaveLength(1);
    expect(completion.choices[0].message).toMatchObject({ role: 'assistant', content: 'Paris is the capital of France.' });
    expect(completion.choices[0].finish_reason).toBe('stop');
    // 1234 × $1/M + 56 × $2/M = 0.001234 + 0.000112 = 0.001346 credits
    // The host's own usage, every field of it, with the cost added.
    expect(completion.usage).toEqual({
      prompt_tokens: 1234,
      completion_tokens: 56,
      total_tokens: 1290,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 0,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
      cost: 0.001346,
    });
    // The x-request-id header, as the client reads it, names the request in the request log.
    expect(completion._request_id).toMatch(/^req_[0-9a-f]{32}$/);
    await g.settled();
    const [entry] = await g.t.runtime.projections.recentRequests(g.orgId, 1);
    expect(entry).toMatchObject({
      requestId: completion._request_id,
      surface: 'chat-completions',
      model: M.gpt.slug,
      host: 'fake-openai',
      inputTokens: 1234,
      outputTokens: 56,
      cost: 1_346_000,
      status: 'ok',
      keyId: g.keyId,
    });
    expect(entry.latencyMs).toEqual(expect.any(Number));
    expect(chargeFor(uncachedUsage(1234, 56), priceOf(M.gpt))).toBe(1_346_000);

    // What reached the upstream: the client's body with the host's model name, and the host's key; not streamed.
    const upstream = g.fake.requests[g.fake.requests.length - 1];
    expect(upstream.body.model).toBe(M.gpt.hostModel);
    expect(upstream.body.stream).toBeUndefined();
    expect(upstream.body).not.toHaveProperty('stream_options');
    expect(upstream.body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Capital of France?' },
    ]);
    expect(upstream.headers.authorization).toBe('Bearer upstream-openai-key');
  });

  it('streams text deltas, with the usage chunk only when asked for', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'one two three four', usage: { input: 10, output: 4 } } });
    const { data: withUsage, request_id: streamRequestId } = await client.chat.completions
      .create({
        model: M.gpt.slug,
        messages: [{ role: 'user', content: 'count' }],
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    expect(streamRequestId).toMatch(/^req_[0-9a-f]{32}$/);
    let text = '';
    const usages = [];
    let finish: string | null = null;
    for await (const chunk of withUsage) {
      if (chunk.usage) usages.push(chunk.usage);
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe('one two three four');
    expect(finish).toBe('stop');
    expect(usages).toEqual([
      {
        prompt_tokens: 10,
        completion_tokens: 4,
        total_tokens: 14,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: {
          reasoning_tokens: 0,
          audio_tokens: 0,
          accepted_prediction_tokens: 0,
          rejected_prediction_tokens: 0,
        },
        cost: 0.000018,
      },
    ]);

    const withoutUsage = await client.chat.completions.create({
      model: M.gpt.slug,
      messages: [{ role: 'user', content: 'count' }],
      stream: true,
    });
    let chunks = 0;
    for await (const chunk of withoutUsage) {
      chunks += 1;
      expect(chunk.usage ?? null).toBeNull();
    }
    expect(chunks).toBeGreaterThan(3);
    // The gateway still asked the host for usage (streamed), and billed from it.
    expect(g.fake.requests[g.fake.requests.length - 1].body).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
    });
    await g.settled();
    expect((await g.t.runtime.projections.recentRequests(g.orgId, 1))[0]).toMatchObject({
      inputTokens: 10,
      outputTokens: 4,
      cost: 18_000,
    });
  });

  it('round-trips a tool call, streamed and not', async () => {
    g.fake.on(M.gpt.hostModel, (req) =>
      req.body.messages.some((m: { role: string }) => m.role === 'tool')
        ? { kind: 'reply', reply: { text: 'It is 21 °C in Paris.' } }
        : { kind: 'reply', reply: { toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }] } },
    );
    const ask = [{ role: 'user' as const, content: 'Weather in Paris?' }];
    const first = await client.chat.completions.create({
      model: M.gpt.slug,
      messages: ask,
      tools: [weather],
      tool_choice: 'auto',
    });
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    expect(first.choices[0].message.tool_calls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
    ]);
    const upstreamAsk = g.fake.requests[g.fake.requests.length - 1].body;
    expect(upstreamAsk.tools).toEqual([weather]);
    expect(upstreamAsk.tool_choice).toBe('auto');

    const answer = await client.chat.completions.create({
      model: M.gpt.slug,
      tools: [weather],
      messages: [...ask, first.choices[0].message, { role: 'tool', tool_call_id: 'call_1', content: '{"celsius":21}' }],
    });
    expect(answer.choices[0].message.content).toBe('It is 21 °C in Paris.');
    // The assistant message goes back as the client sent it (the SDK's own message object).
    expect(g.fake.requests[g.fake.requests.length - 1].body.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        refusal: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '{"celsius":21}' },
    ]);

    // Streamed: the client's own helper reassembles the tool call from deltas.
    const runner = client.chat.completions.stream({ model: M.gpt.slug, messages: ask, tools: [weather] });
    const final = await runner.finalChatCompletion();
    expect(final.choices[0].message.tool_calls?.[0]).toMatchObject({
      id: 'call_1',
      function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
    });
    expect(final.choices[0].finish_reason).toBe('tool_calls');
  });

  it('passes max_completion_tokens, stop and sampling on as the client sent them', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'short', finish: 'length' } });
    const completion = await client.chat.completions.create({
      model: M.gpt.slug,
      messages: [{ role: 'user', content: 'hi' }],
      max_completion_tokens: 7,
      temperature: 0.3,
      top_p: 0.9,
      stop: ['END'],
    });
    expect(completion.choices[0].finish_reason).toBe('length');
    expect(g.fake.requests[g.fake.requests.length - 1].body).toMatchObject({
      max_completion_tokens: 7,
      temperature: 0.3,
      top_p: 0.9,
      stop: ['END'],
    });
  });

  it('takes developer and system prompts (text or parts), max_tokens, a stop string and a named tool choice', async () => {
    g.fake.on(M.gpt.hostModel, {
      kind: 'reply',
      reply: { toolCalls: [{ id: 'call_9', name: 'get_weather', arguments: '{"city":"Oslo"}' }] },
    });
    const completion = await client.chat.completions.create({
      model: M.gpt.slug,
      messages: [
        { role: 'developer', content: 'Answer in English.' },
        { role: 'system', content: [{ type: 'text', text: 'Use tools.' }] },
        { role: 'user', content: 'Weather in Oslo?' },
      ],
      max_tokens: 12,
      stop: 'STOP',
      tools: [weather],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    expect(completion.choices[0].message.tool_calls?.[0]).toMatchObject({ id: 'call_9', function: { name: 'get_weather' } });
    const upstream = g.fake.requests[g.fake.requests.length - 1].body;
    // An openai host speaks this format: it gets them as sent.
    expect(upstream).toMatchObject({
      max_tokens: 12,
      stop: 'STOP',
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    expect(upstream.messages).toEqual([
      { role: 'developer', content: 'Answer in English.' },
      { role: 'system', content: [{ type: 'text', text: 'Use tools.' }] },
      { role: 'user', content: 'Weather in Oslo?' },
    ]);
  });

  it('keeps a later system or developer message in its place: in the messages of an openai host, folded into the system of an anthropic one', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You are an agent.' },
      { role: 'user', content: 'List the files.' },
      { role: 'assistant', content: 'Which directory?' },
      { role: 'developer', content: 'The user is in /work.' },
      { role: 'user', content: 'This one.' },
    ];
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'ok' } });
    await client.chat.completions.create({ model: M.gpt.slug, messages });
    expect(g.fake.requests[g.fake.requests.length - 1].body.messages).toEqual(messages);
    g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'ok' } });
    await client.chat.completions.create({ model: M.claude.slug, messages });
    expect(g.fake.requests[g.fake.requests.length - 1].body).toMatchObject({
      system: 'You are an agent.\n\nThe user is in /work.',
      messages: [
        { role: 'user', content: 'List the files.' },
        { role: 'assistant', content: 'Which directory?' },
        { role: 'user', content: 'This one.' },
      ],
    });
  });

  it("lowers max_completion_tokens (or max_tokens) above the model's limit to it: the host gets the limit, the reservation is sized by it", async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'ok' } });
    const reserved = async (cap: Record<string, number>) => {
      const { response } = await client.chat.completions
        .create({ model: M.gpt.slug, messages: [{ role: 'user', content: 'hi' }], ...cap })
        .withResponse();
      const [field] = Object.keys(cap);
      expect(g.fake.requests[g.fake.requests.length - 1].body[field]).toBe(1000);
      const requestId = response.headers.get('x-request-id');
      await g.settled();
      const events = await g.t.runtime.events.readAll(0, 100_000);
      const reservation = events.find(
        (e) => e.type === 'CreditsReserved' && (e.data as CreditsReserved['data']).requestId === requestId,
      );
      return (reservation?.data as CreditsReserved['data']).amount;
    };
    const atTheLimit = await reserved({ max_completion_tokens: 1000 });
    expect(await reserved({ max_completion_tokens: 32_000 })).toBe(atTheLimit);
    expect(await reserved({ max_tokens: 100_000 })).toBe(atTheLimit);
  });

  const picture = [
    { type: 'text' as const, text: 'What is in this picture?' },
    { type: 'image_url' as const, image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
  ];

  it('gives an openai host the body whole: response_format, logprobs, image parts and unknown fields; the logprobs come back', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: '{"animal": "cat"}' } });
    const asked = {
      model: M.gpt.slug,
      n: 1,
      logprobs: true,
      top_logprobs: 2,
      response_format: { type: 'json_object' as const },
      // JSON mode wants the word in the conversation, as OpenAI's API does.
      messages: [
        { role: 'system' as const, content: 'Answer in JSON.' },
        { role: 'user' as const, content: picture },
      ],
    };
    // @ts-expect-error a field the API does not know
    const completion = await client.chat.completions.create({ ...asked, frobnicate: true });
    const upstream = g.fake.requests[g.fake.requests.length - 1].body;
    expect(upstream).toMatchObject({ ...asked, model: M.gpt.hostModel, frobnicate: true });
    expect(completion.choices[0].logprobs?.content?.map((t) => t.token).join('')).toBe('{"animal": "cat"}');
    expect(completion.choices[0].logprobs?.content?.[0].top_logprobs).toHaveLength(2);
    // Streamed, each content chunk carries its token's.
    const stream = await client.chat.completions.create({ ...asked, stream: true });
    let tokens = '';
    for await (const chunk of stream) for (const t of chunk.choices[0]?.logprobs?.content ?? []) tokens += t.token;
    expect(tokens).toBe('{"animal": "cat"}');
  });

  it('translates image parts for a host of another format, and refuses what only its own hosts honour (logprobs), naming it', async () => {
    g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'A cat.' } });
    await client.chat.completions.create({ model: M.claude.slug, messages: [{ role: 'user', content: picture }] });
    expect(g.fake.requests[g.fake.requests.length - 1].body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
          { type: 'text', text: 'What is in this picture?' },
        ],
      },
    ]);
    const schema = { type: 'json_schema' as const, json_schema: { name: 'animal', schema: { type: 'object' } } };
    const refused = await request(g.baseUrl)
      .post('/api/v1/chat/completions')
      .set('Authorization', `Bearer ${g.key}`)
      .send({ model: M.claude.slug, response_format: schema, logprobs: true, messages: [{ role: 'user', content: 'Hi' }] });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(
      /^logprobs: only hosts that take chat-completions requests whole honour it, and host \S+ is sent this request translated/,
    );
    // A text format asks for nothing: it goes, as does logprobs: false.
    const plain = await client.chat.completions.create({
      model: M.claude.slug,
      response_format: { type: 'text' },
      logprobs: false,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(plain.choices[0].message.content).toBe('A cat.');
  });

  it('refuses n above 1, naming it: the hold covers one choice', async () => {
    const res = await request(g.baseUrl)
      .post('/api/v1/chat/completions')
      .set('Authorization', `Bearer ${g.key}`)
      .send({ model: M.gpt.slug, n: 3, messages: [{ role: 'user', content: 'Hi' }] });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ param: 'n', message: expect.stringContaining('one choice a request') });
  });

  it('retrieves one model by slug or uuid, and 404s an unknown one', async () => {
    const bySlug = await client.models.retrieve(M.gpt.slug);
    expect(bySlug).toMatchObject({ id: M.gpt.slug, object: 'model', uuid: M.gpt.id, context_length: 128_000 });
    expect(await client.models.retrieve(M.gpt.id)).toMatchObject({ id: M.gpt.slug });
    const withSlash = await request(g.baseUrl).get(`/api/v1/models/${M.gpt.slug}`).set('Authorization', `Bearer ${g.key}`);
    expect(withSlash.body).toMatchObject({ id: M.gpt.slug });
    for (const unknown of ['nobody/nothing', M.unhosted.slug]) {
      const error = await client.models.retrieve(unknown).then(
        () => null,
        (e: InstanceType<typeof OpenAI.APIError>) => e,
      );
      expect(error?.status).toBe(404);
    }
    const anonymous = await request(g.baseUrl).get(`/api/v1/models/${M.gpt.slug}`);
    expect(anonymous.status).toBe(401);
  });

  it('lists the models', async () => {
    const models = await client.models.list();
    const ids = models.data.map((m) => m.id);
    expect(ids).toEqual([
      M.gpt.slug,
      M.claude.slug,
      M.fallback.slug,
      M.claudeFallback.slug,
      M.fallbackAfterDownHost.slug,
      TEST_EMBEDDING_MODELS.embed.slug,
      TEST_EMBEDDING_MODELS.embedFallback.slug,
    ]);
    expect(models.data[0]).toMatchObject({
      id: M.gpt.slug,
      object: 'model',
      kind: 'chat',
      created: expect.any(Number),
      owned_by: 'test',
      name: 'Test GPT',
      uuid: M.gpt.id,
      context_length: 128_000,
      // The cache's prices as the catalogue states them, the 1-hour writes' left to the input price.
      pricing: { input: '1.00', output: '2.00', cache_read: '0.25', cache_write: '1.25', cache_write_1h: '1' },
    });
    // An anthropic host's cache prices, derived from its input price ($3): 0.1×, 1.25×, 2×.
    expect(models.data[1]).toMatchObject({
      pricing: { input: '3.00', cache_read: '0.3', cache_write: '3.75', cache_write_1h: '6' },
    });
  });

  it('answers each failure with its status, in the chat-completions error format', async () => {
    const expectError = async (promise: Promise<unknown>, status: number, code: string) => {
      const error = (await promise.then(
        () => null,
        (e) => e,
      )) as InstanceType<typeof OpenAI.APIError> | null;
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect(error!.status).toBe(status);
      expect(error!.error).toMatchObject({ code, message: expect.any(String), type: expect.any(String) });
      expect(error!.requestID).toMatch(/^req_[0-9a-f]{32}$/);
      return error!;
    };
    const chat = { model: M.gpt.slug, messages: [{ role: 'user' as const, content: 'hi' }] };

    // 400: wrong types (each named), missing messages.
    const wrong: Array<[string, Record<string, unknown>]> = [
      ['temperature', { temperature: 'hot' }],
      ['messages', { messages: 'hi' }],
      ['stream', { stream: 'yes' }],
      ['max_tokens', { max_tokens: 1.5 }],
      ['max_completion_tokens', { max_completion_tokens: -1 }],
      ['tools', { tools: 'all of them' }],
      ['stop', { stop: 5 }],
      ['role', { messages: [{ role: 'wizard', content: 'hi' }] }],
      ['model', { model: 'x'.repeat(300) }],
    ];
    for (const [field, patch] of wrong) {
      const bad = await expectError(client.chat.completions.create({ ...chat, ...patch } as never), 400, 'invalid_request');
      expect(bad.message).toContain(field);
    }
    // @ts-expect-error deliberately wrong
    await expectError(client.chat.completions.create({ model: M.gpt.slug }), 400, 'invalid_request');
    // 401: no key, a wrong key.
    const anonymous = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: 'sk-svc-' + 'x'.repeat(43), maxRetries: 0 });
    await expectError(anonymous.chat.completions.create(chat), 401, 'invalid_api_key');
    // 404: a model not in the catalogue. The organization's request log shows the refusal.
    // OpenAI's own answer to a model it does not have: 404, invalid_request_error, model_not_found —
    // its SDK's NotFoundError.
    const missing = await expectError(
      client.chat.completions.create({ ...chat, model: 'nobody/nothing' }),
      404,
      'model_not_found',
    );
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing.error).toEqual({
      code: 'model_not_found',
      type: 'invalid_request_error',
      param: null,
      message: expect.any(String),
    });
    expect(missing.message).toMatch(/nobody\/nothing/);
    expect(await g.logged(missing.requestID!)).toMatchObject({
      model: 'nobody/nothing',
      status: 'model_not_found',
      cost: 0,
      reservationId: null,
    });
    // 404 too for a model in the catalogue that no configured host serves, saying so.
    const unhosted = await expectError(
      client.chat.completions.create({ ...chat, model: M.unhosted.slug }),
      404,
      'model_not_found',
    );
    expect(unhosted.message).toMatch(/none of its hosts is configured/);
    // 413: a body over the limit.
    await expectError(
      client.chat.completions.create({ ...chat, messages: [{ role: 'user', content: 'x'.repeat(5 * 1024 * 1024) }] }),
      413,
      'payload_too_large',
    );
    // 502: the host fails.
    g.fake.on(M.gpt.hostModel, { kind: 'status', status: 500 });
    await expectError(client.chat.completions.create(chat), 502, 'provider_error');
    await expectError(client.chat.completions.create({ ...chat, stream: true }), 502, 'provider_error');
    await g.settled();
  });
  it('no key is a 401 before the body is looked at', async () => {
    const res = await request(g.baseUrl).post('/api/v1/chat/completions').send({ bad: 'body' });
    expect(res.status).toBe(401);
    expect(res.body.error).toMatchObject({ code: 'invalid_api_key' });
  });

  it('refuses a body that is not JSON (a form, XML, plain text) with 400 in each surface format, never a 500', async () => {
    for (const [type, body] of [
      ['application/x-www-form-urlencoded', 'model=x&messages=hi'],
      ['application/xml', '<chat/>'],
      ['text/plain', 'hello'],
      // JSON itself, but sent as text: told to send it as JSON.
      ['text/plain', JSON.stringify({ model: M.gpt.slug, messages: [{ role: 'user', content: 'hi' }] })],
    ]) {
      const chat = await request(g.baseUrl)
        .post('/api/v1/chat/completions')
        .set('Authorization', `Bearer ${g.key}`)
        .set('content-type', type)
        .send(body);
      expect(chat.status).toBe(400);
      expect(chat.body.error).toMatchObject({
        code: 'invalid_request',
        message: 'the body must be JSON, sent with "content-type: application/json"',
      });
      const messages = await request(g.baseUrl)
        .post('/api/v1/messages')
        .set('x-api-key', g.key)
        .set('anthropic-version', '2023-06-01')
        .set('content-type', type)
        .send(body);
      expect(messages.status).toBe(400);
      expect(messages.body).toMatchObject({
        type: 'error',
        error: { type: 'invalid_request_error', message: expect.stringMatching(/JSON/) },
      });
    }
  });

  it('answers a URL with a bad percent-encoding, or a route that does not exist, in the format of the surface it names', async () => {
    const auth = { Authorization: `Bearer ${g.key}`, 'x-api-key': g.key, 'anthropic-version': '2023-06-01' };
    const chatBadUrl = await request(g.baseUrl).post('/api/v1/chat%ZZ/completions').set(auth).send({});
    expect(chatBadUrl.status).toBe(400);
    expect(chatBadUrl.body.error).toMatchObject({
      code: 'invalid_request',
      type: 'invalid_request_error',
      message: expect.stringMatching(/percent-encoding/),
    });
    const messagesBadUrl = await request(g.baseUrl).post('/api/v1/messages%ZZ').set(auth).send({});
    expect(messagesBadUrl.status).toBe(400);
    expect(messagesBadUrl.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    const nativeBadUrl = await request(g.baseUrl).post('/api/v1/models/test%ZZgpt/chat').set(auth).send({});
    expect(nativeBadUrl.status).toBe(400);
    expect(nativeBadUrl.body).toEqual({ error: { code: 'invalid_request', message: expect.stringMatching(/percent-encoding/) } });
    const batches = await request(g.baseUrl).post('/api/v1/messages/batches').set(auth).send({});
    expect(batches.status).toBe(404);
    expect(batches.body).toMatchObject({
      type: 'error',
      error: { type: 'not_found_error', message: 'no such route: POST /api/v1/messages/batches' },
    });
  });

  it('names the method and path of a route that does not exist (a GET where POST is meant), without the query or a key', async () => {
    const wrongVerb = await request(g.baseUrl).get('/api/v1/chat/completions?token=abc').set('Authorization', `Bearer ${g.key}`);
    expect(wrongVerb.status).toBe(404);
    // As OpenAI answers it: 404 invalid_request_error (its "Invalid URL (GET /v1/chat/completions)"), naming the method the path takes.
    expect(wrongVerb.body.error).toEqual({
      code: 'not_found',
      type: 'invalid_request_error',
      param: null,
      message: 'no such route: GET /api/v1/chat/completions (the path takes POST)',
    });
    const keyInPath = await request(g.baseUrl).get(`/api/v1/${g.key}/models`);
    expect(keyInPath.status).toBe(404);
    expect(keyInPath.body.error.message).toBe('no such route: GET /api/v1/sk-svc-…/models');
  });
});

describe('chat-completions errors that need their own gateway', () => {
  /** A gateway for one test: closed after the operator tool's audit of everything it served. */
  async function withGateway(
    options: Parameters<typeof startGateway>[0],
    test: (g: TestGateway, client: OpenAI) => Promise<void>,
  ) {
    const g = await startGateway({ ...options, redis: true });
    let tested = false;
    try {
      await test(g, new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: g.key, maxRetries: 0 }));
      tested = true;
    } finally {
      // A failed test is reported as such, not hidden behind the audit's verdict.
      if (tested) await auditThenClose(g);
      else await g.close();
    }
  }
  const rejection = (promise: Promise<unknown>) =>
    promise.then(
      () => {
        throw new Error('expected the request to fail');
      },
      (error: unknown) => {
        expect(error).toBeInstanceOf(OpenAI.APIError);
        return error as InstanceType<typeof OpenAI.APIError>;
      },
    );

  it('402 says how many output tokens the balance affords, streamed or not, and the request log shows it', async () => {
    // 0.0005 credits: at $2/M output and a small input, about 240 output tokens.
    await withGateway({ credits: 500_000 }, async (g, client) => {
      const ask = { model: M.gpt.slug, messages: [{ role: 'user' as const, content: 'hello' }], max_tokens: 1000 };
      const affordable: number[] = [];
      for (const stream of [false, true]) {
        const error = await rejection(client.chat.completions.create({ ...ask, stream }));
        expect(error.status).toBe(402);
        expect(error.error).toMatchObject({ code: 'insufficient_credits', type: 'insufficient_credits' });
        affordable.push(Number(/at most (\d+) output tokens/.exec(error.message)?.[1]));
        expect(await g.logged(error.requestID!)).toMatchObject({
          status: 'insufficient_credits',
          cost: 0,
          keyId: g.keyId,
          model: M.gpt.slug,
        });
      }
      // (500,000 nano − input estimate × $1.25/M, its dearest input price: cache writes) / $2/M per token
      expect(affordable[0]).toBeGreaterThan(200);
      expect(affordable[0]).toBeLessThan(250);
      expect(affordable[1]).toBe(affordable[0]);
      const ok = await client.chat.completions.create({ ...ask, max_tokens: affordable[0] });
      expect(ok.choices[0].message.content).toEqual(expect.any(String));
      expect(g.fake.requests).toHaveLength(1);
      expect((await g.t.runtime.projections.balance(g.orgId)).reserved).toBe(0);
    });
  });

  it('cuts off a client that stops sending its body (408), but not an answer that takes longer than that', async () => {
    await withGateway({ env: { REQUEST_READ_TIMEOUT_MS: '500' } }, async (g) => {
      const port = Number(new URL(g.baseUrl).port);
      const socket = connect(port, '127.0.0.1');
      const started = Date.now();
      socket.write(
        `POST /api/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${g.key}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{"model":',
      );
      const [answer] = (await once(socket, 'data')) as [Buffer];
      expect(answer.toString('latin1')).toMatch(/^HTTP\/1\.1 408/);
      expect(Date.now() - started).toBeLessThan(5_000);
      socket.destroy();

      // An answer streamed for longer than the read limit is not cut.
      g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'one two three four' }, chunkDelayMs: 200 });
      const answerStarted = Date.now();
      const res = await request(g.baseUrl)
        .post('/api/v1/chat/completions')
        .set('Authorization', `Bearer ${g.key}`)
        .send({ model: M.gpt.slug, messages: [{ role: 'user', content: 'count slowly' }], stream: true });
      expect(Date.now() - answerStarted).toBeGreaterThan(500);
      expect(res.text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    });
  });

  // A streamed call must begin within the first-byte limit; a whole reply (whose headers come
  // only once it is generated) has the request's own limit.
  it.each([
    ['streamed, past the first-byte limit', true, { HOST_FIRST_BYTE_TIMEOUT_MS: '300' }],
    ['not streamed, past the request limit', false, { REQUEST_TIMEOUT_MS: '1000', HOST_FIRST_BYTE_TIMEOUT_MS: '100000' }],
  ])('504 when the host does not answer in time (%s), and nothing stays held', async (_, stream, env) => {
    await withGateway({ env }, async (g, client) => {
      g.fake.on(M.gpt.hostModel, { kind: 'hang' });
      const error = await rejection(
        client.chat.completions.create({ model: M.gpt.slug, messages: [{ role: 'user', content: 'hello' }], stream }),
      );
      expect(error.status).toBe(504);
      expect(error.error).toMatchObject({ code: 'provider_timeout', type: 'provider_timeout' });
      await g.settled();
      expect((await g.t.runtime.projections.balance(g.orgId)).spent).toBe(0);
      expect(await g.logged(error.requestID!)).toMatchObject({ status: 'provider_timeout', cost: 0 });
    });
  });
});

describe('the official openai client on a model on an azure host (a deployment on the dated route, api-key)', () => {
  const model = NEW_KIND_MODELS.azure;
  let g: TestGateway;
  let client: OpenAI;

  beforeAll(async () => {
    g = await startGateway(withNewKinds);
    client = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: g.key, maxRetries: 0 });
  });
  afterAll(() => auditThenClose(g));

  beforeEach(() => {
    g.fake.on(model.hostModel, (request) =>
      toolResultsIn(request).length > 0
        ? { kind: 'reply', reply: { text: 'It is 21 degrees in Paris.', usage: model.usage } }
        : {
            kind: 'reply',
            reply: { toolCalls: [{ id: 'call_w1', name: 'get_weather', arguments: '{"city":"Paris"}' }], usage: model.usage },
          },
    );
  });

  it.each([
    ['whole', false],
    ['streamed', true],
  ])('a tool round trip (%s): the call reaches the client, its result the host; billed exactly', async (_how, stream) => {
    const before = g.fake.requests.length;
    const ask = async (messages: OpenAI.ChatCompletionMessageParam[]) => {
      const params = { model: model.slug, messages, tools: [weather] };
      if (!stream) return client.chat.completions.create(params);
      return client.chat.completions.stream({ ...params, stream_options: { include_usage: true } }).finalChatCompletion();
    };
    const question: OpenAI.ChatCompletionMessageParam = { role: 'user', content: 'Weather in Paris?' };
    const first = await ask([question]);
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    const call = first.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call).toMatchObject({ id: 'call_w1', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } });
    // Azure's usage as it reported it: the cached input within the prompt, the reasoning within the output.
    expect(first.usage).toMatchObject({
      prompt_tokens: 2824,
      completion_tokens: 40,
      prompt_tokens_details: { cached_tokens: 1024 },
      completion_tokens_details: { reasoning_tokens: 8 },
    });
    const second = await ask([
      question,
      first.choices[0].message,
      { role: 'tool', tool_call_id: call.id, content: 'Paris: 21 degrees, from the tool' },
    ]);
    expect(second.choices[0].message.content).toBe('It is 21 degrees in Paris.');
    const sent = await expectServedAndBilled(g, model, before);
    expect(sent).toHaveLength(2);
    expect(toolResultsIn(sent[1])).toEqual(['Paris: 21 degrees, from the tool']);
    expect(sent.map((r) => r.body.stream === true)).toEqual([stream, stream]);
  });
});
