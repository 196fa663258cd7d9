import { openAiHost } from '../../src/hosts/openai/openai.host';
import { CanonicalEvent, CanonicalRequest, Usage } from '../../src/canonical/canonical';
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

describe('openAiHost.buildRequest', () => {
  it('streams when the client streams, always asking for usage', () => {
    const upstream = openAiHost.buildRequest(request(), 'gpt-x', 'sk-upstream');
    expect(upstream.body).toMatchObject({ model: 'gpt-x', stream: true, stream_options: { include_usage: true } });
    expect(upstream.headers).toMatchObject({ accept: 'text/event-stream', authorization: 'Bearer sk-upstream' });
  });

  it('asks for a whole reply (which carries its usage) when the client does not stream', () => {
    const upstream = openAiHost.buildRequest(request({ stream: false }), 'gpt-x', null);
    expect(upstream.body).toMatchObject({
      stream: false,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
    });
    expect(upstream.body).not.toHaveProperty('stream_options');
    expect(upstream.headers).toEqual({ 'content-type': 'application/json', accept: 'application/json' });
  });
});

describe('openAiHost.buildRequest, system messages', () => {
  it('sends a system message inside the conversation in its place, and ignores betas', () => {
    const upstream = openAiHost.buildRequest(
      request({
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'system', content: 'Now be terse.' },
          { role: 'user', content: 'Again' },
        ],
        betas: ['mid-conversation-system-2026-04-07'],
      }),
      'gpt-x',
      null,
    );
    expect((upstream.body as { messages: unknown }).messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
      { role: 'system', content: 'Now be terse.' },
      { role: 'user', content: 'Again' },
    ]);
    expect(upstream.headers).not.toHaveProperty('anthropic-beta');
  });
});

describe('openAiHost.decodeReply (a whole, non-streamed completion)', () => {
  const completion = (message: Record<string, unknown>, finish: string, usage: unknown) =>
    JSON.stringify({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1,
      model: 'gpt-x',
      choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish }],
      usage,
    });

  it('gives the text, the finish and the usage', () => {
    expect(
      openAiHost.decodeReply(
        completion({ content: 'Paris.' }, 'stop', { prompt_tokens: 12, completion_tokens: 2, total_tokens: 14 }),
      ),
    ).toEqual([
      { type: 'text', text: 'Paris.' },
      { type: 'finish', reason: 'stop' },
      counted({ inputTokens: 12, outputTokens: 2 }),
    ]);
  });

  it('gives each tool call whole, in order', () => {
    const calls = [
      { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
      { id: 'call_2', type: 'function', function: { name: 'time', arguments: '{}' } },
    ];
    expect(
      openAiHost.decodeReply(
        completion({ content: null, tool_calls: calls }, 'tool_calls', { prompt_tokens: 30, completion_tokens: 9 }),
      ),
    ).toEqual([
      { type: 'tool_call', index: 0, id: 'call_1', name: 'weather', argumentsDelta: '{"city":"Paris"}' },
      { type: 'tool_call', index: 1, id: 'call_2', name: 'time', argumentsDelta: '{}' },
      { type: 'finish', reason: 'tool_calls' },
      counted({ inputTokens: 30, outputTokens: 9 }),
    ]);
  });

  describe('passes usage counts on as the host wrote them, for the pipeline to check (see usage-check.ts)', () => {
    const usageOf = (wire: unknown) => openAiHost.decodeReply(completion({ content: 'x' }, 'stop', wire)).at(-1);

    it('negative, fractional and huge numbers as they are; cached input beyond the prompt as negative uncached input', () => {
      expect(usageOf({ prompt_tokens: -3, completion_tokens: 1e12 })).toEqual(counted({ inputTokens: -3, outputTokens: 1e12 }));
      expect(usageOf({ prompt_tokens: 12.5, completion_tokens: 2 })).toEqual(counted({ inputTokens: 12.5, outputTokens: 2 }));
      expect(usageOf({ prompt_tokens: 10, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 30 } })).toEqual(
        counted({ inputTokens: -20, cacheReadTokens: 30, outputTokens: 2 }),
      );
    });

    it('a count that is not a number, or a required one missing, as NaN (which no check passes)', () => {
      expect(usageOf({ prompt_tokens: '12', completion_tokens: 2 })).toEqual(counted({ inputTokens: NaN, outputTokens: 2 }));
      expect(usageOf({ prompt_tokens: 12 })).toEqual(counted({ inputTokens: 12, outputTokens: NaN }));
      expect(usageOf({ prompt_tokens: 12, completion_tokens: 2, prompt_tokens_details: { cached_tokens: {} } })).toEqual(
        counted({ inputTokens: NaN, cacheReadTokens: NaN, outputTokens: 2 }),
      );
    });

    it('a reasoning count (shown, never billed) only when it is a whole number ≥ 0', () => {
      const wire = { prompt_tokens: 1, completion_tokens: 2, completion_tokens_details: { reasoning_tokens: -4 } };
      expect(usageOf(wire)).toEqual(counted({ inputTokens: 1, outputTokens: 2 }));
    });
  });

  it('reads replies of unexpected shapes without throwing anything but a HostError', () => {
    const odd = JSON.stringify({
      choices: [{ message: { content: 5, tool_calls: 'call', reasoning: {} }, finish_reason: '__proto__' }],
    });
    expect(openAiHost.decodeReply(odd)).toEqual([{ type: 'finish', reason: 'stop' }]);
    const calls = JSON.stringify({
      choices: [{ message: { tool_calls: [null, { id: 7, function: { name: {}, arguments: 1 } }] } }],
    });
    expect(openAiHost.decodeReply(calls)).toEqual([{ type: 'tool_call', index: 0, id: '', name: '', argumentsDelta: '' }]);
  });

  it('respects an explicit zero usage, and leaves out a usage the host did not give', () => {
    expect(openAiHost.decodeReply(completion({ content: '' }, 'stop', { prompt_tokens: 0, completion_tokens: 0 }))).toEqual([
      { type: 'finish', reason: 'stop' },
      counted({}),
    ]);
    expect(openAiHost.decodeReply(completion({ content: 'x' }, 'length', null))).toEqual([
      { type: 'text', text: 'x' },
      { type: 'finish', reason: 'length' },
    ]);
  });

  describe('given usage with cached input and reasoning', () => {
    const details = {
      prompt_tokens: 2000,
      completion_tokens: 300,
      total_tokens: 2300,
      prompt_tokens_details: { cached_tokens: 1500, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 250, audio_tokens: 0 },
    };

    it('when decoded, then the cached tokens are taken out of prompt_tokens, and reasoning is counted within the output', () => {
      expect(openAiHost.decodeReply(completion({ content: 'x' }, 'stop', details)).at(-1)).toEqual(
        counted({ inputTokens: 500, cacheReadTokens: 1500, outputTokens: 300, reasoningTokens: 250 }),
      );
    });

    it('when the host also reports cache writes (cache_write_tokens), then they are 5-minute writes, also out of prompt_tokens', () => {
      const withWrites = { ...details, prompt_tokens_details: { cached_tokens: 1500, cache_write_tokens: 400 } };
      expect(openAiHost.decodeReply(completion({ content: 'x' }, 'stop', withWrites)).at(-1)).toEqual(
        counted({ inputTokens: 100, cacheReadTokens: 1500, cacheWriteTokens: 400, outputTokens: 300, reasoningTokens: 250 }),
      );
    });

    it('when streamed, then the usage chunk is decoded the same way', () => {
      const decoder = openAiHost.decoder();
      const chunk = (fields: Record<string, unknown>) => ({
        data: JSON.stringify({ id: 'c', object: 'chat.completion.chunk', ...fields }),
      });
      const events = [
        chunk({ choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: null }], usage: null }),
        chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: null }),
        chunk({ choices: [], usage: details }),
        { data: '[DONE]' },
      ].flatMap((message) => decoder.push(message));
      expect(events).toEqual([
        { type: 'text', text: 'Hi' },
        { type: 'finish', reason: 'stop' },
        counted({ inputTokens: 500, cacheReadTokens: 1500, outputTokens: 300, reasoningTokens: 250 }),
      ]);
      expect(decoder.done).toBe(true);
    });
  });

  it('fails as an upstream error on an error body, and as malformed on anything unreadable', () => {
    const decoding = (body: string) => expect(() => openAiHost.decodeReply(body));
    decoding(JSON.stringify({ error: { message: 'The server is overloaded' } })).toThrow(
      expect.objectContaining({ kind: 'upstream_error', message: 'The server is overloaded' }),
    );
    for (const body of ['{"id":"chatcmpl', 'null', '{"choices":[]}'])
      decoding(body).toThrow(expect.objectContaining({ kind: 'malformed' }));
  });
});

describe('openAiHost.buildRequest, across formats: reasoning and images', () => {
  it('sends an effort as reasoning_effort, and a thinking budget as the effort it amounts to', () => {
    const effort = (reasoning: CanonicalRequest['reasoning']) =>
      (openAiHost.buildRequest(request({ reasoning }), 'o-x', null).body as Record<string, unknown>).reasoning_effort;
    expect(effort({ effort: 'minimal' })).toBe('minimal');
    expect(effort({ budgetTokens: 4096 })).toBe('low');
    expect(effort({ budgetTokens: 4097 })).toBe('medium');
    expect(effort({ budgetTokens: 16_384 })).toBe('medium');
    expect(effort({ budgetTokens: 31_999 })).toBe('high');
    expect(effort(undefined)).toBeUndefined();
  });

  it('sends images as image_url parts before the text', () => {
    const body = openAiHost.buildRequest(
      request({ messages: [{ role: 'user', content: 'What is this?', images: [{ url: 'data:image/png;base64,AAA=' }] }] }),
      'gpt-x',
      null,
    ).body as { messages: unknown[] };
    expect(body.messages[1]).toEqual({
      role: 'user',
      content: [
        { type: 'image_url', image_url: { url: 'data:image/png;base64,AAA=' } },
        { type: 'text', text: 'What is this?' },
      ],
    });
  });
});

describe('openAiHost, a chat-completions body passed whole', () => {
  const original = { model: 'vendor/model', messages: [{ role: 'user', content: 'Hi' }], max_completion_tokens: 32_000, seed: 7 };
  it("is the client's body with the host's model, the lowered cap in the client's own field, and usage asked for on a stream", () => {
    const upstream = openAiHost.buildRequest(
      request({ maxTokens: 1000, original: { format: 'chat-completions', body: original } }),
      'gpt-x',
      null,
    );
    expect(upstream.passThrough).toBe(true);
    expect(upstream.body).toEqual({
      ...original,
      model: 'gpt-x',
      max_completion_tokens: 1000,
      stream_options: { include_usage: true },
    });
  });

  it('leaves a cap under the limit, and a whole reply unasked for usage, as they were', () => {
    const upstream = openAiHost.buildRequest(
      request({ stream: false, maxTokens: 32_000, original: { format: 'chat-completions', body: original } }),
      'gpt-x',
      null,
    );
    expect(JSON.stringify(upstream.body)).toBe(JSON.stringify({ ...original, model: 'gpt-x' }));
  });

  it('reads reasoning under either field name, and passes each chunk on ahead of what it decodes to', () => {
    const decoder = openAiHost.decoder(true);
    const chunk = { id: 'c1', choices: [{ index: 0, delta: { reasoning_content: 'Hmm.' }, finish_reason: null }] };
    expect(decoder.push({ data: JSON.stringify(chunk) })).toEqual([
      { type: 'pass_through', data: chunk },
      // The reply keeps the host's id (the first chunk's): the client may look the request up by it.
      { type: 'upstream_id', id: 'c1' },
      { type: 'reasoning', text: 'Hmm.' },
    ]);
    // Said once: every chunk repeats it.
    expect(decoder.push({ data: JSON.stringify(chunk) })).toEqual([
      { type: 'pass_through', data: chunk },
      { type: 'reasoning', text: 'Hmm.' },
    ]);
    expect(openAiHost.decoder().push({ data: JSON.stringify({ choices: [{ delta: { reasoning: 'So.' } }] }) })).toEqual([
      { type: 'reasoning', text: 'So.' },
    ]);
    expect(decoder.push({ data: '[DONE]' })).toEqual([]);
  });
});
