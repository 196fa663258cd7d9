import { openAiHost } from '../../src/hosts/openai/openai.host';
import { CanonicalRequest } from '../../src/canonical/canonical';

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
      { type: 'usage', inputTokens: 12, outputTokens: 2 },
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
      { type: 'usage', inputTokens: 30, outputTokens: 9 },
    ]);
  });

  it('respects an explicit zero usage, and leaves out a usage the host did not give', () => {
    expect(openAiHost.decodeReply(completion({ content: '' }, 'stop', { prompt_tokens: 0, completion_tokens: 0 }))).toEqual([
      { type: 'finish', reason: 'stop' },
      { type: 'usage', inputTokens: 0, outputTokens: 0 },
    ]);
    expect(openAiHost.decodeReply(completion({ content: 'x' }, 'length', null))).toEqual([
      { type: 'text', text: 'x' },
      { type: 'finish', reason: 'length' },
    ]);
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
