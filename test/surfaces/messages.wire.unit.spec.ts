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

  it('keeps the body itself, for a host of this format', () => {
    const body = { model: 'vendor/model', max_tokens: 100, messages: [{ role: 'user' as const, content: 'Hi' }] };
    expect(toCanonical(body, []).original).toEqual({ format: 'messages', body });
  });
});
