import type { CanonicalMessage, CanonicalRequest } from '../../src/canonical/canonical';
import { thinkingConflict } from '../../src/hosts/anthropic/anthropic.thinking';

/**
 * The decision whether Anthropic's thinking can go with a translated request: given a request, then
 * the conflict the API would refuse it for (null: none). No host, no wire.
 */

const request = (overrides: Partial<CanonicalRequest> = {}): CanonicalRequest => ({
  system: [],
  messages: [{ role: 'user', content: 'Weather in Paris?' }],
  tools: [{ name: 'get_weather', parameters: { type: 'object' } }],
  stop: [],
  stream: false,
  reasoning: { effort: 'high' },
  ...overrides,
});

const call = { id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' };
const calling: CanonicalMessage = { role: 'assistant', content: '', toolCalls: [call] };
const result: CanonicalMessage = { role: 'tool', toolCallId: 'call_1', content: '18°C' };
const answered: CanonicalMessage = { role: 'assistant', content: 'It is 18°C.', toolCalls: [] };
const asked = (content: string): CanonicalMessage => ({ role: 'user', content });

describe('thinkingConflict', () => {
  it('lets thinking go with a first turn, tools offered, sampling left alone or within what thinking takes', () => {
    expect(thinkingConflict(request())).toBeNull();
    expect(thinkingConflict(request({ toolChoice: 'auto' }))).toBeNull();
    expect(thinkingConflict(request({ toolChoice: 'none' }))).toBeNull();
    expect(thinkingConflict(request({ temperature: 1, topP: 0.95 }))).toBeNull();
    expect(thinkingConflict(request({ topP: 1 }))).toBeNull();
  });

  it('names a tool_choice that forces a tool, the web search the gateway requires included', () => {
    expect(thinkingConflict(request({ toolChoice: 'required' }))).toBe('tool_choice');
    expect(thinkingConflict(request({ toolChoice: { name: 'get_weather' } }))).toBe('tool_choice');
    const search = { classes: ['webSearch' as const], maxUses: 5 };
    expect(thinkingConflict(request({ tools: [], carriedTools: { ...search, required: 'webSearch' } }))).toBe('tool_choice');
    // `required` with only a web search offered: the translation sends `any`.
    expect(thinkingConflict(request({ tools: [], toolChoice: 'required', carriedTools: search }))).toBe('tool_choice');
    // Without tools the translation sends no tool_choice at all.
    expect(thinkingConflict(request({ tools: [], toolChoice: 'required' }))).toBeNull();
  });

  it('names the sampling the API refuses beside thinking: temperature other than 1, any top_k, top_p outside 0.95-1', () => {
    expect(thinkingConflict(request({ temperature: 0.2 }))).toBe('temperature');
    expect(thinkingConflict(request({ temperature: 0 }))).toBe('temperature');
    expect(thinkingConflict(request({ topK: 40 }))).toBe('top_k');
    expect(thinkingConflict(request({ topP: 0.9 }))).toBe('top_p');
  });

  it('names a tool loop in flight: the last assistant turn holds calls, which go back with no thinking block', () => {
    expect(thinkingConflict(request({ messages: [asked('Weather?'), calling, result] }))).toBe('tool_loop');
    // Text before the calls, in one message or merged from two: the turn still holds them.
    const said: CanonicalMessage = { role: 'assistant', content: 'Let me look.', toolCalls: [] };
    expect(thinkingConflict(request({ messages: [asked('Weather?'), said, calling, result] }))).toBe('tool_loop');
    // Reasoning with one signature of the whole (another format's) cannot go back block by block: the loop still conflicts.
    const signed: CanonicalMessage = { ...calling, reasoning: { text: 'Look it up.', signature: 'c2ln' } };
    expect(thinkingConflict(request({ messages: [asked('Weather?'), signed, result] }))).toBe('tool_loop');
  });

  it('lets thinking go in a tool loop whose turn opens with the thinking blocks a messages client gave back', () => {
    const blocks = [{ thinking: 'Look it up.', signature: 'c2ln' }];
    const given: CanonicalMessage = { ...calling, reasoning: { text: 'Look it up.', signature: 'c2ln', blocks } };
    expect(thinkingConflict(request({ messages: [asked('Weather?'), given, result] }))).toBeNull();
    // Merged from two messages, the thinking must open the turn: on the first one.
    const said: CanonicalMessage = { role: 'assistant', content: 'Let me look.', toolCalls: [], reasoning: given.reasoning };
    expect(thinkingConflict(request({ messages: [asked('Weather?'), said, calling, result] }))).toBeNull();
    expect(thinkingConflict(request({ messages: [asked('Weather?'), { ...said, reasoning: undefined }, given, result] }))).toBe(
      'tool_loop',
    );
  });

  it('lets thinking go once the loop has ended: the last assistant turn answered in text', () => {
    expect(
      thinkingConflict(request({ messages: [asked('Weather?'), calling, result, answered, asked('And Rome?')] })),
    ).toBeNull();
    // An empty assistant message takes no turn; a system message between turns changes nothing.
    const empty: CanonicalMessage = { role: 'assistant', content: '', toolCalls: [] };
    const system: CanonicalMessage = { role: 'system', content: 'Be brief.' };
    expect(thinkingConflict(request({ messages: [asked('Weather?'), calling, result, answered, system, empty] }))).toBeNull();
  });
});
