import fc from 'fast-check';
import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { bodiesFor } from '../support/fuzz';

const M = TEST_MODELS;
const RUNS = 5_000;

/** Blocks of every kind the surfaces know (and some they do not), with fields right, wrong or missing. */
const content = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.array(
    fc.record(
      {
        type: fc.constantFrom('text', 'image', 'image_url', 'tool_use', 'tool_result', 'thinking', 'document', 'other'),
        text: fc.oneof(fc.string({ maxLength: 20 }), fc.anything({ maxDepth: 2 })),
        id: fc.string({ maxLength: 8 }),
        name: fc.string({ maxLength: 8 }),
        input: fc.oneof(fc.object({ maxDepth: 2 }), fc.anything({ maxDepth: 2 })),
        tool_use_id: fc.string({ maxLength: 8 }),
        content: fc.anything({ maxDepth: 2 }),
        source: fc.anything({ maxDepth: 2 }),
      },
      { requiredKeys: ['type'] },
    ),
    { maxLength: 3 },
  ),
);
const messages = fc.array(
  fc.record(
    {
      role: fc.constantFrom('user', 'assistant', 'system', 'tool', 'developer'),
      content,
      tool_calls: fc.anything({ maxDepth: 3 }),
      tool_call_id: fc.string({ maxLength: 8 }),
    },
    { requiredKeys: ['role'] },
  ),
  { maxLength: 3 },
);
/** A conversation every surface takes, or one of the above. */
const conversation = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .array(fc.record({ role: fc.constantFrom('user', 'assistant'), content: fc.string({ minLength: 1, maxLength: 20 }) }), {
        minLength: 1,
        maxLength: 3,
      })
      .map((turns) => [...turns, { role: 'user', content: 'hi' }]),
  },
  { weight: 2, arbitrary: messages },
);
const model = fc.constantFrom(M.gpt.slug, M.claude.slug, M.fallback.slug, 'nobody/nothing');
const any = fc.anything({ maxDepth: 3 });

/** Gemini API contents: parts of every kind (and some it does not have), with fields right, wrong or missing. */
const part = fc.record({
  text: fc.oneof(fc.string({ maxLength: 20 }), fc.anything({ maxDepth: 1 })),
  thought: fc.anything({ maxDepth: 1 }),
  thoughtSignature: fc.string({ maxLength: 8 }),
  inlineData: fc.record({ mimeType: fc.constantFrom('image/png', 'audio/wav', ''), data: fc.anything({ maxDepth: 1 }) }),
  fileData: fc.record({
    mimeType: fc.constantFrom('image/png', 'text/plain'),
    fileUri: fc.constantFrom('https://x/y.png', 'gs://b/o'),
  }),
  functionCall: fc.record({
    id: fc.string({ maxLength: 6 }),
    name: fc.string({ maxLength: 6 }),
    args: fc.anything({ maxDepth: 2 }),
  }),
  functionResponse: fc.record({
    id: fc.string({ maxLength: 6 }),
    name: fc.string({ maxLength: 6 }),
    response: fc.anything({ maxDepth: 2 }),
  }),
  other: fc.anything({ maxDepth: 1 }),
});
const geminiContents = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .array(fc.record({ role: fc.constantFrom('user', 'model'), parts: fc.constant([{ text: 'turn' }]) }), { maxLength: 3 })
      .map((turns) => [...turns, { role: 'user', parts: [{ text: 'hi' }] }]),
  },
  {
    weight: 2,
    arbitrary: fc.array(
      fc.record(
        { role: fc.constantFrom('user', 'model', 'function', 'system'), parts: fc.array(part, { maxLength: 3 }) },
        { requiredKeys: ['parts'] },
      ),
      { maxLength: 3 },
    ),
  },
);
/**
 * The Gemini routes' fields, each as a good value looks (bodiesFor mixes in wrong ones). Good values
 * are good: with garbage among them only a few bodies in 5,000 got past validation, and some runs none.
 */
const geminiFields = {
  contents: geminiContents,
  systemInstruction: fc.oneof(fc.string({ maxLength: 20 }), fc.record({ parts: fc.array(part, { maxLength: 2 }) })),
  tools: fc.constantFrom([], [{ functionDeclarations: [{ name: 'lookup', parameters: { type: 'object', properties: {} } }] }]),
  toolConfig: fc.constantFrom({ functionCallingConfig: { mode: 'AUTO' } }, { functionCallingConfig: { mode: 'NONE' } }),
  generationConfig: fc.record(
    {
      maxOutputTokens: fc.integer({ min: 1, max: 50 }),
      temperature: fc.double({ min: 0, max: 2, noNaN: true }),
      candidateCount: fc.constant(1),
      thinkingConfig: fc.record({ thinkingBudget: fc.integer({ min: 0, max: 2000 }), includeThoughts: fc.boolean() }),
      responseMimeType: fc.constantFrom('text/plain', 'application/json'),
    },
    { requiredKeys: [] },
  ),
};
const geminiModel = fc.constantFrom(M.gpt.slug, M.claude.slug, 'gpt', 'nobody/nothing');

describe('API surfaces: fuzzed bodies', () => {
  let g: TestGateway;
  beforeAll(async () => {
    // Ample credit: thousands of bodies are served here, and a balance run down would answer every later one 402.
    g = await startGateway({ credits: 10_000_000_000_000 });
  });
  afterAll(async () => {
    await g.settled();
    expect((await g.audit()).differences).toEqual([]);
    await g.close();
  });

  it.each([
    [
      '/api/v1/chat/completions',
      {
        model,
        messages: conversation,
        max_tokens: fc.integer({ min: 1, max: 50 }),
        stream: fc.boolean(),
        tools: any,
        tool_choice: any,
        stop: fc.array(fc.string({ minLength: 1, maxLength: 5 }), { maxLength: 2 }),
      },
    ],
    [
      '/api/v1/messages',
      {
        model,
        messages: conversation,
        max_tokens: fc.integer({ min: 1, max: 50 }),
        stream: fc.boolean(),
        system: fc.string({ maxLength: 20 }),
        tools: any,
      },
    ],
    [
      `/api/v1/models/${M.gpt.slug}/chat`,
      {
        messages: conversation,
        max_tokens: fc.integer({ min: 1, max: 50 }),
        stream: fc.boolean(),
        system: fc.string({ maxLength: 20 }),
      },
    ],
    ['/api/v1/messages/count_tokens', { model, messages: conversation, system: fc.string({ maxLength: 20 }), tools: any }],
    [`/api/v1beta/models/{model}:generateContent`, geminiFields],
    [`/api/v1beta/models/{model}:streamGenerateContent?alt=sse`, geminiFields],
    [`/api/v1beta/models/{model}:countTokens`, { contents: geminiContents }],
  ])(`answers ${RUNS} fuzzed bodies on POST %s with no 5xx, each with an id`, async (template, fields) => {
    const fastify = g.app.getHttpAdapter().getInstance();
    const statuses = new Set<number>();
    await fc.assert(
      // The Gemini routes name the model in the path.
      fc.asyncProperty(bodiesFor(fields), geminiModel, async (payload, named) => {
        const res = await fastify.inject({
          method: 'POST',
          url: template.replace('{model}', named),
          payload,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${g.key}`, 'anthropic-version': '2023-06-01' },
        });
        if (res.statusCode >= 500) throw new Error(`${res.statusCode} ${res.body.slice(0, 300)} for ${payload.slice(0, 300)}`);
        expect(res.headers['x-request-id']).toMatch(/^req_/);
        statuses.add(res.statusCode);
      }),
      { numRuns: RUNS },
    );
    // Past validation too: some were served (or counted).
    // (On failure, the statuses seen instead.)
    expect([...statuses].some((s) => s < 300) ? 'some served' : [...statuses]).toBe('some served');
  });
});
