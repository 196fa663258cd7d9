import { ApiError } from '../../src/http/api-error';
import { catalogueRefOf, jsonSchemaOf, methodCallOf, toCanonical, usageMetadataOf } from '../../src/surfaces/gemini/gemini.wire';
import type { GenerateContentRequest } from '../../src/surfaces/gemini/gemini.schema';
import { usage } from '../support/usage';

const user = (text: string) => ({ role: 'user', parts: [{ text }] });
const canonical = (body: Partial<GenerateContentRequest>) => toCanonical({ contents: [user('hi')], ...body }, false);
const refusal = (body: Partial<GenerateContentRequest>): string => {
  try {
    canonical(body);
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe('invalid_request');
    return (error as ApiError).message;
  }
  throw new Error('not refused');
};

describe('the Gemini wire: naming models', () => {
  const models = [{ slug: 'openai/gpt-4o' }, { slug: 'acme/chat' }, { slug: 'other/chat' }, { slug: 'vendor/m:free' }];

  it('takes a slug as it is, after `models/` or without, and a UUID as it is', () => {
    expect(catalogueRefOf('models/openai/gpt-4o', models)).toBe('openai/gpt-4o');
    expect(catalogueRefOf('openai/gpt-4o', models)).toBe('openai/gpt-4o');
    expect(catalogueRefOf('11111111-1111-4111-8111-111111111111', models)).toBe('11111111-1111-4111-8111-111111111111');
  });

  it('takes the part of a slug after its slash when only one slug has it, and refuses it when several do', () => {
    expect(catalogueRefOf('GPT-4o', models)).toBe('openai/gpt-4o');
    expect(catalogueRefOf('models/gpt-4o', models)).toBe('openai/gpt-4o');
    expect(() => catalogueRefOf('chat', models)).toThrow('"acme/chat", "other/chat"');
    expect(catalogueRefOf('gemini-2.5-pro', models)).toBe('gemini-2.5-pro');
  });

  it('splits the method off at the last colon: a slug may hold one', () => {
    expect(methodCallOf('vendor/m:free:generateContent')).toEqual({ model: 'vendor/m:free', method: 'generateContent' });
    expect(methodCallOf('models/openai/gpt-4o:countTokens')).toEqual({ model: 'models/openai/gpt-4o', method: 'countTokens' });
    expect(() => methodCallOf('openai/gpt-4o:embedContent')).toThrow(expect.objectContaining({ code: 'not_found' }));
    expect(() => methodCallOf('openai/gpt-4o')).toThrow(expect.objectContaining({ code: 'not_found' }));
  });
});

describe('the Gemini wire: requests', () => {
  it("turns the API's schemas into JSON Schema: lower-case types, nullable as a union, no ordering hint", () => {
    expect(
      jsonSchemaOf({
        type: 'OBJECT',
        propertyOrdering: ['a', 'b'],
        properties: {
          a: { type: 'STRING', nullable: true, enum: ['x'] },
          b: { type: 'ARRAY', items: { type: 'INTEGER', format: 'int32' } },
        },
        required: ['a'],
      }),
    ).toEqual({
      type: 'object',
      properties: {
        a: { type: ['string', 'null'], enum: ['x'] },
        b: { type: 'array', items: { type: 'integer', format: 'int32' } },
      },
      required: ['a'],
    });
  });

  it('gives calls without ids one from their place, and pairs responses with them in order, by name', () => {
    const request = canonical({
      contents: [
        user('two cities'),
        {
          role: 'model',
          parts: [
            { text: 'Checking.' },
            { functionCall: { name: 'w', args: { c: 'A' } } },
            { functionCall: { name: 'w', args: { c: 'B' } } },
          ],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'w', response: { output: 'sunny' } } },
            // An id the client made up for a call that had none: paired by name.
            { functionResponse: { id: 'w-123', name: 'w', response: { temp: 3 } } },
          ],
        },
      ],
    });
    expect(request.messages).toEqual([
      { role: 'user', content: 'two cities' },
      {
        role: 'assistant',
        content: 'Checking.',
        toolCalls: [
          { id: 'call_1_1', name: 'w', arguments: '{"c":"A"}' },
          { id: 'call_1_2', name: 'w', arguments: '{"c":"B"}' },
        ],
      },
      { role: 'tool', toolCallId: 'call_1_1', content: 'sunny' },
      { role: 'tool', toolCallId: 'call_1_2', content: '{"temp":3}' },
    ]);
  });

  it('refuses a response to no call', () => {
    expect(
      refusal({ contents: [user('x'), { role: 'user', parts: [{ functionResponse: { name: 'w', response: {} } }] }] }),
    ).toContain('answers no call of "w"');
  });

  it('keeps thoughts in the history out of the text, carried with the turn’s last signature for hosts that take them back', () => {
    const request = canonical({
      contents: [
        user('q'),
        {
          role: 'model',
          parts: [
            { text: 'pondering', thought: true, thoughtSignature: 'c2ln' },
            { text: 'A' },
            { text: 'B' },
            { functionCall: { name: 'f', args: {} }, thoughtSignature: 'c2lnMg==' },
          ],
        },
        { role: 'user', parts: [{ functionResponse: { name: 'f', response: { output: 'ok' } } }] },
        { role: 'model', parts: [{ text: 'Done.' }] },
      ],
    });
    expect(request.messages[1]).toEqual({
      role: 'assistant',
      content: 'AB',
      toolCalls: [{ id: 'call_1_3', name: 'f', arguments: '{}' }],
      reasoning: { text: 'pondering', signature: 'c2lnMg==' },
    });
    expect(request.messages[3]).toEqual({ role: 'assistant', content: 'Done.', toolCalls: [] });
  });

  it('maps the function-calling modes and allowed names to the tool choice', () => {
    const tools = [{ functionDeclarations: [{ name: 'a' }, { name: 'b', parametersJsonSchema: { type: 'object' } }] }];
    const mode = (m: string, allowed?: string[]) =>
      canonical({ tools, toolConfig: { functionCallingConfig: { mode: m, allowedFunctionNames: allowed } } });
    expect(mode('AUTO').toolChoice).toBe('auto');
    expect(mode('NONE').toolChoice).toBe('none');
    expect(mode('ANY').toolChoice).toBe('required');
    expect(mode('ANY', ['b'])).toMatchObject({
      toolChoice: { name: 'b' },
      tools: [{ name: 'b', parameters: { type: 'object' } }],
    });
    expect(mode('ANY', ['a', 'b']).toolChoice).toBe('required');
    expect(mode('ANY').tools[0]).toEqual({ name: 'a', description: undefined, parameters: { type: 'object', properties: {} } });
    expect(refusal({ tools, toolConfig: { functionCallingConfig: { mode: 'VALIDATED' } } })).toContain('VALIDATED');
    expect(refusal({ tools, toolConfig: { functionCallingConfig: { mode: 'AUTO', allowedFunctionNames: ['a'] } } })).toContain(
      'only with mode ANY',
    );
    expect(refusal({ tools, toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['z'] } } })).toContain(
      '"z"',
    );
  });

  it("offers the API's search and URL tools as hosted tools (named), for admission to decide, and refuses those no format runs", () => {
    const request = canonical({ tools: [{ googleSearch: {} }, { urlContext: {} }] });
    expect(request.hostedTools).toEqual({ hosted: ['googleSearch', 'urlContext'], clientTools: false, required: null });
    expect(request).not.toHaveProperty('omittedTools');
    expect(
      canonical({ tools: [{ googleSearch: {} }], toolConfig: { functionCallingConfig: { mode: 'ANY' } } }).hostedTools,
    ).toEqual({ hosted: ['googleSearch'], clientTools: false, required: 'any' });
    expect(canonical({})).not.toHaveProperty('hostedTools');
    expect(refusal({ tools: [{ googleMaps: {} }] })).toContain('tools[0].googleMaps');
  });

  it('maps thinking: a budget, none, the host default, a level', () => {
    const thinking = (thinkingConfig: object) => canonical({ generationConfig: { thinkingConfig } }).reasoning;
    expect(thinking({ thinkingBudget: 2048 })).toEqual({ budgetTokens: 2048 });
    expect(thinking({ thinkingBudget: 0 })).toEqual({ effort: 'none' });
    // Dynamic, or thoughts asked for without a budget: reasoning asked, the host's own amount.
    expect(thinking({ thinkingBudget: -1 })).toEqual({});
    expect(thinking({ thinkingBudget: -1, includeThoughts: true })).toEqual({});
    expect(thinking({ thinkingLevel: 'high' })).toEqual({ effort: 'high' });
    expect(thinking({ includeThoughts: true })).toEqual({});
    expect(thinking({ includeThoughts: false })).toBeUndefined();
    expect(thinking({})).toBeUndefined();
  });

  it('carries the sampling settings, and refuses what has no counterpart by name', () => {
    expect(
      canonical({
        systemInstruction: { parts: [{ text: 'Be brief.' }, { text: 'Be kind.' }] },
        generationConfig: { maxOutputTokens: 9, temperature: 0.2, topP: 0.9, topK: 5, stopSequences: ['X'], candidateCount: 1 },
      }),
    ).toMatchObject({ system: ['Be brief.\nBe kind.'], maxTokens: 9, temperature: 0.2, topP: 0.9, topK: 5, stop: ['X'] });
    expect(refusal({ generationConfig: { responseSchema: { type: 'OBJECT' } } })).toContain('responseSchema');
    expect(refusal({ generationConfig: { responseModalities: ['IMAGE'] } })).toContain('responseModalities');
    expect(refusal({ generationConfig: { responseLogprobs: true } })).toContain('responseLogprobs');
    expect(
      refusal({ contents: [{ role: 'user', parts: [{ fileData: { fileUri: 'gs://b/o', mimeType: 'image/png' } }] }] }),
    ).toContain('fileData');
    expect(refusal({ contents: [{ role: 'system', parts: [{ text: 'x' }] }] })).toContain('role');
    const files = { fileUri: 'https://generativelanguage.googleapis.com/v1beta/files/abc', mimeType: 'image/png' };
    expect(refusal({ contents: [{ role: 'user', parts: [{ fileData: files }] }] })).toContain('Files API');
    const web = { fileUri: 'https://example.com/cat.png', mimeType: 'image/png' };
    expect(canonical({ contents: [{ role: 'user', parts: [{ fileData: web }, { text: 'what?' }] }] }).messages).toEqual([
      { role: 'user', content: 'what?', images: [{ url: 'https://example.com/cat.png' }] },
    ]);
  });
});

describe('the Gemini wire: usage', () => {
  it('counts every input token in the prompt, the cache reads apart, and the thoughts apart from the candidates', () => {
    const tokens = usage({
      inputTokens: 10,
      cacheReadTokens: 100,
      cacheWriteTokens: 5,
      cacheWrite1hTokens: 1,
      outputTokens: 50,
      reasoningTokens: 20,
    });
    expect(usageMetadataOf({ billed: null, usage: tokens })).toEqual({
      promptTokenCount: 116,
      cachedContentTokenCount: 100,
      candidatesTokenCount: 30,
      thoughtsTokenCount: 20,
      totalTokenCount: 166,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: 116 }],
    });
    expect(usageMetadataOf({ billed: null, usage: usage({ inputTokens: 3, outputTokens: 2 }) })).toEqual({
      promptTokenCount: 3,
      candidatesTokenCount: 2,
      totalTokenCount: 5,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: 3 }],
    });
  });
});
