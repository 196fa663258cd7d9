import OpenAI from 'openai';
import request from 'supertest';
import type { CreditsReserved, ReservationSettled } from '../../src/ledger/ledger.events';
import type { ReceivedRequest } from '../support/fake-upstream';
import { auditThenClose, startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { expectServedAndBilled, NEW_KIND_MODELS, NewKindModel, toolResultsIn, withNewKinds } from '../support/new-kinds';

const M = TEST_MODELS;

const weather: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

interface Served {
  slug: string;
  hostModel: string;
  /** Where the host is called upstream. */
  path: string;
  /** Nano-credits for 1,234 input and 56 output tokens at the model's prices, worked out by hand. */
  cost: number;
}

const HOSTS: Array<[string, Served]> = [
  // 1,234 × $1/M + 56 × $2/M = 0.001234 + 0.000112 = 0.001346 credits
  ['an openai host', { slug: M.gpt.slug, hostModel: M.gpt.hostModel, path: '/v1/chat/completions', cost: 1_346_000 }],
  // 1,234 × $3/M + 56 × $15/M = 0.003702 + 0.00084 = 0.004542 credits
  ['an anthropic host', { slug: M.claude.slug, hostModel: M.claude.hostModel, path: '/v1/messages', cost: 4_542_000 }],
];

/** Tool results a host was sent, in either wire format, as [call id, content]. */
function toolResults(sent: ReceivedRequest): Array<[string, string]> {
  const messages = (sent.body as { messages: Array<{ role: string; content: unknown; tool_call_id?: string }> }).messages;
  return messages.flatMap((m): Array<[string, string]> => {
    if (m.role === 'tool') return [[m.tool_call_id!, m.content as string]];
    if (!Array.isArray(m.content)) return [];
    return (m.content as Array<{ type: string; tool_use_id?: string; content?: string }>)
      .filter((b) => b.type === 'tool_result')
      .map((b) => [b.tool_use_id!, b.content!]);
  });
}

/** Tool calls a host was sent back (the assistant's turn), in either wire format, as [call id, name, arguments object]. */
function toolCallsSent(sent: ReceivedRequest): Array<[string, string, unknown]> {
  const messages = (sent.body as { messages: Array<{ role: string; content: unknown; tool_calls?: any[] }> }).messages;
  return messages.flatMap((m): Array<[string, string, unknown]> => {
    if (m.role !== 'assistant') return [];
    if (m.tool_calls) return m.tool_calls.map((c) => [c.id, c.function.name, JSON.parse(c.function.arguments)]);
    if (!Array.isArray(m.content)) return [];
    return (m.content as Array<{ type: string; id: string; name: string; input: unknown }>)
      .filter((b) => b.type === 'tool_use')
      .map((b) => [b.id, b.name, b.input]);
  });
}

/** The whole text a host was sent, to find what reached it or did not. */
const sentText = (sent: ReceivedRequest) => JSON.stringify(sent.body);

let g: TestGateway;
let client: OpenAI;

beforeAll(async () => {
  g = await startGateway({ redis: true, ...withNewKinds });
  client = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: g.key, maxRetries: 0 });
});
afterAll(() => auditThenClose(g));

const lastSent = () => g.fake.requests[g.fake.requests.length - 1];

/** Every event of a streamed response, as the official client's stream helper emits them, and its final response. */
async function streamed(params: Parameters<OpenAI['responses']['stream']>[0]) {
  const stream = client.responses.stream(params);
  const events: OpenAI.Responses.ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  const final = await stream.finalResponse();
  // Numbered from 0, one after the other.
  expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
  return { events, types: events.map((e) => e.type), final };
}

describe.each(HOSTS)('POST /responses on a model served by %s, with the official openai client', (_where, model) => {
  it('creates a response: instructions and input reach the host, the reply is a message, and the charge is the hand-computed cost', async () => {
    g.fake.on(model.hostModel, {
      kind: 'reply',
      reply: { text: 'Paris is the capital of France.', usage: { input: 1234, output: 56 } },
    });
    const { data: response, request_id } = await client.responses
      .create({ model: model.slug, instructions: 'Be brief.', input: 'Capital of France?', metadata: { trace: 'abc' } })
      .withResponse();
    expect(response).toMatchObject({
      object: 'response',
      status: 'completed',
      model: model.slug,
      error: null,
      incomplete_details: null,
      instructions: 'Be brief.',
      metadata: { trace: 'abc' },
      store: false,
      output: [
        {
          type: 'message',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Paris is the capital of France.', annotations: [] }],
        },
      ],
    });
    expect(response.id).toBe(`resp_${request_id!.replace(/^req_/, '')}`);
    expect(response.output_text).toBe('Paris is the capital of France.');
    expect(response.usage).toEqual({
      input_tokens: 1234,
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      output_tokens: 56,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 1290,
      cost: model.cost / 1e9,
    });
    expect(await g.logged(request_id!)).toMatchObject({
      surface: 'responses',
      model: model.slug,
      inputTokens: 1234,
      outputTokens: 56,
      cost: model.cost,
      status: 'ok',
      keyId: g.keyId,
    });

    const sent = lastSent();
    expect(sent.path).toBe(model.path);
    expect(sent.body.stream).toBe(false);
    if (model.path === '/v1/messages') {
      expect(sent.body).toMatchObject({ system: 'Be brief.', messages: [{ role: 'user', content: 'Capital of France?' }] });
    } else {
      expect(sent.body.messages).toEqual([
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Capital of France?' },
      ]);
    }
  });

  it('streams the full event sequence, numbered, ending with response.completed and its usage', async () => {
    g.fake.on(model.hostModel, { kind: 'reply', reply: { text: 'one two three', usage: { input: 1234, output: 56 } } });
    const { events, types, final } = await streamed({
      model: model.slug,
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'count' }] }],
    });
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta)).toEqual(['one', ' two', ' three']);
    expect(final.status).toBe('completed');
    expect(final.output_text).toBe('one two three');
    expect(final.usage).toMatchObject({ input_tokens: 1234, output_tokens: 56, cost: model.cost / 1e9 });
    expect(lastSent().body.stream).toBe(true);

    // The same, as raw events from responses.create({stream: true}).
    g.fake.on(model.hostModel, { kind: 'reply', reply: { text: 'again', usage: { input: 1234, output: 56 } } });
    const raw = await client.responses.create({ model: model.slug, input: 'again', stream: true });
    let text = '';
    let completed: OpenAI.Responses.Response | null = null;
    for await (const event of raw) {
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') completed = event.response;
    }
    expect(text).toBe('again');
    expect(completed).toMatchObject({ status: 'completed', usage: { total_tokens: 1290, cost: model.cost / 1e9 } });
  });

  it('round-trips a function call, not streamed: the call comes back as an item, its output goes to the host as a tool result', async () => {
    g.fake.on(model.hostModel, (sent) =>
      toolResults(sent).length > 0
        ? { kind: 'reply', reply: { text: 'It is 21 °C in Paris.' } }
        : { kind: 'reply', reply: { toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }] } },
    );
    const ask: OpenAI.Responses.ResponseInput = [{ role: 'user', content: 'Weather in Paris?' }];
    const first = await client.responses.create({ model: model.slug, input: ask, tools: [weather], tool_choice: 'auto' });
    expect(first.status).toBe('completed');
    expect(first.output).toEqual([
      expect.objectContaining({
        type: 'function_call',
        status: 'completed',
        call_id: 'call_1',
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
      }),
    ]);
    const sentAsk = lastSent().body;
    const tools =
      model.path === '/v1/messages'
        ? sentAsk.tools.map((t: { name: string }) => t.name)
        : sentAsk.tools.map((t: any) => t.function.name);
    expect(tools).toEqual(['get_weather']);

    const answer = await client.responses.create({
      model: model.slug,
      tools: [weather],
      input: [
        ...ask,
        ...(first.output as OpenAI.Responses.ResponseInputItem[]),
        { type: 'function_call_output', call_id: 'call_1', output: '21 °C' },
      ],
    });
    expect(answer.output_text).toBe('It is 21 °C in Paris.');
    expect(toolCallsSent(lastSent())).toEqual([['call_1', 'get_weather', { city: 'Paris' }]]);
    expect(toolResults(lastSent())).toEqual([['call_1', '21 °C']]);
  });

  it('round-trips a function call, streamed: the arguments arrive as deltas and the stream helper reassembles them', async () => {
    g.fake.on(model.hostModel, (sent) =>
      toolResults(sent).length > 0
        ? { kind: 'reply', reply: { text: 'Sunny in Oslo.' } }
        : { kind: 'reply', reply: { toolCalls: [{ id: 'call_7', name: 'get_weather', arguments: '{"city":"Oslo"}' }] } },
    );
    const ask: OpenAI.Responses.ResponseInput = [{ role: 'user', content: 'Weather in Oslo?' }];
    const first = await streamed({ model: model.slug, input: ask, tools: [weather] });
    const deltas = first.events.filter((e) => e.type === 'response.function_call_arguments.delta');
    expect(deltas.length).toBeGreaterThan(1);
    expect(first.types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      ...deltas.map(() => 'response.function_call_arguments.delta'),
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(deltas.map((e) => e.delta).join('')).toBe('{"city":"Oslo"}');
    expect(first.events.find((e) => e.type === 'response.function_call_arguments.done')).toMatchObject({
      name: 'get_weather',
      arguments: '{"city":"Oslo"}',
    });
    const [call] = first.final.output;
    expect(call).toMatchObject({ type: 'function_call', call_id: 'call_7', name: 'get_weather', arguments: '{"city":"Oslo"}' });

    const second = await streamed({
      model: model.slug,
      tools: [weather],
      input: [
        ...ask,
        ...(first.final.output as OpenAI.Responses.ResponseInputItem[]),
        { type: 'function_call_output', call_id: 'call_7', output: 'sunny' },
      ],
    });
    expect(second.final.output_text).toBe('Sunny in Oslo.');
    expect(toolResults(lastSent())).toEqual([['call_7', 'sunny']]);
  });

  it('accepts reasoning items passed back (their summary and encrypted content go nowhere) and a reasoning effort', async () => {
    g.fake.on(model.hostModel, { kind: 'reply', reply: { text: 'Done thinking.' } });
    const response = await client.responses.create({
      model: model.slug,
      reasoning: { effort: 'low', summary: 'auto' },
      include: ['reasoning.encrypted_content'],
      store: false,
      input: [
        { role: 'user', content: 'Think first.' },
        {
          type: 'reasoning',
          id: 'rs_earlier',
          summary: [{ type: 'summary_text', text: 'SUMMARY-NOT-FORWARDED' }],
          encrypted_content: 'ENCRYPTED-NOT-FORWARDED',
        },
        {
          type: 'message',
          role: 'assistant',
          id: 'msg_earlier',
          status: 'completed',
          content: [{ type: 'output_text', text: 'I thought.', annotations: [] }],
        },
        { role: 'user', content: 'And now?' },
      ],
    });
    expect(response.output_text).toBe('Done thinking.');
    expect(response.reasoning).toEqual({ effort: 'low', summary: 'auto' });
    const text = sentText(lastSent());
    expect(text).toContain('I thought.');
    expect(text).toContain('And now?');
    expect(text).not.toContain('NOT-FORWARDED');
  });

  it('ends incomplete when max_output_tokens is reached, whole and streamed; a cap above the model limit is lowered to it', async () => {
    g.fake.on(model.hostModel, { kind: 'reply', reply: { text: 'Once upon a', finish: 'length' } });
    const whole = await client.responses.create({ model: model.slug, input: 'Tell a story', max_output_tokens: 16 });
    expect(lastSent().body.max_tokens).toBe(16);
    expect(whole).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      max_output_tokens: 16,
      output: [{ type: 'message', status: 'incomplete', content: [{ type: 'output_text', text: 'Once upon a' }] }],
    });

    const { types, final } = await streamed({ model: model.slug, input: 'Tell a story', max_output_tokens: 100_000 });
    expect(lastSent().body.max_tokens).toBe(1000);
    expect(types.at(-1)).toBe('response.incomplete');
    expect(types).not.toContain('response.completed');
    expect(final).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    // The reservation was sized by the limit, as for a request asking for the limit itself.
    const atTheLimit = await client.responses.create({ model: model.slug, input: 'Tell a story', max_output_tokens: 1000 });
    await g.settled();
    const log = await g.t.runtime.events.readAll(0, 100_000);
    const reserved = (response: { id: string }) =>
      (
        log.find(
          (e) =>
            e.type === 'CreditsReserved' &&
            (e.data as CreditsReserved['data']).requestId === response.id.replace(/^resp_/, 'req_'),
        )?.data as CreditsReserved['data']
      ).amount;
    expect(reserved(final)).toBe(reserved(atTheLimit));
    expect(reserved(final)).toBeGreaterThan(reserved(whole));
  });
});

describe('POST /responses failures, in the Responses error format', () => {
  /** The client's error for a request that must fail, checked to be in the format: message, type, param, code. */
  const failure = async (promise: Promise<unknown>, status: number, code: string) => {
    const error = (await promise.then(
      () => null,
      (e: unknown) => e,
    )) as InstanceType<typeof OpenAI.APIError> | null;
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error!.status).toBe(status);
    const body = error!.error as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['code', 'message', 'param', 'type']);
    expect(body).toMatchObject({ message: expect.any(String), type: expect.any(String), code });
    expect(error!.requestID).toMatch(/^req_[0-9a-f]{32}$/);
    return error!;
  };
  const ask = { model: M.gpt.slug, input: 'hi' };

  it('400: a badly typed field is named, in the message and as param', async () => {
    const wrong: Array<[string, Record<string, unknown>]> = [
      ['input', { input: 5 }],
      ['temperature', { temperature: 'hot' }],
      ['max_output_tokens', { max_output_tokens: 1.5 }],
      ['stream', { stream: 'yes' }],
      ['tools', { tools: 'all of them' }],
      ['input[0].role', { input: [{ role: 'wizard', content: 'hi' }] }],
      ['model', { model: 'x'.repeat(300) }],
    ];
    for (const [param, patch] of wrong) {
      const error = await failure(client.responses.create({ ...ask, ...patch } as never), 400, 'invalid_request');
      expect(error.param).toBe(param);
      expect(error.message).toContain(param.replace(/\[(\d+)\]/g, '.$1'));
      expect(error.type).toBe('invalid_request_error');
    }
  });

  it('400: stateless, a previous_response_id or a conversation is refused saying so; store is accepted either way', async () => {
    for (const [param, patch] of [
      ['previous_response_id', { previous_response_id: 'resp_123' }],
      ['conversation', { conversation: 'conv_123' }],
    ] as const) {
      const error = await failure(client.responses.create({ ...ask, ...patch }), 400, 'invalid_request');
      expect(error.param).toBe(param);
      expect(error.message).toMatch(/stateless.*whole conversation/);
    }
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'kept nowhere' } });
    for (const store of [true, false]) {
      expect((await client.responses.create({ ...ask, store })).output_text).toBe('kept nowhere');
    }
  });

  it('404: a stored response cannot be retrieved, cancelled or deleted, and the message says why', async () => {
    // One at a time: a call is sent when it is made.
    for (const call of [
      () => client.responses.retrieve('resp_123'),
      () => client.responses.cancel('resp_123'),
      () => client.responses.delete('resp_123'),
      async () => client.responses.inputItems.list('resp_123'),
    ]) {
      const error = await failure(call(), 404, 'not_found');
      expect(error.message).toMatch(/stateless/);
      // OpenAI's type for every 404 (it has no not_found_error).
      expect(error.type).toBe('invalid_request_error');
    }
  });

  it('400: client-run tools other than functions are refused, naming them', async () => {
    const error = await failure(
      client.responses.create({
        ...ask,
        tools: [{ type: 'custom', name: 'apply_patch' }, weather, { type: 'local_shell' }],
      }),
      400,
      'invalid_request',
    );
    expect((error.error as { message: string }).message).toBe(
      'tools of type "custom", "local_shell" are not supported: the gateway serves function tools (alone or in namespaces), and hosted tools on the hosts that run them',
    );
    expect(error.param).toBe('tools');
  });

  it('400: a body that is not JSON, never a 500', async () => {
    const res = await request(g.baseUrl)
      .post('/api/v1/responses')
      .set('Authorization', `Bearer ${g.key}`)
      .set('content-type', 'text/plain')
      .send('hello');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: { message: expect.stringMatching(/JSON/), type: 'invalid_request_error', param: null, code: 'invalid_request' },
    });
  });

  it('401: no key (before the body is looked at), or a wrong one', async () => {
    const noKey = await request(g.baseUrl).post('/api/v1/responses').send({ bad: 'body' });
    expect(noKey.status).toBe(401);
    expect(noKey.body.error).toEqual({
      message: expect.stringMatching(/Authorization: Bearer/),
      type: 'authentication_error',
      param: null,
      code: 'invalid_api_key',
    });
    const stranger = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: 'sk-svc-' + 'x'.repeat(43), maxRetries: 0 });
    await failure(stranger.responses.create(ask), 401, 'invalid_api_key');
  });

  it('404: a model not in the catalogue, logged as refused', async () => {
    const error = await failure(client.responses.create({ ...ask, model: 'nobody/nothing' }), 404, 'model_not_found');
    // OpenAI's answer to a model it does not have: its SDK's NotFoundError, type invalid_request_error.
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error.type).toBe('invalid_request_error');
    expect(error.message).toMatch(/nobody\/nothing/);
    expect(await g.logged(error.requestID!)).toMatchObject({ surface: 'responses', status: 'model_not_found', cost: 0 });
  });

  it('413: a body over the limit', async () => {
    await failure(client.responses.create({ ...ask, input: 'x'.repeat(5 * 1024 * 1024) }), 413, 'payload_too_large');
  });

  it('502: the host fails before output, streamed or not; the hold is released', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'status', status: 500 });
    await failure(client.responses.create(ask), 502, 'provider_error');
    await failure(client.responses.create({ ...ask, stream: true }), 502, 'provider_error');
    await g.settled();
  });

  it('a failure after the stream started: an error event, then response.failed with what had arrived', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'stream_error', afterPieces: 2 });
    const stream = await client.responses.create({ ...ask, stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const types = events.map((e) => e.type);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(types.slice(0, 4)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    expect(types.slice(-2)).toEqual(['error', 'response.failed']);
    expect(types).not.toContain('response.completed');
    expect(events.at(-2)).toMatchObject({ type: 'error', code: 'provider_error', message: expect.stringMatching(/fake-openai/) });
    const failed = (events.at(-1) as OpenAI.Responses.ResponseFailedEvent).response;
    expect(failed).toMatchObject({
      status: 'failed',
      error: { code: 'server_error', message: expect.stringMatching(/fake-openai/) },
      output: [{ type: 'message', status: 'incomplete', content: [{ type: 'output_text', text: 'Hello from' }] }],
    });

    // The client's stream helper fails with the error event itself.
    const helper = client.responses.stream(ask);
    const final = (async () => {
      for await (const event of helper) expect(event.type).not.toBe('response.completed');
      return helper.finalResponse();
    })();
    await expect(final).rejects.toMatchObject({
      type: 'error',
      code: 'provider_error',
      message: expect.stringMatching(/fake-openai/),
    });
    await g.settled();
  });
});

describe('POST /responses, a client that leaves mid-stream', () => {
  it("reads a reasoning model's host to its end and charges its count, hidden reasoning included", async () => {
    const words = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
    g.fake.on(M.gpt.hostModel, {
      kind: 'reply',
      reply: { text: words, usage: { input: 50, output: 790, reasoning: 750 } },
      chunkDelayMs: 5,
    });
    const index = g.fake.requests.length;
    const stream = client.responses.stream({ model: M.gpt.slug, input: 'Tell me a long story' });
    let text = '';
    for await (const event of stream) {
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (text.length > 60) break; // leaving the loop aborts the request
    }
    expect(text.length).toBeLessThan(words.length);
    // The fake's closed() rejects when its reply completed: the gateway read it to the end.
    await expect(g.fake.closed(index)).rejects.toThrow();
    await g.settled();
    const log = await g.t.runtime.events.readAll(0, 100_000);
    const settled = [...log].reverse().find((e) => e.type === 'ReservationSettled')!.data as ReservationSettled['data'];
    expect(settled).toMatchObject({ status: 'client_abort', host: 'fake-openai', inputTokens: 50, outputTokens: 790 });
  });
});

describe('POST /responses failures that need their own gateway', () => {
  it('402 says how many output tokens the balance affords; 504 when the host does not answer in time, streamed or not', async () => {
    // 0.0005 credits; a streamed call must begin within 300 ms, a whole reply within the 1.5 s request limit.
    const own = await startGateway({
      credits: 500_000,
      redis: true,
      env: { REQUEST_TIMEOUT_MS: '1500', HOST_FIRST_BYTE_TIMEOUT_MS: '300' },
    });
    let tested = false;
    try {
      const ownClient = new OpenAI({ baseURL: `${own.baseUrl}/api/v1`, apiKey: own.key, maxRetries: 0 });
      const poor = (await ownClient.responses.create({ model: M.gpt.slug, input: 'hello', max_output_tokens: 1000 }).then(
        () => null,
        (e: unknown) => e,
      )) as InstanceType<typeof OpenAI.APIError>;
      expect(poor.status).toBe(402);
      expect(poor.error).toEqual({
        message: expect.stringMatching(/at most \d+ output tokens/),
        type: 'insufficient_credits',
        param: null,
        code: 'insufficient_credits',
      });

      own.fake.on(M.gpt.hostModel, { kind: 'hang' });
      for (const stream of [false, true]) {
        const late = (await ownClient.responses.create({ model: M.gpt.slug, input: 'hello', max_output_tokens: 16, stream }).then(
          () => null,
          (e: unknown) => e,
        )) as InstanceType<typeof OpenAI.APIError>;
        expect(late.status).toBe(504);
        expect(late.error).toMatchObject({ type: 'provider_timeout', code: 'provider_timeout', param: null });
      }
      await own.settled();
      expect((await own.t.runtime.projections.balance(own.orgId)).spent).toBe(0);
      tested = true;
    } finally {
      if (tested) await auditThenClose(own);
      else await own.close();
    }
  });
});

const responsesHosts: Array<[string, NewKindModel]> = [
  ['an openai-responses host', NEW_KIND_MODELS.responses],
  ['an azure host (a deployment on the v1 route, the Responses API)', NEW_KIND_MODELS.azureResponses],
];

describe.each(responsesHosts)('the official openai client (Responses) on a model on %s: passed whole', (_where, model) => {
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
  ])('a tool round trip (%s): the call reaches the client, its output the host; billed exactly', async (_how, stream) => {
    const before = g.fake.requests.length;
    const ask = (input: OpenAI.Responses.ResponseInput) => {
      const params = { model: model.slug, instructions: 'Use the tool.', input, tools: [weather] };
      return stream ? client.responses.stream(params).finalResponse() : client.responses.create(params);
    };
    const question: OpenAI.Responses.ResponseInputItem = { role: 'user', content: 'Weather in Paris?' };
    const first = await ask([question]);
    const call = first.output.find((item) => item.type === 'function_call') as
      OpenAI.Responses.ResponseFunctionToolCall | undefined;
    expect(call).toMatchObject({ call_id: 'call_w1', name: 'get_weather', arguments: '{"city":"Paris"}' });
    // The host's usage as it reported it: cached input within the input, reasoning within the output.
    expect(first.usage).toMatchObject({
      input_tokens: 2824,
      input_tokens_details: { cached_tokens: 1024 },
      output_tokens: 40,
      output_tokens_details: { reasoning_tokens: 8 },
    });
    const second = await ask([
      question,
      ...(first.output as OpenAI.Responses.ResponseInputItem[]),
      { type: 'function_call_output', call_id: call!.call_id, output: 'Paris: 21 degrees, from the tool' },
    ]);
    expect(second.output_text).toBe('It is 21 degrees in Paris.');
    const sent = await expectServedAndBilled(g, model, before);
    expect(sent).toHaveLength(2);
    expect(sent[0].body).toMatchObject({ model: model.hostModel, instructions: 'Use the tool.' });
    expect(sent.map((r) => r.body.stream === true)).toEqual([stream, stream]);
    expect(toolResultsIn(sent[1])).toEqual(['Paris: 21 degrees, from the tool']);
  });
});
