// Verifies the fake upstream itself against the real wire shapes, with plain fetch.
import { FakeUpstream, signatureOf, splitText, startFakeUpstream } from './fake-upstream';

const OPENAI = '/v1/chat/completions';
const ANTHROPIC = '/v1/messages';
const DEFAULT_TEXT = 'Hello from the fake upstream.';

let fake: FakeUpstream;
beforeEach(async () => {
  fake = await startFakeUpstream();
});
afterEach(() => fake.close());

const post = (path: string, body: object, init: RequestInit = {}) =>
  fetch(fake.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
    body: JSON.stringify(body),
    ...init,
  });

interface Event {
  event?: string;
  data: string;
}
function parseSse(text: string): Event[] {
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((block) => {
      const ev: Event = { data: '' };
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) ev.event = line.slice(7);
        else if (line.startsWith('data: ')) ev.data = line.slice(6);
      }
      return ev;
    });
}
const json = (events: Event[]) => events.map((e) => JSON.parse(e.data));

/** Reads a body to its end or its failure: a cut stream must still show what arrived before. */
async function readAll(res: Response): Promise<{ text: string; error?: Error }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text };
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    return { text, error: error as Error };
  }
}

const openaiText = (chunks: any[]) => chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
const anthropicText = (events: any[]) =>
  events
    .filter((e) => e.delta?.type === 'text_delta')
    .map((e) => e.delta.text)
    .join('');

describe('splitText', () => {
  it('splits per word or into n pieces, losing nothing', () => {
    expect(splitText(DEFAULT_TEXT)).toEqual(['Hello', ' from', ' the', ' fake', ' upstream.']);
    expect(splitText(' a  b ')).toEqual([' a', '  b ']);
    expect(splitText('abcdefg', 3).join('')).toBe('abcdefg');
    expect(splitText('abcdefg', 3)).toHaveLength(3);
    expect(splitText('ab', 5)).toEqual(['a', 'b']);
    expect(splitText('')).toEqual([]);
  });
});

describe('OpenAI chat completions', () => {
  it('streams the default reply as chat.completion.chunk lines, usage chunk, then [DONE]', async () => {
    const res = await post(OPENAI, { model: 'm', stream: true, stream_options: { include_usage: true }, messages: [] });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = parseSse(await res.text());
    expect(events.every((e) => e.event === undefined)).toBe(true);
    expect(events.at(-1)!.data).toBe('[DONE]');
    const chunks = json(events.slice(0, -1));
    const id = chunks[0].id;
    expect(id).toMatch(/^chatcmpl-/);
    for (const c of chunks) {
      expect(c).toMatchObject({ id, object: 'chat.completion.chunk', model: 'm', created: expect.any(Number) });
    }
    expect(chunks[0].choices[0]).toMatchObject({ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null });
    expect(chunks.slice(1, 6).map((c) => c.choices[0].delta.content)).toEqual(['Hello', ' from', ' the', ' fake', ' upstream.']);
    expect(openaiText(chunks)).toBe(DEFAULT_TEXT);
    expect(chunks[6].choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });
    // Every chunk but the last carries usage: null; the last has no choices and the totals.
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 12, completion_tokens: 6, total_tokens: 18 } });

    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]).toMatchObject({
      path: OPENAI,
      body: { model: 'm', stream: true },
      headers: { authorization: 'Bearer k' },
    });
  });

  it('sends no usage chunk without include_usage, or when usage is null', async () => {
    const plain = json(parseSse(await (await post(OPENAI, { model: 'm', stream: true })).text()).slice(0, -1));
    expect(plain.every((c) => !('usage' in c) && c.choices.length === 1)).toBe(true);

    fake.on('quiet', { kind: 'reply', reply: { text: 'x', usage: null } });
    const quiet = json(
      parseSse(
        await (await post(OPENAI, { model: 'quiet', stream: true, stream_options: { include_usage: true } })).text(),
      ).slice(0, -1),
    );
    expect(quiet.every((c) => c.choices.length === 1 && c.usage === null)).toBe(true);
  });

  it('streams tool calls: id/type/name first, arguments over at least two pieces', async () => {
    const args = '{"city":"Paris","unit":"C"}';
    fake.on('tools', {
      kind: 'reply',
      reply: {
        text: 'Checking.',
        toolCalls: [
          { id: 'call_1', name: 'weather', arguments: args },
          { id: 'call_2', name: 'time', arguments: '{}' },
        ],
      },
    });
    const events = parseSse(await (await post(OPENAI, { model: 'tools', stream: true })).text());
    const chunks = json(events.slice(0, -1));
    expect(openaiText(chunks)).toBe('Checking.');
    const calls = chunks.flatMap((c) => c.choices[0].delta.tool_calls ?? []);
    expect(calls[0]).toEqual({ index: 0, id: 'call_1', type: 'function', function: { name: 'weather', arguments: '' } });
    const argPieces = calls.filter((c) => c.index === 0 && !c.id).map((c) => c.function.arguments);
    expect(argPieces.length).toBeGreaterThanOrEqual(2);
    expect(argPieces.join('')).toBe(args);
    expect(calls.filter((c) => c.index === 1 && c.id)).toEqual([
      { index: 1, id: 'call_2', type: 'function', function: { name: 'time', arguments: '' } },
    ]);
    expect(
      calls
        .filter((c) => c.index === 1)
        .map((c) => c.function.arguments)
        .join(''),
    ).toBe('{}');
    expect(chunks.at(-1).choices[0].finish_reason).toBe('tool_calls');
  });

  it('gives a configured reply without `usage` the default usage (only null means none)', async () => {
    fake.on('plain', { kind: 'reply', reply: { text: 'x' } });
    const chunks = json(
      parseSse(
        await (await post(OPENAI, { model: 'plain', stream: true, stream_options: { include_usage: true } })).text(),
      ).slice(0, -1),
    );
    expect(chunks.at(-1).usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 6, total_tokens: 18 });
  });

  it('reports a usage object exactly as written (`wireUsage`), streamed and whole', async () => {
    const wire = '{"prompt_tokens":1.5e2,"completion_tokens":-5,"odd":"12"}';
    fake.on('wired', { kind: 'reply', reply: { text: 'x', wireUsage: wire } });
    const streamed = await (await post(OPENAI, { model: 'wired', stream: true, stream_options: { include_usage: true } })).text();
    expect(streamed).toContain(`"usage":${wire}}`);
    expect(JSON.parse(parseSse(streamed).at(-2)!.data).usage).toEqual({ prompt_tokens: 150, completion_tokens: -5, odd: '12' });
    const whole = await (await post(OPENAI, { model: 'wired' })).text();
    expect(whole).toContain(`"usage":${wire}`);
  });

  it('reports cache reads and writes within prompt_tokens, and reasoning within completion_tokens, streamed and whole', async () => {
    fake.on('cached', {
      kind: 'reply',
      reply: { text: 'x', usage: { input: 100, cacheRead: 2000, cacheWrite: 300, output: 50, reasoning: 20 } },
    });
    const expected = {
      prompt_tokens: 2400,
      completion_tokens: 50,
      total_tokens: 2450,
      prompt_tokens_details: { cached_tokens: 2000, audio_tokens: 0, cache_write_tokens: 300 },
      completion_tokens_details: {
        reasoning_tokens: 20,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    };
    const chunks = json(
      parseSse(
        await (await post(OPENAI, { model: 'cached', stream: true, stream_options: { include_usage: true } })).text(),
      ).slice(0, -1),
    );
    expect(chunks.at(-1).usage).toEqual(expected);
    expect(((await (await post(OPENAI, { model: 'cached' })).json()) as { usage: unknown }).usage).toEqual(expected);
  });

  it('answers non-streamed requests with a chat.completion object', async () => {
    const res = await post(OPENAI, { model: 'm', messages: [] });
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
    expect(await res.json()).toEqual({
      id: expect.stringMatching(/^chatcmpl-/),
      object: 'chat.completion',
      created: expect.any(Number),
      model: 'm',
      choices: [
        { index: 0, message: { role: 'assistant', content: DEFAULT_TEXT, refusal: null }, logprobs: null, finish_reason: 'stop' },
      ],
      usage: {
        prompt_tokens: 12,
        completion_tokens: 6,
        total_tokens: 18,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: {
          reasoning_tokens: 0,
          audio_tokens: 0,
          accepted_prediction_tokens: 0,
          rejected_prediction_tokens: 0,
        },
      },
    });

    fake.on('tools', { kind: 'reply', reply: { toolCalls: [{ id: 'call_1', name: 'f', arguments: '{"a":1}' }], usage: null } });
    const body: any = await (await post(OPENAI, { model: 'tools' })).json();
    expect(body.usage).toBeUndefined();
    expect(body.choices[0]).toMatchObject({
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
      },
      finish_reason: 'tool_calls',
    });
  });

  it('maps finish reasons (a stop sequence is plain "stop")', async () => {
    for (const [finish, expected] of [
      ['length', 'length'],
      ['stop_sequence', 'stop'],
    ] as const) {
      fake.on(finish, { kind: 'reply', reply: { text: 'x', finish } });
      const body: any = await (await post(OPENAI, { model: finish })).json();
      expect(body.choices[0].finish_reason).toBe(expected);
    }
  });

  it('splits text into `pieces` deltas and honours the delays', async () => {
    fake.on('slow', { kind: 'reply', reply: { text: 'abcdefghij' }, pieces: 3, firstByteDelayMs: 20, chunkDelayMs: 5 });
    const started = performance.now();
    const res = await post(OPENAI, { model: 'slow', stream: true });
    expect(performance.now() - started).toBeGreaterThanOrEqual(15);
    const chunks = json(parseSse(await res.text()).slice(0, -1));
    expect(chunks.filter((c) => c.choices[0].delta.content).map((c) => c.choices[0].delta.content)).toEqual([
      'abc',
      'defg',
      'hij',
    ]);
  });

  it('cut: streams some pieces, then the socket dies without [DONE]', async () => {
    fake.on('cut', { kind: 'cut', reply: { text: 'one two three four' }, afterPieces: 2 });
    const { text, error } = await readAll(await post(OPENAI, { model: 'cut', stream: true }));
    expect(error).toBeDefined();
    const events = parseSse(text);
    expect(events.some((e) => e.data === '[DONE]')).toBe(false);
    expect(openaiText(json(events))).toBe('one two');
    await expect(fake.closed(0)).rejects.toThrow(/closed by the fake/);
  });

  it('malformed: valid pieces, then a data line that is not JSON', async () => {
    fake.on('bad', { kind: 'malformed', afterPieces: 1 });
    const events = parseSse(await (await post(OPENAI, { model: 'bad', stream: true })).text());
    expect(openaiText(json(events.slice(0, -1)))).toBe('Hello');
    expect(() => JSON.parse(events.at(-1)!.data)).toThrow();
  });

  it('stream_error: pieces, then a data: {"error": ...} chunk and no [DONE]', async () => {
    fake.on('err', { kind: 'stream_error', afterPieces: 2 });
    const events = json(parseSse(await (await post(OPENAI, { model: 'err', stream: true })).text()));
    expect(openaiText(events.slice(0, -1))).toBe('Hello from');
    expect(events.at(-1)).toEqual({ error: { message: expect.any(String), type: 'server_error', param: null, code: null } });
  });
});

describe('Anthropic Messages', () => {
  it('streams named events in the real order with ids and usage', async () => {
    const res = await post(ANTHROPIC, { model: 'claude', stream: true, max_tokens: 10, messages: [] });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('request-id')).toMatch(/^req_/);
    const events = parseSse(await res.text());
    expect(events.map((e) => e.event)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      ...Array(5).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const data = json(events);
    data.forEach((d, i) => expect(d.type).toBe(events[i].event));
    expect(data[0].message).toEqual({
      id: expect.stringMatching(/^msg_/),
      type: 'message',
      role: 'assistant',
      model: 'claude',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: 12,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
        output_tokens: 1,
        service_tier: 'standard',
      },
    });
    expect(data[2]).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    expect(data[3]).toEqual({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } });
    expect(anthropicText(data)).toBe(DEFAULT_TEXT);
    expect(data[8]).toEqual({ type: 'content_block_stop', index: 0 });
    expect(data[9]).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { input_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 6 },
    });
    expect(fake.requests[0]).toMatchObject({ path: ANTHROPIC, body: { model: 'claude', max_tokens: 10 } });
  });

  it('streams tool_use blocks as input_json_delta pieces after the text block', async () => {
    const args = '{"city":"Paris"}';
    fake.on('tools', {
      kind: 'reply',
      reply: { text: 'Let me check.', toolCalls: [{ id: 'toolu_1', name: 'weather', arguments: args }] },
    });
    const data = json(parseSse(await (await post(ANTHROPIC, { model: 'tools', stream: true })).text()));
    expect(anthropicText(data)).toBe('Let me check.');
    expect(data.find((d) => d.type === 'content_block_start' && d.index === 1)).toEqual({
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'tool_use', id: 'toolu_1', name: 'weather', input: {} },
    });
    const parts = data.filter((d) => d.delta?.type === 'input_json_delta');
    expect(parts.length).toBeGreaterThanOrEqual(2);
    expect(parts.every((p) => p.index === 1)).toBe(true);
    expect(parts.map((p) => p.delta.partial_json).join('')).toBe(args);
    expect(data.filter((d) => d.type === 'content_block_stop').map((d) => d.index)).toEqual([0, 1]);
    expect(data.at(-2).delta.stop_reason).toBe('tool_use');
  });

  it('maps finish reasons to stop_reason, with the stop sequence when one matched', async () => {
    const cases = [
      ['stop', 'end_turn'],
      ['length', 'max_tokens'],
      ['tool_calls', 'tool_use'],
      ['stop_sequence', 'stop_sequence'],
    ] as const;
    for (const [finish, expected] of cases) {
      fake.on(finish, { kind: 'reply', reply: { text: 'x', finish, stopSequence: 'END' } });
      const streamed = json(parseSse(await (await post(ANTHROPIC, { model: finish, stream: true })).text()));
      const delta = streamed.find((d) => d.type === 'message_delta').delta;
      const whole = await (await post(ANTHROPIC, { model: finish })).json();
      for (const got of [delta, whole]) {
        expect(got).toMatchObject({ stop_reason: expected, stop_sequence: finish === 'stop_sequence' ? 'END' : null });
      }
    }
  });

  it('refuses what the API refuses beside thinking, with its error body, and takes the same body without thinking', async () => {
    const thinking = { type: 'enabled', budget_tokens: 2048 };
    const tools = [{ name: 'f', input_schema: { type: 'object' } }];
    const loop = [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'done' }] },
    ];
    const hi = [{ role: 'user', content: 'Hi' }];
    const refusals: Array<[object, RegExp]> = [
      [
        { messages: loop, tools },
        /^messages\.1\.content\.0\.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`/,
      ],
      [{ messages: hi, temperature: 0.2 }, /^`temperature` may only be set to 1 when thinking is enabled/],
      [{ messages: hi, top_k: 5 }, /^`top_k` must be unset when thinking is enabled/],
      [{ messages: hi, top_p: 0.5 }, /^`top_p` must be greater than or equal to 0\.95/],
      [{ messages: hi, tools, tool_choice: { type: 'any' } }, /^Thinking may not be enabled when tool_choice forces tool use/],
      [{ messages: hi, tools, tool_choice: { type: 'tool', name: 'f' } }, /^Thinking may not be enabled/],
    ];
    for (const [body, message] of refusals) {
      const refused = await post(ANTHROPIC, { model: 'm', max_tokens: 4000, thinking, ...body });
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message } });
      const without = await post(ANTHROPIC, { model: 'm', max_tokens: 4000, ...body });
      expect(without.status).toBe(200);
      await without.text();
    }
    // A thinking block given back whose signature is not its own: refused, thinking on or not.
    const forged = [
      loop[0],
      { role: 'assistant', content: [{ type: 'thinking', thinking: 't', signature: signatureOf('other') }, loop[1].content[0]] },
      loop[2],
    ];
    for (const on of [{ thinking }, {}]) {
      const refused = await post(ANTHROPIC, { model: 'm', max_tokens: 4000, ...on, messages: forged, tools });
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({
        error: { type: 'invalid_request_error', message: 'messages.1.content.0: Invalid `signature` in `thinking` block' },
      });
    }
    // A loop whose turn starts with the thinking it was given with, temperature 1 and top_p 0.95: taken.
    const signed = [
      loop[0],
      { role: 'assistant', content: [{ type: 'thinking', thinking: 't', signature: signatureOf('t') }, loop[1].content[0]] },
      loop[2],
    ];
    const ok = await post(ANTHROPIC, {
      model: 'm',
      max_tokens: 4000,
      thinking,
      messages: signed,
      tools,
      temperature: 1,
      top_p: 0.95,
    });
    expect(ok.status).toBe(200);
    await ok.text();
  });

  it('answers non-streamed requests with a message object', async () => {
    fake.on('tools', {
      kind: 'reply',
      reply: { text: 'Hi', toolCalls: [{ id: 'toolu_1', name: 'f', arguments: '{"a":1}' }], usage: { input: 3, output: 4 } },
    });
    expect(await (await post(ANTHROPIC, { model: 'tools' })).json()).toEqual({
      id: expect.stringMatching(/^msg_/),
      type: 'message',
      role: 'assistant',
      model: 'tools',
      content: [
        { type: 'text', text: 'Hi' },
        { type: 'tool_use', id: 'toolu_1', name: 'f', input: { a: 1 } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: {
        input_tokens: 3,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
        output_tokens: 4,
        service_tier: 'standard',
      },
    });
  });

  it('reports a usage object exactly as written (`wireUsage`) in message_start, message_delta and a whole reply', async () => {
    const wire = '{"input_tokens":1e12,"output_tokens":"6"}';
    fake.on('wired', { kind: 'reply', reply: { text: 'x', wireUsage: wire } });
    const events = parseSse(await (await post(ANTHROPIC, { model: 'wired', max_tokens: 10, stream: true })).text());
    const usages = events.filter((e) => e.data.includes('"usage"')).map((e) => e.event);
    expect(usages).toEqual(['message_start', 'message_delta']);
    for (const e of events.filter((x) => x.data.includes('"usage"'))) expect(e.data).toContain(`"usage":${wire}`);
    expect(await (await post(ANTHROPIC, { model: 'wired', max_tokens: 10 })).text()).toContain(`"usage":${wire}`);
  });

  it("reports the cache's reads and its writes split by how long they live, streamed (message_start, then cumulative message_delta) and whole", async () => {
    fake.on('cached', {
      kind: 'reply',
      reply: { text: 'x', usage: { input: 10, cacheRead: 2000, cacheWrite: 300, cacheWrite1h: 100, output: 50 } },
    });
    const data = json(parseSse(await (await post(ANTHROPIC, { model: 'cached', stream: true })).text()));
    const cache = { cache_creation_input_tokens: 400, cache_read_input_tokens: 2000 };
    const split = { cache_creation: { ephemeral_5m_input_tokens: 300, ephemeral_1h_input_tokens: 100 } };
    expect(data[0].message.usage).toEqual({ input_tokens: 10, ...cache, ...split, output_tokens: 1, service_tier: 'standard' });
    expect(data.find((d) => d.type === 'message_delta').usage).toEqual({ input_tokens: 10, ...cache, output_tokens: 50 });
    expect(((await (await post(ANTHROPIC, { model: 'cached' })).json()) as { usage: unknown }).usage).toEqual({
      input_tokens: 10,
      ...cache,
      ...split,
      output_tokens: 50,
      service_tier: 'standard',
    });
  });

  it('reports no usage at all when usage is null', async () => {
    fake.on('quiet', { kind: 'reply', reply: { text: 'x', usage: null } });
    const data = json(parseSse(await (await post(ANTHROPIC, { model: 'quiet', stream: true })).text()));
    expect(data[0].message.usage).toBeUndefined();
    expect(data.find((d) => d.type === 'message_delta').usage).toBeUndefined();
  });

  it('cut: message_start and some deltas, then the socket dies without message_stop', async () => {
    fake.on('cut', { kind: 'cut', reply: { text: 'one two three' }, afterPieces: 1 });
    const { text, error } = await readAll(await post(ANTHROPIC, { model: 'cut', stream: true }));
    expect(error).toBeDefined();
    const events = parseSse(text);
    expect(events.map((e) => e.event)).toEqual(['message_start', 'ping', 'content_block_start', 'content_block_delta']);
    expect(anthropicText(json(events))).toBe('one');
  });

  it('malformed: valid events, then an event whose data is not JSON', async () => {
    fake.on('bad', { kind: 'malformed', afterPieces: 2 });
    const events = parseSse(await (await post(ANTHROPIC, { model: 'bad', stream: true })).text());
    expect(anthropicText(json(events.slice(0, -1)))).toBe('Hello from');
    expect(events.at(-1)!.event).toBe('content_block_delta');
    expect(() => JSON.parse(events.at(-1)!.data)).toThrow();
  });

  it('stream_error: an `event: error` after some deltas, no message_stop', async () => {
    fake.on('err', { kind: 'stream_error', afterPieces: 0 });
    const events = parseSse(await (await post(ANTHROPIC, { model: 'err', stream: true })).text());
    expect(events.map((e) => e.event)).toEqual(['message_start', 'ping', 'content_block_start', 'error']);
    expect(JSON.parse(events.at(-1)!.data)).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: 'Overloaded' },
    });
  });
});

describe.each([
  ['openai', OPENAI],
  ['anthropic', ANTHROPIC],
] as const)('%s: failures and connection handling', (api, path) => {
  it('status: real-format error bodies by default, or the given body verbatim', async () => {
    const expected = {
      openai: {
        400: { error: { message: expect.any(String), type: 'invalid_request_error', param: null, code: null } },
        429: { error: { message: expect.any(String), type: 'requests', param: null, code: 'rate_limit_exceeded' } },
        500: { error: { message: expect.any(String), type: 'server_error', param: null, code: null } },
      },
      anthropic: {
        400: {
          type: 'error',
          error: { type: 'invalid_request_error', message: expect.any(String) },
          request_id: expect.stringMatching(/^req_/),
        },
        429: { type: 'error', error: { type: 'rate_limit_error', message: expect.any(String) }, request_id: expect.any(String) },
        500: { type: 'error', error: { type: 'api_error', message: expect.any(String) }, request_id: expect.any(String) },
      },
    }[api];
    for (const status of [400, 429, 500] as const) {
      fake.on(`s${status}`, { kind: 'status', status });
      const res = await post(path, { model: `s${status}`, stream: true });
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toBe('application/json');
      expect(await res.json()).toEqual(expected[status]);
    }
    fake.on('html', { kind: 'status', status: 502, body: '<html>Bad Gateway</html>' });
    const res = await post(path, { model: 'html' });
    expect(res.status).toBe(502);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await res.text()).toBe('<html>Bad Gateway</html>');
  });

  it('hang: records the request, never sends headers; closed() sees the abort', async () => {
    fake.on('hang', { kind: 'hang' });
    const abort = new AbortController();
    const response = post(path, { model: 'hang', stream: true }, { signal: abort.signal });
    let settled = false;
    response.then(
      () => (settled = true),
      () => (settled = true),
    );
    const req = await fake.received('hang');
    expect(req.body.model).toBe('hang');
    expect(settled).toBe(false);
    abort.abort();
    await expect(response).rejects.toThrow();
    await fake.closed(0);
  });

  it('hang_after_headers: 200 with SSE headers, then nothing until the client aborts', async () => {
    fake.on('stall', { kind: 'hang_after_headers' });
    const abort = new AbortController();
    const res = await post(path, { model: 'stall', stream: true }, { signal: abort.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const read = readAll(res);
    abort.abort();
    expect((await read).text).toBe('');
    await fake.closed(0);
  });

  it('closed(i) resolves on an abort mid-stream and rejects for a completed request', async () => {
    fake.on('slow', { kind: 'reply', reply: { text: 'a b c d e f g h' }, chunkDelayMs: 20 });
    await (await post(path, { model: 'm', stream: true })).text();
    await expect(fake.closed(0)).rejects.toThrow(/completed/);

    const abort = new AbortController();
    const res = await post(path, { model: 'slow', stream: true }, { signal: abort.signal });
    const reader = res.body!.getReader();
    await reader.read(); // the first frame arrived; the rest is pending on timers
    abort.abort();
    await fake.closed(1);
  });

  it('received(model, nth) waits for the nth request of that model', async () => {
    const second = fake.received('x', 1);
    await (await post(path, { model: 'x' })).text();
    await (await post(path, { model: 'y' })).text();
    await (await post(path, { model: 'x', n: 2 })).text();
    expect((await second).body).toEqual({ model: 'x', n: 2 });
    expect(await fake.received('y')).toBe(fake.requests[1]);
  });

  it('a behaviour function sees the request', async () => {
    fake.on('fn', (req) => ({ kind: 'reply', reply: { text: `echo ${req.body.messages[0]}`, usage: null } }));
    const res = await post(path, { model: 'fn', messages: ['hi'] });
    expect(JSON.stringify(await res.json())).toContain('echo hi');
  });

  it('close() ends hanging and mid-stream requests at once', async () => {
    fake.on('hang', { kind: 'hang' });
    fake.on('slow', { kind: 'reply', reply: { text: 'a b c' }, chunkDelayMs: 20_000 });
    const hanging = post(path, { model: 'hang', stream: true }).catch((e: Error) => e);
    const slow = await post(path, { model: 'slow', stream: true });
    await fake.received('hang');
    const started = performance.now();
    await fake.close();
    expect(performance.now() - started).toBeLessThan(1000);
    expect(await hanging).toMatchObject({ name: 'TypeError' }); // fetch failed (jest's realm has its own Error)
    expect((await readAll(slow)).error).toBeDefined();
    await expect(fake.closed(0)).rejects.toThrow(/closed by the fake/);
  });
});

describe('anthropic: /v1/messages/count_tokens', () => {
  const COUNT = '/v1/messages/count_tokens';

  it('answers {input_tokens} as configured, or about four characters a token of what is counted', async () => {
    fake.on('counted', { kind: 'count', inputTokens: 321 });
    const configured = await post(COUNT, { model: 'counted', messages: [{ role: 'user', content: 'Hi' }] });
    expect(configured.status).toBe(200);
    expect(await configured.json()).toEqual({ input_tokens: 321 });
    const computed = await post(COUNT, { model: 'other', system: 'Be brief.', messages: [{ role: 'user', content: 'Hi' }] });
    expect(await computed.json()).toEqual({
      input_tokens: Math.ceil(JSON.stringify(['Be brief.', [{ role: 'user', content: 'Hi' }], []]).length / 4),
    });
    expect(fake.requests.map((r) => r.path)).toEqual([COUNT, COUNT]);
  });

  it('refuses a body without model or messages, and answers a configured status in the anthropic format', async () => {
    const missing = await post(COUNT, { model: 'm' });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    fake.on('busy', { kind: 'status', status: 529 });
    const busy = await post(COUNT, { model: 'busy', messages: [] });
    expect(busy.status).toBe(529);
    expect(await busy.json()).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
  });
});

it('unknown paths get an OpenAI-style 404, and are still recorded', async () => {
  const res = await post('/v1/nope', { model: 'm' });
  expect(res.status).toBe(404);
  expect(await res.json()).toMatchObject({ error: { type: 'invalid_request_error', message: 'Invalid URL (POST /v1/nope)' } });
  expect(fake.requests[0].path).toBe('/v1/nope');
});

describe('OpenAI Responses', () => {
  it('refuses a max_output_tokens below 16 as the API does (its words, param and code), and serves 16', async () => {
    const refused = await post('/v1/responses', { model: 'm', input: 'quota', max_output_tokens: 15 });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      error: {
        message: "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got 15 instead.",
        type: 'invalid_request_error',
        param: 'max_output_tokens',
        code: 'integer_below_min_value',
      },
    });
    const served = await post('/v1/responses', { model: 'm', input: 'quota', max_output_tokens: 16 });
    expect(served.status).toBe(200);
    expect(await served.json()).toMatchObject({ object: 'response', status: 'completed', max_output_tokens: 16 });
  });
});

describe('what the APIs refuse of stop sequences and tool names', () => {
  it('OpenAI’s chat completions: more than 4 stop sequences, a function name outside ^[a-zA-Z0-9_-]+$ or over 64, naming the parameter', async () => {
    const base = { model: 'gpt-x', messages: [{ role: 'user', content: 'Hi' }] };
    const fn = (name: string) => ({ ...base, tools: [{ type: 'function', function: { name, parameters: { type: 'object' } } }] });
    const refusals: Array<[object, string, string]> = [
      [{ ...base, stop: ['1', '2', '3', '4', '5'] }, 'stop', 'array_above_max_length'],
      [fn('files.read'), 'tools[0].function.name', 'invalid_value'],
      [fn('x'.repeat(65)), 'tools[0].function.name', 'string_above_max_length'],
    ];
    for (const [body, param, code] of refusals) {
      const res = await post(OPENAI, body);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: object }).error).toMatchObject({ type: 'invalid_request_error', param, code });
    }
    expect((await post(OPENAI, { ...fn('read_file'), stop: ['1', '2', '3', '4'] })).status).toBe(200);
  });

  it('the Messages API: a tool name outside ^[a-zA-Z0-9_-]{1,128}$, as its validation words it', async () => {
    const body = (name: string) => ({
      model: 'claude-x',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'Hi' }],
      tools: [{ name, input_schema: { type: 'object' } }],
    });
    for (const name of ['files.read', 'x'.repeat(129)]) {
      const res = await post(ANTHROPIC, body(name));
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'",
        },
      });
    }
    expect((await post(ANTHROPIC, body('x'.repeat(128)))).status).toBe(200);
  });
});
