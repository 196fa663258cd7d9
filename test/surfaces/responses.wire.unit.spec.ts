import { EMPTY } from 'rxjs';
import { ApiError } from '../../src/http/api-error';
import type { InferenceResult, PipelineEvent } from '../../src/inference/inference.command';
import { schemaValidation } from '../../src/http/schema-validation';
import { ResponsesRequest, responsesRequestSchema } from '../../src/surfaces/responses/responses.schema';
import {
  eventSerializer,
  replyContextOf,
  responseBody,
  responsesError,
  toCanonical,
} from '../../src/surfaces/responses/responses.wire';
import { usage } from '../support/usage';

const result: InferenceResult = {
  requestId: 'req_0123456789abcdef',
  model: {
    slug: 'vendor/model-1.5',
    id: '7d0c3f9e-0000-4000-8000-000000000001',
    name: 'Model',
    contextLength: 8192,
    maxOutputTokens: 1024,
    reasoning: false,
    kind: 'chat',
    created: 0,
    hosts: [],
  },
  created: 1_700_000_000,
  stream: true,
  events: EMPTY,
};

const validate = schemaValidation<ResponsesRequest>(responsesRequestSchema);
/** A body as the surface takes it: checked against the schema, then translated. */
const canonical = (body: Record<string, unknown>) => toCanonical(validate.transform(body, { type: 'body' }));
/** The ApiError a body is refused with (by the schema or the translation). */
const refusal = (body: Record<string, unknown>): ApiError => {
  try {
    canonical(body);
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return error as ApiError;
  }
  throw new Error('expected a refusal');
};

describe('Responses request → canonical request', () => {
  it('takes a string input as one user message, and instructions as the system prompt', () => {
    expect(canonical({ model: 'm', input: 'hi', instructions: 'Be brief.' })).toEqual({
      system: ['Be brief.'],
      messages: [{ role: 'user', content: 'hi' }],
      tools: [],
      toolChoice: undefined,
      maxTokens: undefined,
      temperature: undefined,
      topP: undefined,
      stop: [],
      stream: false,
      // For a host speaking this format, which is sent the body whole.
      original: { format: 'responses', body: { model: 'm', input: 'hi', instructions: 'Be brief.' } },
    });
  });

  it('translates messages, function calls and their outputs, images and the knobs', () => {
    const request = canonical({
      model: 'm',
      instructions: 'Top',
      input: [
        { role: 'developer', content: 'Dev first' },
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Weather?' },
            { type: 'input_image', image_url: 'data:image/png;base64,AAAA' },
          ],
        },
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'thinking' }], encrypted_content: 'opaque' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Let me look.', annotations: [] }] },
        { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', id: 'fc_1' },
        { type: 'function_call', call_id: 'call_2', name: 'get_weather', arguments: '{"city":"Rome"}' },
        { type: 'function_call_output', call_id: 'call_1', output: '21 °C' },
        { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: '25 °C' }] },
        { role: 'system', content: 'Later instruction' },
        { type: 'function_call', call_id: 'call_3', name: 'noop', arguments: '{}' },
      ],
      tools: [
        { type: 'function', name: 'get_weather', description: 'Weather', parameters: { type: 'object' }, strict: true },
        { type: 'function', name: 'noop', parameters: null },
      ],
      tool_choice: { type: 'function', name: 'get_weather' },
      max_output_tokens: 77,
      temperature: 0.2,
      top_p: 0.9,
      reasoning: { effort: 'high', summary: 'auto' },
      stream: true,
      store: true,
      include: ['reasoning.encrypted_content'],
      metadata: { a: 'b' },
      user: 'u',
      safety_identifier: 's',
      prompt_cache_key: 'k',
      parallel_tool_calls: false,
      text: { format: { type: 'json_object' } },
    });
    expect(request).toEqual({
      original: { format: 'responses', body: expect.objectContaining({ model: 'm', parallel_tool_calls: false }) },
      system: ['Top', 'Dev first'],
      messages: [
        { role: 'user', content: 'Weather?', images: [{ url: 'data:image/png;base64,AAAA' }] },
        {
          role: 'assistant',
          content: 'Let me look.',
          toolCalls: [
            { id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
            { id: 'call_2', name: 'get_weather', arguments: '{"city":"Rome"}' },
          ],
        },
        { role: 'tool', toolCallId: 'call_1', content: '21 °C' },
        { role: 'tool', toolCallId: 'call_2', content: '25 °C' },
        { role: 'system', content: 'Later instruction' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'call_3', name: 'noop', arguments: '{}' }] },
      ],
      tools: [
        { name: 'get_weather', description: 'Weather', parameters: { type: 'object' } },
        { name: 'noop', parameters: { type: 'object', properties: {} } },
      ],
      toolChoice: { name: 'get_weather' },
      parallelToolCalls: false,
      maxTokens: 77,
      temperature: 0.2,
      topP: 0.9,
      stop: [],
      stream: true,
      reasoning: { effort: 'high' },
      outputFormat: { type: 'json_object' },
    });
  });

  it('refuses what needs stored state, saying the gateway is stateless', () => {
    for (const [field, patch] of [
      ['previous_response_id', { previous_response_id: 'resp_1' }],
      ['conversation', { conversation: 'conv_1' }],
      ['conversation', { conversation: { id: 'conv_1' } }],
      ['prompt', { prompt: { id: 'pmpt_1' } }],
      ['background', { background: true }],
    ] as const) {
      const error = refusal({ model: 'm', input: 'hi', ...patch });
      expect(error.code).toBe('invalid_request');
      expect(error.message).toMatch(/stateless/);
      expect(responsesError(error).error.param).toBe(field);
    }
    const reference = refusal({ model: 'm', input: [{ type: 'item_reference', id: 'msg_1' }] });
    expect(reference.message).toMatch(/item_reference.*stateless/);
    const fileImage = refusal({ model: 'm', input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }] });
    expect(fileImage.message).toMatch(/file_id.*stateless/);
    // Asked not to be stored, or stored: the same (nothing is kept either way).
    expect(canonical({ model: 'm', input: 'hi', store: true, previous_response_id: null, conversation: null })).toMatchObject({
      messages: [{ role: 'user', content: 'hi' }],
    });
  });

  it('classifies the hosted tools offered (each as given) for admission to decide on, the body whole; refuses the client-run types it has no translation for', () => {
    const request = canonical({
      model: 'm',
      input: 'hi',
      tools: [{ type: 'web_search' }, { type: 'function', name: 'f' }, { type: 'image_generation' }, { type: 'web_search' }],
      tool_choice: 'required',
    });
    expect(request.tools.map((t) => t.name)).toEqual(['f']);
    expect(request.toolChoice).toBe('required');
    expect(request.hostedTools).toEqual({
      hosted: ['web_search', 'image_generation', 'web_search'],
      clientTools: true,
      required: 'any',
    });
    // The body stays whole: what is left out depends on the hosts that serve (see admission).
    expect((request.original!.body.tools as unknown[]).length).toBe(4);
    expect(request.omittedTools).toBeUndefined();
    // A hosted tool required: the request's hostedTools say which, no function choice is made.
    const required = canonical({
      model: 'm',
      input: 'hi',
      tools: [{ type: 'web_search_preview' }],
      tool_choice: { type: 'web_search_preview' },
    });
    expect(required.hostedTools).toEqual({
      hosted: ['web_search_preview'],
      clientTools: false,
      required: { hosted: 'web_search_preview' },
    });
    expect(required.toolChoice).toBeUndefined();
    // No hosted tool offered: none to decide on.
    expect(canonical({ model: 'm', input: 'hi', tools: [{ type: 'function', name: 'f' }] }).hostedTools).toBeUndefined();

    const error = refusal({
      model: 'm',
      input: 'hi',
      tools: [{ type: 'custom', name: 'apply_patch' }, { type: 'computer_use_preview' }],
    });
    expect(error.message).toBe(
      'tools of type "custom", "computer_use_preview" are not supported: the gateway serves function tools (alone or in namespaces), and hosted tools on the hosts that run them',
    );
    expect(responsesError(error).error.param).toBe('tools');
    expect(refusal({ model: 'm', input: 'hi', tool_choice: { type: 'custom', name: 'apply_patch' } }).message).toMatch(
      /tool_choice of type "custom" is not supported/,
    );
    expect(refusal({ model: 'm', input: 'hi', tool_choice: { type: 'function' } }).message).toMatch(/needs a "name"/);
  });

  it("takes a namespace's functions as tools named namespace__function, and its calls back under their namespace", () => {
    const body = {
      model: 'm',
      tools: [
        { type: 'function', name: 'exec_command', parameters: { type: 'object' } },
        {
          type: 'namespace',
          name: 'agents',
          description: 'Sub-agents.',
          tools: [{ type: 'function', name: 'spawn', description: 'Start one.', parameters: { type: 'object' } }],
        },
      ],
      tool_choice: { type: 'function', name: 'spawn', namespace: 'agents' },
      input: [
        { role: 'user', content: 'go' },
        { type: 'function_call', call_id: 'c1', name: 'spawn', namespace: 'agents', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'started' },
      ],
    };
    expect(canonical(body)).toMatchObject({
      tools: [
        { name: 'exec_command', parameters: { type: 'object' } },
        { name: 'agents__spawn', description: 'Sub-agents.\n\nStart one.', parameters: { type: 'object' } },
      ],
      toolChoice: { name: 'agents__spawn' },
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'agents__spawn', arguments: '{}' }] },
        { role: 'tool', toolCallId: 'c1', content: 'started' },
      ],
    });
    const reply = responseBody(
      result,
      {
        text: '',
        reasoning: '',
        citations: [],
        toolCalls: [
          { id: 'c2', name: 'agents__spawn', arguments: '{}' },
          { id: 'c3', name: 'exec_command', arguments: '{}' },
        ],
        finish: 'tool_calls',
        usage: null,
        billed: null,
        passThrough: null,
      },
      replyContextOf(validate.transform(body, { type: 'body' })),
    );
    expect(reply.output).toEqual([
      expect.objectContaining({ type: 'function_call', call_id: 'c2', name: 'spawn', namespace: 'agents' }),
      expect.not.objectContaining({ namespace: expect.anything() }),
    ]);
    expect((reply.output as unknown[])[1]).toMatchObject({ call_id: 'c3', name: 'exec_command' });
    expect(
      refusal({ model: 'm', input: 'hi', tools: [{ type: 'namespace', name: 'n', tools: [{ type: 'custom', name: 'patch' }] }] })
        .message,
    ).toMatch(/tools of type "custom" \(in namespace "n"\) are not supported/);
    expect(
      refusal({
        model: 'm',
        input: 'hi',
        tools: [
          { type: 'function', name: 'n__f' },
          { type: 'namespace', name: 'n', tools: [{ type: 'function', name: 'f' }] },
        ],
      }).message,
    ).toMatch(/two tools are named "n__f"/);
  });

  it('refuses items and parts it has no counterpart for, naming them and where they are', () => {
    const cases: Array<[unknown, RegExp, string]> = [
      [
        [{ type: 'computer_call', id: 'c' }],
        /input\[0\]: input items of type "computer_call" are not supported/,
        'input[0].type',
      ],
      [
        [{ role: 'user', content: [{ type: 'input_file', file_data: 'x' }] }],
        /input\[0\]\.content\[0\]: content parts of type "input_file"/,
        'input[0].content[0].type',
      ],
      [
        [{ role: 'system', content: [{ type: 'input_image', image_url: 'https://x/y.png' }] }],
        /user messages only/,
        'input[0].content[0]',
      ],
      [
        [{ role: 'user', content: [{ type: 'input_image', image_url: 'ftp://x/y.png' }] }],
        /http\(s\) URL or a data:image/,
        'input[0].content[0].image_url',
      ],
      [[{ type: 'reasoning', id: 'rs_1', summary: [] }], /at least one/, 'input'],
    ];
    for (const [input, message, param] of cases) {
      const error = refusal({ model: 'm', input });
      expect(error.message).toMatch(message);
      expect(responsesError(error).error.param).toBe(param);
    }
  });

  it("accepts a hosted tool's calls sent back (as an openai-responses host returned them): kept in the body a host of this format gets whole, with no counterpart in a translation", () => {
    const calls = [
      {
        type: 'web_search_call',
        id: 'ws_1',
        status: 'completed',
        action: { type: 'search', query: 'paris weather', sources: [{ type: 'url', url: 'https://w.example/p' }] },
      },
      { type: 'file_search_call', id: 'fs_1', status: 'completed', queries: ['q'], results: null },
      {
        type: 'code_interpreter_call',
        id: 'ci_1',
        status: 'completed',
        code: 'print(1)',
        container_id: 'cntr_1',
        outputs: [{ type: 'logs', logs: '1' }],
      },
      { type: 'image_generation_call', id: 'ig_1', status: 'completed', result: 'iVBORw0KGgo=' },
    ];
    const input = [
      { role: 'user', content: 'Weather in Paris?' },
      ...calls,
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Sunny.', annotations: [] }] },
      { role: 'user', content: 'And tomorrow?' },
    ];
    const request = canonical({ model: 'm', input, tools: [{ type: 'web_search' }] });
    expect(request.messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: 'Sunny.', toolCalls: [] },
      { role: 'user', content: 'And tomorrow?' },
    ]);
    expect(request.original!.body.input).toEqual(input);
    // A call of a tool the client runs is still refused, the message naming what is taken.
    expect(refusal({ model: 'm', input: [{ type: 'local_shell_call', id: 'ls_1' }] }).message).toBe(
      'input[0]: input items of type "local_shell_call" are not supported (messages, function_call, function_call_output, reasoning items and hosted tools\' calls — web_search_call, file_search_call, code_interpreter_call, image_generation_call — are)',
    );
  });

  it('names the field of a badly typed body, in the message and as param', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ input: 'hi' }, 'model'],
      [{ model: 'm' }, 'input'],
      [{ model: 'm', input: 5 }, 'input'],
      [{ model: 'm', input: 'hi', max_output_tokens: 0 }, 'max_output_tokens'],
      [{ model: 'm', input: 'hi', temperature: 3 }, 'temperature'],
      [{ model: 'm', input: 'hi', reasoning: { effort: 'extreme' } }, 'reasoning.effort'],
      [{ model: 'm', input: 'hi', tools: [{ type: 'function' }] }, 'tools[0].name'],
      [{ model: 'm', input: [{ type: 'function_call', name: 'f', arguments: '{}' }] }, 'input[0].call_id'],
      [{ model: 'm', input: [{ role: 'wizard', content: 'hi' }] }, 'input[0].role'],
      [{ model: 'm', input: 'hi', metadata: { n: 1 } }, 'metadata.n'],
    ];
    for (const [body, param] of cases) {
      const error = refusal(body);
      expect(error.message).toContain(param.replace(/\[(\d+)\]/g, '.$1'));
      expect(responsesError(error)).toEqual({
        error: { message: error.message, type: 'invalid_request_error', param, code: 'invalid_request' },
      });
    }
  });
});

const context = replyContextOf({ model: 'm', input: 'hi', max_output_tokens: 50, metadata: { trace: 't' }, store: true });

interface SseEvent {
  event: string;
  data: Record<string, any>;
}
const parseSse = (text: string): SseEvent[] =>
  text
    .split('\n\n')
    .filter(Boolean)
    .map((message) => {
      const [eventLine, dataLine] = message.split('\n');
      expect(eventLine.startsWith('event: ')).toBe(true);
      expect(dataLine.startsWith('data: ')).toBe(true);
      const event = eventLine.slice(7);
      const data = JSON.parse(dataLine.slice(6));
      expect(data.type).toBe(event);
      return { event, data };
    });

/** Plays pipeline events through a fresh serializer, as streamSse does: open() ahead of the first text written. */
function play(events: PipelineEvent[], ending: 'close' | ApiError = 'close'): SseEvent[] {
  const serializer = eventSerializer(result, context);
  let text = '';
  let opened = false;
  const write = (piece: string) => {
    if (!piece) return;
    if (!opened) {
      opened = true;
      piece = serializer.open() + piece;
    }
    text += piece;
  };
  for (const event of events) write(serializer.event(event));
  write(ending === 'close' ? serializer.close() : serializer.error(ending));
  const parsed = parseSse(text);
  expect(parsed.map((e) => e.data.sequence_number)).toEqual(parsed.map((_, i) => i));
  return parsed;
}

const billed = (cost: number) =>
  ({ type: 'billed', usage: usage({ inputTokens: 10, outputTokens: 5 }), cost, host: 'h', position: 99 }) as const;

describe('Responses stream', () => {
  it('streams reasoning, then text, then function calls, each item opened and closed in order', () => {
    const events = play([
      { type: 'ready' },
      { type: 'usage', usage: usage({ inputTokens: 10 }) },
      { type: 'reasoning', text: 'Think' },
      { type: 'reasoning', text: 'ing.', signature: 'sig' },
      { type: 'text', text: 'Hel' },
      { type: 'text', text: 'lo' },
      { type: 'tool_call', index: 0, id: 'call_a', name: 'f', argumentsDelta: '' },
      { type: 'tool_call', index: 1, id: 'call_b', name: 'g', argumentsDelta: '{"x"' },
      { type: 'tool_call', index: 0, argumentsDelta: '{}' },
      { type: 'tool_call', index: 1, argumentsDelta: ':1}' },
      { type: 'finish', reason: 'tool_calls' },
      { type: 'usage', usage: usage({ inputTokens: 10, outputTokens: 5, reasoningTokens: 2 }) },
      billed(25_000),
    ]);
    expect(events.map((e) => e.event)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.reasoning_text.delta',
      'response.reasoning_text.delta',
      'response.reasoning_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const created = events[0].data.response;
    expect(created).toMatchObject({
      id: 'resp_0123456789abcdef',
      object: 'response',
      created_at: 1_700_000_000,
      status: 'in_progress',
      model: 'vendor/model-1.5',
      output: [],
      max_output_tokens: 50,
      metadata: { trace: 't' },
      store: false,
    });
    // Not counted yet: left out, as the format's usage is never null.
    expect(created).not.toHaveProperty('usage');
    expect(events[12].data).toMatchObject({ item_id: 'msg_0123456789abcdef_1', output_index: 1, content_index: 0, delta: 'lo' });
    expect(events[20].data).toMatchObject({ item_id: 'fc_0123456789abcdef_3', output_index: 3, delta: ':1}' });
    const done = events[events.length - 1].data.response;
    expect(done.status).toBe('completed');
    expect(done.incomplete_details).toBeNull();
    expect(done.output).toEqual([
      { id: 'rs_0123456789abcdef_0', type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'Thinking.' }] },
      {
        id: 'msg_0123456789abcdef_1',
        type: 'message',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'Hello', annotations: [], logprobs: [] }],
      },
      { id: 'fc_0123456789abcdef_2', type: 'function_call', status: 'completed', call_id: 'call_a', name: 'f', arguments: '{}' },
      {
        id: 'fc_0123456789abcdef_3',
        type: 'function_call',
        status: 'completed',
        call_id: 'call_b',
        name: 'g',
        arguments: '{"x":1}',
      },
    ]);
    expect(done.usage).toEqual({
      input_tokens: 10,
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      output_tokens: 5,
      output_tokens_details: { reasoning_tokens: 2 },
      total_tokens: 15,
      cost: 0.000025,
    });
  });

  it('ends with response.incomplete when the output cap cut the reply', () => {
    const events = play([{ type: 'text', text: 'Once upon' }, { type: 'finish', reason: 'length' }, billed(1)]);
    const last = events[events.length - 1];
    expect(last.event).toBe('response.incomplete');
    // The closing event names the settlement's ledger position beside its response.
    expect(last.data.ledger_position).toBe(99);
    expect(last.data.response).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      output: [{ type: 'message', status: 'incomplete', content: [{ text: 'Once upon' }] }],
    });
    expect(events.find((e) => e.event === 'response.output_item.done')!.data.item.status).toBe('incomplete');
  });

  it('has an empty message for a reply with nothing in it', () => {
    const events = play([{ type: 'finish', reason: 'stop' }, billed(1)]);
    expect(events.map((e) => e.event)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events[7].data.response.output[0].content[0].text).toBe('');
  });

  it('reports a failure after the start as an error event, then response.failed with what had arrived', () => {
    const events = play(
      [
        { type: 'usage', usage: usage({ inputTokens: 7 }) },
        { type: 'text', text: 'Hal' },
      ],
      new ApiError('provider_error', 'host h failed: connection reset'),
    );
    expect(events.slice(-2)).toEqual([
      {
        event: 'error',
        data: {
          type: 'error',
          sequence_number: 5,
          code: 'provider_error',
          message: 'host h failed: connection reset',
          param: null,
        },
      },
      { event: 'response.failed', data: expect.objectContaining({ sequence_number: 6 }) },
    ]);
    expect(events[6].data.response).toMatchObject({
      status: 'failed',
      error: { code: 'server_error', message: 'host h failed: connection reset' },
      output: [{ type: 'message', status: 'incomplete', content: [{ text: 'Hal' }] }],
      usage: { input_tokens: 7, output_tokens: 0 },
    });
    // A failure before anything was written still opens the stream first.
    expect(play([], new ApiError('provider_timeout', 'timed out')).map((e) => e.event)).toEqual([
      'response.created',
      'response.in_progress',
      'error',
      'response.failed',
    ]);
  });
});

describe('Responses whole reply', () => {
  it('lists reasoning, the message and function calls, with usage and cost; a cap makes it incomplete', () => {
    const body = responseBody(
      result,
      {
        text: 'Hi',
        reasoning: 'Because.',
        citations: [],
        toolCalls: [{ id: 'call_1', name: 'f', arguments: '{}' }],
        finish: 'length',
        usage: usage({
          inputTokens: 3,
          cacheReadTokens: 4,
          cacheWriteTokens: 5,
          cacheWrite1hTokens: 6,
          outputTokens: 7,
          reasoningTokens: 2,
        }),
        billed: null,
        passThrough: null,
      },
      context,
    );
    expect(body).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      output: [
        { type: 'reasoning', id: 'rs_0123456789abcdef_0' },
        { type: 'message', id: 'msg_0123456789abcdef_1', status: 'incomplete' },
        { type: 'function_call', id: 'fc_0123456789abcdef_2', call_id: 'call_1' },
      ],
      usage: {
        input_tokens: 18,
        input_tokens_details: { cached_tokens: 4, cache_write_tokens: 11 },
        output_tokens: 7,
        output_tokens_details: { reasoning_tokens: 2 },
        total_tokens: 25,
      },
    });
    expect(body.usage).not.toHaveProperty('cost');
  });
});
