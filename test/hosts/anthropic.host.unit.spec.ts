import { anthropicHost } from '../../src/hosts/anthropic/anthropic.host';
import type { SseMessage } from '../../src/hosts/host-kind';
import { CanonicalEvent, CanonicalRequest, HostError, Usage } from '../../src/canonical/canonical';
import { usage } from '../support/usage';

const request = (overrides: Partial<CanonicalRequest> = {}): CanonicalRequest => ({
  system: [],
  messages: [{ role: 'user', content: 'Hi' }],
  tools: [],
  stop: [],
  stream: true,
  ...overrides,
});

const bodyOf = (overrides: Partial<CanonicalRequest> = {}) =>
  anthropicHost.buildRequest(request(overrides), 'claude-sonnet-4-5', 'sk-ant-test').body as Record<string, unknown>;

/** An SSE message as the Messages API sends it: the event name repeated as the data's type. */
const sse = (data: Record<string, unknown>): SseMessage => ({ event: data.type as string, data: JSON.stringify(data) });

const messageStart = (usage: Record<string, unknown> = { input_tokens: 25, output_tokens: 1 }) =>
  sse({
    type: 'message_start',
    message: {
      id: 'msg_01',
      type: 'message',
      role: 'assistant',
      content: [],
      model: 'claude-sonnet-4-5',
      stop_reason: null,
      stop_sequence: null,
      usage,
    },
  });
const textStart = (index: number) => sse({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
const textDelta = (index: number, text: string) =>
  sse({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } });
const toolStart = (index: number, id: string, name: string) =>
  sse({ type: 'content_block_start', index, content_block: { type: 'tool_use', id, name, input: {} } });
const jsonDelta = (index: number, partial_json: string) =>
  sse({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } });
const blockStop = (index: number) => sse({ type: 'content_block_stop', index });
const messageDelta = (
  stop_reason: string,
  usage: Record<string, unknown> = { output_tokens: 12 },
  stop_sequence: string | null = null,
) => sse({ type: 'message_delta', delta: { stop_reason, stop_sequence }, usage });
const messageStop = sse({ type: 'message_stop' });
const ping = sse({ type: 'ping' });
const errorEvent = sse({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });

/** A usage event with the classes given, none of the others. */
const counted = (counts: Partial<Usage>): CanonicalEvent => ({ type: 'usage', usage: usage(counts) });

/** Feeds the messages to a fresh decoder; the events it produced and whether it finished. */
function decode(messages: SseMessage[]) {
  const decoder = anthropicHost.decoder();
  const events: CanonicalEvent[] = messages.flatMap((message) => decoder.push(message));
  return { events, done: decoder.done };
}

function failure(messages: SseMessage[]): HostError {
  try {
    decode(messages);
  } catch (error) {
    expect(error).toBeInstanceOf(HostError);
    return error as HostError;
  }
  throw new Error('the decoder did not fail');
}

describe('anthropicHost.countTokensRequest', () => {
  it("posts the client's body to /messages/count_tokens on the host's model, with key, version and betas", () => {
    const body = {
      model: 'vendor/claude',
      messages: [{ role: 'user', content: 'Hi' }],
      thinking: { type: 'enabled', budget_tokens: 1024 },
    };
    expect(anthropicHost.countTokensRequest!(body, 'claude-sonnet-4-5', 'sk-ant-test', ['token-counting-2024-11-01'])).toEqual({
      path: '/messages/count_tokens',
      headers: {
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
        'x-api-key': 'sk-ant-test',
        'anthropic-beta': 'token-counting-2024-11-01',
      },
      body: { ...body, model: 'claude-sonnet-4-5' },
    });
  });
});

describe('anthropicHost.buildRequest', () => {
  it('posts a streamed request to /messages with version and key headers', () => {
    const upstream = anthropicHost.buildRequest(request(), 'claude-sonnet-4-5', 'sk-ant-test');
    expect(upstream.path).toBe('/messages');
    expect(upstream.headers).toEqual({
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
      'x-api-key': 'sk-ant-test',
    });
    expect(upstream.body).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 4096,
      stream: true,
      messages: [{ role: 'user', content: 'Hi' }],
    });
  });

  it('sends no key header without a key', () => {
    expect(anthropicHost.buildRequest(request(), 'm', null).headers).not.toHaveProperty('x-api-key');
  });

  it('passes max tokens, stop sequences and sampling parameters', () => {
    const body = bodyOf({ maxTokens: 300, stop: ['END', '###'], temperature: 0, topK: 40 });
    expect(body).toMatchObject({ max_tokens: 300, stop_sequences: ['END', '###'], temperature: 0, top_k: 40 });
    expect(bodyOf({ topP: 0.9 })).toMatchObject({ top_p: 0.9 });
    // Claude's 4.5 models refuse temperature and top_p together: the temperature goes.
    const both = bodyOf({ temperature: 0.2, topP: 0.9 });
    expect(both).toMatchObject({ temperature: 0.2 });
    expect(both).not.toHaveProperty('top_p');
  });

  it('leaves out what the request does not set', () => {
    expect(Object.keys(bodyOf()).sort()).toEqual(['max_tokens', 'messages', 'model', 'stream']);
  });

  it('joins the system instructions into the top-level system field', () => {
    expect(bodyOf({ system: ['Be brief.', 'Answer in French.'] }).system).toBe('Be brief.\n\nAnswer in French.');
    expect(bodyOf({ system: [''] })).not.toHaveProperty('system');
  });

  describe('system messages inside the conversation', () => {
    const MID = 'mid-conversation-system-2026-04-07';
    const messages: CanonicalRequest['messages'] = [
      { role: 'system', content: 'Leading.' },
      { role: 'user', content: 'Hi' },
      { role: 'system', content: 'Later.' },
      { role: 'user', content: 'Again' },
    ];

    it('under the beta that allows them, keeps a later one in place and puts a leading one in the top-level system', () => {
      expect(bodyOf({ system: ['Top.'], messages, betas: [MID] })).toMatchObject({
        system: 'Top.\n\nLeading.',
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'system', content: 'Later.' },
          { role: 'user', content: 'Again' },
        ],
      });
    });

    it('without it, folds every one into the top-level system, in order, and merges the turns around them', () => {
      expect(bodyOf({ system: ['Top.'], messages, betas: ['other-beta-2025-01-01'] })).toMatchObject({
        system: 'Top.\n\nLeading.\n\nLater.',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Hi' },
              { type: 'text', text: 'Again' },
            ],
          },
        ],
      });
    });
  });

  it('passes the betas the client asked for as the anthropic-beta header', () => {
    const upstream = anthropicHost.buildRequest(request({ betas: ['a-2025-01-01', 'b-2026-01-01'] }), 'm', 'k');
    expect(upstream.headers['anthropic-beta']).toBe('a-2025-01-01,b-2026-01-01');
    expect(anthropicHost.buildRequest(request({ betas: [] }), 'm', 'k').headers).not.toHaveProperty('anthropic-beta');
  });

  it('maps tools to input_schema', () => {
    const parameters = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const body = bodyOf({
      tools: [
        { name: 'get_weather', description: 'Weather for a city', parameters },
        { name: 'now', parameters: { type: 'object' } },
      ],
    });
    expect(body.tools).toStrictEqual([
      { name: 'get_weather', description: 'Weather for a city', input_schema: parameters },
      { name: 'now', input_schema: { type: 'object' } },
    ]);
  });

  it.each([
    ['auto', { type: 'auto' }],
    ['required', { type: 'any' }],
    ['none', { type: 'none' }],
    [{ name: 'get_weather' }, { type: 'tool', name: 'get_weather' }],
  ] as const)('maps tool choice %j to %j', (toolChoice, expected) => {
    const tools = [{ name: 'get_weather', parameters: { type: 'object' } }];
    expect(bodyOf({ tools, toolChoice }).tool_choice).toEqual(expected);
  });

  it('sends no tool choice without tools, which the API would refuse', () => {
    expect(bodyOf({ toolChoice: 'auto' })).not.toHaveProperty('tool_choice');
  });

  it('replays tool calls and merges tool results and same-role messages into alternating turns', () => {
    const body = bodyOf({
      messages: [
        { role: 'user', content: 'Weather in Paris and Rome?' },
        { role: 'user', content: 'In Celsius.' },
        {
          role: 'assistant',
          content: 'Checking.',
          toolCalls: [
            { id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
            { id: 'toolu_2', name: 'get_weather', arguments: '{"city":"Rome"}' },
          ],
        },
        { role: 'tool', toolCallId: 'toolu_1', content: '18' },
        { role: 'tool', toolCallId: 'toolu_2', content: '24' },
        { role: 'user', content: 'Thanks.' },
        { role: 'assistant', content: 'You are welcome.', toolCalls: [] },
      ],
    });
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Weather in Paris and Rome?' },
          { type: 'text', text: 'In Celsius.' },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: { city: 'Rome' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: '18' },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: '24' },
          { type: 'text', text: 'Thanks.' },
        ],
      },
      { role: 'assistant', content: 'You are welcome.' },
    ]);
  });

  it('sends no empty text block for an assistant message that only calls tools', () => {
    const body = bodyOf({
      messages: [
        { role: 'user', content: 'Time?' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'toolu_1', name: 'now', arguments: '' }] },
      ],
    });
    expect(body.messages).toEqual([
      { role: 'user', content: 'Time?' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'now', input: {} }] },
    ]);
  });

  it('drops an empty assistant message, merging the user messages around it', () => {
    const body = bodyOf({
      messages: [
        { role: 'user', content: 'One' },
        { role: 'assistant', content: '', toolCalls: [] },
        { role: 'user', content: 'Two' },
      ],
    });
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'One' },
          { type: 'text', text: 'Two' },
        ],
      },
    ]);
  });

  it.each(['{"city":', 'not json', '[1,2]', '"text"'])('replays unusable arguments %j as an empty input', (args) => {
    const body = bodyOf({
      messages: [
        { role: 'user', content: 'Go' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'toolu_1', name: 'f', arguments: args }] },
      ],
    });
    expect(body.messages).toEqual([
      { role: 'user', content: 'Go' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: {} }] },
    ]);
  });
});

describe('anthropicHost.decoder', () => {
  it('decodes a text stream', () => {
    const { events, done } = decode([
      messageStart({ input_tokens: 25, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 }),
      textStart(0),
      ping,
      textDelta(0, 'Hello'),
      textDelta(0, ', world.'),
      blockStop(0),
      messageDelta('end_turn', { output_tokens: 6 }),
      messageStop,
    ]);
    expect(events).toEqual([
      counted({ inputTokens: 25, outputTokens: 1 }),
      { type: 'text', text: 'Hello' },
      { type: 'text', text: ', world.' },
      { type: 'finish', reason: 'stop' },
      counted({ inputTokens: 25, outputTokens: 6 }),
    ]);
    expect(done).toBe(true);
  });

  it('is not done before message_stop', () => {
    expect(decode([messageStart(), textStart(0), textDelta(0, 'Hi'), messageDelta('end_turn')]).done).toBe(false);
  });

  it('decodes tool calls, numbering them among the reply’s tool calls', () => {
    const { events } = decode([
      messageStart(),
      textStart(0),
      textDelta(0, 'Let me check.'),
      blockStop(0),
      toolStart(1, 'toolu_A', 'get_weather'),
      jsonDelta(1, ''),
      jsonDelta(1, '{"city": "Pa'),
      jsonDelta(1, 'ris"}'),
      blockStop(1),
      toolStart(2, 'toolu_B', 'get_time'),
      jsonDelta(2, '{}'),
      blockStop(2),
      messageDelta('tool_use', { output_tokens: 80 }),
      messageStop,
    ]);
    expect(events).toEqual([
      counted({ inputTokens: 25, outputTokens: 1 }),
      { type: 'text', text: 'Let me check.' },
      { type: 'tool_call', index: 0, id: 'toolu_A', name: 'get_weather', argumentsDelta: '' },
      { type: 'tool_call', index: 0, argumentsDelta: '{"city": "Pa' },
      { type: 'tool_call', index: 0, argumentsDelta: 'ris"}' },
      { type: 'tool_call', index: 1, id: 'toolu_B', name: 'get_time', argumentsDelta: '' },
      { type: 'tool_call', index: 1, argumentsDelta: '{}' },
      { type: 'finish', reason: 'tool_calls' },
      counted({ inputTokens: 25, outputTokens: 80 }),
    ]);
  });

  it.each([
    ['end_turn', 'stop'],
    ['max_tokens', 'length'],
    ['model_context_window_exceeded', 'length'],
    ['tool_use', 'tool_calls'],
    ['refusal', 'content_filter'],
    ['pause_turn', 'stop'],
    ['a_reason_added_later', 'stop'],
  ])('maps stop reason %s to %s', (stopReason, reason) => {
    expect(decode([messageStart(), messageDelta(stopReason)]).events).toContainEqual({ type: 'finish', reason });
  });

  it('reports the stop sequence that ended the reply', () => {
    const { events } = decode([messageStart(), messageDelta('stop_sequence', { output_tokens: 3 }, '###')]);
    expect(events).toContainEqual({ type: 'finish', reason: 'stop_sequence', stopSequence: '###' });
  });

  describe('given usage with cached input', () => {
    const start = {
      input_tokens: 10,
      cache_read_input_tokens: 3000,
      cache_creation_input_tokens: 200,
      cache_creation: { ephemeral_5m_input_tokens: 150, ephemeral_1h_input_tokens: 50 },
      output_tokens: 1,
    };

    it("when message_start comes, then the input's classes are counted at once: uncached, reads, 5-minute and 1-hour writes", () => {
      expect(decode([messageStart(start)]).events).toEqual([
        counted({ inputTokens: 10, cacheReadTokens: 3000, cacheWriteTokens: 150, cacheWrite1hTokens: 50, outputTokens: 1 }),
      ]);
    });

    it("when message_delta carries only the output (older API versions), then message_start's input classes stand and the output is replaced, not added", () => {
      expect(decode([messageStart(start), messageDelta('end_turn', { output_tokens: 42 })]).events.at(-1)).toEqual(
        counted({ inputTokens: 10, cacheReadTokens: 3000, cacheWriteTokens: 150, cacheWrite1hTokens: 50, outputTokens: 42 }),
      );
    });

    it("when message_delta carries cumulative input counts, then they replace message_start's, the split of the writes kept from it", () => {
      const final = { input_tokens: 50, cache_read_input_tokens: 3000, cache_creation_input_tokens: 260, output_tokens: 42 };
      expect(decode([messageStart(start), messageDelta('end_turn', final)]).events.at(-1)).toEqual(
        counted({ inputTokens: 50, cacheReadTokens: 3000, cacheWriteTokens: 210, cacheWrite1hTokens: 50, outputTokens: 42 }),
      );
    });

    it('when the writes come without their split, then they are 5-minute writes (the API default)', () => {
      const unsplit = { input_tokens: 10, cache_creation_input_tokens: 200, output_tokens: 1 };
      expect(decode([messageStart(unsplit)]).events).toEqual([
        counted({ inputTokens: 10, cacheWriteTokens: 200, outputTokens: 1 }),
      ]);
    });
  });

  it('gives no usage when the host reports none (billing then falls back to its estimate)', () => {
    const bare = sse({ type: 'message_start', message: { id: 'msg_01', type: 'message', role: 'assistant', content: [] } });
    const end = sse({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null } });
    const { events } = decode([bare, textStart(0), textDelta(0, 'Hi'), end, messageStop]);
    expect(events).toEqual([
      { type: 'text', text: 'Hi' },
      { type: 'finish', reason: 'stop' },
    ]);
  });

  describe('passes usage counts on as the host wrote them, for the pipeline to check (see usage-check.ts)', () => {
    it('negative, fractional and huge numbers as they are', () => {
      const { events } = decode([
        messageStart({ input_tokens: -7, output_tokens: 0.5 }),
        messageDelta('end_turn', { output_tokens: 1e12 }),
        messageStop,
      ]);
      expect(events.filter((e) => e.type === 'usage').at(-1)).toEqual(counted({ inputTokens: -7, outputTokens: 1e12 }));
    });

    it('a usage without its required counts (`{}`), or with strings, as NaN: not billed as 0', () => {
      const { events } = decode([messageStart({}), textStart(0), textDelta(0, 'Hi'), messageDelta('end_turn', {}), messageStop]);
      expect(events.filter((e) => e.type === 'usage').at(-1)).toEqual(counted({ inputTokens: NaN, outputTokens: NaN }));
      const strings = decode([messageStart({ input_tokens: '25', output_tokens: 1 }), messageStop]).events;
      expect(strings).toEqual([counted({ inputTokens: NaN, outputTokens: 1 })]);
    });

    it("a null count in message_delta leaves message_start's standing", () => {
      const { events } = decode([
        messageStart({ input_tokens: 25, output_tokens: 1 }),
        messageDelta('end_turn', { input_tokens: null, output_tokens: 6 }),
        messageStop,
      ]);
      expect(events.at(-1)).toEqual(counted({ inputTokens: 25, outputTokens: 6 }));
    });
  });

  it('reads the event type from the data when the SSE message has no event name', () => {
    const unnamed = [messageStart(), textDelta(0, 'Hi'), messageDelta('max_tokens'), messageStop].map(({ data }) => ({ data }));
    const { events, done } = decode(unnamed);
    expect(events).toEqual([
      counted({ inputTokens: 25, outputTokens: 1 }),
      { type: 'text', text: 'Hi' },
      { type: 'finish', reason: 'length' },
      counted({ inputTokens: 25, outputTokens: 12 }),
    ]);
    expect(done).toBe(true);
  });

  it('gives thinking as reasoning, and ignores unknown events, unknown blocks and their deltas', () => {
    const { events } = decode([
      messageStart(),
      sse({ type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } }),
      sse({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Hmm.' } }),
      blockStop(0),
      sse({
        type: 'content_block_start',
        index: 1,
        content_block: { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search' },
      }),
      jsonDelta(1, '{"query":"x"}'),
      blockStop(1),
      sse({ type: 'a_future_event', payload: 1 }),
      textStart(2),
      textDelta(2, 'Done.'),
    ]);
    expect(events).toEqual([
      counted({ inputTokens: 25, outputTokens: 1 }),
      { type: 'reasoning', text: 'Hmm.' },
      { type: 'text', text: 'Done.' },
    ]);
  });

  it('fails retryably on an error event before any output', () => {
    const error = failure([messageStart(), ping, errorEvent]);
    expect(error).toMatchObject({ kind: 'upstream_error', message: 'Overloaded', status: null, beforeOutput: true });
    expect(error.retryable).toBe(true);
  });

  it('fails for good on an error event after output', () => {
    const error = failure([messageStart(), textStart(0), textDelta(0, 'Hal'), errorEvent]);
    expect(error).toMatchObject({ kind: 'upstream_error', message: 'Overloaded', beforeOutput: false });
    expect(error.retryable).toBe(false);
  });

  it('counts a tool call as output', () => {
    expect(failure([messageStart(), toolStart(0, 'toolu_1', 'f'), errorEvent]).beforeOutput).toBe(false);
  });

  it.each(['{"type":"message_st', '', '[1]', 'null'])('fails as malformed on data %j', (data) => {
    expect(failure([messageStart(), { event: 'content_block_delta', data }]).kind).toBe('malformed');
  });

  it('fails as malformed on a text delta without text', () => {
    const broken = sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta' } });
    expect(failure([messageStart(), textStart(0), broken]).kind).toBe('malformed');
  });
});

describe('anthropicHost.errorMessage', () => {
  it('takes the message of an API error body', () => {
    const body = JSON.stringify({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'max_tokens: Field required' },
    });
    expect(anthropicHost.errorMessage(400, body)).toBe('max_tokens: Field required');
  });

  it('falls back to the trimmed, shortened text', () => {
    expect(anthropicHost.errorMessage(502, '  <html>Bad gateway</html>\n')).toBe('<html>Bad gateway</html>');
    expect(anthropicHost.errorMessage(502, 'x'.repeat(1000))).toBe('x'.repeat(300));
    expect(anthropicHost.errorMessage(500, '{"unexpected":true}')).toBe('{"unexpected":true}');
  });

  it('falls back to the status for an empty body', () => {
    expect(anthropicHost.errorMessage(503, ' \n')).toBe('upstream answered 503');
  });
});

describe('anthropicHost.decodeReply (a whole, non-streamed reply)', () => {
  const reply = (fields: Record<string, unknown>) =>
    JSON.stringify({
      id: 'msg_01',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      stop_sequence: null,
      ...fields,
    });

  it('asks the host for a whole reply when the client does not stream', () => {
    expect(bodyOf({ stream: false }).stream).toBe(false);
    expect(bodyOf().stream).toBe(true);
  });

  it('gives the text, the tool calls in order with their input as JSON, the finish and the usage by class', () => {
    const body = reply({
      content: [
        { type: 'thinking', thinking: 'hmm', signature: 's' },
        { type: 'text', text: 'Let me look.' },
        { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
        { type: 'tool_use', id: 'toolu_2', name: 'time', input: {} },
      ],
      stop_reason: 'tool_use',
      usage: {
        input_tokens: 20,
        cache_read_input_tokens: 100,
        cache_creation_input_tokens: 5,
        cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 5 },
        output_tokens: 30,
      },
    });
    expect(anthropicHost.decodeReply(body)).toEqual([
      { type: 'reasoning', text: 'hmm', signature: 's' },
      { type: 'text', text: 'Let me look.' },
      { type: 'tool_call', index: 0, id: 'toolu_1', name: 'weather', argumentsDelta: '{"city":"Paris"}' },
      { type: 'tool_call', index: 1, id: 'toolu_2', name: 'time', argumentsDelta: '{}' },
      { type: 'finish', reason: 'tool_calls' },
      counted({ inputTokens: 20, cacheReadTokens: 100, cacheWrite1hTokens: 5, outputTokens: 30 }),
    ]);
  });

  it('keeps the stop sequence that ended the reply', () => {
    const body = reply({
      content: [{ type: 'text', text: 'one, two' }],
      stop_reason: 'stop_sequence',
      stop_sequence: 'three',
      usage: { input_tokens: 3, output_tokens: 4 },
    });
    expect(anthropicHost.decodeReply(body)).toContainEqual({ type: 'finish', reason: 'stop_sequence', stopSequence: 'three' });
  });

  it('respects an explicit zero usage', () => {
    const body = reply({ content: [], stop_reason: 'end_turn', usage: { input_tokens: 0, output_tokens: 0 } });
    expect(anthropicHost.decodeReply(body)).toEqual([{ type: 'finish', reason: 'stop' }, counted({})]);
  });

  it('leaves out a usage the host did not give', () => {
    const body = reply({ content: [{ type: 'text', text: 'x' }], stop_reason: 'end_turn' });
    expect(anthropicHost.decodeReply(body)).toEqual([
      { type: 'text', text: 'x' },
      { type: 'finish', reason: 'stop' },
    ]);
  });

  it('fails as an upstream error on an error body, and as malformed on anything unreadable', () => {
    const decoding = (body: string) => expect(() => anthropicHost.decodeReply(body));
    decoding(JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })).toThrow(
      expect.objectContaining({ kind: 'upstream_error', message: 'Overloaded' }),
    );
    for (const body of ['{"type":"mess', '[]', '{"type":"message"}', reply({ content: [{ type: 'text' }] })]) {
      decoding(body).toThrow(expect.objectContaining({ kind: 'malformed' }));
    }
  });
});

describe('anthropicHost.buildRequest, across formats: reasoning and images', () => {
  it("turns a reasoning effort into a thinking budget: the effort's share of the cap, at least 1,024, below the cap", () => {
    expect(bodyOf({ maxTokens: 10_000, reasoning: { effort: 'high' } }).thinking).toEqual({
      type: 'enabled',
      budget_tokens: 8000,
    });
    expect(bodyOf({ maxTokens: 10_000, reasoning: { effort: 'low' } }).thinking).toEqual({
      type: 'enabled',
      budget_tokens: 2000,
    });
    expect(bodyOf({ maxTokens: 4000, reasoning: { effort: 'minimal' } }).thinking).toEqual({
      type: 'enabled',
      budget_tokens: 1024,
    });
    expect(bodyOf({ maxTokens: 5000, reasoning: { budgetTokens: 9000 } }).thinking).toEqual({
      type: 'enabled',
      budget_tokens: 4999,
    });
  });

  it('asks for no thinking for effort none, without reasoning, or when the cap leaves no room for the smallest budget', () => {
    expect(bodyOf({ maxTokens: 10_000, reasoning: { effort: 'none' } })).not.toHaveProperty('thinking');
    expect(bodyOf({ maxTokens: 10_000 })).not.toHaveProperty('thinking');
    expect(bodyOf({ maxTokens: 1024, reasoning: { effort: 'high' } })).not.toHaveProperty('thinking');
    // Only the last is reasoning asked for and left out, and the reply says why.
    const omitted = (overrides: Partial<CanonicalRequest>) =>
      anthropicHost.omittedReasoning?.(request(overrides), 'claude-sonnet-4-5');
    expect(omitted({ maxTokens: 1024, reasoning: { effort: 'high' } })).toBe('cap');
    expect(omitted({ maxTokens: 1025, reasoning: { effort: 'high' } })).toBeNull();
    expect(omitted({ maxTokens: 10_000, reasoning: { effort: 'none' } })).toBeNull();
    expect(omitted({ maxTokens: 10_000 })).toBeNull();
  });

  it("leaves thinking out, not the client's sampling or tool_choice, when the API would refuse them together", () => {
    const base = { maxTokens: 10_000, reasoning: { effort: 'high' as const } };
    const tools = [{ name: 'get_weather', parameters: { type: 'object' } }];
    const sampled = bodyOf({ ...base, temperature: 0.2, topK: 5 });
    expect(sampled).not.toHaveProperty('thinking');
    expect(sampled).toMatchObject({ temperature: 0.2, top_k: 5 });
    const forced = bodyOf({ ...base, tools, toolChoice: 'required' });
    expect(forced).not.toHaveProperty('thinking');
    expect(forced.tool_choice).toEqual({ type: 'any' });
    const loop: CanonicalRequest['messages'] = [
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'toolu_1', content: '18°C' },
    ];
    expect(bodyOf({ ...base, tools, messages: loop })).not.toHaveProperty('thinking');
    expect(anthropicHost.omittedReasoning?.(request({ ...base, temperature: 0.2 }), 'claude-sonnet-4-5')).toBe('temperature');
    expect(anthropicHost.omittedReasoning?.(request(base), 'claude-sonnet-4-5')).toBeNull();
  });

  it('thinks on in a tool loop whose calling turn came back with its signed thinking blocks, sent first in the turn', () => {
    const base = { maxTokens: 10_000, reasoning: { effort: 'high' as const } };
    const tools = [{ name: 'get_weather', parameters: { type: 'object' } }];
    const blocks = [{ thinking: 'Look it up.', signature: 'c2ln' }];
    const loop: CanonicalRequest['messages'] = [
      { role: 'user', content: 'Weather?' },
      {
        role: 'assistant',
        content: 'Checking.',
        toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: '{}' }],
        reasoning: { text: 'Look it up.', signature: 'c2ln', blocks },
      },
      { role: 'tool', toolCallId: 'toolu_1', content: '18°C' },
    ];
    const body = bodyOf({ ...base, tools, messages: loop });
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 8000 });
    expect((body.messages as { content: unknown }[])[1].content).toEqual([
      { type: 'thinking', thinking: 'Look it up.', signature: 'c2ln' },
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} },
    ]);
    // Thinking off (no reasoning asked): the blocks stay behind, as before.
    const off = bodyOf({ maxTokens: 10_000, tools, messages: loop });
    expect((off.messages as { content: unknown }[])[1].content).toEqual([
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} },
    ]);
  });

  it("says nothing of reasoning for a messages client's body passed whole: its own thinking goes as sent", () => {
    const body = {
      model: 'x',
      max_tokens: 4000,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      temperature: 0.2,
      messages: [],
    };
    const passed = request({ maxTokens: 4000, reasoning: { budgetTokens: 2048 }, temperature: 0.2 });
    passed.original = { format: 'messages', body };
    expect(anthropicHost.omittedReasoning?.(passed, 'claude-sonnet-4-5')).toBeNull();
    expect(anthropicHost.buildRequest(passed, 'claude-sonnet-4-5', null).body).toMatchObject({
      thinking: { type: 'enabled', budget_tokens: 2048 },
      temperature: 0.2,
    });
  });

  it('sends images as image blocks before the text: inline data as base64, other URLs by URL', () => {
    const body = bodyOf({
      messages: [
        {
          role: 'user',
          content: 'What is this?',
          images: [{ url: 'data:image/png;base64,iVBORw0KGgo=' }, { url: 'https://example.com/cat.jpg' }],
        },
      ],
    });
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
          { type: 'text', text: 'What is this?' },
        ],
      },
    ]);
  });
});

describe('anthropicHost, a messages body passed whole', () => {
  const original = { model: 'vendor/model', max_tokens: 500, messages: [{ role: 'user', content: 'Hi' }], future_field: [1] };
  it("is the client's body with the host's model, and says its reply is to be passed through", () => {
    const upstream = anthropicHost.buildRequest(
      request({ maxTokens: 500, original: { format: 'messages', body: original }, betas: ['x-beta'] }),
      'claude-x',
      'sk-ant-test',
    );
    expect(upstream).toMatchObject({ path: '/messages', passThrough: true, headers: { 'anthropic-beta': 'x-beta' } });
    expect(JSON.stringify(upstream.body)).toBe(JSON.stringify({ ...original, model: 'claude-x' }));
  });

  it('is not used for a body in the other format', () => {
    const upstream = anthropicHost.buildRequest(
      request({ original: { format: 'chat-completions', body: original } }),
      'claude-x',
      null,
    );
    expect(upstream.passThrough).toBeUndefined();
    expect(upstream.body).not.toHaveProperty('future_field');
  });

  it('yields each stream message as it came, ahead of its canonical events; the whole reply last', () => {
    const decoder = anthropicHost.decoder(true);
    const start = messageStart();
    expect(decoder.push(start)).toEqual([
      { type: 'pass_through', event: 'message_start', data: JSON.parse(start.data) },
      // The reply keeps the host's id: the client may look the request up by it.
      { type: 'upstream_id', id: 'msg_01' },
      counted({ inputTokens: 25, outputTokens: 1 }),
    ]);
    const reply = {
      type: 'message',
      content: [{ type: 'text', text: 'Hi' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 3, output_tokens: 1 },
    };
    expect(anthropicHost.decodeReply(JSON.stringify(reply), true).at(-1)).toEqual({ type: 'pass_through', data: reply });
  });
});

describe('anthropicHost and its server tools (hosted web search and fetch)', () => {
  const search = { type: 'web_search_20250305', name: 'web_search', max_uses: 50 };
  const carried = { classes: ['webSearch' as const], maxUses: 5 };

  it('declares the server tools it runs: web search and fetch passed whole, web search translated', () => {
    expect(anthropicHost.hostedTools).toEqual({
      whole: new Set(['webSearch', 'webFetch']),
      translated: new Set(['webSearch']),
    });
  });

  it('counts web searches and fetches from usage.server_tool_use, at the end of a stream and in a whole reply', () => {
    const final = { input_tokens: 50, output_tokens: 42, server_tool_use: { web_search_requests: 3, web_fetch_requests: 1 } };
    expect(decode([messageStart(), messageDelta('end_turn', final)]).events.at(-1)).toEqual(
      counted({ inputTokens: 50, outputTokens: 42, hostedToolUses: { webSearch: 3, webFetch: 1 } }),
    );
    const reply = {
      type: 'message',
      content: [
        { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'paris weather' } },
        { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] },
        {
          type: 'text',
          text: 'Sunny.',
          citations: [{ type: 'web_search_result_location', url: 'https://w.example', title: 'W' }],
        },
      ],
      stop_reason: 'end_turn',
      usage: { input_tokens: 3, output_tokens: 1, server_tool_use: { web_search_requests: 1, web_fetch_requests: 0 } },
    };
    // The search and its results are the host's: the client sees the text, and the page it cites.
    expect(anthropicHost.decodeReply(JSON.stringify(reply))).toEqual([
      { type: 'text', text: 'Sunny.' },
      { type: 'citation', url: 'https://w.example', title: 'W', start: 0, end: 6 },
      { type: 'finish', reason: 'stop' },
      counted({ inputTokens: 3, outputTokens: 1, hostedToolUses: { webSearch: 1 } }),
    ]);
    // None used: no uses at all.
    const none = { input_tokens: 3, output_tokens: 1, server_tool_use: { web_search_requests: 0, web_fetch_requests: 0 } };
    expect(decode([messageStart(none)]).events).toEqual([counted({ inputTokens: 3, outputTokens: 1 })]);
  });

  it("gives a text block's web citations as citations of its passage of the reply, once the block closes", () => {
    const cite = (url: string) => ({
      type: 'web_search_result_location',
      url,
      title: url,
      encrypted_index: 'x',
      cited_text: '…',
    });
    const { events } = decode([
      messageStart(),
      textStart(0),
      textDelta(0, 'Hello. '),
      blockStop(0),
      sse({ type: 'content_block_start', index: 1, content_block: { type: 'text', text: '', citations: [] } }),
      sse({ type: 'content_block_delta', index: 1, delta: { type: 'citations_delta', citation: cite('https://a.example') } }),
      textDelta(1, 'Sunny '),
      textDelta(1, 'today.'),
      sse({ type: 'content_block_delta', index: 1, delta: { type: 'citations_delta', citation: cite('https://b.example') } }),
      blockStop(1),
      // A citation of a document has no URL: no counterpart.
      sse({
        type: 'content_block_start',
        index: 2,
        content_block: { type: 'text', text: '', citations: [{ type: 'char_location' }] },
      }),
      textDelta(2, ' Bye.'),
      blockStop(2),
    ]);
    expect(events.filter((e) => e.type === 'citation')).toEqual([
      { type: 'citation', url: 'https://a.example', title: 'https://a.example', start: 7, end: 19 },
      { type: 'citation', url: 'https://b.example', title: 'https://b.example', start: 7, end: 19 },
    ]);
    // After the passage's text.
    expect(events.findIndex((e) => e.type === 'citation')).toBeGreaterThan(
      events.findIndex((e) => e.type === 'text' && e.text === 'today.'),
    );
  });

  it('passes a count that is not a number on for the pipeline to refuse', () => {
    const odd = { input_tokens: 3, output_tokens: 1, server_tool_use: { web_search_requests: 'many' } };
    expect(decode([messageStart(odd)]).events).toEqual([
      counted({ inputTokens: 3, outputTokens: 1, hostedToolUses: { webSearch: NaN } }),
    ]);
  });

  it("bounds a carried server tool of the client's body to the uses held for (max_uses), leaving a lower one", () => {
    const original = {
      model: 'm',
      max_tokens: 100,
      messages: [],
      tools: [search, { type: 'web_fetch_20250910', name: 'web_fetch', max_uses: 2 }],
    };
    const body = anthropicHost.buildRequest(
      request({
        original: { format: 'messages', body: original },
        carriedTools: { classes: ['webSearch', 'webFetch'], maxUses: 5 },
      }),
      'claude-x',
      null,
    ).body as { tools: unknown[] };
    expect(body.tools).toEqual([
      { ...search, max_uses: 5 },
      { type: 'web_fetch_20250910', name: 'web_fetch', max_uses: 2 },
    ]);
  });

  it('runs a web search offered in another format by its own tool, within the uses held for, and makes it required when asked', () => {
    expect(bodyOf({ carriedTools: carried }).tools).toEqual([{ type: 'web_search_20250305', name: 'web_search', max_uses: 5 }]);
    const required = bodyOf({
      tools: [{ name: 'f', parameters: {} }],
      carriedTools: { ...carried, required: 'webSearch' },
    });
    expect(required.tools).toHaveLength(2);
    expect(required.tool_choice).toEqual({ type: 'tool', name: 'web_search' });
    expect(bodyOf({ carriedTools: carried, toolChoice: 'required' }).tool_choice).toEqual({ type: 'any' });
  });
});
