import { CanonicalEvent, CanonicalRequest, HostError, Usage } from '../../src/canonical/canonical';
import {
  geminiHost as host,
  geminiUsageOf,
  SKIP_SIGNATURE,
  thinkingConfigOf,
  thinkingRangeOf,
} from '../../src/hosts/gemini/gemini.host';
import { HOST_KINDS } from '../../src/hosts/hosts';
import { usage } from '../support/usage';

const request = (overrides: Partial<CanonicalRequest> = {}): CanonicalRequest => ({
  system: ['Be brief.'],
  messages: [{ role: 'user', content: 'Hi' }],
  tools: [],
  stop: [],
  stream: true,
  ...overrides,
});

/** usageMetadata as the Gemini API writes it: the prompt count includes the cached tokens; thoughts apart from the candidates. */
const metadata = {
  promptTokenCount: 1200,
  cachedContentTokenCount: 1000,
  candidatesTokenCount: 50,
  thoughtsTokenCount: 30,
  totalTokenCount: 1280,
};

/** A response (or stream chunk) with one candidate made of `parts`. */
const responseOf = (parts: unknown[], extra: Record<string, unknown> = {}, candidate: Record<string, unknown> = {}) => ({
  candidates: [{ content: { role: 'model', parts }, index: 0, ...candidate }],
  modelVersion: 'gemini-2.5-flash',
  responseId: 'resp-1',
  ...extra,
});

const chunk = (data: unknown) => ({ data: JSON.stringify(data) });

/** The tool_call events, their minted ids (when the host gave none) replaced so they can be compared. */
const withoutMintedIds = (events: CanonicalEvent[]) =>
  events.map((e) => (e.type === 'tool_call' && e.id?.startsWith('call_') ? { ...e, id: 'minted' } : e));

describe('geminiHost.buildRequest', () => {
  it('is registered as the gemini kind', () => {
    expect(HOST_KINDS.gemini).toBe(host);
  });

  it('posts to the model’s generateContent, or streamGenerateContent as SSE, with the key in x-goog-api-key', () => {
    const streamed = host.buildRequest(request(), 'gemini-2.5-flash', 'AIza-upstream');
    expect(streamed.path).toBe('/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    expect(streamed.headers).toEqual({ 'content-type': 'application/json', 'x-goog-api-key': 'AIza-upstream' });
    expect(streamed.body).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'Hi' }] }],
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      generationConfig: { candidateCount: 1 },
    });
    const whole = host.buildRequest(request({ stream: false }), 'gemini-2.5-flash', null);
    expect(whole.path).toBe('/models/gemini-2.5-flash:generateContent');
    expect(whole.headers).toEqual({ 'content-type': 'application/json' });
  });

  it('translates a conversation: images, model turns with calls, results as function responses by name, merged turns', () => {
    const upstream = host.buildRequest(
      request({
        system: ['One.'],
        messages: [
          {
            role: 'user',
            content: 'What are these?',
            images: [
              { url: 'data:image/png;base64,AAAA' },
              { url: 'https://example.com/cat.JPG?size=2' },
              { url: 'https://example.com/x' },
            ],
          },
          {
            role: 'assistant',
            content: 'Let me look.',
            toolCalls: [
              { id: 'call_1', name: 'lookup', arguments: '{"q":"x"}' },
              { id: 'call_2', name: 'weather', arguments: 'not json' },
            ],
          },
          { role: 'tool', toolCallId: 'call_1', content: 'a cat' },
          { role: 'tool', toolCallId: 'call_2', content: 'sunny' },
          { role: 'system', content: 'Answer in French.' },
          { role: 'user', content: 'And?' },
          { role: 'assistant', content: '', toolCalls: [] },
        ],
      }),
      'gemini-2.5-pro',
      null,
    );
    expect(upstream.body).toMatchObject({
      systemInstruction: { parts: [{ text: 'One.\n\nAnswer in French.' }] },
      contents: [
        {
          role: 'user',
          parts: [
            { inlineData: { mimeType: 'image/png', data: 'AAAA' } },
            { fileData: { mimeType: 'image/jpeg', fileUri: 'https://example.com/cat.JPG?size=2' } },
            { fileData: { fileUri: 'https://example.com/x' } },
            { text: 'What are these?' },
          ],
        },
        {
          role: 'model',
          parts: [
            { text: 'Let me look.' },
            { functionCall: { name: 'lookup', args: { q: 'x' } } },
            // Arguments that are not an object are replayed as {}: the call happened.
            { functionCall: { name: 'weather', args: {} } },
          ],
        },
        {
          // The results of parallel calls and the user's next words: one user turn.
          role: 'user',
          parts: [
            { functionResponse: { name: 'lookup', response: { output: 'a cat' } } },
            { functionResponse: { name: 'weather', response: { output: 'sunny' } } },
            { text: 'And?' },
          ],
        },
      ],
    });
    expect((upstream.body as { contents: unknown[] }).contents).toHaveLength(3);
  });

  it('gives a model turn’s thought signature back on its first call, else on its last part', () => {
    const contents = (messages: CanonicalRequest['messages']) =>
      (host.buildRequest(request({ messages }), 'gemini-3-pro', null).body as { contents: unknown[] }).contents;
    expect(
      contents([
        { role: 'user', content: 'Hi' },
        {
          role: 'assistant',
          content: 'Looking.',
          toolCalls: [
            { id: 'a', name: 'one', arguments: '{}' },
            { id: 'b', name: 'two', arguments: '{}' },
          ],
          reasoning: { text: 'Thinking.', signature: 'sig-1' },
        },
      ])[1],
    ).toEqual({
      role: 'model',
      parts: [
        { text: 'Looking.' },
        { functionCall: { name: 'one', args: {} }, thoughtSignature: 'sig-1' },
        { functionCall: { name: 'two', args: {} } },
      ],
    });
    expect(
      contents([
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello.', toolCalls: [], reasoning: { text: 'Hm.', signature: 'sig-2' } },
      ])[1],
    ).toEqual({ role: 'model', parts: [{ text: 'Hello.', thoughtSignature: 'sig-2' }] });
    // Unsigned reasoning has nothing Gemini can read back.
    expect(
      contents([
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello.', toolCalls: [], reasoning: { text: 'Hm.' } },
      ])[1],
    ).toEqual({ role: 'model', parts: [{ text: 'Hello.' }] });
  });

  it('declares tools with their JSON schema, and the tool choice as the function calling mode', () => {
    const parameters = {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    };
    const body = (toolChoice?: CanonicalRequest['toolChoice']) =>
      host.buildRequest(request({ tools: [{ name: 'weather', description: 'Weather', parameters }], toolChoice }), 'm', null)
        .body as Record<string, unknown>;
    expect(body().tools).toEqual([
      { functionDeclarations: [{ name: 'weather', description: 'Weather', parametersJsonSchema: parameters }] },
    ]);
    expect(body()).not.toHaveProperty('toolConfig');
    expect(body('auto').toolConfig).toEqual({ functionCallingConfig: { mode: 'AUTO' } });
    expect(body('required').toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY' } });
    expect(body('none').toolConfig).toEqual({ functionCallingConfig: { mode: 'NONE' } });
    expect(body({ name: 'weather' }).toolConfig).toEqual({
      functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['weather'] },
    });
    // No tools: no tool choice either.
    expect(host.buildRequest(request({ toolChoice: 'required' }), 'm', null).body).not.toHaveProperty('toolConfig');
  });

  it('runs a carried web search as Google Search grounding, beside the functions; nothing when none is carried', () => {
    const weather = { name: 'weather', parameters: { type: 'object' } };
    const tools = (overrides: Partial<CanonicalRequest>) =>
      (host.buildRequest(request(overrides), 'gemini-2.5-flash', null).body as { tools?: unknown[] }).tools;
    const carriedTools = { classes: ['webSearch' as const], maxUses: 5 };
    expect(tools({ carriedTools })).toEqual([{ googleSearch: {} }]);
    expect(tools({ carriedTools, tools: [weather] })).toEqual([
      { functionDeclarations: [{ name: 'weather', parametersJsonSchema: weather.parameters }] },
      { googleSearch: {} },
    ]);
    // Beside functions (Gemini 3), the server-side invocations the API asks for, with the client's choice.
    const config = (toolChoice?: CanonicalRequest['toolChoice']) =>
      (host.buildRequest(request({ carriedTools, tools: [weather], toolChoice }), 'gemini-3-pro-preview', null).body as any)
        .toolConfig;
    expect(config()).toEqual({ includeServerSideToolInvocations: true });
    expect(config('required')).toEqual({ functionCallingConfig: { mode: 'ANY' }, includeServerSideToolInvocations: true });
    expect(host.buildRequest(request({ carriedTools }), 'gemini-3-pro-preview', null).body).not.toHaveProperty('toolConfig');
    expect(tools({})).toBeUndefined();
    // A fetch carried, as URL context.
    expect(tools({ carriedTools: { classes: ['webSearch', 'webFetch'], maxUses: 5 } })).toEqual([
      { googleSearch: {} },
      { urlContext: {} },
    ]);
    expect(host.hostedTools).toMatchObject({ whole: new Set(), translated: new Set(['webSearch', 'webFetch']) });
  });

  it('puts the sampling, the cap, the stop sequences and the thinking in generationConfig', () => {
    const config = (overrides: Partial<CanonicalRequest>) =>
      (host.buildRequest(request(overrides), 'm', null).body as { generationConfig: Record<string, unknown> }).generationConfig;
    expect(config({ maxTokens: 1000, temperature: 0.2, topP: 0.9, topK: 40, stop: ['END'] })).toEqual({
      candidateCount: 1,
      maxOutputTokens: 1000,
      temperature: 0.2,
      topP: 0.9,
      topK: 40,
      stopSequences: ['END'],
    });
    expect(config({ reasoning: { budgetTokens: 2048 } }).thinkingConfig).toEqual({ thinkingBudget: 2048, includeThoughts: true });
    // Efforts as Google maps them: low 1,024, medium 8,192, high 24,576; minimal 512.
    expect(
      (['minimal', 'low', 'medium', 'high'] as const).map(
        (effort) => config({ maxTokens: 65536, reasoning: { effort } }).thinkingConfig,
      ),
    ).toEqual([512, 1024, 8192, 24576].map((thinkingBudget) => ({ thinkingBudget, includeThoughts: true })));
    expect(config({ reasoning: { effort: 'none' } }).thinkingConfig).toEqual({ thinkingBudget: 0 });
  });
});

describe('a Gemini 3 tool loop from a client that keeps no signatures', () => {
  const loop = (reasoning?: { text: string; signature?: string }): CanonicalRequest['messages'] => [
    { role: 'user', content: 'Weather in Paris and Rome?' },
    {
      role: 'assistant',
      content: '',
      toolCalls: [
        { id: 'a', name: 'weather', arguments: '{"city":"Paris"}' },
        { id: 'b', name: 'weather', arguments: '{"city":"Rome"}' },
      ],
      ...(reasoning ? { reasoning } : {}),
    },
    { role: 'tool', toolCallId: 'a', content: 'Sunny' },
    { role: 'tool', toolCallId: 'b', content: 'Rain' },
    { role: 'assistant', content: '', toolCalls: [{ id: 'c', name: 'weather', arguments: '{"city":"Oslo"}' }] },
    { role: 'tool', toolCallId: 'c', content: 'Snow' },
  ];
  const modelTurns = (messages: CanonicalRequest['messages'], hostModel: string) =>
    (
      host.buildRequest(request({ messages }), hostModel, null).body as { contents: Array<{ role: string; parts: any[] }> }
    ).contents
      .filter((c) => c.role === 'model')
      .map((c) => c.parts);

  it('sends each step’s first call with Google’s placeholder signature, the others without', () => {
    for (const model of ['gemini-3-pro-preview', 'gemini-3-flash-preview', 'publishers/google/models/gemini-3.1-pro-preview'])
      expect(modelTurns(loop(), model)).toEqual([
        [
          { functionCall: { name: 'weather', args: { city: 'Paris' } }, thoughtSignature: SKIP_SIGNATURE },
          { functionCall: { name: 'weather', args: { city: 'Rome' } } },
        ],
        [{ functionCall: { name: 'weather', args: { city: 'Oslo' } }, thoughtSignature: SKIP_SIGNATURE }],
      ]);
    expect(SKIP_SIGNATURE).toBe('skip_thought_signature_validator');
  });

  it('keeps a real signature where the history has one', () => {
    expect(
      modelTurns(loop({ text: '', signature: 'real' }), 'gemini-3-pro-preview').map((parts) => parts[0].thoughtSignature),
    ).toEqual(['real', SKIP_SIGNATURE]);
  });

  it('sends none to Gemini 2.5, which checks none, nor on a turn without calls', () => {
    expect(
      modelTurns(loop(), 'gemini-2.5-flash')
        .flat()
        .filter((part) => 'thoughtSignature' in part),
    ).toEqual([]);
    const text: CanonicalRequest['messages'] = [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello.', toolCalls: [] },
      { role: 'user', content: 'Bye' },
    ];
    expect(modelTurns(text, 'gemini-3-pro-preview')).toEqual([[{ text: 'Hello.' }]]);
  });
});

describe('thinking a model takes', () => {
  const none = { effort: 'none' as const };

  it('knows the 2.5 budgets Google lists, and no others', () => {
    expect(thinkingRangeOf('gemini-2.5-pro')).toEqual({ min: 128, max: 32768, canDisable: false });
    expect(thinkingRangeOf('models/gemini-2.5-flash-preview-09-2025')).toEqual({ min: 1, max: 24576, canDisable: true });
    expect(thinkingRangeOf('gemini-2.5-flash-lite')).toEqual({ min: 512, max: 24576, canDisable: true });
    expect(thinkingRangeOf('fake-gemini')).toBeNull();
  });

  it('bounds a budget to the model’s range', () => {
    expect(thinkingConfigOf({ budgetTokens: 64 }, 'gemini-2.5-pro')).toEqual({ thinkingBudget: 128, includeThoughts: true });
    expect(thinkingConfigOf({ budgetTokens: 60000 }, 'gemini-2.5-pro')).toEqual({ thinkingBudget: 32768, includeThoughts: true });
    expect(thinkingConfigOf({ budgetTokens: 30000 }, 'gemini-2.5-flash')).toEqual({
      thinkingBudget: 24576,
      includeThoughts: true,
    });
    expect(thinkingConfigOf({ budgetTokens: 100 }, 'gemini-2.5-flash-lite')).toEqual({
      thinkingBudget: 512,
      includeThoughts: true,
    });
    expect(thinkingConfigOf({ budgetTokens: 60000 }, 'fake-gemini')).toEqual({ thinkingBudget: 60000, includeThoughts: true });
  });

  it('none is a budget of 0 where thinking turns off, else the least thinking, named as not carried', () => {
    expect(thinkingConfigOf(none, 'gemini-2.5-flash')).toEqual({ thinkingBudget: 0 });
    expect(thinkingConfigOf(none, 'gemini-2.5-flash-lite')).toEqual({ thinkingBudget: 0 });
    expect(thinkingConfigOf(none, 'gemini-2.5-pro')).toEqual({ thinkingBudget: 128 });
    expect(thinkingConfigOf(none, 'gemini-3-pro-preview')).toEqual({ thinkingLevel: 'low' });
    expect(thinkingConfigOf(none, 'gemini-3-flash-preview')).toEqual({ thinkingLevel: 'minimal' });
    const omitted = (reasoning: CanonicalRequest['reasoning'], model: string) =>
      host.omittedReasoning!(request({ reasoning }), model);
    expect(omitted(none, 'gemini-2.5-pro')).toBe('thinking_required');
    expect(omitted(none, 'gemini-3-pro-preview')).toBe('thinking_required');
    expect(omitted(none, 'gemini-3-flash-preview')).toBe('thinking_required');
    expect(omitted(none, 'gemini-2.5-flash')).toBeNull();
    expect(omitted({ effort: 'low' }, 'gemini-2.5-pro')).toBeNull();
    expect(omitted(undefined, 'gemini-2.5-pro')).toBeNull();
  });

  it('an effort is Gemini 3’s thinking level (low or high on Pro); a budget stays a budget', () => {
    const level = (effort: 'minimal' | 'low' | 'medium' | 'high', model: string) => thinkingConfigOf({ effort }, model);
    expect((['minimal', 'low', 'medium', 'high'] as const).map((e) => level(e, 'gemini-3-pro-preview'))).toEqual(
      ['low', 'low', 'high', 'high'].map((thinkingLevel) => ({ thinkingLevel, includeThoughts: true })),
    );
    expect((['minimal', 'low', 'medium', 'high'] as const).map((e) => level(e, 'gemini-3-flash-preview'))).toEqual(
      ['minimal', 'low', 'medium', 'high'].map((thinkingLevel) => ({ thinkingLevel, includeThoughts: true })),
    );
    expect(thinkingConfigOf({ budgetTokens: 2048 }, 'gemini-3-pro-preview')).toEqual({
      thinkingBudget: 2048,
      includeThoughts: true,
    });
  });

  it('reasoning asked with neither effort nor budget is the model’s dynamic thinking, shown', () => {
    expect(thinkingConfigOf({}, 'gemini-2.5-pro')).toEqual({ includeThoughts: true });
  });
});

describe('geminiHost.decodeReply', () => {
  it('decodes thoughts with their signature, text, calls (each its own index) and the usage by class', () => {
    const body = responseOf(
      [
        { text: 'Thinking.', thought: true },
        { text: 'Calling.' },
        { functionCall: { name: 'lookup', args: { q: 'x' } }, thoughtSignature: 'sig' },
        { functionCall: { id: 'fc-2', name: 'weather', args: { city: 'Paris' } } },
      ],
      { usageMetadata: metadata },
      { finishReason: 'STOP' },
    );
    expect(withoutMintedIds(host.decodeReply(JSON.stringify(body)))).toEqual([
      { type: 'reasoning', text: 'Thinking.' },
      { type: 'text', text: 'Calling.' },
      { type: 'reasoning', text: '', signature: 'sig' },
      { type: 'tool_call', index: 0, id: 'minted', name: 'lookup', argumentsDelta: '{"q":"x"}' },
      { type: 'tool_call', index: 1, id: 'fc-2', name: 'weather', argumentsDelta: '{"city":"Paris"}' },
      { type: 'finish', reason: 'tool_calls' },
      {
        type: 'usage',
        // 1,200 prompt tokens of which 1,000 cached; 50 candidates' and 30 thoughts' tokens as output.
        usage: usage({ inputTokens: 200, cacheReadTokens: 1000, outputTokens: 80, reasoningTokens: 30 }),
      },
    ]);
  });

  it('mints distinct ids for calls the host did not name', () => {
    const events = host.decodeReply(
      JSON.stringify(
        responseOf([{ functionCall: { name: 'a', args: {} } }, { functionCall: { name: 'b' } }], {}, { finishReason: 'STOP' }),
      ),
    );
    const ids = events.flatMap((e) => (e.type === 'tool_call' ? [e.id] : []));
    expect(ids).toHaveLength(2);
    expect(new Set(ids).size).toBe(2);
    expect(ids.every((id) => /^call_[0-9a-f]{24}$/.test(id!))).toBe(true);
  });

  it.each([
    ['STOP', 'stop'],
    ['MAX_TOKENS', 'length'],
    ['SAFETY', 'content_filter'],
    ['RECITATION', 'content_filter'],
    ['BLOCKLIST', 'content_filter'],
    ['PROHIBITED_CONTENT', 'content_filter'],
    ['SPII', 'content_filter'],
    ['IMAGE_SAFETY', 'content_filter'],
    ['MALFORMED_FUNCTION_CALL', 'stop'],
    ['OTHER', 'stop'],
    ['SOMETHING_NEW', 'stop'],
  ])('maps the finish reason %s to %s', (wire, reason) => {
    const events = host.decodeReply(JSON.stringify(responseOf([{ text: 'x' }], {}, { finishReason: wire })));
    expect(events).toContainEqual({ type: 'finish', reason });
  });

  it('ends a blocked prompt (no candidate) as a content filter, with its usage', () => {
    const body = { promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 } };
    expect(host.decodeReply(JSON.stringify(body))).toEqual([
      { type: 'finish', reason: 'content_filter' },
      { type: 'usage', usage: usage({ inputTokens: 9 }) },
    ]);
  });

  it('counts the tool-use prompt as input, and grounding as Google bills it: per grounded prompt (2.5), per distinct non-empty query (3)', () => {
    const body = responseOf(
      [{ text: 'Found.' }],
      {
        usageMetadata: { promptTokenCount: 100, candidatesTokenCount: 10, toolUsePromptTokenCount: 400, totalTokenCount: 510 },
      },
      {
        finishReason: 'STOP',
        groundingMetadata: { webSearchQueries: ['weather paris', '', 'weather paris', 'paris forecast'], groundingChunks: [] },
      },
    );
    const searches = (hostModel: string) =>
      (host.decodeReply(JSON.stringify(body), false, undefined, hostModel).at(-1) as { usage: Usage }).usage;
    expect(searches('gemini-2.5-flash')).toEqual({
      ...usage({ inputTokens: 500, outputTokens: 10 }),
      hostedToolUses: { webSearch: 1 },
    });
    expect(searches('gemini-3-pro-preview').hostedToolUses).toEqual({ webSearch: 2 });
    expect(searches('gemini-3.1-flash').hostedToolUses).toEqual({ webSearch: 2 });
    // Grounded on pages without a query: one grounded prompt on 2.5, no query billed on 3.
    const pagesOnly = responseOf(
      [{ text: 'x' }],
      { usageMetadata: { promptTokenCount: 1 } },
      {
        groundingMetadata: { webSearchQueries: [''], groundingChunks: [{ web: { uri: 'https://a.example', title: 'a' } }] },
      },
    );
    const uses = (hostModel: string) =>
      (host.decodeReply(JSON.stringify(pagesOnly), false, undefined, hostModel).at(-1) as { usage: Usage }).usage.hostedToolUses;
    expect(uses('gemini-2.0-flash')).toEqual({ webSearch: 1 });
    expect(uses('gemini-3-flash-preview')).toBeUndefined();
  });

  it('counts each page URL context retrieved as a fetch, once, whatever chunk reports it; failed retrievals none', () => {
    const page = (retrievedUrl: string, urlRetrievalStatus = 'URL_RETRIEVAL_STATUS_SUCCESS') => ({
      retrievedUrl,
      urlRetrievalStatus,
    });
    const decoder = host.decoder(false, undefined, 'gemini-2.5-flash');
    decoder.push(
      chunk(
        responseOf(
          [{ text: 'Read.' }],
          { usageMetadata: { promptTokenCount: 3 } },
          {
            urlContextMetadata: {
              urlMetadata: [page('https://a.example'), page('https://b.example', 'URL_RETRIEVAL_STATUS_ERROR')],
            },
          },
        ),
      ),
    );
    const last = decoder.push(
      chunk(
        responseOf(
          [],
          { usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, toolUsePromptTokenCount: 900 } },
          {
            finishReason: 'STOP',
            urlContextMetadata: { urlMetadata: [page('https://a.example'), page('https://c.example')] },
          },
        ),
      ),
    );
    expect(last.at(-1)).toEqual({
      type: 'usage',
      usage: { ...usage({ inputTokens: 903, outputTokens: 1 }), hostedToolUses: { webFetch: 2 } },
    });
  });

  it("gives the grounding's supports as citations of the reply's characters (Google's offsets are UTF-8 bytes), each page once", () => {
    const text = 'Il fait 21 °C. Sunny.';
    const page = (uri: string, title: string) => ({ web: { uri, title } });
    const body = responseOf(
      [{ text }],
      { usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 5 } },
      {
        finishReason: 'STOP',
        groundingMetadata: {
          webSearchQueries: ['météo'],
          groundingChunks: [
            page('https://a.example/r', 'a.example'),
            { retrievedContext: { uri: 'gs://x' } },
            page('https://b.example/r', 'b.example'),
          ],
          groundingSupports: [
            { segment: { endIndex: 15, text: 'Il fait 21 °C.' }, groundingChunkIndices: [0, 1] },
            { segment: { startIndex: 16, endIndex: 22, text: 'Sunny.' }, groundingChunkIndices: [2, 7] },
          ],
        },
      },
    );
    const citations = host.decodeReply(JSON.stringify(body)).filter((e) => e.type === 'citation');
    expect(citations).toEqual([
      { type: 'citation', url: 'https://a.example/r', title: 'a.example', start: 0, end: 14 },
      { type: 'citation', url: 'https://b.example/r', title: 'b.example', start: 15, end: 21 },
    ]);
    expect(text.slice(15, 21)).toBe('Sunny.');
  });

  it('leaves absurd or missing counts for the pipeline’s check: NaN where the prompt count is not a number', () => {
    expect(geminiUsageOf({ candidatesTokenCount: 5 }).inputTokens).toBeNaN();
    expect(geminiUsageOf({ promptTokenCount: '12', candidatesTokenCount: 5 }).inputTokens).toBeNaN();
    expect(geminiUsageOf({ promptTokenCount: 12, candidatesTokenCount: 1e12 }).outputTokens).toBe(1e12);
    expect(geminiUsageOf({ promptTokenCount: 12, candidatesTokenCount: { n: 1 } }).outputTokens).toBeNaN();
    // A reply that generated nothing has no candidates' count.
    expect(geminiUsageOf({ promptTokenCount: 12 })).toEqual(usage({ inputTokens: 12 }));
  });

  it('refuses what is not a reply, and reports the error a reply carries', () => {
    expect(() => host.decodeReply('{"candidates":')).toThrow(HostError);
    expect(() => host.decodeReply('[]')).toThrow(/not a JSON object/);
    expect(() => host.decodeReply('{"usageMetadata":{}}')).toThrow(/without candidates/);
    expect(() => host.decodeReply('{"error":{"code":500,"message":"Internal","status":"INTERNAL"}}')).toThrow(
      'INTERNAL: Internal',
    );
  });

  it('passed through, yields the reply itself and its id', () => {
    const body = responseOf([{ text: 'Hi' }], {}, { finishReason: 'STOP' });
    const events = host.decodeReply(JSON.stringify(body), true);
    expect(events[0]).toEqual({ type: 'upstream_id', id: 'resp-1' });
    expect(events.at(-1)).toEqual({ type: 'pass_through', data: body });
  });
});

describe('geminiHost.decoder', () => {
  it('decodes a stream chunk by chunk, the cumulative usage replacing itself, done with the finishing chunk and its usage', () => {
    const decoder = host.decoder();
    const prompt = { promptTokenCount: 20, totalTokenCount: 20 };
    expect(decoder.push(chunk(responseOf([{ text: 'Weighing', thought: true }], { usageMetadata: prompt })))).toEqual([
      { type: 'reasoning', text: 'Weighing' },
      { type: 'usage', usage: usage({ inputTokens: 20 }) },
    ]);
    expect(decoder.push(chunk(responseOf([{ text: 'Hello' }], { usageMetadata: prompt })))).toEqual([
      { type: 'text', text: 'Hello' },
      { type: 'usage', usage: usage({ inputTokens: 20 }) },
    ]);
    expect(decoder.done).toBe(false);
    const final = { promptTokenCount: 20, candidatesTokenCount: 7, thoughtsTokenCount: 12, totalTokenCount: 39 };
    expect(
      decoder.push(
        chunk(responseOf([{ text: '', thoughtSignature: 'sig' }], { usageMetadata: final }, { finishReason: 'STOP' })),
      ),
    ).toEqual([
      { type: 'reasoning', text: '', signature: 'sig' },
      { type: 'finish', reason: 'stop' },
      { type: 'usage', usage: usage({ inputTokens: 20, outputTokens: 19, reasoningTokens: 12 }) },
    ]);
    expect(decoder.done).toBe(true);
  });

  it('numbers the calls across chunks, and finishes a reply that called as tool_calls', () => {
    const decoder = host.decoder();
    const events = [
      ...decoder.push(chunk(responseOf([{ functionCall: { name: 'a', args: { x: 1 } } }]))),
      ...decoder.push(chunk(responseOf([{ functionCall: { name: 'b', args: {} } }]))),
      ...decoder.push(
        chunk(responseOf([], { usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 3 } }, { finishReason: 'STOP' })),
      ),
    ];
    expect(withoutMintedIds(events)).toEqual([
      { type: 'tool_call', index: 0, id: 'minted', name: 'a', argumentsDelta: '{"x":1}' },
      { type: 'tool_call', index: 1, id: 'minted', name: 'b', argumentsDelta: '{}' },
      { type: 'finish', reason: 'tool_calls' },
      { type: 'usage', usage: usage({ inputTokens: 5, outputTokens: 3 }) },
    ]);
  });

  it('is done with the usage that follows a finish, not before', () => {
    const decoder = host.decoder();
    decoder.push(chunk(responseOf([{ text: 'Hi' }], {}, { finishReason: 'STOP' })));
    expect(decoder.done).toBe(false);
    expect(
      decoder.push(chunk({ usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1 }, responseId: 'resp-1' })),
    ).toEqual([{ type: 'usage', usage: usage({ inputTokens: 3, outputTokens: 1 }) }]);
    expect(decoder.done).toBe(true);
  });

  it('reports grounding searches with the usage, even when they come after it', () => {
    const decoder = host.decoder();
    decoder.push(chunk(responseOf([{ text: 'Found.' }], { usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2 } })));
    expect(decoder.push(chunk(responseOf([], {}, { groundingMetadata: { webSearchQueries: ['q'] } })))).toEqual([
      { type: 'usage', usage: { ...usage({ inputTokens: 3, outputTokens: 2 }), hostedToolUses: { webSearch: 1 } } },
    ]);
  });

  it('ends a blocked prompt as a content filter, done', () => {
    const decoder = host.decoder();
    expect(
      decoder.push(chunk({ promptFeedback: { blockReason: 'PROHIBITED_CONTENT' }, usageMetadata: { promptTokenCount: 4 } })),
    ).toEqual([
      { type: 'finish', reason: 'content_filter' },
      { type: 'usage', usage: usage({ inputTokens: 4 }) },
    ]);
    expect(decoder.done).toBe(true);
  });

  it('fails on an error chunk or a chunk that is not JSON, retryable only before output', () => {
    const error = chunk({ error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } });
    const before = host.decoder();
    expect(() => before.push(error)).toThrow(expect.objectContaining({ kind: 'upstream_error', beforeOutput: true }));
    const after = host.decoder();
    after.push(chunk(responseOf([{ text: 'Hi' }])));
    expect(() => after.push(error)).toThrow(
      expect.objectContaining({ kind: 'upstream_error', beforeOutput: false, message: 'UNAVAILABLE: The model is overloaded.' }),
    );
    expect(() => after.push({ data: '{"candidates": [' })).toThrow(
      expect.objectContaining({ kind: 'malformed', beforeOutput: false }),
    );
  });

  it('passed through, yields each chunk first, and the response id with the first', () => {
    const decoder = host.decoder(true);
    const first = responseOf([{ text: 'Hi' }]);
    expect(decoder.push(chunk(first))).toEqual([
      { type: 'pass_through', data: first },
      { type: 'upstream_id', id: 'resp-1' },
      { type: 'text', text: 'Hi' },
    ]);
    const second = responseOf([{ text: '!' }]);
    expect(decoder.push(chunk(second))).toEqual([
      { type: 'pass_through', data: second },
      { type: 'text', text: '!' },
    ]);
  });
});

describe('geminiHost.errorMessage', () => {
  it('reads the API’s error body, also in an array, else the text', () => {
    const body = {
      error: { code: 429, message: 'Resource has been exhausted (e.g. check quota).', status: 'RESOURCE_EXHAUSTED' },
    };
    expect(host.errorMessage(429, JSON.stringify(body))).toBe(
      'RESOURCE_EXHAUSTED: Resource has been exhausted (e.g. check quota).',
    );
    expect(host.errorMessage(429, JSON.stringify([body]))).toBe(
      'RESOURCE_EXHAUSTED: Resource has been exhausted (e.g. check quota).',
    );
    expect(host.errorMessage(502, '<html>Bad gateway</html>')).toBe('<html>Bad gateway</html>');
    expect(host.errorMessage(502, '')).toBe('upstream answered 502');
  });
});
