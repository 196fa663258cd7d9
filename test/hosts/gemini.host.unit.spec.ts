import { CanonicalEvent, CanonicalRequest, HostError } from '../../src/canonical/canonical';
import { geminiHost as host, geminiUsageOf } from '../../src/hosts/gemini/gemini.host';
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

  it('counts the tool-use prompt as input and the grounding queries as web searches', () => {
    const body = responseOf(
      [{ text: 'Found.' }],
      {
        usageMetadata: { promptTokenCount: 100, candidatesTokenCount: 10, toolUsePromptTokenCount: 400, totalTokenCount: 510 },
      },
      { finishReason: 'STOP', groundingMetadata: { webSearchQueries: ['weather paris', 'paris forecast'], groundingChunks: [] } },
    );
    expect(host.decodeReply(JSON.stringify(body)).at(-1)).toEqual({
      type: 'usage',
      usage: { ...usage({ inputTokens: 500, outputTokens: 10 }), hostedToolUses: { webSearch: 2 } },
    });
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
