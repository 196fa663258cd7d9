import Anthropic from '@anthropic-ai/sdk';
import fc from 'fast-check';
import OpenAI from 'openai';
import { auditThenClose, extraChatModel, startGateway, TEST_MODELS, testCatalogueWith, TestGateway } from '../support/gateway';

/**
 * Fidelity: a client whose wire format is its host's has its request and reply carried whole
 * (only the model renamed and a cap lowered); across formats, what has a counterpart is translated.
 */

const M = TEST_MODELS;
let g: TestGateway;

/** Claude with room to think: the shared test models allow 1,000 output tokens, below the smallest thinking budget (1,024). */
const THINKER = { slug: 'test/claude-thinks', id: 'd0000000-0000-4000-8000-000000000001', hostModel: 'fake-claude-thinks' };
/** Named as Claude Sonnet 4.5 at its host: the fake refuses it temperature and top_p together, as the API does. */
const SONNET_4_5 = { slug: 'test/claude-4.5', id: 'd0000000-0000-4000-8000-000000000002', hostModel: 'claude-sonnet-4-5' };

beforeAll(async () => {
  g = await startGateway({
    catalogue: testCatalogueWith(
      extraChatModel(THINKER, 'fake-anthropic', 'Test Claude thinking'),
      extraChatModel(SONNET_4_5, 'fake-anthropic', 'Test Claude 4.5'),
    ),
  });
});
afterAll(() => auditThenClose(g));

const last = () => g.fake.requests[g.fake.requests.length - 1];
const messagesHeaders = (extra: Record<string, string> = {}) => ({
  'content-type': 'application/json',
  'x-api-key': g.key,
  'anthropic-version': '2023-06-01',
  ...extra,
});
const chatHeaders = () => ({ 'content-type': 'application/json', authorization: `Bearer ${g.key}` });
const post = (path: string, headers: Record<string, string>, body: string) =>
  fetch(`${g.baseUrl}/api/v1/${path}`, { method: 'POST', headers, body });

/** The SSE events of a stream body: their names and parsed data. */
const sseEvents = (text: string) =>
  text
    .split('\n\n')
    .filter((frame) => frame.includes('data:'))
    .map((frame) => {
      const event = /^event: (.*)$/m.exec(frame)?.[1];
      const data = /^data: (.*)$/m.exec(frame)![1];
      return { event, data: data === '[DONE]' ? data : JSON.parse(data) };
    });

/** Field names the gateway reads on the messages surface: the generator's unknown fields avoid them. */
const KNOWN_MESSAGES_FIELDS = new Set([
  'model',
  'max_tokens',
  'messages',
  'system',
  'tools',
  'tool_choice',
  'stop_sequences',
  'temperature',
  'top_p',
  'top_k',
  'metadata',
  'stream',
  'thinking',
  'output_config',
]);

/**
 * Any JSON value but one holding a `__proto__` or `constructor.prototype` key at any depth: the
 * gateway refuses those by design (a 400, tested below), so they cannot pass whole.
 */
const plainJson = (maxDepth: number) =>
  fc.jsonValue({ maxDepth }).filter((value) => !/"(__proto__|prototype)"/.test(JSON.stringify(value) ?? ''));

const unknownFields = (known: Set<string>) =>
  fc.dictionary(
    fc.string({ minLength: 1, maxLength: 12 }).filter((key) => !known.has(key) && key !== '__proto__'),
    plainJson(3),
    { maxKeys: 4 },
  );

/** Blocks of types the gateway has no use for (and a text block with fields it does not know). */
const unknownBlock = fc.oneof(
  fc.record({ type: fc.constantFrom('document', 'search_result', 'container_upload'), extra: plainJson(2) }),
  fc.record({
    type: fc.constant('text'),
    text: fc.string({ minLength: 1 }),
    cache_control: fc.constant({ type: 'ephemeral', ttl: '1h' }),
    citations: fc.constant([]),
  }),
);

describe('same format: the request reaches the host byte for byte, apart from the model', () => {
  it('messages → anthropic host: any body with fields and blocks the gateway does not know (property)', async () => {
    g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'ok' } });
    await fc.assert(
      fc.asyncProperty(
        unknownFields(KNOWN_MESSAGES_FIELDS),
        fc.array(unknownBlock, { maxLength: 3 }),
        fc.integer({ min: 1, max: 1000 }),
        async (extra, blocks, maxTokens) => {
          const body = {
            ...extra,
            model: M.claude.slug,
            max_tokens: maxTokens,
            system: [{ type: 'text', text: 'Be exact.', cache_control: { type: 'ephemeral' } }],
            messages: [{ role: 'user', content: [...blocks, { type: 'text', text: 'Hello' }] }],
          };
          const res = await post('messages', messagesHeaders({ 'anthropic-beta': 'files-api-2025-04-14' }), JSON.stringify(body));
          expect(res.status).toBe(200);
          await res.text();
          expect(last().raw).toBe(JSON.stringify({ ...body, model: M.claude.hostModel }));
          expect(last().headers['anthropic-beta']).toBe('files-api-2025-04-14');
        },
      ),
      { numRuns: 40 },
    );
  });

  it('chat-completions → openai host: any body with fields the gateway does not know (property)', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'ok' } });
    const known = new Set(['model', 'messages', 'stream', 'stream_options', 'n', 'logprobs', 'top_logprobs', 'response_format']);
    await fc.assert(
      fc.asyncProperty(unknownFields(known), plainJson(2), async (extra, metadata) => {
        const body = {
          model: M.gpt.slug,
          ...extra,
          messages: [{ role: 'user', content: 'Hello', name: 'ann', extra_field: metadata }],
        };
        const res = await post('chat/completions', chatHeaders(), JSON.stringify(body));
        expect(res.status).toBe(200);
        await res.text();
        expect(last().raw).toBe(JSON.stringify({ ...body, model: M.gpt.hostModel }));
      }),
      { numRuns: 40 },
    );
  });

  it('lowers a cap above the model limit, and a thinking budget that no longer fits under it; nothing else', async () => {
    g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'ok' } });
    const body = {
      model: M.claude.slug,
      max_tokens: 32_000,
      thinking: { type: 'enabled', budget_tokens: 31_999 },
      context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] },
      messages: [{ role: 'user', content: 'Hello' }],
    };
    await (await post('messages', messagesHeaders(), JSON.stringify(body))).text();
    expect(last().raw).toBe(
      JSON.stringify({ ...body, model: M.claude.hostModel, max_tokens: 1000, thinking: { type: 'enabled', budget_tokens: 999 } }),
    );
  });

  it('asks an openai host for usage on a stream, and keeps it from a client that did not ask', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'one two' } });
    const body = { model: M.gpt.slug, stream: true, messages: [{ role: 'user', content: 'Hello' }] };
    const res = await post('chat/completions', chatHeaders(), JSON.stringify(body));
    const events = sseEvents(await res.text());
    expect(last().body.stream_options).toEqual({ include_usage: true });
    expect(events.some((e) => typeof e.data === 'object' && e.data.usage)).toBe(false);
    expect(events.at(-1)!.data).toBe('[DONE]');
  });
});

/** An Anthropic reply with what only this format has: thinking and its signature, a server tool and its result, citations. */
const RICH_MESSAGE = {
  id: 'msg_01Rich',
  type: 'message',
  role: 'assistant',
  model: M.claude.hostModel,
  content: [
    { type: 'thinking', thinking: 'The user wants sources.', signature: 'EqQBCkYIBxgCKkAsig==' },
    { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw==' },
    { type: 'server_tool_use', id: 'srvtoolu_01', name: 'web_search', input: { query: 'gateway billing' } },
    {
      type: 'web_search_tool_result',
      tool_use_id: 'srvtoolu_01',
      content: [
        { type: 'web_search_result', url: 'https://example.com', title: 'Example', encrypted_content: 'Eo8B', page_age: null },
      ],
    },
    {
      type: 'text',
      text: 'Billing is exact.',
      citations: [
        {
          type: 'web_search_result_location',
          url: 'https://example.com',
          title: 'Example',
          encrypted_index: 'Eo8BCioIBxgC',
          cited_text: 'exact',
        },
      ],
    },
  ],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: {
    input_tokens: 120,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    output_tokens: 80,
    server_tool_use: { web_search_requests: 1 },
    service_tier: 'standard',
  },
  container: null,
};

/** The same reply as the API streams it. */
function richStream(): string {
  const frame = (type: string, payload: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`;
  const blocks = RICH_MESSAGE.content;
  return [
    frame('message_start', {
      message: { ...RICH_MESSAGE, content: [], stop_reason: null, usage: { ...RICH_MESSAGE.usage, output_tokens: 1 } },
    }),
    frame('ping', {}),
    frame('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
    frame('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'The user wants sources.' } }),
    frame('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'EqQBCkYIBxgCKkAsig==' } }),
    frame('content_block_stop', { index: 0 }),
    frame('content_block_start', { index: 1, content_block: blocks[1] }),
    frame('content_block_stop', { index: 1 }),
    frame('content_block_start', { index: 2, content_block: { ...blocks[2], input: {} } }),
    frame('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '{"query":"gateway billing"}' } }),
    frame('content_block_stop', { index: 2 }),
    frame('content_block_start', { index: 3, content_block: blocks[3] }),
    frame('content_block_stop', { index: 3 }),
    frame('content_block_start', { index: 4, content_block: { type: 'text', text: '', citations: [] } }),
    frame('content_block_delta', {
      index: 4,
      delta: { type: 'citations_delta', citation: (blocks[4] as { citations: object[] }).citations[0] },
    }),
    frame('content_block_delta', { index: 4, delta: { type: 'text_delta', text: 'Billing is exact.' } }),
    frame('content_block_stop', { index: 4 }),
    frame('message_delta', {
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: {
        input_tokens: 120,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: 80,
        server_tool_use: { web_search_requests: 1 },
      },
    }),
    frame('message_stop', {}),
  ].join('');
}

describe('same format: the reply comes back whole, under the slug', () => {
  const ask = { model: M.claude.slug, max_tokens: 500, messages: [{ role: 'user', content: 'Search and cite.' }] };

  it('messages, whole: thinking with its signature, redacted thinking, server tools, citations, every usage field', async () => {
    g.fake.on(M.claude.hostModel, { kind: 'verbatim', body: JSON.stringify(RICH_MESSAGE) });
    const res = await post('messages', messagesHeaders(), JSON.stringify(ask));
    expect(await res.json()).toEqual({ ...RICH_MESSAGE, model: M.claude.slug });
    // Billed from the host's usage: 120 × $3/M + 80 × $15/M = $1,560 per million = 0.00156 credits.
    const entry = await g.logged(res.headers.get('x-request-id')!);
    expect(entry).toMatchObject({ inputTokens: 120, outputTokens: 80, cost: 1_560_000 });
  });

  it('messages, streamed: every event as the host sent it, read whole by the official client', async () => {
    g.fake.on(M.claude.hostModel, { kind: 'verbatim', body: richStream() });
    const res = await post('messages', messagesHeaders(), JSON.stringify({ ...ask, stream: true }));
    const received = sseEvents(await res.text());
    const sent = sseEvents(richStream());
    sent[0].data.message.model = M.claude.slug;
    // The host's message_delta is named with the settlement's ledger position (read your writes).
    sent.find((e) => e.event === 'message_delta')!.data.ledger_position = expect.any(Number);
    expect(received).toEqual(sent);
    const entry = await g.logged(res.headers.get('x-request-id')!);
    expect(entry).toMatchObject({ inputTokens: 120, outputTokens: 80, cost: 1_560_000 });

    const client = new Anthropic({ baseURL: `${g.baseUrl}/api`, apiKey: g.key, maxRetries: 0 });
    const message = await client.messages.stream(ask as Anthropic.MessageCreateParams).finalMessage();
    expect(message.content).toEqual(RICH_MESSAGE.content);
    expect(message.model).toBe(M.claude.slug);
  });

  it('chat-completions, streamed: the host chunks (every field) under the slug, its usage last with the cost', async () => {
    const chunk = (extra: object) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-Host1', object: 'chat.completion.chunk', created: 1, model: M.gpt.hostModel, service_tier: 'default', system_fingerprint: 'fp_1', ...extra })}\n\n`;
    const usage = {
      prompt_tokens: 10,
      completion_tokens: 4,
      total_tokens: 14,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    };
    const stream =
      chunk({
        choices: [{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }],
        usage: null,
        obfuscation: 'ab',
      }) +
      chunk({
        choices: [{ index: 0, delta: { content: 'Hi there' }, logprobs: null, finish_reason: null }],
        usage: null,
        obfuscation: 'cd',
      }) +
      chunk({ choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }], usage: null }) +
      chunk({ choices: [], usage }) +
      'data: [DONE]\n\n';
    g.fake.on(M.gpt.hostModel, { kind: 'verbatim', body: stream });
    const body = {
      model: M.gpt.slug,
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Hi' }],
    };
    const res = await post('chat/completions', chatHeaders(), JSON.stringify(body));
    const received = sseEvents(await res.text());
    const sent = sseEvents(stream).map((e) =>
      typeof e.data === 'object' ? { ...e, data: { ...e.data, model: M.gpt.slug } } : e,
    );
    // 10 × $1/M + 4 × $2/M = 18 per million = 0.000018 credits
    sent[3].data.usage = { ...usage, cost: 0.000018 };
    // and the settlement's ledger position beside it (read your writes).
    sent[3].data.ledger_position = expect.any(Number);
    expect(received).toEqual(sent);
  });
});

describe('same format, with a fallback', () => {
  it("a host failing after its stream began but before any output leaves nothing with the client: the next host's stream is the one passed on", async () => {
    g.fake.on('fake-claude-first', { kind: 'stream_error', afterPieces: 0 });
    g.fake.on(M.claudeFallback.hostModel, { kind: 'reply', reply: { text: 'from the second host' } });
    const res = await post(
      'messages',
      messagesHeaders(),
      JSON.stringify({
        model: M.claudeFallback.slug,
        max_tokens: 100,
        stream: true,
        messages: [{ role: 'user', content: 'Hi' }],
      }),
    );
    const events = sseEvents(await res.text());
    expect(events.filter((e) => e.event === 'message_start')).toHaveLength(1);
    expect(events.map((e) => e.event)).not.toContain('error');
    const text = events.map((e) => (e.data.delta?.type === 'text_delta' ? e.data.delta.text : '')).join('');
    expect(text).toBe('from the second host');
    const requested = g.fake.requests.slice(-2).map((r) => r.body.model);
    expect(requested).toEqual(['fake-claude-first', M.claudeFallback.hostModel]);
  });
});

describe('across formats', () => {
  it('messages images reach an openai host as image_url parts, inline and by URL', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'A cat.' } });
    const client = new Anthropic({ baseURL: `${g.baseUrl}/api`, apiKey: g.key, maxRetries: 0 });
    await client.messages.create({
      model: M.gpt.slug,
      max_tokens: 100,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
            { type: 'text', text: 'What is this?' },
          ],
        },
      ],
    });
    expect(last().body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          { type: 'text', text: 'What is this?' },
        ],
      },
    ]);
  });

  it('a thinking budget or adaptive effort reaches an openai host as reasoning_effort', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'ok' } });
    const ask = (extra: object) =>
      post(
        'messages',
        messagesHeaders(),
        JSON.stringify({ model: M.gpt.slug, max_tokens: 900, messages: [{ role: 'user', content: 'Think.' }], ...extra }),
      ).then((r) => r.text());
    await ask({ thinking: { type: 'enabled', budget_tokens: 2048 } });
    expect(last().body.reasoning_effort).toBe('low');
    await ask({ thinking: { type: 'adaptive' }, output_config: { effort: 'high' } });
    expect(last().body.reasoning_effort).toBe('high');
    await ask({ thinking: { type: 'disabled' } });
    expect(last().body.reasoning_effort).toBe('none');
    await ask({});
    expect(last().body).not.toHaveProperty('reasoning_effort');
  });

  it("an openai host's reasoning_content comes to a messages client as a thinking block, streamed and whole", async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { thinking: 'Six times seven.', text: '42' } });
    const client = new Anthropic({ baseURL: `${g.baseUrl}/api`, apiKey: g.key, maxRetries: 0 });
    const ask = { model: M.gpt.slug, max_tokens: 100, messages: [{ role: 'user' as const, content: '6 × 7?' }] };
    const whole = await client.messages.create(ask);
    expect(whole.content).toEqual([
      { type: 'thinking', thinking: 'Six times seven.', signature: '' },
      { type: 'text', text: '42', citations: null },
    ]);
    const streamed = await client.messages.stream(ask).finalMessage();
    expect(streamed.content).toEqual(whole.content);
  });

  it("an anthropic host's thinking comes to a chat-completions client as reasoning_content, streamed and whole", async () => {
    g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { thinking: 'Six times seven.', text: '42' } });
    const client = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: g.key, maxRetries: 0 });
    const ask = { model: M.claude.slug, messages: [{ role: 'user' as const, content: '6 × 7?' }] };
    const whole = await client.chat.completions.create(ask);
    expect(whole.choices[0].message).toMatchObject({ content: '42', reasoning_content: 'Six times seven.' });
    let reasoning = '';
    let text = '';
    for await (const chunk of await client.chat.completions.create({ ...ask, stream: true })) {
      const delta = chunk.choices[0]?.delta as { content?: string; reasoning_content?: string } | undefined;
      reasoning += delta?.reasoning_content ?? '';
      text += delta?.content ?? '';
    }
    expect({ reasoning, text }).toEqual({ reasoning: 'Six times seven.', text: '42' });
  });

  it('reasoning_effort reaches an anthropic host as a thinking budget when the cap leaves room, and not otherwise', async () => {
    g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'ok' } });
    const ask = async (extra: object) => {
      const res = await post(
        'chat/completions',
        chatHeaders(),
        JSON.stringify({ model: M.claude.slug, messages: [{ role: 'user', content: 'Think.' }], ...extra }),
      );
      await res.text();
      return res.headers.get('x-gateway-omitted-reasoning');
    };
    // The test models allow 1,000 output tokens: below the API's smallest budget (1,024) there is no room to think, and the reply says so.
    expect(await ask({ reasoning_effort: 'high' })).toBe('cap');
    expect(last().body).not.toHaveProperty('thinking');
    expect(await ask({ reasoning_effort: 'none' })).toBeNull();
    expect(last().body).not.toHaveProperty('thinking');
  });
});

describe("sampling Claude's 4.5 models take: temperature or top_p, not both", () => {
  it('a client giving both (as Gemini CLI does by default) is answered: the temperature goes, top_p does not', async () => {
    g.fake.on(SONNET_4_5.hostModel, { kind: 'reply', reply: { text: 'ok' } });
    const ask = (extra: object) =>
      post(
        'chat/completions',
        chatHeaders(),
        JSON.stringify({ model: SONNET_4_5.slug, messages: [{ role: 'user', content: 'Hi' }], ...extra }),
      );
    expect((await ask({ temperature: 1, top_p: 0.95 })).status).toBe(200);
    expect(last().body).toMatchObject({ temperature: 1 });
    expect(last().body).not.toHaveProperty('top_p');
    expect((await ask({ top_p: 0.95 })).status).toBe(200);
    expect(last().body).toMatchObject({ top_p: 0.95 });
  });
});

describe('one tool call a turn, asked in each format, reaches a host of another in its terms', () => {
  const weather = { type: 'object', properties: { city: { type: 'string' } } };
  const chatTools = [{ type: 'function', function: { name: 'get_weather', parameters: weather } }];

  it('chat-completions parallel_tool_calls false → anthropic: tool_choice with disable_parallel_tool_use', async () => {
    g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'ok' } });
    const ask = (extra: object) =>
      post(
        'chat/completions',
        chatHeaders(),
        JSON.stringify({ model: M.claude.slug, messages: [{ role: 'user', content: 'Weather?' }], tools: chatTools, ...extra }),
      ).then((r) => expect(r.status).toBe(200));
    await ask({ parallel_tool_calls: false });
    expect(last().body.tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
    await ask({ parallel_tool_calls: false, tool_choice: 'required' });
    expect(last().body.tool_choice).toEqual({ type: 'any', disable_parallel_tool_use: true });
    // The API takes none without it; nothing else asks for one call at a time.
    await ask({ parallel_tool_calls: false, tool_choice: 'none' });
    expect(last().body.tool_choice).toEqual({ type: 'none' });
    await ask({ parallel_tool_calls: true });
    expect(last().body).not.toHaveProperty('tool_choice');
  });

  it('messages disable_parallel_tool_use → openai: parallel_tool_calls false, only beside tools', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'ok' } });
    const ask = (extra: object) =>
      post(
        'messages',
        messagesHeaders(),
        JSON.stringify({ model: M.gpt.slug, max_tokens: 100, messages: [{ role: 'user', content: 'Weather?' }], ...extra }),
      ).then((r) => expect(r.status).toBe(200));
    const tools = [{ name: 'get_weather', input_schema: weather }];
    await ask({ tools, tool_choice: { type: 'auto', disable_parallel_tool_use: true } });
    expect(last().body).toMatchObject({ parallel_tool_calls: false, tool_choice: 'auto' });
    await ask({ tools, tool_choice: { type: 'auto' } });
    expect(last().body).not.toHaveProperty('parallel_tool_calls');
  });

  it('Responses parallel_tool_calls false → anthropic: tool_choice with disable_parallel_tool_use', async () => {
    g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'ok' } });
    const res = await post(
      'responses',
      chatHeaders(),
      JSON.stringify({
        model: M.claude.slug,
        input: 'Weather?',
        tools: [{ type: 'function', name: 'get_weather', parameters: weather }],
        parallel_tool_calls: false,
      }),
    );
    expect(res.status).toBe(200);
    expect(last().body.tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
  });
});

describe('reasoning from another format to an anthropic host, beside what the API refuses with thinking', () => {
  const OMITTED = 'x-gateway-omitted-reasoning';
  const WEATHER = {
    type: 'function',
    function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  };
  /** The second turn of a tool loop, as a chat-completions client sends it. */
  const LOOP = [
    { role: 'user', content: 'Weather in Paris?' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'toolu_01', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
    },
    { role: 'tool', tool_call_id: 'toolu_01', content: '18°C and sunny' },
  ];
  const chat = (body: object) =>
    post(
      'chat/completions',
      chatHeaders(),
      JSON.stringify({
        model: THINKER.slug,
        reasoning_effort: 'high',
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        ...body,
      }),
    );

  beforeEach(() => g.fake.on(THINKER.hostModel, { kind: 'reply', reply: { text: 'It is 18°C.' } }));

  it('a first turn with reasoning_effort gets thinking, and the reply names nothing left out', async () => {
    const response = await chat({ tools: [WEATHER] });
    expect(response.status).toBe(200);
    await response.text();
    // high: 80% of the model's 8,000-token cap.
    expect(last().body.thinking).toEqual({ type: 'enabled', budget_tokens: 6400 });
    expect(response.headers.get(OMITTED)).toBeNull();
  });

  it.each([false, true])(
    'the second turn of a tool loop (streamed: %s) is answered without thinking, and the reply says why',
    async (stream) => {
      const response = await chat({ messages: LOOP, tools: [WEATHER], stream });
      expect(response.status).toBe(200);
      const text = await response.text();
      expect(text).toContain('18°C');
      expect(last().body).not.toHaveProperty('thinking');
      expect(last().body.messages[1].content).toEqual([
        { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } },
      ]);
      expect(response.headers.get(OMITTED)).toBe('tool_loop');
    },
  );

  it('temperature 0.2 goes as the client asked; thinking does not, and the reply says why', async () => {
    const response = await chat({ temperature: 0.2 });
    expect(response.status).toBe(200);
    await response.text();
    expect(last().body).toMatchObject({ temperature: 0.2 });
    expect(last().body).not.toHaveProperty('thinking');
    expect(response.headers.get(OMITTED)).toBe('temperature');
  });

  it('tool_choice required goes as the API forces a tool; thinking does not, and the reply says why', async () => {
    const response = await chat({ tools: [WEATHER], tool_choice: 'required' });
    expect(response.status).toBe(200);
    await response.text();
    expect(last().body.tool_choice).toEqual({ type: 'any' });
    expect(last().body).not.toHaveProperty('thinking');
    expect(response.headers.get(OMITTED)).toBe('tool_choice');
  });

  it("a Responses client's reasoning.effort on a tool loop's second turn: answered without thinking", async () => {
    const response = await post(
      'responses',
      chatHeaders(),
      JSON.stringify({
        model: THINKER.slug,
        reasoning: { effort: 'medium' },
        tools: [{ type: 'function', name: 'get_weather', parameters: WEATHER.function.parameters }],
        input: [
          { role: 'user', content: 'Weather in Paris?' },
          { type: 'function_call', call_id: 'toolu_01', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { type: 'function_call_output', call_id: 'toolu_01', output: '18°C and sunny' },
        ],
      }),
    );
    expect(response.status).toBe(200);
    await response.text();
    expect(last().body).not.toHaveProperty('thinking');
    expect(response.headers.get(OMITTED)).toBe('tool_loop');
  });

  it("a messages client's own thinking goes as sent: beside temperature 0.2 the host's refusal reaches it", async () => {
    const response = await post(
      'messages',
      messagesHeaders(),
      JSON.stringify({
        model: THINKER.slug,
        max_tokens: 4000,
        thinking: { type: 'enabled', budget_tokens: 2048 },
        temperature: 0.2,
        messages: [{ role: 'user', content: 'Think.' }],
      }),
    );
    expect(last().body).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 2048 }, temperature: 0.2 });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('`temperature` may only be set to 1 when thinking is enabled');
    expect(response.headers.get(OMITTED)).toBeNull();
  });
});
