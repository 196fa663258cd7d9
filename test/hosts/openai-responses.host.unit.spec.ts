import { CanonicalEvent, CanonicalRequest, HostError, Usage } from '../../src/canonical/canonical';
import { openAiResponsesHost as host } from '../../src/hosts/openai-responses/openai-responses.host';
import { usage } from '../support/usage';

/** A usage event with the classes given, none of the others. */
const counted = (counts: Partial<Usage>): CanonicalEvent => ({ type: 'usage', usage: usage(counts) });

const request = (overrides: Partial<CanonicalRequest> = {}): CanonicalRequest => ({
  system: ['Be brief.'],
  messages: [{ role: 'user', content: 'Hi' }],
  tools: [],
  stop: [],
  stream: true,
  ...overrides,
});

/** A usage object as OpenAI's Responses API writes it: `input` counts every input token, those read from the cache and written to it too. */
const wireUsage = (input: number, cached: number, output: number, reasoning: number, written = 0) => ({
  input_tokens: input,
  input_tokens_details: { cached_tokens: cached, cache_write_tokens: written },
  output_tokens: output,
  output_tokens_details: { reasoning_tokens: reasoning },
  total_tokens: input + output,
});

describe('openAiResponsesHost.buildRequest', () => {
  it('posts to /responses with the key, streamed as the client streams, keeping nothing upstream', () => {
    const upstream = host.buildRequest(request(), 'gpt-x', 'sk-upstream');
    expect(upstream.path).toBe('/responses');
    expect(upstream.headers).toEqual({
      'content-type': 'application/json',
      accept: 'text/event-stream',
      authorization: 'Bearer sk-upstream',
    });
    expect(upstream.body).toEqual({
      model: 'gpt-x',
      instructions: 'Be brief.',
      input: [{ role: 'user', content: 'Hi' }],
      stream: true,
      store: false,
    });
    expect(host.buildRequest(request({ stream: false }), 'gpt-x', null).headers).toEqual({
      'content-type': 'application/json',
      accept: 'application/json',
    });
  });

  it('asks for one tool call a turn with parallel_tool_calls false, beside tools only', () => {
    const tools = [{ name: 'lookup', parameters: { type: 'object' } }];
    expect(host.buildRequest(request({ tools, parallelToolCalls: false }), 'gpt-x', null).body).toMatchObject({
      parallel_tool_calls: false,
    });
    expect(host.buildRequest(request({ parallelToolCalls: false }), 'gpt-x', null).body).not.toHaveProperty(
      'parallel_tool_calls',
    );
    expect(host.buildRequest(request({ tools }), 'gpt-x', null).body).not.toHaveProperty('parallel_tool_calls');
  });

  it('translates a conversation with images, calls and their results into input items', () => {
    const upstream = host.buildRequest(
      request({
        system: ['One.', 'Two.'],
        messages: [
          { role: 'user', content: 'What is this?', images: [{ url: 'data:image/png;base64,AAAA' }] },
          {
            role: 'assistant',
            content: 'Let me look.',
            toolCalls: [{ id: 'call_1', name: 'lookup', arguments: '{"q":"x"}' }],
          },
          { role: 'tool', toolCallId: 'call_1', content: 'a cat' },
          { role: 'system', content: 'Answer in French.' },
          { role: 'assistant', content: '', toolCalls: [{ id: 'call_2', name: 'lookup', arguments: '{}' }] },
        ],
      }),
      'gpt-x',
      null,
    );
    expect(upstream.body).toMatchObject({
      instructions: 'One.\n\nTwo.',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'auto' },
            { type: 'input_text', text: 'What is this?' },
          ],
        },
        { role: 'assistant', content: 'Let me look.' },
        { type: 'function_call', call_id: 'call_1', name: 'lookup', arguments: '{"q":"x"}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'a cat' },
        { role: 'developer', content: 'Answer in French.' },
        { type: 'function_call', call_id: 'call_2', name: 'lookup', arguments: '{}' },
      ],
    });
  });

  it('sends tools, the tool choice, the cap, sampling and the reasoning effort in the format’s fields; no stop sequences', () => {
    const parameters = { type: 'object', properties: {} };
    const upstream = host.buildRequest(
      request({
        tools: [
          { name: 'lookup', description: 'Looks up', parameters },
          { name: 'bare', parameters },
        ],
        toolChoice: { name: 'lookup' },
        maxTokens: 500,
        temperature: 0.2,
        topP: 0.9,
        topK: 40,
        stop: ['END'],
        reasoning: { budgetTokens: 10_000 },
      }),
      'gpt-x',
      null,
    );
    expect(upstream.body).toEqual({
      model: 'gpt-x',
      instructions: 'Be brief.',
      input: [{ role: 'user', content: 'Hi' }],
      stream: true,
      store: false,
      max_output_tokens: 500,
      temperature: 0.2,
      top_p: 0.9,
      tools: [
        { type: 'function', name: 'lookup', description: 'Looks up', parameters, strict: false },
        { type: 'function', name: 'bare', parameters, strict: false },
      ],
      tool_choice: { type: 'function', name: 'lookup' },
      reasoning: { effort: 'medium', summary: 'auto' },
    });
    expect(host.buildRequest(request({ toolChoice: 'required' }), 'm', null).body).toMatchObject({ tool_choice: 'required' });
    expect(host.buildRequest(request({ reasoning: { effort: 'none' } }), 'm', null).body).toMatchObject({
      reasoning: { effort: 'none' },
    });
  });
});

describe('openAiResponsesHost, a Responses client’s body', () => {
  const original = { model: 'test/slug', input: 'Hi', max_output_tokens: 5000, include: ['reasoning.encrypted_content'], x: 1 };

  it('is sent whole, the model renamed and the cap the pipeline gave in place of the client’s', () => {
    const upstream = host.buildRequest(
      request({ maxTokens: 1000, original: { format: 'responses', body: original } }),
      'gpt-x',
      'k',
    );
    expect(upstream).toMatchObject({ path: '/responses', passThrough: true });
    expect(upstream.body).toEqual({ ...original, model: 'gpt-x', max_output_tokens: 1000 });
    const sentFor = (asked: number, maxTokens: number) =>
      host.buildRequest(
        request({ maxTokens, original: { format: 'responses', body: { ...original, max_output_tokens: asked } } }),
        'gpt-x',
        'k',
      ).body;
    // Kept, or raised to the API's least (admission raises it for this kind: see minOutputTokens).
    expect(sentFor(20, 20)).toMatchObject({ max_output_tokens: 20 });
    expect(sentFor(10, 16)).toMatchObject({ max_output_tokens: 16 });
    expect(host.minOutputTokens!({})).toBe(16);
  });

  it('has its reply and each stream event passed back beside their canonical events, with the host’s id', () => {
    const reply = { id: 'resp_9', status: 'completed', output: [], usage: wireUsage(3, 0, 1, 0) };
    expect(host.decodeReply(JSON.stringify(reply), true)).toEqual([
      { type: 'upstream_id', id: 'resp_9' },
      { type: 'finish', reason: 'stop' },
      counted({ inputTokens: 3, outputTokens: 1 }),
      { type: 'pass_through', data: reply },
    ]);
    const decoder = host.decoder(true);
    const created = { type: 'response.created', response: { id: 'resp_9' }, sequence_number: 0 };
    const delta = { type: 'response.output_text.delta', delta: 'Hi', sequence_number: 1 };
    expect(decoder.push({ event: created.type, data: JSON.stringify(created) })).toEqual([
      { type: 'pass_through', event: 'response.created', data: created },
      { type: 'upstream_id', id: 'resp_9' },
    ]);
    expect(decoder.push({ event: delta.type, data: JSON.stringify(delta) })).toEqual([
      { type: 'pass_through', event: 'response.output_text.delta', data: delta },
      { type: 'text', text: 'Hi' },
    ]);
  });
});

describe('openAiResponsesHost.decodeReply', () => {
  const response = (over: Record<string, unknown>) =>
    JSON.stringify({ id: 'resp_1', object: 'response', status: 'completed', incomplete_details: null, error: null, ...over });

  it('reads reasoning, text and calls in order, and the usage by class', () => {
    const events = host.decodeReply(
      response({
        output: [
          {
            id: 'rs_1',
            type: 'reasoning',
            summary: [
              { type: 'summary_text', text: 'Thinking.' },
              { type: 'summary_text', text: 'More.' },
            ],
            encrypted_content: 'opaque',
          },
          {
            id: 'msg_1',
            type: 'message',
            role: 'assistant',
            content: [{ type: 'output_text', text: 'Hello.', annotations: [] }],
          },
          { id: 'fc_1', type: 'function_call', call_id: 'call_1', name: 'lookup', arguments: '{"q":1}' },
        ],
        usage: wireUsage(23_100, 20_000, 500, 200, 3_000),
      }),
    );
    expect(events).toEqual([
      { type: 'reasoning', text: 'Thinking.\n\nMore.' },
      { type: 'text', text: 'Hello.' },
      { type: 'tool_call', index: 0, id: 'call_1', name: 'lookup', argumentsDelta: '{"q":1}' },
      { type: 'finish', reason: 'tool_calls' },
      counted({ inputTokens: 100, cacheReadTokens: 20_000, cacheWriteTokens: 3_000, outputTokens: 500, reasoningTokens: 200 }),
    ]);
  });

  it('reads an incomplete response as cut at the cap (or filtered), and a refusal as text', () => {
    const refused = { type: 'message', content: [{ type: 'refusal', refusal: 'No.' }] };
    expect(
      host.decodeReply(
        response({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [refused] }),
      ),
    ).toEqual([
      { type: 'text', text: 'No.' },
      { type: 'finish', reason: 'length' },
    ]);
    expect(
      host.decodeReply(response({ status: 'incomplete', incomplete_details: { reason: 'content_filter' }, output: [] })),
    ).toEqual([{ type: 'finish', reason: 'content_filter' }]);
  });

  it('refuses what is not a response, and reports an error or a failed response', () => {
    expect(() => host.decodeReply('{"id":')).toThrow(HostError);
    expect(() => host.decodeReply('{"id":"resp_1"}')).toThrow(/without output/);
    expect(() => host.decodeReply('{"error":{"message":"Bad things"}}')).toThrow(/Bad things/);
    expect(() => host.decodeReply(response({ status: 'failed', output: [] }))).toThrow(HostError);
  });

  it('does not believe counts that are not numbers: they read as NaN, for the usage check to refuse', () => {
    const [, usageEvent] = host.decodeReply(response({ output: [], usage: { input_tokens: '12', output_tokens: 3 } }));
    expect(usageEvent).toMatchObject({ type: 'usage', usage: { outputTokens: 3 } });
    expect((usageEvent as { usage: Usage }).usage.inputTokens).toBeNaN();
  });
});

describe('openAiResponsesHost.decoder', () => {
  const frame = (type: string, payload: Record<string, unknown> = {}, sequence = 0) => ({
    event: type,
    data: JSON.stringify({ type, ...payload, sequence_number: sequence }),
  });
  const decode = (frames: Array<{ event: string; data: string }>) => {
    const decoder = host.decoder();
    const events = frames.flatMap((f) => decoder.push(f));
    return { events, done: decoder.done };
  };

  it('reads every event of a stream: reasoning (summary or text), text, calls with their arguments, the end with usage', () => {
    const item = { id: 'fc_1', type: 'function_call', call_id: 'call_1', name: 'lookup', arguments: '' };
    const { events, done } = decode([
      frame('response.created', { response: { id: 'resp_1', status: 'in_progress', output: [], usage: null } }),
      frame('response.in_progress', { response: { id: 'resp_1', status: 'in_progress', output: [], usage: null } }),
      frame('response.output_item.added', { output_index: 0, item: { id: 'rs_1', type: 'reasoning', summary: [] } }),
      frame('response.reasoning_summary_part.added', { output_index: 0, summary_index: 0 }),
      frame('response.reasoning_summary_text.delta', { output_index: 0, delta: 'Think' }),
      frame('response.reasoning_summary_text.done', { output_index: 0, text: 'Think' }),
      frame('response.reasoning_summary_part.added', { output_index: 0, summary_index: 1 }),
      frame('response.reasoning_text.delta', { output_index: 0, delta: 'ing.' }),
      frame('response.output_item.done', { output_index: 0, item: { type: 'reasoning', encrypted_content: 'opaque' } }),
      frame('response.output_item.added', { output_index: 1, item: { type: 'message', content: [] } }),
      frame('response.content_part.added', { output_index: 1, content_index: 0 }),
      frame('response.output_text.delta', { output_index: 1, delta: 'Hel' }),
      frame('response.output_text.delta', { output_index: 1, delta: 'lo.' }),
      frame('response.output_text.done', { output_index: 1, text: 'Hello.' }),
      frame('response.content_part.done', { output_index: 1, content_index: 0 }),
      frame('response.output_item.done', { output_index: 1, item: {} }),
      frame('response.output_item.added', { output_index: 2, item }),
      frame('response.function_call_arguments.delta', { output_index: 2, item_id: 'fc_1', delta: '{"q"' }),
      frame('response.function_call_arguments.delta', { output_index: 2, item_id: 'fc_1', delta: ':1}' }),
      frame('response.function_call_arguments.done', { output_index: 2, item_id: 'fc_1', arguments: '{"q":1}' }),
      frame('response.output_item.done', { output_index: 2, item: { ...item, arguments: '{"q":1}' } }),
      frame('response.completed', { response: { status: 'completed', usage: wireUsage(1_512, 1_000, 40, 30, 500) } }),
    ]);
    expect(done).toBe(true);
    expect(events).toEqual([
      { type: 'reasoning', text: 'Think' },
      { type: 'reasoning', text: '\n\n' },
      { type: 'reasoning', text: 'ing.' },
      { type: 'text', text: 'Hel' },
      { type: 'text', text: 'lo.' },
      { type: 'tool_call', index: 0, id: 'call_1', name: 'lookup', argumentsDelta: '' },
      { type: 'tool_call', index: 0, argumentsDelta: '{"q"' },
      { type: 'tool_call', index: 0, argumentsDelta: ':1}' },
      { type: 'finish', reason: 'tool_calls' },
      counted({ inputTokens: 12, cacheReadTokens: 1_000, cacheWriteTokens: 500, outputTokens: 40, reasoningTokens: 30 }),
    ]);
  });

  it('ends on response.incomplete as cut at the cap', () => {
    const { events, done } = decode([
      frame('response.output_text.delta', { delta: 'Hi' }),
      frame('response.incomplete', {
        response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, usage: wireUsage(5, 0, 9, 0) },
      }),
    ]);
    expect(done).toBe(true);
    expect(events).toEqual([
      { type: 'text', text: 'Hi' },
      { type: 'finish', reason: 'length' },
      counted({ inputTokens: 5, outputTokens: 9 }),
    ]);
  });

  it('fails on response.failed and on an error event, saying whether output had gone out', () => {
    const failed = frame('response.failed', { response: { status: 'failed', error: { code: 'server_error', message: 'Boom' } } });
    const error = frame('error', { code: 'rate_limit_exceeded', message: 'Slow down', param: null });
    for (const bad of [failed, error]) {
      const before = host.decoder();
      expect(() => before.push(bad)).toThrow(expect.objectContaining({ kind: 'upstream_error', beforeOutput: true }));
      const after = host.decoder();
      after.push(frame('response.output_text.delta', { delta: 'Hi' }));
      expect(() => after.push(bad)).toThrow(expect.objectContaining({ kind: 'upstream_error', beforeOutput: false }));
    }
    expect(() => host.decoder().push(failed)).toThrow(/Boom/);
    expect(() => host.decoder().push(error)).toThrow(/Slow down/);
  });

  it('refuses an event that is not JSON, and arguments for a call never begun', () => {
    expect(() => host.decoder().push({ data: '{"type":' })).toThrow(expect.objectContaining({ kind: 'malformed' }));
    expect(() => host.decoder().push(frame('response.function_call_arguments.delta', { output_index: 3, delta: '{' }))).toThrow(
      /had not begun/,
    );
  });
});

describe('openAiResponsesHost.errorMessage', () => {
  it('reads OpenAI error bodies and falls back to the text', () => {
    expect(host.errorMessage(429, '{"error":{"message":"Rate limit reached","type":"requests"}}')).toBe('Rate limit reached');
    expect(host.errorMessage(502, '<html>Bad gateway</html>')).toBe('<html>Bad gateway</html>');
  });
});

describe('openAiResponsesHost and its hosted tools', () => {
  const searchCall = (query: string) => ({
    id: `ws_${query}`,
    type: 'web_search_call',
    status: 'completed',
    action: { type: 'search', query },
  });
  const message = {
    id: 'msg_1',
    type: 'message',
    status: 'completed',
    role: 'assistant',
    content: [
      {
        type: 'output_text',
        text: 'Sunny.',
        annotations: [{ type: 'url_citation', start_index: 0, end_index: 5, url: 'https://w.example', title: 'W' }],
      },
    ],
  };
  const completed = (output: unknown[]) => ({
    id: 'resp_1',
    object: 'response',
    status: 'completed',
    output,
    usage: wireUsage(100, 0, 20, 0),
  });

  it('declares the tools it runs: web search, file search, code interpreter and image generation whole; web search translated', () => {
    expect(host.hostedTools).toEqual({
      whole: new Set(['webSearch', 'fileSearch', 'codeExecution', 'imageGeneration']),
      translated: new Set(['webSearch']),
    });
  });

  it("counts each hosted tool's calls among a whole response's output items", () => {
    const output = [
      searchCall('a'),
      searchCall('b'),
      { id: 'fs_1', type: 'file_search_call', status: 'completed', queries: ['x'], results: null },
      { id: 'ci_1', type: 'code_interpreter_call', status: 'completed', code: '1+1', container_id: 'c', outputs: null },
      { id: 'ig_1', type: 'image_generation_call', status: 'completed', result: 'aGk=' },
      message,
    ];
    expect(host.decodeReply(JSON.stringify(completed(output)))).toEqual([
      { type: 'text', text: 'Sunny.' },
      { type: 'citation', url: 'https://w.example', title: 'W', start: 0, end: 5 },
      { type: 'finish', reason: 'stop' },
      counted({
        inputTokens: 100,
        outputTokens: 20,
        hostedToolUses: { webSearch: 2, fileSearch: 1, codeExecution: 1, imageGeneration: 1 },
      }),
    ]);
    // None: no uses at all.
    expect(host.decodeReply(JSON.stringify(completed([message]))).at(-1)).toEqual(
      counted({ inputTokens: 100, outputTokens: 20 }),
    );
  });

  it("counts a stream's web_search_call items at its end, also when its closing response lists fewer", () => {
    const frame = (type: string, payload: Record<string, unknown>) => ({
      event: type,
      data: JSON.stringify({ type, ...payload }),
    });
    const decoder = host.decoder();
    const events = [
      frame('response.output_item.added', {
        output_index: 0,
        item: { id: 'ws_a', type: 'web_search_call', status: 'in_progress' },
      }),
      frame('response.web_search_call.searching', { output_index: 0, item_id: 'ws_a' }),
      frame('response.output_item.done', { output_index: 0, item: searchCall('a') }),
      frame('response.output_item.done', { output_index: 1, item: searchCall('b') }),
      frame('response.output_text.delta', { output_index: 2, delta: 'Sunny.' }),
      frame('response.completed', { response: completed([]) }),
    ].flatMap((f) => decoder.push(f));
    expect(events).toEqual([
      { type: 'text', text: 'Sunny.' },
      { type: 'finish', reason: 'stop' },
      counted({ inputTokens: 100, outputTokens: 20, hostedToolUses: { webSearch: 2 } }),
    ]);
  });

  it("gives url_citation annotations as citations of the reply's text, offset by the text before their part", () => {
    const frame = (type: string, payload: Record<string, unknown>) => ({
      event: type,
      data: JSON.stringify({ type, ...payload }),
    });
    const decoder = host.decoder();
    const annotation = { type: 'url_citation', start_index: 0, end_index: 6, url: 'https://w.example', title: 'W' };
    const events = [
      frame('response.output_text.delta', { output_index: 0, content_index: 0, delta: 'First. ' }),
      frame('response.content_part.added', { output_index: 2, content_index: 0, part: { type: 'output_text', text: '' } }),
      frame('response.output_text.delta', { output_index: 2, content_index: 0, delta: 'Sunny.' }),
      frame('response.output_text.annotation.added', { output_index: 2, content_index: 0, annotation_index: 0, annotation }),
      frame('response.output_text.annotation.added', {
        output_index: 2,
        content_index: 0,
        annotation_index: 1,
        annotation: { type: 'file_citation', file_id: 'f', index: 0 },
      }),
    ].flatMap((f) => decoder.push(f));
    expect(events.filter((e) => e.type === 'citation')).toEqual([
      { type: 'citation', url: 'https://w.example', title: 'W', start: 7, end: 13 },
    ]);
  });

  it("bounds a Responses client's body carrying hosted tools to the uses held for (max_tool_calls), leaving a lower one", () => {
    const carried = { classes: ['webSearch' as const], maxUses: 5 };
    const original = { model: 'vendor/m', input: 'hi', tools: [{ type: 'web_search' }] };
    const sent = (body: Record<string, unknown>) =>
      host.buildRequest(request({ original: { format: 'responses', body }, carriedTools: carried }), 'gpt-x', null).body;
    expect(sent(original)).toMatchObject({ tools: [{ type: 'web_search' }], max_tool_calls: 5 });
    expect(sent({ ...original, max_tool_calls: 2 })).toMatchObject({ max_tool_calls: 2 });
    expect(sent({ ...original, max_tool_calls: 50 })).toMatchObject({ max_tool_calls: 5 });
    // Nothing carried: the body as it was.
    expect(
      host.buildRequest(request({ original: { format: 'responses', body: original } }), 'gpt-x', null).body,
    ).not.toHaveProperty('max_tool_calls');
  });

  it('runs a web search offered in another format by its own tool, within the uses held for, and requires it when asked', () => {
    const body = (over: Partial<CanonicalRequest>) =>
      host.buildRequest(request(over), 'gpt-x', null).body as Record<string, unknown>;
    const carried = { classes: ['webSearch' as const], maxUses: 5 };
    expect(body({ carriedTools: carried })).toMatchObject({ tools: [{ type: 'web_search' }], max_tool_calls: 5 });
    expect(
      body({ tools: [{ name: 'f', parameters: {} }], carriedTools: { ...carried, required: 'webSearch' } }).tool_choice,
    ).toEqual({
      type: 'allowed_tools',
      mode: 'required',
      tools: [{ type: 'web_search' }],
    });
  });
});
