import { EMPTY } from 'rxjs';
import type { InferenceResult } from '../../src/inference/inference.command';
import { chunkSerializer, toCanonical } from '../../src/surfaces/chat-completions/chat-completions.wire';

const result: InferenceResult = {
  requestId: 'req_0123456789abcdef',
  model: {
    slug: 'vendor/model-1.5',
    kind: 'chat',
    id: '7d0c3f9e-0000-4000-8000-000000000001',
    name: 'Model',
    contextLength: 8192,
    maxOutputTokens: 1024,
    reasoning: false,
    created: 0,
    hosts: [],
  },
  created: 1_700_000_000,
  stream: true,
  events: EMPTY,
};

const parse = (line: string) => {
  expect(line.startsWith('data: ')).toBe(true);
  expect(line.endsWith('\n\n')).toBe(true);
  return JSON.parse(line.slice(6));
};

describe('chat-completions stream chunks', () => {
  it('writes each text delta as a whole chunk, whatever the text holds', () => {
    const serializer = chunkSerializer(result, false);
    for (const text of ['Hello', 'he said "hi"\n', 'back\\slash', 'émoji 🎉', '</script>', '', 'text slot 9e3c']) {
      expect(parse(serializer.event({ type: 'text', text }))).toEqual({
        id: 'chatcmpl-0123456789abcdef',
        object: 'chat.completion.chunk',
        created: 1_700_000_000,
        model: 'vendor/model-1.5',
        choices: [{ index: 0, delta: { content: text }, logprobs: null, finish_reason: null }],
      });
    }
  });

  it('gives text deltas the same shape as its other chunks', () => {
    const serializer = chunkSerializer(result, false);
    const text = parse(serializer.event({ type: 'text', text: 'x' }));
    const finish = parse(serializer.event({ type: 'finish', reason: 'stop' }));
    expect(Object.keys(text)).toEqual(Object.keys(finish));
    expect(Object.keys(text.choices[0])).toEqual(Object.keys(finish.choices[0]));
  });
});

describe('chat-completions system and developer messages', () => {
  it('keeps the leading ones as the instructions and later ones in place', () => {
    const request = toCanonical({
      model: 'vendor/model',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'developer', content: 'Use tools.' },
        { role: 'user', content: 'Hi' },
        { role: 'developer', content: [{ type: 'text', text: 'Now be terse.' }] },
        { role: 'user', content: 'Again' },
      ],
    });
    expect(request.system).toEqual(['Be brief.', 'Use tools.']);
    expect(request.messages).toEqual([
      { role: 'user', content: 'Hi' },
      { role: 'system', content: 'Now be terse.' },
      { role: 'user', content: 'Again' },
    ]);
  });

  it('offers web_search_options (a hosted web search) for admission to decide on, the body whole', () => {
    const request = toCanonical({
      model: 'vendor/model',
      messages: [{ role: 'user', content: 'What is new today?' }],
      web_search_options: { search_context_size: 'low' },
    });
    expect(request.hostedTools).toEqual({ hosted: ['web_search'], clientTools: false, required: null });
    expect(request.original!.body).toHaveProperty('web_search_options');
    expect(toCanonical({ model: 'vendor/model', messages: [{ role: 'user', content: 'Hi' }] }).hostedTools).toBeUndefined();
  });
});
