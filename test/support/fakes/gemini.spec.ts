// Verifies the fake upstream's Gemini API against the documented wire shapes, with plain fetch.
import { FakeUpstream, startFakeUpstream } from '../fake-upstream';
import { groundingRedirect, thoughtSignatureOf } from './gemini';

let fake: FakeUpstream;
beforeEach(async () => {
  fake = await startFakeUpstream();
});
afterEach(() => fake.close());

const BODY = { contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] };

const generate = (model: string, stream: boolean, init: RequestInit = {}) =>
  fetch(`${fake.url}/v1beta/models/${model}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goog-api-key': 'k' },
    body: JSON.stringify(BODY),
    ...init,
  });

/** The chunks of an SSE body: every event is one `data:` line of a whole response. */
const chunks = (text: string): any[] =>
  text
    .split('\n\n')
    .filter(Boolean)
    .map((block) => {
      expect(block.startsWith('data: ')).toBe(true);
      return JSON.parse(block.slice(6));
    });

const partsOf = (responses: any[]) => responses.flatMap((r) => r.candidates?.[0]?.content.parts ?? []);

describe('the fake Gemini API', () => {
  it('answers generateContent with a GenerateContentResponse, keyed by the model in the path', async () => {
    fake.on('gemini-x', {
      kind: 'reply',
      reply: { text: 'Hello.', usage: { input: 100, cacheRead: 1000, toolPrompt: 7, output: 50, reasoning: 20 } },
    });
    const res = await generate('gemini-x', false);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      candidates: [{ content: { role: 'model', parts: [{ text: 'Hello.' }] }, finishReason: 'STOP', index: 0 }],
      usageMetadata: {
        promptTokenCount: 1100,
        candidatesTokenCount: 30,
        totalTokenCount: 1157,
        cachedContentTokenCount: 1000,
        promptTokensDetails: [{ modality: 'TEXT', tokenCount: 1100 }],
        cacheTokensDetails: [{ modality: 'TEXT', tokenCount: 1000 }],
        candidatesTokensDetails: [{ modality: 'TEXT', tokenCount: 30 }],
        toolUsePromptTokenCount: 7,
        toolUsePromptTokensDetails: [{ modality: 'TEXT', tokenCount: 7 }],
        thoughtsTokenCount: 20,
      },
      modelVersion: 'gemini-x',
      responseId: expect.any(String),
    });
    const received = await fake.received('gemini-x');
    expect(received.path).toBe('/v1beta/models/gemini-x:generateContent');
    expect(received.body).toEqual(BODY);
  });

  it('streams chunks with the usage so far, the last with the finish, the whole usage and the grounding; no end marker', async () => {
    fake.on('gemini-x', {
      kind: 'reply',
      reply: { text: 'one two', usage: { input: 10, output: 4 }, webSearchQueries: ['q1', 'q2'] },
    });
    const res = await generate('gemini-x', true, { body: JSON.stringify({ ...BODY, tools: [{ googleSearch: {} }] }) });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const all = chunks(await res.text());
    expect(all.map((c) => c.responseId)).toEqual(all.map(() => all[0].responseId));
    expect(
      partsOf(all)
        .map((p) => p.text)
        .join(''),
    ).toBe('one two');
    expect(all.slice(0, -1).every((c) => c.usageMetadata.promptTokenCount === 10 && !c.candidates[0].finishReason)).toBe(true);
    const last = all.at(-1);
    expect(last.candidates[0].finishReason).toBe('STOP');
    expect(last.candidates[0].groundingMetadata.webSearchQueries).toEqual(['q1', 'q2']);
    expect(last.usageMetadata).toMatchObject({ promptTokenCount: 10, candidatesTokenCount: 4, totalTokenCount: 14 });
  });

  it('grounds a reply only when the request offers Google Search: queries, entry point, pages by redirect, supports in bytes', async () => {
    const searches = [
      { query: 'météo paris', url: 'https://meteo.example/paris', title: 'Météo' },
      { query: 'paris forecast', url: 'https://forecast.example/p', title: 'Forecast' },
    ];
    fake.on('gemini-x', { kind: 'reply', reply: { text: 'Il fait 21 °C. Sunny.', searches } });
    const plain = (await (await generate('gemini-x', false)).json()) as any;
    expect(plain.candidates[0]).not.toHaveProperty('groundingMetadata');
    const grounded = (await (
      await generate('gemini-x', false, { body: JSON.stringify({ ...BODY, tools: [{ googleSearch: {} }] }) })
    ).json()) as any;
    const metadata = grounded.candidates[0].groundingMetadata;
    expect(metadata.webSearchQueries).toEqual(['météo paris', 'paris forecast']);
    expect(metadata.searchEntryPoint.renderedContent).toContain('<div class="container">');
    expect(metadata.groundingChunks).toEqual([
      { web: { uri: groundingRedirect('https://meteo.example/paris'), title: 'meteo.example' } },
      { web: { uri: groundingRedirect('https://forecast.example/p'), title: 'forecast.example' } },
    ]);
    // "Il fait 21 °C." is 15 bytes (° is two); the second sentence starts after its space.
    expect(metadata.groundingSupports).toEqual([
      { segment: { endIndex: 15, text: 'Il fait 21 °C.' }, groundingChunkIndices: [0, 1] },
      { segment: { startIndex: 16, endIndex: 22, text: 'Sunny.' }, groundingChunkIndices: [0, 1] },
    ]);
  });

  it('sends thoughts as thought parts, calls whole, and the thought signature on the first call (else the last part)', async () => {
    const reply = {
      thinking: 'Hmm.',
      toolCalls: [
        { id: 'a', name: 'f', arguments: '{"x":1}' },
        { id: 'b', name: 'g', arguments: '{}' },
      ],
    };
    fake.on('calls', { kind: 'reply', reply });
    const whole = ((await (await generate('calls', false)).json()) as any).candidates[0].content.parts;
    expect(whole).toEqual([
      { text: 'Hmm.', thought: true },
      { functionCall: { id: 'a', name: 'f', args: { x: 1 } }, thoughtSignature: thoughtSignatureOf('Hmm.') },
      { functionCall: { id: 'b', name: 'g', args: {} } },
    ]);
    const streamed = partsOf(chunks(await (await generate('calls', true)).text()));
    expect(streamed.filter((p) => p.functionCall)).toEqual(whole.slice(1));

    fake.on('text', { kind: 'reply', reply: { thinking: 'Hmm.', text: 'Hi.' } });
    const signed = partsOf(chunks(await (await generate('text', true)).text())).filter((p) => p.thoughtSignature);
    expect(signed).toEqual([{ text: '', thoughtSignature: thoughtSignatureOf('Hmm.') }]);
  });

  it('refuses what Google refuses, with its error body: an unsigned Gemini 3 call of the current turn, a budget the model does not take', async () => {
    const ask = async (model: string, body: object): Promise<{ status: number; body: any }> => {
      const res = await generate(model, false, { body: JSON.stringify(body) });
      return { status: res.status, body: await res.json() };
    };
    const loop = (signature?: string) => ({
      contents: [
        { role: 'user', parts: [{ text: 'Weather?' }] },
        {
          role: 'model',
          parts: [{ functionCall: { name: 'get_weather', args: {} }, ...(signature ? { thoughtSignature: signature } : {}) }],
        },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { output: 'Sunny' } } }] },
      ],
    });
    const unsigned = await ask('gemini-3-pro-preview', loop());
    expect(unsigned).toEqual({
      status: 400,
      body: {
        error: {
          code: 400,
          message: expect.stringMatching(
            /^Function call is missing a thought_signature in functionCall parts\..*`default_api:get_weather` , position 2\./,
          ),
          status: 'INVALID_ARGUMENT',
        },
      },
    });
    expect((await ask('gemini-3-pro-preview', loop('skip_thought_signature_validator'))).status).toBe(200);
    expect((await ask('gemini-2.5-flash', loop())).status).toBe(200);
    // A turn before the current one is not checked.
    expect(
      (
        await ask('gemini-3-pro-preview', {
          contents: [
            ...loop().contents,
            { role: 'model', parts: [{ text: 'Sunny.' }] },
            { role: 'user', parts: [{ text: 'Thanks' }] },
          ],
        })
      ).status,
    ).toBe(200);

    const thinking = (model: string, thinkingConfig: object) => ask(model, { ...BODY, generationConfig: { thinkingConfig } });
    expect((await thinking('gemini-2.5-pro', { thinkingBudget: 0 })).body.error.message).toBe(
      'Budget 0 is invalid. This model only works in thinking mode.',
    );
    expect((await thinking('gemini-3-pro-preview', { thinkingBudget: 0 })).status).toBe(400);
    expect((await thinking('gemini-2.5-pro', { thinkingBudget: 64 })).status).toBe(400);
    expect((await thinking('gemini-2.5-pro', { thinkingBudget: 32769 })).status).toBe(400);
    expect((await thinking('gemini-2.5-flash', { thinkingBudget: 24577 })).status).toBe(400);
    expect((await thinking('gemini-2.5-flash-lite', { thinkingBudget: 100 })).status).toBe(400);
    expect((await thinking('gemini-2.5-flash-lite', { thinkingBudget: 0 })).status).toBe(200);
    expect((await thinking('gemini-2.5-pro', { thinkingBudget: -1 })).status).toBe(200);
    expect((await thinking('gemini-2.5-pro', { thinkingLevel: 'low' })).status).toBe(400);
  });

  it('refuses more than 5 stop sequences and a function name outside Google’s rule, with its error body', async () => {
    const body = (extra: object) => ({ body: JSON.stringify({ ...BODY, ...extra }) });
    const declared = (name: string) => body({ tools: [{ functionDeclarations: [{ name }] }] });
    const refusals: Array<[RequestInit, RegExp]> = [
      [body({ generationConfig: { stopSequences: ['1', '2', '3', '4', '5', '6'] } }), /stop_sequences: .*must not exceed 5/],
      [declared('9lives'), /function_declarations\[0\]\.name: Invalid function name/],
      [declared('a b'), /Invalid function name/],
      [declared('x'.repeat(129)), /Invalid function name/],
    ];
    for (const [init, message] of refusals) {
      const res = await generate('gemini-x', false, init);
      expect(res.status).toBe(400);
      const { error } = (await res.json()) as { error: { code: number; message: string; status: string } };
      expect(error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
      expect(error.message).toMatch(message);
    }
    const taken = body({
      generationConfig: { stopSequences: ['1', '2', '3', '4', '5'] },
      tools: [{ functionDeclarations: [{ name: '_mcp:files.read-2' }] }],
    });
    expect((await generate('gemini-x', false, taken)).status).toBe(200);
  });

  it('answers errors with the API’s error body, and a stream asked without alt=sse with a 400', async () => {
    fake.on('busy', { kind: 'status', status: 429 });
    const res = await generate('busy', true);
    expect(res.status).toBe(429);
    expect(await res.json()).toEqual({ error: { code: 429, message: expect.any(String), status: 'RESOURCE_EXHAUSTED' } });
    const plain = await fetch(`${fake.url}/v1beta/models/m:streamGenerateContent`, {
      method: 'POST',
      body: JSON.stringify(BODY),
    });
    expect(plain.status).toBe(400);
  });

  it('plays the failure modes: cut, malformed, stream_error, hang, verbatim and usage as written', async () => {
    fake.on('cut', { kind: 'cut', reply: { text: 'a b c d' }, afterPieces: 2 });
    const cut = await generate('cut', true);
    await expect(cut.text()).rejects.toThrow();

    fake.on('bad', { kind: 'malformed', afterPieces: 1 });
    const bad = (await (await generate('bad', true)).text()).split('\n\n').filter(Boolean);
    expect(() => JSON.parse(bad.at(-1)!.slice(6))).toThrow();

    fake.on('err', { kind: 'stream_error', afterPieces: 1 });
    const err = chunks(await (await generate('err', true)).text());
    expect(err.at(-1)).toEqual({ error: { code: 500, message: expect.any(String), status: 'INTERNAL' } });

    fake.on('raw', { kind: 'verbatim', body: '{"candidates":[]}' });
    expect(await (await generate('raw', false)).text()).toBe('{"candidates":[]}');

    fake.on('wired', { kind: 'reply', reply: { text: 'x', wireUsage: '{"promptTokenCount":1e400}' } });
    expect(await (await generate('wired', false)).text()).toContain('"usageMetadata":{"promptTokenCount":1e400}');

    fake.on('hang', { kind: 'hang' });
    const abort = new AbortController();
    const hanging = generate('hang', true, { signal: abort.signal });
    await fake.received('hang');
    abort.abort();
    await expect(hanging).rejects.toThrow();
  });
});
