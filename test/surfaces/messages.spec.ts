import Anthropic from '@anthropic-ai/sdk';
import AnthropicV0 from 'anthropic-sdk-v0';
import OpenAI from 'openai';
import { estimateInputTokens } from '../../src/inference/tokens';
import type { CreditsReserved } from '../../src/ledger/ledger.events';
import { toCanonical } from '../../src/surfaces/messages/messages.wire';
import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import {
  expectServedAndBilled,
  NEW_KIND_MODELS,
  NewKindModel,
  toolResultsIn,
  useAwsTestCredentials,
  withNewKinds,
} from '../support/new-kinds';

const M = TEST_MODELS;
const weatherTool = {
  name: 'get_weather',
  description: 'Weather in a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

type Client = Pick<Anthropic, 'messages'>;
let g: TestGateway;
let restoreAws: () => void;

beforeAll(async () => {
  // The bedrock hosts sign with the credentials AWS's chain finds in the gateway's environment.
  restoreAws = useAwsTestCredentials();
  g = await startGateway(withNewKinds);
});
afterAll(async () => {
  await g.settled();
  const report = await g.audit();
  expect(report.differences).toEqual([]);
  await g.close();
  restoreAws();
});

const clients: Array<[string, () => Client]> = [
  [
    '@anthropic-ai/sdk 1.x (Bearer, current version)',
    () => new Anthropic({ baseURL: `${g.baseUrl}/api`, apiKey: g.key, maxRetries: 0 }),
  ],
  [
    '@anthropic-ai/sdk 0.x (x-api-key, 2023-06-01)',
    () => new AnthropicV0({ baseURL: `${g.baseUrl}/api`, apiKey: g.key, maxRetries: 0 }) as unknown as Client,
  ],
];
const models: Array<[string, { slug: string; hostModel: string }]> = [
  ['a model on an anthropic host', M.claude],
  ['a model on an openai host', M.gpt],
];

describe.each(clients)('messages surface with %s', (_name, makeClient) => {
  describe.each(models)('on %s', (_where, model) => {
    let client: Client;
    beforeAll(() => {
      client = makeClient();
    });
    const last = () => g.fake.requests[g.fake.requests.length - 1];

    it('answers a plain message with a system prompt, and reports usage', async () => {
      g.fake.on(model.hostModel, { kind: 'reply', reply: { text: 'Bonjour !', usage: { input: 20, output: 3 } } });
      const message = await client.messages.create({
        model: model.slug,
        max_tokens: 100,
        system: 'Answer in French.',
        messages: [{ role: 'user', content: 'Hello' }],
      });
      expect(message).toMatchObject({
        type: 'message',
        role: 'assistant',
        model: model.slug,
        content: [{ type: 'text', text: 'Bonjour !' }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 20, output_tokens: 3 },
      });
      expect(message.id).toMatch(/^msg_/);
      // Read from the `request-id` header, as Anthropic's API sends it.
      expect((message as { _request_id?: string | null })._request_id).toMatch(/^req_[0-9a-f]{32}$/);
      const upstream = last().body;
      if (model === M.claude) {
        expect(upstream).toMatchObject({
          model: model.hostModel,
          system: 'Answer in French.',
          max_tokens: 100,
          messages: [{ role: 'user', content: 'Hello' }],
        });
        expect(last().headers['x-api-key']).toBe('upstream-anthropic-key');
      } else {
        expect(upstream.messages).toEqual([
          { role: 'system', content: 'Answer in French.' },
          { role: 'user', content: 'Hello' },
        ]);
        expect(upstream.max_tokens).toBe(100);
      }
    });

    it('streams, and the client helpers reassemble the message', async () => {
      g.fake.on(model.hostModel, { kind: 'reply', reply: { text: 'one two three', usage: { input: 9, output: 3 } } });
      const stream = client.messages.stream({
        model: model.slug,
        max_tokens: 50,
        messages: [{ role: 'user', content: 'count' }],
      });
      const deltas: string[] = [];
      stream.on('text', (text) => deltas.push(text));
      const message = await stream.finalMessage();
      expect(deltas.join('')).toBe('one two three');
      expect(deltas.length).toBeGreaterThan(1);
      expect(message.content).toHaveLength(1);
      expect(message.content[0]).toMatchObject({ type: 'text', text: 'one two three' });
      expect(message.stop_reason).toBe('end_turn');
      expect(message.usage).toMatchObject({ input_tokens: 9, output_tokens: 3 });
    });

    it('round-trips a tool call, streamed and not', async () => {
      g.fake.on(model.hostModel, (req) => {
        const sawResult = JSON.stringify(req.body.messages).includes('"celsius');
        return sawResult
          ? { kind: 'reply', reply: { text: 'It is 21 °C.' } }
          : { kind: 'reply', reply: { toolCalls: [{ id: 'toolu_01', name: 'get_weather', arguments: '{"city":"Paris"}' }] } };
      });
      const ask = { role: 'user' as const, content: 'Weather in Paris?' };
      const first = await client.messages.create({
        model: model.slug,
        max_tokens: 100,
        tools: [weatherTool],
        tool_choice: { type: 'auto' },
        messages: [ask],
      });
      expect(first.stop_reason).toBe('tool_use');
      // Translated, the call names its caller, as the format's tool calls do: the model itself.
      const toolUse = {
        type: 'tool_use',
        id: 'toolu_01',
        name: 'get_weather',
        input: { city: 'Paris' },
        ...(model === M.claude ? {} : { caller: { type: 'direct' } }),
      };
      expect(first.content).toEqual([toolUse]);
      const upstreamTools =
        model === M.claude ? last().body.tools : last().body.tools.map((t: { function: unknown }) => t.function);
      expect(upstreamTools).toEqual(
        model === M.claude
          ? [weatherTool]
          : [{ name: 'get_weather', description: 'Weather in a city', parameters: weatherTool.input_schema }],
      );

      const answer = await client.messages.create({
        model: model.slug,
        max_tokens: 100,
        tools: [weatherTool],
        messages: [
          ask,
          { role: 'assistant', content: first.content as Anthropic.ContentBlockParam[] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: '{"celsius":21}' }] },
        ],
      });
      expect(answer.content).toEqual([expect.objectContaining({ type: 'text', text: 'It is 21 °C.' })]);
      const sent = last().body.messages;
      if (model === M.claude) {
        expect(sent.slice(1)).toEqual([
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: '{"celsius":21}' }] },
        ]);
      } else {
        expect(sent.slice(1)).toEqual([
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'toolu_01', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
          },
          { role: 'tool', tool_call_id: 'toolu_01', content: '{"celsius":21}' },
        ]);
      }

      // Streamed: input_json_delta pieces reassemble into the tool input.
      const streamed = await client.messages
        .stream({ model: model.slug, max_tokens: 100, tools: [weatherTool], messages: [ask] })
        .finalMessage();
      expect(streamed.stop_reason).toBe('tool_use');
      expect(streamed.content).toEqual([toolUse]);
    });

    it('passes stop sequences on and reports which one stopped the reply', async () => {
      g.fake.on(model.hostModel, { kind: 'reply', reply: { text: 'one two', finish: 'stop_sequence', stopSequence: 'three' } });
      const message = await client.messages.create({
        model: model.slug,
        max_tokens: 100,
        stop_sequences: ['three'],
        // Not in the current client's types, still in the wire format.
        ...({ temperature: 0.2 } as object),
        messages: [{ role: 'user', content: 'count' }],
      });
      if (model === M.claude) {
        expect(last().body).toMatchObject({ stop_sequences: ['three'], temperature: 0.2 });
        expect(message).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'three' });
      } else {
        // A chat-completions host does not say a stop sequence matched: it ends the turn.
        expect(last().body).toMatchObject({ stop: ['three'], temperature: 0.2 });
        expect(message.stop_reason).toBe('end_turn');
      }
    });

    it('answers errors in the messages error format', async () => {
      const err = (await client.messages
        .create({ model: 'nobody/nothing', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })
        .catch((e) => e)) as {
        status: number;
        error: unknown;
      };
      expect(err.status).toBe(404);
      // Anthropic's API: 404 not_found_error, which each SDK raises as its NotFoundError.
      expect(err instanceof Anthropic.NotFoundError || err instanceof AnthropicV0.NotFoundError).toBe(true);
      expect(err.error).toMatchObject({
        type: 'error',
        error: { type: 'not_found_error', message: expect.stringMatching(/nobody\/nothing/) },
      });
      expect((err as { requestID?: string | null }).requestID).toBe((err.error as { request_id: string }).request_id);
      g.fake.on(model.hostModel, { kind: 'status', status: 500 });
      const failed = (await client.messages
        .create({ model: model.slug, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })
        .catch((e) => e)) as {
        status: number;
        error: unknown;
      };
      expect(failed.status).toBe(502);
      expect(failed.error).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    });

    it('reports a failure after the stream started as an error event', async () => {
      g.fake.on(model.hostModel, { kind: 'cut', reply: { text: 'alpha beta gamma delta', usage: null }, afterPieces: 2 });
      const stream = client.messages.stream({ model: model.slug, max_tokens: 50, messages: [{ role: 'user', content: 'go' }] });
      await expect(stream.finalMessage()).rejects.toThrow(/failed/);
    });
  });
});

describe('messages surface headers', () => {
  const post = (
    headers: Record<string, string>,
    body: unknown = { model: M.gpt.slug, max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
  ) =>
    fetch(`${g.baseUrl}/api/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  it.each([
    ['x-api-key with compat-version', { 'compat-version': '2023-06-01' }, 'x-api-key'],
    ['x-api-key with anthropic-version', { 'anthropic-version': '2023-06-01' }, 'x-api-key'],
    ['Bearer with a current anthropic-version', { 'anthropic-version': '2026-10-21' }, 'bearer'],
    ['Bearer with compat-version', { 'compat-version': '2024-01-01' }, 'bearer'],
  ])('accepts %s', async (_name, version, where) => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'ok' } });
    const key: Record<string, string> = where === 'bearer' ? { authorization: `Bearer ${g.key}` } : { 'x-api-key': g.key };
    const res = await post({ ...key, ...version });
    expect(res.status).toBe(200);
    expect((await res.json()) as any).toMatchObject({ type: 'message', content: [{ type: 'text', text: 'ok' }] });
  });

  it.each([
    ['no key', { 'anthropic-version': '2023-06-01' }, 401, 'authentication_error'],
    [
      'an unknown key',
      { 'x-api-key': `sk-svc-${'z'.repeat(43)}`, 'anthropic-version': '2023-06-01' },
      401,
      'authentication_error',
    ],
    ['no version', { 'x-api-key': 'KEY' }, 400, 'invalid_request_error'],
    ['a malformed version', { 'x-api-key': 'KEY', 'anthropic-version': 'latest' }, 400, 'invalid_request_error'],
    ['an impossible date', { 'x-api-key': 'KEY', 'anthropic-version': '2023-13-45' }, 400, 'invalid_request_error'],
    ['a version before 2023-06-01', { 'x-api-key': 'KEY', 'anthropic-version': '2023-01-01' }, 400, 'invalid_request_error'],
  ])('refuses %s', async (_name, headers, status, type) => {
    const res = await post(Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, v === 'KEY' ? g.key : v])));
    expect(res.status).toBe(status);
    expect((await res.json()) as any).toMatchObject({ type: 'error', error: { type, message: expect.any(String) } });
  });

  it('answers a body that is not JSON in the messages error format', async () => {
    const res = await fetch(`${g.baseUrl}/api/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': g.key, 'anthropic-version': '2023-06-01' },
      body: '{"model": ',
    });
    expect(res.status).toBe(400);
    expect((await res.json()) as any).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it('refuses a body without max_tokens with a 400 naming it', async () => {
    const res = await post(
      { 'x-api-key': g.key, 'anthropic-version': '2023-06-01' },
      { model: M.gpt.slug, messages: [{ role: 'user', content: 'hi' }] },
    );
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.message).toMatch(/max_tokens/);
  });
});

describe('chat-completions client on a model served by an anthropic host', () => {
  it('streams text and tool calls, translated both ways', async () => {
    const client = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: g.key, maxRetries: 0 });
    g.fake.on(M.claude.hostModel, (req) =>
      req.body.messages.length > 1
        ? { kind: 'reply', reply: { text: 'Sunny and 21 °C in Paris.', usage: { input: 40, output: 8 } } }
        : {
            kind: 'reply',
            reply: { text: 'Let me check.', toolCalls: [{ id: 'toolu_9', name: 'get_weather', arguments: '{"city":"Paris"}' }] },
          },
    );
    const tools = [{ type: 'function' as const, function: { name: 'get_weather', parameters: weatherTool.input_schema } }];
    const ask = { role: 'user' as const, content: 'Weather in Paris?' };
    const first = await client.chat.completions
      .stream({ model: M.claude.slug, messages: [{ role: 'system', content: 'Be terse.' }, ask], tools, tool_choice: 'required' })
      .finalChatCompletion();
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    expect(first.choices[0].message.content).toBe('Let me check.');
    expect(first.choices[0].message.tool_calls?.[0]).toMatchObject({
      id: 'toolu_9',
      function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
    });
    const upstream = g.fake.requests[g.fake.requests.length - 1].body;
    expect(upstream).toMatchObject({
      system: 'Be terse.',
      tool_choice: { type: 'any' },
      tools: [{ name: 'get_weather', input_schema: weatherTool.input_schema }],
    });

    const stream = await client.chat.completions.create({
      model: M.claude.slug,
      stream: true,
      stream_options: { include_usage: true },
      tools,
      messages: [ask, first.choices[0].message, { role: 'tool', tool_call_id: 'toolu_9', content: '{"celsius":21}' }],
    });
    let text = '';
    let usage: unknown = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe('Sunny and 21 °C in Paris.');
    // 40 × $3/M + 8 × $15/M = 0.00012 + 0.00012
    expect(usage).toEqual({
      prompt_tokens: 40,
      completion_tokens: 8,
      total_tokens: 48,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
      cost: 0.00024,
    });
    expect(g.fake.requests[g.fake.requests.length - 1].body.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me check.' },
          { type: 'tool_use', id: 'toolu_9', name: 'get_weather', input: { city: 'Paris' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: '{"celsius":21}' }] },
    ]);
  });
});

describe('what coding agents send (Claude Code)', () => {
  const MID_CONVERSATION_SYSTEM = 'mid-conversation-system-2026-04-07';
  const client = () => new Anthropic({ baseURL: `${g.baseUrl}/api`, apiKey: g.key, maxRetries: 0 });
  const last = () => g.fake.requests[g.fake.requests.length - 1];
  const conversation: Anthropic.Beta.BetaMessageParam[] = [
    { role: 'user', content: 'List the files.' },
    { role: 'assistant', content: 'Which directory?' },
    { role: 'system', content: [{ type: 'text', text: 'The user is in /work.' }] },
    { role: 'user', content: 'This one.' },
  ];
  const post = (path: string, body: unknown) =>
    fetch(`${g.baseUrl}/api${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': g.key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
    });

  it('passes the betas to an anthropic host, and the system messages as they were sent', async () => {
    g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'ok' } });
    const messages: Anthropic.Beta.BetaMessageParam[] = [{ role: 'system', content: 'Work carefully.' }, ...conversation];
    const message = await client().beta.messages.create({
      model: M.claude.slug,
      max_tokens: 100,
      system: 'You are an agent.',
      betas: [MID_CONVERSATION_SYSTEM, 'interleaved-thinking-2025-05-14'],
      messages,
    });
    expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'ok' })]);
    expect(last().headers['anthropic-beta']).toBe(`${MID_CONVERSATION_SYSTEM},interleaved-thinking-2025-05-14`);
    // The host speaks this format: the body is the client's, system messages where they were.
    expect(last().body.system).toBe('You are an agent.');
    expect(last().body.messages).toEqual(messages);
  });

  it('sends no betas header to an anthropic host when the client sent none', async () => {
    g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'ok' } });
    await client().beta.messages.create({
      model: M.claude.slug,
      max_tokens: 100,
      system: 'You are an agent.',
      messages: conversation,
    });
    expect(last().headers).not.toHaveProperty('anthropic-beta');
    expect(last().body.messages).toEqual(conversation);
  });

  it('sends a system message in place to an openai host, without the betas', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'ok' } });
    await client().beta.messages.create({
      model: M.gpt.slug,
      max_tokens: 100,
      system: 'You are an agent.',
      betas: [MID_CONVERSATION_SYSTEM],
      messages: conversation,
    });
    expect(last().headers).not.toHaveProperty('anthropic-beta');
    expect(last().body.messages).toEqual([
      { role: 'system', content: 'You are an agent.' },
      { role: 'user', content: 'List the files.' },
      { role: 'assistant', content: 'Which directory?' },
      { role: 'system', content: 'The user is in /work.' },
      { role: 'user', content: 'This one.' },
    ]);
  });

  it('refuses a system message whose content is not text, naming the field', async () => {
    const res = await post('/v1/messages', {
      model: M.claude.slug,
      max_tokens: 10,
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'system', content: [{ type: 'image', source: {} }] },
      ],
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.message).toMatch(/messages\.1\.content .*system message/);
  });

  it('accepts ?beta=true on /messages, as the beta clients of agents add it', async () => {
    g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'ok' } });
    const res = await post('/v1/messages?beta=true', { model: M.claude.slug, max_tokens: 10, messages: conversation });
    expect(res.status).toBe(200);
    expect((await res.json()) as any).toMatchObject({ type: 'message', content: [{ type: 'text', text: 'ok' }] });
  });

  it.each([
    ['an anthropic host', M.claude],
    ['an openai host', M.gpt],
  ])(
    "lowers max_tokens above the model's limit on %s: the host gets the limit, the reservation is sized by it",
    async (_host, model) => {
      g.fake.on(model.hostModel, { kind: 'reply', reply: { text: 'ok' } });
      const reserved = async (maxTokens: number) => {
        const res = await post('/v1/messages', {
          model: model.slug,
          max_tokens: maxTokens,
          messages: [{ role: 'user', content: 'hi' }],
        });
        expect(res.status).toBe(200);
        expect(last().body.max_tokens).toBe(1000);
        const requestId = res.headers.get('x-request-id');
        await g.settled();
        const events = await g.t.runtime.events.readAll(0, 100_000);
        const reservation = events.find(
          (e) => e.type === 'CreditsReserved' && (e.data as CreditsReserved['data']).requestId === requestId,
        );
        return (reservation?.data as CreditsReserved['data']).amount;
      };
      expect(await reserved(32_000)).toBe(await reserved(1000));
    },
  );
});

describe('counting tokens (POST /messages/count_tokens)', () => {
  const client = () => new Anthropic({ baseURL: `${g.baseUrl}/api`, apiKey: g.key, maxRetries: 0 });
  const hello = { system: 'Be brief.', messages: [{ role: 'user' as const, content: 'Hello' }], tools: [weatherTool] };
  const balance = () => g.t.runtime.projections.balance(g.orgId);

  it("asks an anthropic host, on its model and with the client's betas, and answers its count; nothing is billed", async () => {
    g.fake.on(M.claude.hostModel, { kind: 'count', inputTokens: 4242 });
    const before = await balance();
    const counted = await client().messages.countTokens({ model: M.claude.slug, ...hello });
    expect(counted).toEqual({ input_tokens: 4242 });
    const upstream = g.fake.requests[g.fake.requests.length - 1];
    expect(upstream.path).toBe('/v1/messages/count_tokens');
    expect(upstream.body).toEqual({ model: M.claude.hostModel, ...hello });
    expect(upstream.headers).toMatchObject({ 'x-api-key': 'upstream-anthropic-key', 'anthropic-version': '2023-06-01' });
    expect(upstream.headers).not.toHaveProperty('anthropic-beta');

    const beta = await client().beta.messages.countTokens({
      model: M.claude.slug,
      betas: ['mid-conversation-system-2026-04-07'],
      messages: [
        { role: 'user', content: 'Hello' },
        { role: 'assistant', content: 'Hi.' },
        { role: 'system', content: 'Be terse.' },
      ],
    });
    expect(beta).toEqual({ input_tokens: 4242 });
    const last = g.fake.requests[g.fake.requests.length - 1];
    expect(last.headers['anthropic-beta']).toBe('mid-conversation-system-2026-04-07,token-counting-2024-11-01');
    expect(last.body.messages[2]).toEqual({ role: 'system', content: 'Be terse.' });
    await g.settled();
    expect(await balance()).toEqual(before);
  });

  it("answers the gateway's estimate for a model none of whose hosts counts, calling none", async () => {
    const calls = g.fake.requests.length;
    const counted = await client().messages.countTokens({ model: M.gpt.slug, ...hello });
    expect(counted).toEqual({ input_tokens: estimateInputTokens(toCanonical({ model: M.gpt.slug, ...hello }, [])) });
    expect(g.fake.requests.length).toBe(calls);
  });

  it('tries the next anthropic host when one fails before answering', async () => {
    g.fake.on('fake-claude-first', { kind: 'status', status: 529 });
    g.fake.on(M.claudeFallback.hostModel, { kind: 'count', inputTokens: 7 });
    const calls = g.fake.requests.length;
    expect(await client().messages.countTokens({ model: M.claudeFallback.slug, ...hello })).toEqual({ input_tokens: 7 });
    expect(g.fake.requests.slice(calls).map((r) => r.body.model)).toEqual(['fake-claude-first', M.claudeFallback.hostModel]);
  });

  it.each([
    ['a body the host refuses', 400, 400, 'invalid_request_error'],
    ['a host failing', 500, 502, 'api_error'],
  ])('answers %s in the messages error format', async (_name, upstreamStatus, status, type) => {
    g.fake.on(M.claude.hostModel, { kind: 'status', status: upstreamStatus });
    const error = (await client()
      .messages.countTokens({ model: M.claude.slug, ...hello })
      .catch((e) => e)) as { status: number; error: unknown };
    expect(error.status).toBe(status);
    expect(error.error).toMatchObject({ type: 'error', error: { type } });
  });

  it.each([
    [
      'an unknown key',
      { 'x-api-key': `sk-svc-${'z'.repeat(43)}`, 'anthropic-version': '2023-06-01' },
      M.claude.slug,
      401,
      'authentication_error',
    ],
    ['no version', { 'x-api-key': 'KEY' }, M.claude.slug, 400, 'invalid_request_error'],
    ['an unknown model', { 'x-api-key': 'KEY', 'anthropic-version': '2023-06-01' }, 'nobody/nothing', 404, 'not_found_error'],
  ])('refuses %s as /messages does', async (_name, headers, model, status, type) => {
    const keyed = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, v === 'KEY' ? g.key : v]));
    const res = await fetch(`${g.baseUrl}/api/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...keyed },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(status);
    expect((await res.json()) as any).toMatchObject({ type: 'error', error: { type, message: expect.any(String) } });
  });
});

const bedrockModels: Array<[string, NewKindModel]> = [
  ['Converse', NEW_KIND_MODELS.bedrockConverse],
  ['InvokeModel (its body whole)', NEW_KIND_MODELS.bedrockInvoke],
];

describe.each(bedrockModels)('@anthropic-ai/sdk on a model on a bedrock host (%s, SigV4-signed)', (_api, model) => {
  const client = () => new Anthropic({ baseURL: `${g.baseUrl}/api`, apiKey: g.key, maxRetries: 0 });

  beforeEach(() => {
    g.fake.on(model.hostModel, (request) =>
      toolResultsIn(request).length > 0
        ? { kind: 'reply', reply: { text: 'It is 21 degrees in Paris.', usage: model.usage } }
        : {
            kind: 'reply',
            reply: { toolCalls: [{ id: 'toolu_w1', name: 'get_weather', arguments: '{"city":"Paris"}' }], usage: model.usage },
          },
    );
  });

  it.each([
    ['whole', false],
    ['streamed', true],
  ])(
    'a tool round trip (%s): the call reaches the client, its result the host; every token class billed exactly',
    async (_how, stream) => {
      const before = g.fake.requests.length;
      const ask = async (messages: Anthropic.MessageParam[]) => {
        const params = { model: model.slug, max_tokens: 500, system: 'Use the tool.', tools: [weatherTool], messages };
        return stream ? client().messages.stream(params).finalMessage() : client().messages.create(params);
      };
      const question: Anthropic.MessageParam = { role: 'user', content: 'Weather in Paris?' };
      const first = await ask([question]);
      expect(first.stop_reason).toBe('tool_use');
      const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
      expect(call).toMatchObject({ id: 'toolu_w1', name: 'get_weather', input: { city: 'Paris' } });
      // Every class the host reported, in the messages usage.
      expect(first.usage).toMatchObject({
        input_tokens: 1500,
        cache_read_input_tokens: 4000,
        cache_creation_input_tokens: 500,
        output_tokens: 40,
      });
      const second = await ask([
        question,
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call!.id, content: 'Paris: 21 degrees, from the tool' }] },
      ]);
      expect(second.content).toEqual([expect.objectContaining({ type: 'text', text: 'It is 21 degrees in Paris.' })]);
      const sent = await expectServedAndBilled(g, model, before);
      expect(sent).toHaveLength(2);
      expect(toolResultsIn(sent[1]).join()).toContain('Paris: 21 degrees, from the tool');
      expect(sent.map((r) => r.path.endsWith('stream'))).toEqual([stream, stream]);
    },
  );
});

describe("the model list, as Anthropic's SDK reads it (GET /v1/models and /v1/models/{id})", () => {
  const client = () => new Anthropic({ baseURL: `${g.baseUrl}/api`, apiKey: g.key, maxRetries: 0 });
  /** The chat models the OpenAI-shaped list gives, newest first, as the Models API orders them. */
  const chatModels = async () => {
    const res = await fetch(`${g.baseUrl}/api/v1/models`, { headers: { authorization: `Bearer ${g.key}` } });
    const list = (await res.json()) as { object: string; data: { id: string; kind: string; created: number }[] };
    expect(list.object).toBe('list');
    return list.data
      .filter((m) => m.kind === 'chat')
      .sort((a, b) => b.created - a.created || a.id.localeCompare(b.id))
      .map((m) => m.id);
  };

  it('lists the chat models newest first, page by page, each as a ModelInfo, the key in x-api-key', async () => {
    const expected = await chatModels();
    expect(expected.length).toBeGreaterThan(2);
    const seen: Anthropic.ModelInfo[] = [];
    for await (const model of client().models.list({ limit: 2 })) seen.push(model);
    expect(seen.map((m) => m.id)).toEqual(expected);
    for (const model of seen) {
      expect(model).toEqual({
        type: 'model',
        id: expect.any(String),
        display_name: expect.any(String),
        created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
        max_input_tokens: expect.any(Number),
        max_tokens: expect.any(Number),
      });
    }
    // A page before a cursor, and the page's ends named.
    const before = await client().models.list({ before_id: expected[3], limit: 2 });
    expect(before.data.map((m) => m.id)).toEqual(expected.slice(1, 3));
    expect(before).toMatchObject({ has_more: true, first_id: expected[1], last_id: expected[2] });
  });

  it('gives one model by its slug, and a model it does not know as not_found_error', async () => {
    const [newest] = await chatModels();
    expect(await client().models.retrieve(newest)).toMatchObject({ type: 'model', id: newest });
    const unknown = await client()
      .models.retrieve('nobody/none')
      .catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
    expect((unknown as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({
      type: 'error',
      error: { type: 'not_found_error', message: expect.stringContaining('nobody/none') },
    });
  });

  it('answers a bad page or a missing key in the messages format', async () => {
    const headers = { 'anthropic-version': '2023-06-01', 'x-api-key': g.key };
    for (const query of ['limit=0', 'limit=1001', 'limit=two', 'after_id=nobody%2Fnone', 'after_id=a&before_id=b']) {
      const res = await fetch(`${g.baseUrl}/api/v1/models?${query}`, { headers });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    }
    const keyless = await fetch(`${g.baseUrl}/api/v1/models`, { headers: { 'anthropic-version': '2023-06-01' } });
    expect(keyless.status).toBe(401);
    expect(await keyless.json()).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error', message: expect.stringContaining('x-api-key') },
    });
  });
});
