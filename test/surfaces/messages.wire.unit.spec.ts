import { betasOf, toCanonical } from '../../src/surfaces/messages/messages.wire';

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
