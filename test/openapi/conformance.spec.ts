import { startGateway, TEST_EMBEDDING_MODELS, TEST_MODELS, TestGateway } from '../support/gateway';
import type { FakeReply } from '../support/fake-upstream';
import { createKey } from '../support/keys';
import { fundedOrganization } from '../support/runtime';
import { Deviation, PublishedDocument, PublishedSchemas } from '../support/published-schemas';

/**
 * Every route's replies, stream events and errors, checked against the published documents of the
 * APIs it speaks (extracts in test/fixtures/published, with their sources): OpenAI's OpenAPI
 * document for chat completions, Responses, embeddings and the model list; OpenRouter's for chat
 * completions and embeddings too, and for the credits, the key, generations and the management
 * API; the official messages SDK's types for messages. A field renamed, dropped or of another type
 * fails here. Where a route knowingly sends less than a published schema requires, the difference is
 * listed below with why; nothing else is excused.
 *
 * What is checked is what the gateway writes: replies translated from a host of another format,
 * errors, failures mid-stream, the account routes. A reply passed whole from a host of the client's
 * own format is the host's (test/surfaces/fidelity.spec.ts holds it to that); its failures mid-stream
 * are the gateway's, and checked.
 */

const M = TEST_MODELS;

const DEVIATIONS: Deviation[] = [
  {
    document: 'openrouter',
    at: '/components/schemas/ChatResult',
    omits: ['system_fingerprint'],
    why: "OpenRouter's completion requires a fingerprint (or null); OpenAI's allows only a string, and the gateway has none to give",
  },
  {
    document: 'openrouter',
    at: '/components/schemas/GenerationResponse/properties/data',
    // What is sent: the request log's line, with OpenRouter's names for what it knows.
    omits: [
      ...['cache_discount', 'upstream_inference_cost', 'app_id', 'streamed', 'cancelled'],
      ...['moderation_latency', 'generation_time', 'finish_reason', 'service_tier'],
      ...['native_tokens_completion_images', 'native_tokens_reasoning', 'num_media_prompt', 'num_input_audio_prompt'],
      ...['num_media_completion', 'num_search_results', 'num_fetches', 'web_search_engine', 'origin'],
      ...['native_finish_reason', 'external_user', 'api_type', 'preset_id', 'router', 'provider_responses', 'user_agent'],
      ...['http_referer', 'data_region', 'workspace_id'],
    ],
    why: 'a generation is a line of the request log: what it does not record (finish reason, streaming, media, the client app) is not given',
  },
  ...['KeyCreatedResponse/properties/data', 'KeyListResponse/properties/data/items', 'KeyResponse/properties/data'].map(
    (at): Deviation => ({
      document: 'openrouter',
      at: `/components/schemas/${at}`,
      omits: [
        ...['hash', 'disabled', 'limit_remaining', 'include_byok_in_limit', 'usage_daily', 'usage_weekly', 'usage_monthly'],
        ...['byok_usage', 'byok_usage_daily', 'byok_usage_weekly', 'byok_usage_monthly', 'updated_at', 'creator_user_id'],
        'workspace_id',
      ],
      why: 'the management API names a key by its id and says its status (not hash and disabled), and shows its usage in all only; the fields it shares with OpenRouter’s (name, label, limit, limit_reset, usage, created_at, expires_at) are checked',
    }),
  ),
];

/** What a published schema names, for a route: the document and the component. */
type Published = [PublishedDocument, string];

const OPENAI_ERROR: Published = ['openai', 'ErrorResponse'];
const MESSAGES_ERROR: Published = ['anthropic-sdk', 'ErrorResponse'];
/** OpenRouter's error body per status, as its document names them. */
const OPENROUTER_ERRORS: Record<number, Published> = {
  400: ['openrouter', 'BadRequestResponse'],
  401: ['openrouter', 'UnauthorizedResponse'],
  402: ['openrouter', 'PaymentRequiredResponse'],
  403: ['openrouter', 'ForbiddenResponse'],
  404: ['openrouter', 'NotFoundResponse'],
  408: ['openrouter', 'RequestTimeoutResponse'],
  409: ['openrouter', 'ConflictResponse'],
  413: ['openrouter', 'PayloadTooLargeResponse'],
  429: ['openrouter', 'TooManyRequestsResponse'],
  500: ['openrouter', 'InternalServerResponse'],
  502: ['openrouter', 'BadGatewayResponse'],
  503: ['openrouter', 'ServiceUnavailableResponse'],
};

interface Sse {
  event: string | null;
  data: unknown;
}

/** Server-sent events: each message's event name and parsed data (the chat-completions `[DONE]` left out). */
function eventsOf(text: string): Sse[] {
  return text
    .split('\n\n')
    .map((message) => {
      const lines = message.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7) ?? null;
      const data = lines
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n');
      return { event, data };
    })
    .filter(({ data }) => data !== '' && data !== '[DONE]')
    .map(({ event, data }) => ({ event, data: JSON.parse(data) as unknown }));
}

describe('the wire, as the published documents describe it', () => {
  let g: TestGateway;
  const published = new PublishedSchemas(DEVIATIONS);

  beforeAll(async () => {
    g = await startGateway();
  });
  afterAll(() => g.close());

  /** Fails naming every difference when `value` is not what each of the schemas describes. */
  function conforms(value: unknown, ...schemas: Published[]): void {
    for (const [document, name] of schemas) {
      const problems = published.problems(document, name, value);
      if (problems.length > 0)
        throw new Error(
          `${JSON.stringify(value).slice(0, 600)}\nis not ${document}'s ${name}:\n  ${problems.slice(0, 12).join('\n  ')}`,
        );
    }
  }

  async function send(
    method: string,
    path: string,
    options: { body?: unknown; key?: string | null; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; body: unknown; events: Sse[] }> {
    const key = options.key === undefined ? g.key : options.key;
    const res = await fetch(`${g.baseUrl}${path}`, {
      method,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...options.headers,
      },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const text = await res.text();
    const stream = (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
    return { status: res.status, body: stream ? null : JSON.parse(text), events: stream ? eventsOf(text) : [] };
  }

  const cut: FakeReply = { text: 'alpha beta gamma delta epsilon', usage: null };
  const toolCall: FakeReply = {
    text: 'Looking.',
    toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
  };

  it('fails a reply that drifts: a field dropped, renamed, or given a value the document does not allow', async () => {
    const { body: error } = await send('POST', '/api/v1/chat/completions', { body: { model: M.gpt.slug, messages: [] } });
    conforms(error, OPENAI_ERROR);
    const { param: _dropped, ...withoutParam } = (error as { error: Record<string, unknown> }).error;
    expect(published.problems('openai', 'ErrorResponse', { error: withoutParam })).toEqual([
      '/error must have required property \'param\' {"missingProperty":"param"}',
    ]);
    const { body: key } = await send('GET', '/api/v1/key');
    const { is_management_key: isManagement, ...rest } = (key as { data: Record<string, unknown> }).data;
    expect(published.problems('openrouter', 'CurrentKeyResponse', { data: { ...rest, is_management: isManagement } })).toEqual([
      '/data must have required property \'is_management_key\' {"missingProperty":"is_management_key"}',
    ]);
    const chunk = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm' };
    const failed = { ...chunk, choices: [{ index: 0, delta: {}, finish_reason: 'error' }] };
    expect(published.problems('openai', 'CreateChatCompletionStreamResponse', failed)).not.toEqual([]);
    expect(
      published.problems('openrouter', 'ChatStreamChunk', { ...failed, error: { code: 'provider_error', message: 'm' } }),
    ).toEqual(['/error/code must be integer {"type":"integer"}']);
  });

  describe('chat completions (OpenAI and OpenRouter)', () => {
    const CHUNK: Published[] = [
      ['openai', 'CreateChatCompletionStreamResponse'],
      ['openrouter', 'ChatStreamChunk'],
    ];
    const COMPLETION: Published[] = [
      ['openai', 'CreateChatCompletionResponse'],
      ['openrouter', 'ChatResult'],
    ];
    const chat = { max_tokens: 32, messages: [{ role: 'user', content: 'Hi' }] };

    it('a whole completion and a streamed one, translated from a messages host', async () => {
      const model = M.claude.slug;
      const whole = await send('POST', '/api/v1/chat/completions', { body: { ...chat, model } });
      expect(whole.status).toBe(200);
      conforms(whole.body, ...COMPLETION);
      const streamed = await send('POST', '/api/v1/chat/completions', {
        body: { ...chat, model, stream: true, stream_options: { include_usage: true } },
      });
      expect(streamed.events.length).toBeGreaterThan(2);
      for (const { data } of streamed.events) conforms(data, ...CHUNK);
    });

    it('tool calls, whole and streamed, translated', async () => {
      g.fake.on(M.claude.hostModel, { kind: 'reply', reply: toolCall });
      const whole = await send('POST', '/api/v1/chat/completions', { body: { ...chat, model: M.claude.slug } });
      conforms(whole.body, ...COMPLETION);
      const streamed = await send('POST', '/api/v1/chat/completions', { body: { ...chat, model: M.claude.slug, stream: true } });
      for (const { data } of streamed.events) conforms(data, ...CHUNK);
      g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
    });

    it('a failure after the stream started: a chunk carrying the error, with a finish reason both documents allow', async () => {
      g.fake.on(M.claude.hostModel, { kind: 'cut', reply: cut, afterPieces: 2 });
      const translated = await send('POST', '/api/v1/chat/completions', {
        body: { ...chat, model: M.claude.slug, stream: true },
      });
      g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
      expect(translated.status).toBe(200);
      for (const { data } of translated.events) conforms(data, ...CHUNK);
      // Passed whole, the host's chunks are its own; the failure's is the gateway's.
      g.fake.on(M.gpt.hostModel, { kind: 'cut', reply: cut, afterPieces: 2 });
      const passed = await send('POST', '/api/v1/chat/completions', { body: { ...chat, model: M.gpt.slug, stream: true } });
      g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
      for (const { events } of [translated, passed]) {
        const failure = events[events.length - 1].data as { error?: unknown };
        expect(failure.error).toMatchObject({ code: 502, message: expect.any(String) });
        conforms(failure, ...CHUNK);
      }
    });

    it('errors: a bad body, a key, credits, an unknown model, a host failing', async () => {
      const bad = await send('POST', '/api/v1/chat/completions', { body: { model: M.gpt.slug, messages: [] } });
      expect(bad.status).toBe(400);
      conforms(bad.body, OPENAI_ERROR);
      const noKey = await send('POST', '/api/v1/chat/completions', { body: { ...chat, model: M.gpt.slug }, key: null });
      expect(noKey.status).toBe(401);
      conforms(noKey.body, OPENAI_ERROR);
      const unknown = await send('POST', '/api/v1/chat/completions', { body: { ...chat, model: 'nobody/none' } });
      expect(unknown.status).toBe(404);
      conforms(unknown.body, OPENAI_ERROR);
      // A thousand nano-credits: less than any request's hold.
      const poor = await fundedOrganization(g.t.runtime, 1000);
      const { secret } = await createKey(g.t.runtime, poor, 'poor');
      await g.t.runtime.projector.catchUp();
      const tooDear = await send('POST', '/api/v1/chat/completions', { body: { ...chat, model: M.gpt.slug }, key: secret });
      expect(tooDear.status).toBe(402);
      conforms(tooDear.body, OPENAI_ERROR);
      g.fake.on(M.gpt.hostModel, { kind: 'status', status: 500 });
      const failed = await send('POST', '/api/v1/chat/completions', { body: { ...chat, model: M.gpt.slug } });
      g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
      expect(failed.status).toBe(502);
      conforms(failed.body, OPENAI_ERROR);
    });
  });

  describe('messages (the official SDK’s types)', () => {
    const headers = { 'anthropic-version': '2023-06-01' };
    const messages = { max_tokens: 32, messages: [{ role: 'user', content: 'Hi' }] };

    /** Each event as the SDK reads it: `ping` is passed over, `error` thrown as an error response. */
    function conformingStream(events: Sse[]): void {
      for (const { event, data } of events) {
        if (event === 'ping') expect(data).toEqual({ type: 'ping' });
        else if (event === 'error') conforms(data, MESSAGES_ERROR);
        else {
          expect((data as { type: string }).type).toBe(event);
          conforms(data, ['anthropic-sdk', 'RawMessageStreamEvent']);
        }
      }
    }

    it('a whole message and a streamed one, translated from a chat-completions host', async () => {
      const model = M.gpt.slug;
      const whole = await send('POST', '/api/v1/messages', { body: { ...messages, model }, headers });
      expect(whole.status).toBe(200);
      conforms(whole.body, ['anthropic-sdk', 'Message']);
      const streamed = await send('POST', '/api/v1/messages', { body: { ...messages, model, stream: true }, headers });
      expect(streamed.events.length).toBeGreaterThan(3);
      conformingStream(streamed.events);
    });

    it('tool use, whole and streamed, translated', async () => {
      g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: toolCall });
      const whole = await send('POST', '/api/v1/messages', { body: { ...messages, model: M.gpt.slug }, headers });
      conforms(whole.body, ['anthropic-sdk', 'Message']);
      const streamed = await send('POST', '/api/v1/messages', {
        body: { ...messages, model: M.gpt.slug, stream: true },
        headers,
      });
      conformingStream(streamed.events);
      g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
    });

    it('a failure after the stream started: an error event', async () => {
      g.fake.on(M.gpt.hostModel, { kind: 'cut', reply: cut, afterPieces: 2 });
      const translated = await send('POST', '/api/v1/messages', {
        body: { ...messages, model: M.gpt.slug, stream: true },
        headers,
      });
      g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
      conformingStream(translated.events);
      // Passed whole, the host's events are its own; the failure's is the gateway's.
      g.fake.on(M.claude.hostModel, { kind: 'cut', reply: cut, afterPieces: 2 });
      const passed = await send('POST', '/api/v1/messages', {
        body: { ...messages, model: M.claude.slug, stream: true },
        headers,
      });
      g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
      for (const { events } of [translated, passed]) {
        const failure = events[events.length - 1];
        expect(failure.event).toBe('error');
        conforms(failure.data, MESSAGES_ERROR);
      }
    });

    it('errors, and the token count', async () => {
      const bad = await send('POST', '/api/v1/messages', { body: { model: M.claude.slug }, headers });
      expect(bad.status).toBe(400);
      conforms(bad.body, MESSAGES_ERROR);
      const noKey = await send('POST', '/api/v1/messages', { body: { ...messages, model: M.claude.slug }, headers, key: null });
      expect(noKey.status).toBe(401);
      conforms(noKey.body, MESSAGES_ERROR);
      const unknown = await send('POST', '/api/v1/messages', { body: { ...messages, model: 'nobody/none' }, headers });
      expect(unknown.status).toBe(404);
      conforms(unknown.body, MESSAGES_ERROR);
      const counted = await send('POST', '/api/v1/messages/count_tokens', {
        body: { model: M.claude.slug, messages: messages.messages },
        headers,
      });
      expect(counted.status).toBe(200);
      conforms(counted.body, ['anthropic-sdk', 'MessageTokensCount']);
    });
  });

  describe('Responses (OpenAI)', () => {
    const responses = { model: M.gpt.slug, max_output_tokens: 32, input: 'Hi' };

    it('a whole response and a streamed one, with text and a function call', async () => {
      for (const reply of [{ text: 'Hello.' }, toolCall]) {
        g.fake.on(M.gpt.hostModel, { kind: 'reply', reply });
        const whole = await send('POST', '/api/v1/responses', { body: responses });
        expect(whole.status).toBe(200);
        conforms(whole.body, ['openai', 'Response']);
        const streamed = await send('POST', '/api/v1/responses', { body: { ...responses, stream: true } });
        for (const { data } of streamed.events) conforms(data, ['openai', 'ResponseStreamEvent']);
      }
      g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
    });

    it('a failure after the stream started, and errors', async () => {
      g.fake.on(M.gpt.hostModel, { kind: 'cut', reply: cut, afterPieces: 2 });
      const { events } = await send('POST', '/api/v1/responses', { body: { ...responses, stream: true } });
      g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
      expect(events.map((e) => e.event).slice(-2)).toEqual(['error', 'response.failed']);
      for (const { data } of events) conforms(data, ['openai', 'ResponseStreamEvent']);
      const bad = await send('POST', '/api/v1/responses', { body: { ...responses, previous_response_id: 'resp_1' } });
      expect(bad.status).toBe(400);
      conforms(bad.body, OPENAI_ERROR);
      const noKey = await send('POST', '/api/v1/responses', { body: responses, key: null });
      expect(noKey.status).toBe(401);
      conforms(noKey.body, OPENAI_ERROR);
    });
  });

  describe('embeddings and the model list (OpenAI; embeddings OpenRouter too)', () => {
    it('embeddings, and their errors', async () => {
      const embed = { model: TEST_EMBEDDING_MODELS.embed.slug, input: ['one', 'two'] };
      const reply = await send('POST', '/api/v1/embeddings', { body: embed });
      expect(reply.status).toBe(200);
      conforms(reply.body, ['openai', 'CreateEmbeddingResponse'], ['openrouter', 'EmbeddingsResponse']);
      const bad = await send('POST', '/api/v1/embeddings', { body: { model: TEST_EMBEDDING_MODELS.embed.slug } });
      expect(bad.status).toBe(400);
      conforms(bad.body, OPENAI_ERROR);
      const noKey = await send('POST', '/api/v1/embeddings', { body: embed, key: null });
      expect(noKey.status).toBe(401);
      conforms(noKey.body, OPENAI_ERROR);
    });

    it('the model list, one model, and their errors', async () => {
      conforms((await send('GET', '/api/v1/models')).body, ['openai', 'ListModelsResponse']);
      conforms((await send('GET', `/api/v1/models/${M.gpt.slug}`)).body, ['openai', 'Model']);
      const unknown = await send('GET', '/api/v1/models/nobody/none');
      expect(unknown.status).toBe(404);
      conforms(unknown.body, OPENAI_ERROR);
      expect((unknown.body as { error: { message: string } }).error.message).toBe(
        'model "nobody/none" is not in the catalogue (GET /api/v1/models lists them)',
      );
      // In the catalogue, none of its hosts configured: said as a request naming it is told.
      const unhosted = await send('GET', `/api/v1/models/${M.unhosted.slug}`);
      expect(unhosted.status).toBe(404);
      conforms(unhosted.body, OPENAI_ERROR);
      expect((unhosted.body as { error: { message: string } }).error.message).toBe(
        `model "${M.unhosted.slug}" is not available here: none of its hosts is configured`,
      );
      const noKey = await send('GET', '/api/v1/models', { key: null });
      expect(noKey.status).toBe(401);
      conforms(noKey.body, OPENAI_ERROR);
    });
  });

  describe("OpenRouter's account routes: credits, the key, generations, the management API", () => {
    const openRouterError = ({ status, body }: { status: number; body: unknown }) => {
      const schema = OPENROUTER_ERRORS[status];
      expect(schema).toBeDefined();
      conforms(body, schema);
      expect((body as { error: { code: unknown } }).error.code).toBe(status);
    };

    it('the credits and the calling key, and their errors', async () => {
      conforms((await send('GET', '/api/v1/credits')).body, ['openrouter', 'CreditsResponse']);
      conforms((await send('GET', '/api/v1/key')).body, ['openrouter', 'CurrentKeyResponse']);
      openRouterError(await send('GET', '/api/v1/credits', { key: null }));
      openRouterError(await send('GET', '/api/v1/key', { key: 'sk-svc-not-a-key' }));
    });

    it('a generation, and its errors', async () => {
      const served = await fetch(`${g.baseUrl}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${g.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: M.gpt.slug, max_tokens: 8, messages: [{ role: 'user', content: 'Hi' }] }),
      });
      await served.text();
      const id = served.headers.get('x-request-id')!;
      await g.logged(id);
      const found = await send('GET', `/api/v1/generation?id=${id}`);
      expect(found.status).toBe(200);
      conforms(found.body, ['openrouter', 'GenerationResponse']);
      openRouterError(await send('GET', '/api/v1/generation?id=req_none'));
      openRouterError(await send('GET', '/api/v1/generation'));
      openRouterError(await send('GET', `/api/v1/generation?id=${id}`, { key: null }));
    });

    it('the management API: a key created, listed, read', async () => {
      const { secret: manager } = await createKey(g.t.runtime, g.orgId, 'platform', { kind: 'management' });
      await g.t.runtime.projector.catchUp();
      const created = await send('POST', '/api/v1/keys', { key: manager, body: { name: 'user-1', limit: 2.5 } });
      expect(created.status).toBe(201);
      conforms(created.body, ['openrouter', 'KeyCreatedResponse']);
      const id = (created.body as { data: { id: string } }).data.id;
      conforms((await send('GET', '/api/v1/keys', { key: manager })).body, ['openrouter', 'KeyListResponse']);
      conforms((await send('GET', `/api/v1/keys/${id}`, { key: manager })).body, ['openrouter', 'KeyResponse']);
    });
  });
});
