import { ApiError } from '../../src/http/api-error';
import type { InferenceResult } from '../../src/inference/inference.command';
import { uncachedUsage } from '../../src/ledger/money';
import { betasOf, eventSerializer, toCanonical } from '../../src/surfaces/messages/messages.wire';

describe('messages wire: the anthropic-beta header', () => {
  it('reads comma-separated names, sent once or more, each kept once in order', () => {
    expect(betasOf(undefined)).toEqual([]);
    expect(betasOf('a-2025-01-01')).toEqual(['a-2025-01-01']);
    expect(betasOf(' a-2025-01-01 ,b-2026-01-01,, ')).toEqual(['a-2025-01-01', 'b-2026-01-01']);
    expect(betasOf(['a-2025-01-01,b-2026-01-01', 'a-2025-01-01', 'c-2026-02-02'])).toEqual([
      'a-2025-01-01',
      'b-2026-01-01',
      'c-2026-02-02',
    ]);
  });
});

describe('messages wire: system messages inside the conversation', () => {
  it('adds leading ones to the top-level system and keeps later ones in place; empty ones are dropped', () => {
    const request = toCanonical(
      {
        model: 'vendor/model',
        max_tokens: 10,
        system: 'Top.',
        messages: [
          { role: 'system', content: 'Leading.' },
          { role: 'user', content: 'Hi' },
          { role: 'system', content: [{ type: 'text', text: 'Later.' }] },
          { role: 'system', content: '' },
          { role: 'assistant', content: 'Hello' },
        ],
      },
      ['mid-conversation-system-2026-04-07'],
    );
    expect(request.system).toEqual(['Top.', 'Leading.']);
    expect(request.messages).toEqual([
      { role: 'user', content: 'Hi' },
      { role: 'system', content: 'Later.' },
      { role: 'assistant', content: 'Hello', toolCalls: [] },
    ]);
    expect(request.betas).toEqual(['mid-conversation-system-2026-04-07']);
  });

  it('reads a count_tokens body, which has no cap, as a request without one', () => {
    const request = toCanonical({ model: 'vendor/model', messages: [{ role: 'user', content: 'Hi' }] }, []);
    expect(request).toMatchObject({ maxTokens: undefined, stream: false, messages: [{ role: 'user', content: 'Hi' }] });
  });
});

describe('messages wire: reasoning and images, for hosts of the other format', () => {
  const ask = (extra: Record<string, unknown>) =>
    toCanonical({ model: 'vendor/model', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }], ...extra }, []);

  it('reads thinking as a budget, adaptive thinking as its effort (medium when unsaid), disabled as none', () => {
    expect(ask({ thinking: { type: 'enabled', budget_tokens: 2048 } }).reasoning).toEqual({ budgetTokens: 2048 });
    expect(ask({ thinking: { type: 'adaptive' }, output_config: { effort: 'low' } }).reasoning).toEqual({ effort: 'low' });
    expect(ask({ thinking: { type: 'adaptive' }, output_config: { effort: 'max' } }).reasoning).toEqual({ effort: 'high' });
    expect(ask({ thinking: { type: 'adaptive' } }).reasoning).toEqual({ effort: 'medium' });
    expect(ask({ thinking: { type: 'disabled' } }).reasoning).toEqual({ effort: 'none' });
    expect(ask({}).reasoning).toBeUndefined();
  });

  it('reads image blocks by base64 and URL as images of the user message; a file reference has no counterpart', () => {
    const request = ask({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQ' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
            { type: 'image', source: { type: 'file', file_id: 'file_01' } },
            { type: 'text', text: 'Compare them.' },
          ],
        },
      ],
    });
    expect(request.messages).toEqual([
      {
        role: 'user',
        content: 'Compare them.',
        images: [{ url: 'data:image/jpeg;base64,/9j/4AAQ' }, { url: 'https://example.com/a.png' }],
      },
    ]);
  });

  it('reads the thinking given back in an assistant turn, with its last signature, for hosts that take it back', () => {
    const turn = (content: unknown[]) =>
      toCanonical(
        {
          model: 'vendor/model',
          max_tokens: 100,
          messages: [
            { role: 'user', content: 'Hi' },
            { role: 'assistant', content: content as never },
          ],
        },
        [],
      ).messages[1];
    expect(
      turn([
        { type: 'thinking', thinking: 'First. ', signature: '' },
        { type: 'thinking', thinking: 'Second.', signature: 'sig-2' },
        { type: 'tool_use', id: 't1', name: 'f', input: {} },
      ]),
    ).toEqual({
      role: 'assistant',
      content: '',
      toolCalls: [{ id: 't1', name: 'f', arguments: '{}' }],
      reasoning: { text: 'First. Second.', signature: 'sig-2' },
    });
    // Each block signed and none redacted: the blocks themselves too, for Claude hosts, which check each signature.
    const reasoningOf = (content: object[]) => (turn(content) as { reasoning?: unknown }).reasoning;
    expect(
      reasoningOf([
        { type: 'thinking', thinking: 'First. ', signature: 'sig-1' },
        { type: 'thinking', thinking: 'Second.', signature: 'sig-2' },
        { type: 'tool_use', id: 't1', name: 'f', input: {} },
      ]),
    ).toEqual({
      text: 'First. Second.',
      signature: 'sig-2',
      blocks: [
        { thinking: 'First. ', signature: 'sig-1' },
        { thinking: 'Second.', signature: 'sig-2' },
      ],
    });
    expect(
      reasoningOf([
        { type: 'redacted_thinking', data: 'ZW5j' },
        { type: 'thinking', thinking: 'Second.', signature: 'sig-2' },
        { type: 'tool_use', id: 't1', name: 'f', input: {} },
      ]),
    ).toEqual({ text: 'Second.', signature: 'sig-2' });
    expect(
      turn([
        { type: 'thinking', thinking: 'Unsigned.' },
        { type: 'text', text: 'Hello.' },
      ]),
    ).toEqual({
      role: 'assistant',
      content: 'Hello.',
      toolCalls: [],
      reasoning: { text: 'Unsigned.' },
    });
    expect(turn([{ type: 'text', text: 'Hello.' }])).not.toHaveProperty('reasoning');
  });

  it('keeps the body itself, for a host of this format', () => {
    const body = { model: 'vendor/model', max_tokens: 100, messages: [{ role: 'user' as const, content: 'Hi' }] };
    expect(toCanonical(body, []).original).toEqual({ format: 'messages', body });
  });
});

describe('messages wire: a stream passed whole ends once it is billed', () => {
  const result = { requestId: 'req-1', model: { slug: 'test/claude' }, created: 0, stream: true } as unknown as InferenceResult;
  const passed = (event: string, data: Record<string, unknown>) => ({ type: 'pass_through', event, data }) as const;

  it("holds the host's message_delta and message_stop until the close, and sends its other events as they come", () => {
    const serializer = eventSerializer(result);
    const start = serializer.event(
      passed('message_start', { type: 'message_start', message: { id: 'msg_1', model: 'host-model' } }),
    );
    expect(start).toContain('"model":"test/claude"');
    expect(serializer.event(passed('content_block_delta', { type: 'content_block_delta', delta: { text: 'Hi' } }))).toContain(
      'event: content_block_delta',
    );
    expect(serializer.event(passed('message_delta', { type: 'message_delta', usage: { output_tokens: 1 } }))).toBe('');
    expect(serializer.event(passed('message_stop', { type: 'message_stop' }))).toBe('');
    expect(serializer.event({ type: 'billed', usage: uncachedUsage(12, 1), cost: 51_000, host: 'h', position: 7 })).toBe('');
    // The host's own message_delta, named with the settlement's position.
    expect(serializer.close()).toBe(
      'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":1},"ledger_position":7}\n\n' +
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    );
  });

  it('never sends them when the settlement is refused: the error takes their place', () => {
    const serializer = eventSerializer(result);
    serializer.event(passed('message_start', { type: 'message_start', message: { id: 'msg_1' } }));
    expect(serializer.event(passed('message_delta', { type: 'message_delta' }))).toBe('');
    expect(serializer.event(passed('message_stop', { type: 'message_stop' }))).toBe('');
    const error = serializer.error(new ApiError('unavailable', 'the charge for this reply could not be recorded'));
    expect(error).toContain('event: error');
    expect(error).not.toContain('message_stop');
  });

  describe('server tools (run by the host)', () => {
    const weather = { name: 'get_weather', input_schema: { type: 'object', properties: {} } };
    const search = { type: 'web_search_20250305', name: 'web_search', max_uses: 5 };
    const fetch = { type: 'web_fetch_20250910', name: 'web_fetch' };
    const ask = (extra: Record<string, unknown>) =>
      toCanonical({ model: 'vendor/model', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }], ...extra }, []);

    it("are classified for admission to decide on (the body stays whole), apart from the client's own tools", () => {
      const request = ask({ tools: [search, weather, fetch], tool_choice: { type: 'any' } });
      expect(request.tools.map((t) => t.name)).toEqual(['get_weather']);
      expect(request.toolChoice).toBe('required');
      expect(request.hostedTools).toEqual({
        hosted: ['web_search_20250305', 'web_fetch_20250910'],
        clientTools: true,
        required: 'any',
      });
      expect(request.original!.body).toMatchObject({ tools: [search, weather, fetch], tool_choice: { type: 'any' } });
      expect(request.omittedTools).toBeUndefined();
      expect(ask({ tools: [weather] }).hostedTools).toBeUndefined();
    });

    it('one named by tool_choice is the hosted tool required, no function choice', () => {
      const request = ask({ tools: [search, weather], tool_choice: { type: 'tool', name: 'web_search' } });
      expect(request.hostedTools!.required).toEqual({ hosted: 'web_search_20250305' });
      expect(request.toolChoice).toBeUndefined();
      // A function named keeps its choice.
      expect(ask({ tools: [search, weather], tool_choice: { type: 'tool', name: 'get_weather' } }).toolChoice).toEqual({
        name: 'get_weather',
      });
    });
  });
});
