import { FunctionCallingConfigMode, GoogleGenAI, Type } from '@google/genai';
import { estimateInputTokens } from '../../src/inference/tokens';
import type { ReservationSettled } from '../../src/ledger/ledger.events';
import { toCanonical } from '../../src/surfaces/gemini/gemini.wire';
import type { FakeUsage } from '../support/fake-upstream';
import { auditThenClose, startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { expectServedAndBilled, NEW_KIND_MODELS, toolResultsIn, withNewKinds } from '../support/new-kinds';
import { createKey } from '../support/keys';
import { fundedOrganization } from '../support/runtime';

/**
 * The Gemini surface with Google's own client, `@google/genai`, pointed at the gateway as its docs
 * say for a custom endpoint (`httpOptions.baseUrl` = `{base}/api`: it appends `/v1beta/models/…`).
 */
const M = TEST_MODELS;
let g: TestGateway;
let ai: GoogleGenAI;

beforeAll(async () => {
  g = await startGateway(withNewKinds);
  ai = new GoogleGenAI({ apiKey: g.key, httpOptions: { baseUrl: `${g.baseUrl}/api` } });
});
afterAll(async () => {
  await auditThenClose(g);
});

const last = () => g.fake.requests[g.fake.requests.length - 1];

const weather = {
  name: 'get_weather',
  description: 'Weather in a city',
  parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING } }, required: ['city'] },
};

/** A POST to the surface, the key in `x-goog-api-key` unless `headers` says otherwise. */
const post = (path: string, body: unknown, headers: Record<string, string> = { 'x-goog-api-key': g.key }) =>
  fetch(`${g.baseUrl}/api/v1beta/models/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

/** The settlement of a request, by its id (a reply's `responseId`). */
async function settlementOf(requestId: string): Promise<ReservationSettled['data']> {
  await g.logged(requestId);
  await g.settled();
  const log = await g.t.runtime.events.readAll(0, 100_000);
  const settled = log.find((e) => e.type === 'ReservationSettled' && (e.data as { requestId: string }).requestId === requestId);
  return settled!.data as ReservationSettled['data'];
}

const models: Array<[string, { slug: string; hostModel: string }, string]> = [
  ['a model on an anthropic host', M.claude, '/v1/messages'],
  ['a model on an openai host', M.gpt, '/v1/chat/completions'],
];

describe.each(models)('@google/genai on %s', (_where, model, upstreamPath) => {
  it('answers generateContent with a system instruction, in the API shape, with usage', async () => {
    g.fake.on(model.hostModel, { kind: 'reply', reply: { text: 'Bonjour !', usage: { input: 20, output: 3 } } });
    const response = await ai.models.generateContent({
      model: model.slug,
      contents: 'Hello',
      config: { systemInstruction: 'Answer in French.', maxOutputTokens: 100, temperature: 0.5, stopSequences: ['END'] },
    });
    expect(response.text).toBe('Bonjour !');
    expect(response.candidates).toEqual([
      { content: { role: 'model', parts: [{ text: 'Bonjour !' }] }, finishReason: 'STOP', index: 0 },
    ]);
    expect(response.usageMetadata).toMatchObject({ promptTokenCount: 20, candidatesTokenCount: 3, totalTokenCount: 23 });
    expect(response.modelVersion).toBe(model.slug);
    expect(response.responseId).toMatch(/^req_/);
    expect(last().path).toBe(upstreamPath);
    const body = last().body as Record<string, any>;
    expect(body).toMatchObject({ model: model.hostModel, max_tokens: 100, temperature: 0.5 });
    expect(JSON.stringify(body)).toContain('Answer in French.');
    expect(JSON.stringify(body.messages)).toContain('Hello');
  });

  it('streams server-sent chunks, the usage on the last one', async () => {
    g.fake.on(model.hostModel, { kind: 'reply', reply: { text: 'one two three', usage: { input: 9, output: 3 } } });
    const chunks = [];
    for await (const chunk of await ai.models.generateContentStream({ model: model.slug, contents: 'count' })) chunks.push(chunk);
    const texts = chunks.map((c) => c.text ?? '');
    expect(texts.join('')).toBe('one two three');
    expect(texts.filter((t) => t !== '').length).toBeGreaterThan(1);
    const end = chunks[chunks.length - 1];
    expect(end.candidates?.[0].finishReason).toBe('STOP');
    expect(end.usageMetadata).toMatchObject({ promptTokenCount: 9, candidatesTokenCount: 3, totalTokenCount: 12 });
    // Only the last chunk says how it ended.
    expect(chunks.slice(0, -1).every((c) => c.usageMetadata === undefined && c.candidates?.[0].finishReason === undefined)).toBe(
      true,
    );
  });

  it.each([false, true])('round-trips a function call (streamed: %s), the call forced with mode ANY', async (streamed) => {
    g.fake.on(model.hostModel, (request) =>
      JSON.stringify(request.body).includes('celsius')
        ? { kind: 'reply', reply: { text: 'It is 21 °C in Paris.' } }
        : { kind: 'reply', reply: { toolCalls: [{ id: 'call_7', name: 'get_weather', arguments: '{"city":"Paris"}' }] } },
    );
    const config = {
      tools: [{ functionDeclarations: [weather] }],
      toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.ANY, allowedFunctionNames: ['get_weather'] } },
    };
    const ask = { role: 'user', parts: [{ text: 'Weather in Paris?' }] };
    const generate = async (contents: unknown[]) => {
      if (!streamed) return ai.models.generateContent({ model: model.slug, contents: contents as never, config });
      const chunks = [];
      for await (const c of await ai.models.generateContentStream({ model: model.slug, contents: contents as never, config }))
        chunks.push(c);
      const parts = chunks.flatMap((c) => c.candidates?.[0].content?.parts ?? []);
      return {
        parts,
        functionCalls: chunks.flatMap((c) => c.functionCalls ?? []),
        text: chunks.map((c) => c.text ?? '').join(''),
      };
    };
    const first = await generate([ask]);
    expect(first.functionCalls).toEqual([{ id: 'call_7', name: 'get_weather', args: { city: 'Paris' } }]);
    const upstream = last().body as Record<string, any>;
    // The schema's capitals as JSON Schema, and the one allowed function forced.
    expect(JSON.stringify(upstream.tools)).toContain('"type":"object"');
    expect(JSON.stringify(upstream.tools)).not.toContain('OBJECT');
    expect(JSON.stringify(upstream.tool_choice)).toContain('get_weather');

    const second = await generate([
      ask,
      { role: 'model', parts: [{ functionCall: { id: 'call_7', name: 'get_weather', args: { city: 'Paris' } } }] },
      {
        role: 'user',
        parts: [{ functionResponse: { id: 'call_7', name: 'get_weather', response: { output: '{"celsius":21}' } } }],
      },
    ]);
    expect(second.text).toBe('It is 21 °C in Paris.');
    const sent = JSON.stringify(last().body);
    expect(sent).toContain('call_7');
    expect(sent).toContain('celsius');
  });

  it('pairs a call and its response without ids by their order and name', async () => {
    g.fake.on(model.hostModel, { kind: 'reply', reply: { text: 'done' } });
    const response = await ai.models.generateContent({
      model: model.slug,
      contents: [
        { role: 'user', parts: [{ text: 'Weather?' }] },
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Oslo' } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { error: 'no station' } } }] },
      ],
      config: { tools: [{ functionDeclarations: [weather] }] },
    });
    expect(response.text).toBe('done');
    const sent = JSON.stringify(last().body);
    expect(sent).toContain('call_1_0');
    expect(sent).toContain('Error: no station');
  });
});

describe('@google/genai: the rest of the surface', () => {
  it('names a model by the slug after its slash when that is unique, and by its UUID', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'by tail' } });
    const tail = M.gpt.slug.split('/')[1];
    expect((await ai.models.generateContent({ model: tail, contents: 'hi' })).modelVersion).toBe(M.gpt.slug);
    expect((await ai.models.generateContent({ model: `models/${M.gpt.id}`, contents: 'hi' })).modelVersion).toBe(M.gpt.slug);
    // An encoded slash names the same model.
    const res = await post(`${encodeURIComponent(M.gpt.slug)}:generateContent`, { contents: [{ parts: [{ text: 'hi' }] }] });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { modelVersion: string }).modelVersion).toBe(M.gpt.slug);
  });

  it('counts tokens with the estimate, billing nothing', async () => {
    const before = g.fake.requests.length;
    const contents = [{ role: 'user', parts: [{ text: 'How many tokens is this sentence, roughly?' }] }];
    const counted = await ai.models.countTokens({ model: M.claude.slug, contents });
    expect(counted.totalTokens).toBe(estimateInputTokens(toCanonical({ contents }, false)));
    expect(counted.totalTokens).toBeGreaterThan(0);
    expect(g.fake.requests.length).toBe(before);
  });

  it('lists the models and gets one, in the API Model shape', async () => {
    const pager = await ai.models.list();
    const names = pager.page.map((m) => m.name);
    expect(names).toEqual(expect.arrayContaining([`models/${M.gpt.slug}`, `models/${M.claude.slug}`]));
    expect(names).not.toContain(`models/${M.unhosted.slug}`);
    await expect(ai.models.get({ model: M.unhosted.slug })).rejects.toThrow(/none of its hosts is configured/);
    const model = await ai.models.get({ model: M.claude.slug });
    expect(model).toMatchObject({
      name: `models/${M.claude.slug}`,
      displayName: expect.any(String),
      inputTokenLimit: 128_000,
      outputTokenLimit: 1000,
      supportedActions: ['generateContent', 'streamGenerateContent', 'countTokens'],
    });
  });

  it('refuses a wrong key 401 UNAUTHENTICATED, and takes the key in the `key` query parameter', async () => {
    const wrong = new GoogleGenAI({ apiKey: 'sk-svc-not-a-key', httpOptions: { baseUrl: `${g.baseUrl}/api` } });
    await expect(wrong.models.generateContent({ model: M.gpt.slug, contents: 'hi' })).rejects.toMatchObject({ status: 401 });
    await expect(wrong.models.list()).rejects.toMatchObject({ status: 401 });
    const none = await post(`${M.gpt.slug}:generateContent`, { contents: [{ parts: [{ text: 'hi' }] }] }, {});
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual({
      error: { code: 401, status: 'UNAUTHENTICATED', message: expect.stringContaining('x-goog-api-key') },
    });
    const byQuery = await post(`${M.gpt.slug}:generateContent?key=${g.key}`, { contents: [{ parts: [{ text: 'hi' }] }] }, {});
    expect(byQuery.status).toBe(200);
  });

  it('answers an unknown model 404 NOT_FOUND', async () => {
    await expect(ai.models.generateContent({ model: 'nobody/nothing', contents: 'hi' })).rejects.toMatchObject({ status: 404 });
    await expect(ai.models.get({ model: 'nobody/nothing' })).rejects.toMatchObject({ status: 404 });
    const res = await post('nobody/nothing:generateContent', { contents: [{ parts: [{ text: 'hi' }] }] });
    expect(await res.json()).toMatchObject({
      error: { code: 404, status: 'NOT_FOUND', message: expect.stringContaining('"nobody/nothing" is not in the catalogue') },
    });
  });

  it.each([
    ['no contents', {}, 'contents'],
    ['an unknown field', { contents: [{ parts: [{ text: 'x' }] }], temperature: 1 }, 'temperature'],
    ['two candidates', { contents: [{ parts: [{ text: 'x' }] }], generationConfig: { candidateCount: 2 } }, 'candidateCount'],
    ['a cached content', { contents: [{ parts: [{ text: 'x' }] }], cachedContent: 'cachedContents/abc' }, 'cachedContent'],
    [
      'an enum response',
      { contents: [{ parts: [{ text: 'x' }] }], generationConfig: { responseMimeType: 'text/x.enum' } },
      'responseMimeType',
    ],
    ['code execution output', { contents: [{ parts: [{ executableCode: { code: '1' } }] }] }, 'executableCode'],
    [
      'a non-image inline file',
      { contents: [{ parts: [{ inlineData: { mimeType: 'audio/wav', data: 'AA==' } }] }] },
      'inlineData',
    ],
    ['a body that is not JSON', 'not json{', 'JSON'],
  ])('refuses %s 400 INVALID_ARGUMENT, naming it', async (_what, body, named) => {
    const before = g.fake.requests.length;
    const res =
      typeof body === 'string'
        ? await fetch(`${g.baseUrl}/api/v1beta/models/${M.gpt.slug}:generateContent`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-goog-api-key': g.key },
            body,
          })
        : await post(`${M.gpt.slug}:generateContent`, body);
    expect(res.status).toBe(400);
    const error = ((await res.json()) as { error: { code: number; status: string; message: string } }).error;
    expect(error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
    expect(error.message).toContain(named);
    expect(g.fake.requests.length).toBe(before);
  });

  it("answers a host's failure 502 INTERNAL, and a stream cut after it started with an error chunk the client throws on", async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'status', status: 500 });
    await expect(ai.models.generateContent({ model: M.gpt.slug, contents: 'hi' })).rejects.toMatchObject({ status: 502 });
    g.fake.on(M.claude.hostModel, { kind: 'cut', reply: { text: 'alpha beta gamma delta', usage: null }, afterPieces: 2 });
    const received: string[] = [];
    const reading = (async () => {
      for await (const c of await ai.models.generateContentStream({ model: M.claude.slug, contents: 'go' }))
        received.push(c.text ?? '');
    })();
    await expect(reading).rejects.toThrow(/INTERNAL/);
    expect(received.join('')).not.toBe('');
  });

  it('refuses a key whose organization cannot pay 402 RESOURCE_EXHAUSTED, before any host is called', async () => {
    const orgId = await fundedOrganization(g.t.runtime, 0);
    const { secret } = await createKey(g.t.runtime, orgId, 'broke');
    await g.t.runtime.projector.catchUp();
    const before = g.fake.requests.length;
    const res = await post(
      `${M.gpt.slug}:generateContent`,
      { contents: [{ parts: [{ text: 'hi' }] }] },
      { 'x-goog-api-key': secret },
    );
    expect(res.status).toBe(402);
    expect(await res.json()).toMatchObject({ error: { code: 402, status: 'RESOURCE_EXHAUSTED' } });
    expect(g.fake.requests.length).toBe(before);
  });

  it('refuses streamGenerateContent without alt=sse, naming it, and an unknown method 404', async () => {
    const res = await post(`${M.gpt.slug}:streamGenerateContent`, { contents: [{ parts: [{ text: 'x' }] }] });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain('alt=sse');
    const unknown = await post(`${M.gpt.slug}:embedContent`, { content: { parts: [{ text: 'x' }] } });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: 404, status: 'NOT_FOUND' } });
  });

  it('leaves Google Search out of the call and says so; refuses a call that must use it', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'no search here' } });
    const res = await post(`${M.gpt.slug}:generateContent`, {
      contents: [{ parts: [{ text: 'news?' }] }],
      tools: [{ googleSearch: {} }, { functionDeclarations: [weather] }],
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-omitted-tools')).toBe('googleSearch');
    expect(JSON.stringify(last().body.tools)).not.toContain('googleSearch');
    expect(last().body.tools).toHaveLength(1);
    const forced = await post(`${M.gpt.slug}:generateContent`, {
      contents: [{ parts: [{ text: 'news?' }] }],
      tools: [{ googleSearch: {} }],
      toolConfig: { functionCallingConfig: { mode: 'ANY' } },
    });
    expect(forced.status).toBe(400);
    expect(((await forced.json()) as { error: { message: string } }).error.message).toContain('googleSearch');
  });

  it('carries an inline image and a thinking budget (as an effort, to a chat-completions host)', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'A red dot.' } });
    await ai.models.generateContent({
      model: M.gpt.slug,
      contents: [
        { role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } }, { text: 'What is it?' }] },
      ],
      config: { thinkingConfig: { thinkingBudget: 512 } },
    });
    const body = last().body as Record<string, any>;
    expect(body.reasoning_effort).toBe('low');
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          { type: 'text', text: 'What is it?' },
        ],
      },
    ]);
  });

  it.each([false, true])('shows thoughts only when asked, and signs the turn either way (streamed: %s)', async (streamed) => {
    g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { thinking: 'Looking at the pixel.', text: 'A red dot.' } });
    const partsOf = async (includeThoughts: boolean) => {
      const ask = { model: M.claude.slug, contents: 'What is it?', config: { thinkingConfig: { includeThoughts } } };
      if (!streamed) return (await ai.models.generateContent(ask)).candidates![0].content!.parts!;
      const chunks = [];
      for await (const c of await ai.models.generateContentStream(ask)) chunks.push(c);
      return chunks.flatMap((c) => c.candidates?.[0].content?.parts ?? []);
    };
    const shown = await partsOf(true);
    const thoughts = shown.filter((p) => p.thought);
    expect(thoughts.map((p) => p.text).join('')).toBe('Looking at the pixel.');
    // The signature where the API puts it: a reply without calls signs its last part, not a thought.
    const signedParts = (parts: typeof shown) =>
      parts.filter((p) => typeof p.thoughtSignature === 'string' && p.thoughtSignature !== '');
    expect(signedParts(shown)).toEqual([expect.not.objectContaining({ thought: true })]);
    expect(
      shown
        .filter((p) => !p.thought)
        .map((p) => p.text)
        .join(''),
    ).toBe('A red dot.');
    const hidden = await partsOf(false);
    expect(hidden.some((p) => p.thought)).toBe(false);
    expect(signedParts(hidden)).toHaveLength(1);
    expect(hidden.map((p) => p.text).join('')).toBe('A red dot.');
  });
});

describe('billing through the Gemini surface: every token class at its price', () => {
  const cases: Array<[string, (typeof M)['gpt' | 'claude'], FakeUsage, number]> = [
    // 100 × $3 + 20,000 × $0.30 + 3,000 × $3.75 + 1,000 × $6 + 500 × $15 = $31,050 per million = 31,050,000 nano-credits
    ['anthropic', M.claude, { input: 100, cacheRead: 20_000, cacheWrite: 3_000, cacheWrite1h: 1_000, output: 500 }, 31_050_000],
    // 100 × $1 + 20,000 × $0.25 + 3,000 × $1.25 + 500 × $2 = $9,850 per million = 9,850,000 nano-credits
    ['openai', M.gpt, { input: 100, cacheRead: 20_000, cacheWrite: 3_000, output: 500, reasoning: 200 }, 9_850_000],
  ];
  describe.each(cases)('a model on an %s host', (_host, model, usage, charge) => {
    const prompt = usage.input + (usage.cacheRead ?? 0) + (usage.cacheWrite ?? 0) + (usage.cacheWrite1h ?? 0);
    const metadata = {
      promptTokenCount: prompt,
      cachedContentTokenCount: usage.cacheRead,
      candidatesTokenCount: usage.output - (usage.reasoning ?? 0),
      ...(usage.reasoning ? { thoughtsTokenCount: usage.reasoning } : {}),
      totalTokenCount: prompt + usage.output,
    };
    beforeEach(() => g.fake.on(model.hostModel, { kind: 'reply', reply: { text: 'Cached and served.', usage } }));

    it.each([false, true])('charges exactly, and reports the classes (streamed: %s)', async (streamed) => {
      let response;
      if (streamed) {
        const chunks = [];
        for await (const c of await ai.models.generateContentStream({ model: model.slug, contents: 'again' })) chunks.push(c);
        response = chunks[chunks.length - 1];
      } else {
        response = await ai.models.generateContent({ model: model.slug, contents: 'again' });
      }
      expect(response.usageMetadata).toMatchObject(metadata);
      const settled = await settlementOf(response.responseId!);
      expect(settled).toMatchObject({
        inputTokens: usage.input,
        cacheReadTokens: usage.cacheRead,
        cacheWriteTokens: usage.cacheWrite,
        cacheWrite1hTokens: usage.cacheWrite1h ?? 0,
        outputTokens: usage.output,
        amount: charge,
      });
      expect((await g.logged(response.responseId!)).surface).toBe('gemini');
    });
  });
});

describe('@google/genai on a model on a gemini host: the Gemini wire end to end', () => {
  const model = NEW_KIND_MODELS.gemini;

  beforeEach(() => {
    g.fake.on(model.hostModel, (request) =>
      toolResultsIn(request).length > 0
        ? { kind: 'reply', reply: { text: 'It is 21 degrees in Paris.', usage: model.usage } }
        : {
            kind: 'reply',
            reply: { toolCalls: [{ id: 'call_w1', name: 'get_weather', arguments: '{"city":"Paris"}' }], usage: model.usage },
          },
    );
  });

  it.each([
    ['generateContent', false],
    ['generateContentStream', true],
  ])(
    'a function call round trip (%s): the call reaches the client, its response the host; billed exactly',
    async (_how, stream) => {
      const before = g.fake.requests.length;
      const config = { systemInstruction: 'Use the tool.', tools: [{ functionDeclarations: [weather] }] };
      const ask = async (contents: Array<{ role: string; parts: any[] }>) => {
        if (!stream) return ai.models.generateContent({ model: model.slug, contents, config });
        const parts: any[] = [];
        let usage;
        for await (const chunk of await ai.models.generateContentStream({ model: model.slug, contents, config })) {
          parts.push(...(chunk.candidates?.[0]?.content?.parts ?? []));
          usage = chunk.usageMetadata ?? usage;
        }
        return { candidates: [{ content: { role: 'model', parts } }], usageMetadata: usage };
      };
      const question = { role: 'user', parts: [{ text: 'Weather in Paris?' }] };
      const first = await ask([question]);
      const call = first.candidates![0].content!.parts!.find((p: any) => p.functionCall)!.functionCall!;
      expect(call).toMatchObject({ name: 'get_weather', args: { city: 'Paris' } });
      // The host's usage by class, as the client reads it: cached content apart, thoughts apart from the candidates.
      expect(first.usageMetadata).toMatchObject({
        promptTokenCount: 2500,
        cachedContentTokenCount: 500,
        candidatesTokenCount: 30,
        thoughtsTokenCount: 10,
      });
      const second = await ask([
        question,
        first.candidates![0].content as { role: string; parts: any[] },
        {
          role: 'user',
          parts: [{ functionResponse: { id: call.id, name: 'get_weather', response: { output: 'Paris: 21 degrees' } } }],
        },
      ]);
      const text = second.candidates![0].content!.parts!.map((p: any) => p.text ?? '').join('');
      expect(text).toBe('It is 21 degrees in Paris.');
      const sent = await expectServedAndBilled(g, model, before);
      expect(sent).toHaveLength(2);
      expect(JSON.stringify(sent[0].body.systemInstruction)).toContain('Use the tool.');
      expect(toolResultsIn(sent[1]).join()).toContain('Paris: 21 degrees');
      expect(sent.map((r) => r.path.endsWith(':streamGenerateContent'))).toEqual([stream, stream]);
    },
  );
});
