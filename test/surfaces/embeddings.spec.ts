import OpenAI from 'openai';
import type { ReservationSettled } from '../../src/ledger/ledger.events';
import { FAKE_EMBEDDING_DIMENSIONS, fakeEmbedding } from '../support/fake-upstream';
import { auditThenClose, startGateway, TEST_EMBEDDING_MODELS, TEST_MODELS, TestGateway } from '../support/gateway';

/**
 * POST /api/v1/embeddings end to end, with the official `openai` client: forwarded to an openai
 * host's /embeddings, answered in the embeddings format, billed by input from the reply's usage
 * through the ledger and request log, a failing host falling back or the hold released.
 */

const E = TEST_EMBEDDING_MODELS;
const M = TEST_MODELS;

let g: TestGateway;
let client: OpenAI;
beforeAll(async () => {
  g = await startGateway();
  client = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: g.key, maxRetries: 0 });
});
afterAll(async () => {
  await auditThenClose(g);
});
beforeEach(() => {
  // The fake's own count: a word a token, plus one per input.
  g.fake.on(E.embed.hostModel, { kind: 'reply', reply: {} });
});

/** The settlement of a request, once it is in the log and the request log shows it. */
async function settlementOf(requestId: string) {
  const entry = await g.logged(requestId);
  await g.settled();
  const log = await g.t.runtime.events.readAll(0, 100_000);
  const settled = log.find((e) => e.type === 'ReservationSettled' && (e.data as { requestId: string }).requestId === requestId);
  return { entry, settled: settled?.data as ReservationSettled['data'] | undefined };
}

/** The request id of a call made with the client: its response's `x-request-id`. */
async function withRequestId<T>(call: { withResponse(): Promise<{ data: T; response: Response }> }) {
  const { data, response } = await call.withResponse();
  return { data, requestId: response.headers.get('x-request-id')! };
}

const decode = (base64: string) => Array.from(new Float32Array(Uint8Array.from(Buffer.from(base64, 'base64')).buffer));

describe('embeddings.create with the official client', () => {
  it('float: the host gets the body unchanged apart from the model; the reply has its vectors, usage and cost; the charge is the hand-computed one', async () => {
    g.fake.on(E.embed.hostModel, { kind: 'reply', reply: { usage: { input: 1234, output: 0 } } });
    const ask = {
      model: E.embed.slug,
      input: ['The quick brown fox. '.repeat(100), 'jumps'],
      encoding_format: 'float' as const,
      dimensions: 4,
      user: 'user-42',
    };
    const { data, requestId } = await withRequestId(client.embeddings.create(ask));
    const received = await g.fake.received(E.embed.hostModel);
    expect(received.path).toBe('/v1/embeddings');
    expect(received.headers.authorization).toBe('Bearer upstream-openai-key');
    expect(received.body).toEqual({ ...ask, model: E.embed.hostModel });

    expect(data.object).toBe('list');
    expect(data.model).toBe(E.embed.slug);
    expect(data.data).toEqual([
      { object: 'embedding', index: 0, embedding: fakeEmbedding(ask.input[0], 4) },
      { object: 'embedding', index: 1, embedding: fakeEmbedding(ask.input[1], 4) },
    ]);
    // 1,234 input tokens × $0.13 per million = $160.42 per million = 0.00016042 credits = 160,420 nano-credits.
    expect(data.usage).toEqual({ prompt_tokens: 1234, total_tokens: 1234, cost: 0.00016042 });

    const { entry, settled } = await settlementOf(requestId);
    expect(settled).toMatchObject({
      host: 'fake-openai',
      hostModel: E.embed.hostModel,
      inputTokens: 1234,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      outputTokens: 0,
      prices: { input: 130_000_000, output: 0 },
      amount: 160_420,
    });
    expect(entry).toMatchObject({ surface: 'embeddings', model: E.embed.slug, status: 'ok', inputTokens: 1234, cost: 160_420 });
  });

  it('base64 by default: the client asks for base64 and decodes it to the same floats', async () => {
    const res = await client.embeddings.create({ model: E.embed.slug, input: 'hello there' });
    const received = g.fake.requests.at(-1)!;
    expect(received.body).toEqual({ model: E.embed.hostModel, input: 'hello there', encoding_format: 'base64' });
    expect(res.data[0].embedding).toEqual(fakeEmbedding('hello there', FAKE_EMBEDDING_DIMENSIONS));
    // Two words and one: 3 tokens × $0.13 per million = 390 nano-credits.
    expect(res.usage).toEqual({ prompt_tokens: 3, total_tokens: 3, cost: 0.00000039 });
  });

  it('base64 asked for explicitly: the vector comes back as base64 text, passed through as the host encoded it', async () => {
    const res = await client.embeddings.create({ model: E.embed.slug, input: 'hello there', encoding_format: 'base64' });
    const encoded = res.data[0].embedding as unknown as string;
    expect(typeof encoded).toBe('string');
    expect(decode(encoded)).toEqual(fakeEmbedding('hello there', FAKE_EMBEDDING_DIMENSIONS));
  });

  it('token arrays: with no usage from the host, the estimate is billed (each token array counts its length)', async () => {
    g.fake.on(E.embed.hostModel, { kind: 'reply', reply: { usage: null } });
    const { data, requestId } = await withRequestId(
      client.embeddings.create({
        model: E.embed.slug,
        input: [
          [1, 2, 3],
          [40, 50],
        ],
        encoding_format: 'float',
      }),
    );
    expect(data.data.map((d) => d.embedding)).toEqual([
      fakeEmbedding([1, 2, 3], FAKE_EMBEDDING_DIMENSIONS),
      fakeEmbedding([40, 50], FAKE_EMBEDDING_DIMENSIONS),
    ]);
    // 3 + 2 = 5 tokens × $0.13 per million = 650 nano-credits.
    expect(data.usage).toEqual({ prompt_tokens: 5, total_tokens: 5, cost: 0.00000065 });
    expect((await settlementOf(requestId)).settled).toMatchObject({ inputTokens: 5, amount: 650 });
  });

  it('a host count past what the input could hold is not believed: the estimate is billed', async () => {
    g.fake.on(E.embed.hostModel, { kind: 'reply', reply: { usage: { input: 1_000_000_000, output: 0 } } });
    const { data, requestId } = await withRequestId(client.embeddings.create({ model: E.embed.slug, input: 'abcdefgh' }));
    // 8 characters at four a token: 2 tokens × $0.13 per million = 260 nano-credits.
    expect(data.usage).toMatchObject({ prompt_tokens: 2, cost: 0.00000026 });
    expect((await settlementOf(requestId)).settled).toMatchObject({ inputTokens: 2, amount: 260 });
  });

  it('a host failing before it answers: the next host serves, billed at its own price', async () => {
    g.fake.on(E.embedFallback.firstHostModel, { kind: 'status', status: 503 });
    g.fake.on(E.embedFallback.hostModel, { kind: 'reply', reply: { usage: { input: 777, output: 0 } } });
    const { data, requestId } = await withRequestId(
      client.embeddings.create({ model: E.embedFallback.slug, input: 'fall back '.repeat(100), encoding_format: 'float' }),
    );
    expect(await g.fake.received(E.embedFallback.firstHostModel)).toMatchObject({ path: '/v1/embeddings' });
    // 777 tokens × $0.02 per million = 15,540 nano-credits (the first host's $9/M is not charged).
    expect(data.usage).toEqual({ prompt_tokens: 777, total_tokens: 777, cost: 0.00001554 });
    expect((await settlementOf(requestId)).settled).toMatchObject({
      host: 'fake-openai',
      hostModel: E.embedFallback.hostModel,
      prices: { input: 20_000_000 },
      amount: 15_540,
    });
  });

  it('a host that fails with no other host to try: 502, the hold released in full and logged', async () => {
    g.fake.on(E.embed.hostModel, { kind: 'status', status: 500 });
    await g.settled();
    const before = await g.t.runtime.projections.balance(g.orgId);
    const error = await client.embeddings.create({ model: E.embed.slug, input: 'x' }).then(
      () => null,
      (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
    );
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error!.status).toBe(502);
    expect(error!.error).toMatchObject({ code: 'provider_error', type: 'provider_error' });
    expect(await g.logged(error!.requestID!)).toMatchObject({ surface: 'embeddings', status: 'provider_error', cost: 0 });
    await g.settled();
    const after = await g.t.runtime.projections.balance(g.orgId);
    expect(after).toEqual({ ...before, reserved: 0, pending: 0 });
  });

  it('a cut reply body is the host failing (502), and nothing is charged', async () => {
    g.fake.on(E.embed.hostModel, { kind: 'cut', reply: {}, afterPieces: 0 });
    const res = await fetch(`${g.baseUrl}/api/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${g.key}` },
      body: JSON.stringify({ model: E.embed.slug, input: 'x' }),
    });
    expect(res.status).toBe(502);
    const requestId = res.headers.get('x-request-id')!;
    expect(await g.logged(requestId)).toMatchObject({ status: 'provider_error', cost: 0 });
  });
});

describe('errors, in the chat-completions format with the product statuses', () => {
  const expectError = async (promise: Promise<unknown>, status: number, code: string) => {
    const error = (await promise.then(
      () => null,
      (e: unknown) => e,
    )) as InstanceType<typeof OpenAI.APIError> | null;
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error!.status).toBe(status);
    expect(error!.error).toMatchObject({ code, message: expect.any(String), type: expect.any(String) });
    return error!;
  };
  const ask = { model: E.embed.slug, input: 'hello' };

  it('400 for a body that is wrong, naming the field; never reaching the host', async () => {
    const sent = g.fake.requests.length;
    const wrong: Array<[string, Record<string, unknown>]> = [
      ['input', { input: undefined }],
      ['input', { input: '' }],
      ['input', { input: [] }],
      ['input', { input: [1.5, 2] }],
      ['input', { input: [-1] }],
      ['input', { input: [['a']] }],
      ['input', { input: { text: 'hi' } }],
      ['input', { input: ['a', 1] }],
      ['dimensions', { dimensions: 0 }],
      ['dimensions', { dimensions: 'many' }],
      ['encoding_format', { encoding_format: 'hex' }],
      ['user', { user: 5 }],
      ['model', { model: 7 }],
    ];
    for (const [field, patch] of wrong) {
      const bad = await expectError(client.embeddings.create({ ...ask, ...patch }), 400, 'invalid_request');
      expect(bad.message).toContain(field);
    }
    expect(g.fake.requests.length).toBe(sent);
  });

  it('400 for a chat model on /embeddings, and for an embedding model on every chat route, saying which routes serve it', async () => {
    const chatModel = await expectError(client.embeddings.create({ ...ask, model: M.gpt.slug }), 400, 'invalid_request');
    expect(chatModel.message).toMatch(/test\/gpt.*chat model.*\/chat\/completions/);
    expect(await g.logged(chatModel.requestID!)).toMatchObject({ surface: 'embeddings', status: 'invalid_request', cost: 0 });

    const onChat = await expectError(
      client.chat.completions.create({ model: E.embed.slug, messages: [{ role: 'user', content: 'hi' }] }),
      400,
      'invalid_request',
    );
    expect(onChat.message).toMatch(/test\/embed.*embedding model.*POST \/api\/v1\/embeddings only/);

    const post = (path: string, body: unknown, headers: Record<string, string>) =>
      fetch(`${g.baseUrl}/api/v1/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    const messages = await post(
      'messages',
      { model: E.embed.slug, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
      { 'x-api-key': g.key, 'anthropic-version': '2023-06-01' },
    );
    expect(messages.status).toBe(400);
    expect(((await messages.json()) as { error: { message: string } }).error.message).toMatch(/\/api\/v1\/embeddings only/);
    const native = await post(
      `models/${E.embed.slug}/chat`,
      { messages: [{ role: 'user', content: 'hi' }] },
      { authorization: `Bearer ${g.key}` },
    );
    expect(native.status).toBe(400);
    expect(JSON.stringify(await native.json())).toMatch(/\/api\/v1\/embeddings only/);
  });

  it('401 without a key or with a wrong one', async () => {
    const anonymous = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: 'sk-svc-' + 'x'.repeat(43), maxRetries: 0 });
    await expectError(anonymous.embeddings.create(ask), 401, 'invalid_api_key');
    const res = await fetch(`${g.baseUrl}/api/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ask),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: { code: 'invalid_api_key', message: expect.stringMatching(/Bearer/) } });
  });

  it('404 for a model not in the catalogue', async () => {
    const missing = await expectError(client.embeddings.create({ ...ask, model: 'nobody/nothing' }), 404, 'model_not_found');
    expect(missing.message).toMatch(/nobody\/nothing/);
  });

  it('413 for a body over the limit', async () => {
    await expectError(client.embeddings.create({ ...ask, input: 'x'.repeat(5 * 1024 * 1024) }), 413, 'payload_too_large');
  });

  it('/models lists embedding models with their kind, priced by input only', async () => {
    const models = await client.models.list();
    const embed = models.data.find((m) => m.id === E.embed.slug) as unknown as Record<string, unknown>;
    expect(embed).toMatchObject({ kind: 'embedding', pricing: { input: '0.13', output: '0' } });
    expect(models.data.find((m) => m.id === M.gpt.slug)).toMatchObject({ kind: 'chat' });
  });
});

describe('with little credit, or a slow host', () => {
  it('402 when the balance cannot cover the estimated input, nothing held', async () => {
    const poor = await startGateway({ credits: 100 });
    try {
      const broke = new OpenAI({ baseURL: `${poor.baseUrl}/api/v1`, apiKey: poor.key, maxRetries: 0 });
      // 4,000 characters ≈ 1,000 tokens × $0.13 per million = 130,000 nano-credits, above the 100 held.
      const error = await broke.embeddings.create({ model: E.embed.slug, input: 'x'.repeat(4000) }).then(
        () => null,
        (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
      );
      expect(error!.status).toBe(402);
      expect(error!.error).toMatchObject({ code: 'insufficient_credits' });
      expect(poor.fake.requests).toHaveLength(0);
    } finally {
      await auditThenClose(poor);
    }
  });

  it('504 when the host does not answer in time; the hold released', async () => {
    const slow = await startGateway({ env: { HOST_FIRST_BYTE_TIMEOUT_MS: '300' } });
    try {
      slow.fake.on(E.embed.hostModel, { kind: 'hang' });
      const c = new OpenAI({ baseURL: `${slow.baseUrl}/api/v1`, apiKey: slow.key, maxRetries: 0 });
      const error = await c.embeddings.create({ model: E.embed.slug, input: 'x' }).then(
        () => null,
        (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
      );
      expect(error!.status).toBe(504);
      expect(error!.error).toMatchObject({ code: 'provider_timeout' });
      expect(await slow.logged(error!.requestID!)).toMatchObject({ status: 'provider_timeout', cost: 0 });
    } finally {
      await auditThenClose(slow);
    }
  });
});

describe('a reservation the log cannot take', () => {
  it('503 on embeddings, as on chat completions: nothing billed, nothing held', async () => {
    const failing = await startGateway();
    try {
      // The log refusing reservations (as a full disk would), and nothing else.
      const events = failing.t.runtime.events;
      const append = events.append.bind(events);
      events.append = (stream, batch, expected) =>
        batch.some((e) => e.type === 'CreditsReserved')
          ? Promise.reject(new Error('SQLITE_FULL: database or disk is full'))
          : append(stream, batch, expected);
      const post = (path: string, body: object) =>
        fetch(`${failing.baseUrl}/api/v1/${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${failing.key}` },
          body: JSON.stringify(body),
        });
      const notRecorded = { code: 'unavailable', message: expect.stringContaining('the reservation could not be recorded') };

      const embedded = await post('embeddings', { model: E.embed.slug, input: 'x' });
      expect(embedded.status).toBe(503);
      expect(await embedded.json()).toMatchObject({ error: notRecorded });

      // The chat host would never answer: the request ends before the host is called.
      failing.fake.on(M.gpt.hostModel, { kind: 'hang' });
      const chat = await post('chat/completions', { model: M.gpt.slug, messages: [{ role: 'user', content: 'hi' }] });
      expect(chat.status).toBe(503);
      expect(await chat.json()).toMatchObject({ error: notRecorded });

      await failing.settled();
      expect(await failing.t.runtime.projections.balance(failing.orgId)).toMatchObject({ spent: 0, reserved: 0, pending: 0 });
    } finally {
      await auditThenClose(failing);
    }
  });
});
