import type { CanonicalRequest } from '../../src/canonical/canonical';
import { estimateInputTokens, tokensForChars } from '../../src/inference/tokens';

describe('tokens without a tokenizer', () => {
  it('counts four characters a token, rounded up', () => {
    expect([0, 1, 4, 5, 8].map(tokensForChars)).toEqual([0, 1, 1, 2, 2]);
  });

  it('estimates a request from its text, tool calls and tools, plus framing per message', () => {
    const request: CanonicalRequest = {
      system: ['abcd'], // 4
      messages: [
        { role: 'user', content: 'abcdefgh' }, // 8
        { role: 'assistant', content: '', toolCalls: [{ id: 'c', name: 'ab', arguments: '{}' }] }, // 4
        { role: 'tool', toolCallId: 'c', content: 'ab' }, // 2
      ],
      tools: [{ name: 'ab', description: 'cd', parameters: {} }], // 2 + 2 + 2
      stop: [],
      stream: false,
    };
    // 24 characters = 6 tokens; 4 messages (system included) × 4; 3 for the reply's priming.
    expect(estimateInputTokens(request)).toBe(6 + 16 + 3);
  });

  it('counts a system message inside the conversation as any other message', () => {
    const base: CanonicalRequest = {
      system: [],
      messages: [{ role: 'user', content: 'abcd' }],
      tools: [],
      stop: [],
      stream: false,
    };
    const withSystem: CanonicalRequest = { ...base, messages: [...base.messages, { role: 'system', content: 'efgh' }] };
    expect(estimateInputTokens(withSystem) - estimateInputTokens(base)).toBe(1 + 4);
  });
});
