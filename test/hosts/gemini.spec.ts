import { SKIP_SIGNATURE } from '../../src/hosts/gemini/gemini.host';
import { thoughtSignatureOf } from '../support/fakes/gemini';
import { auditThenClose, startGateway, TestGateway } from '../support/gateway';
import { calledOnce, modelEntry, withOwn } from '../support/spec-catalogue';
import {
  Asked,
  CHAT_COMPLETIONS,
  GENERATE_CONTENT,
  MESSAGES,
  NATIVE,
  RESPONSES,
  sseData,
  Surface,
  WEATHER,
} from '../support/surfaces';
import { throughGateway } from '../support/through-gateway';
import { hostUnderTest, TEXT, THINKING } from './support/host-under-test';

/**
 * A model on a `gemini` host, through every client surface, whole and streamed: what the host
 * replies (text, thoughts with their signature, calls) reaches the client, its usage is billed by
 * class at the catalogue's prices, a cut stream is billed for what was delivered, a failure before
 * output falls back, and absurd usage is not believed.
 */

/** $1.25/M input, $0.3125/M cached input, $10/M output: a price whose charge is not a whole nano-credit. */
const GEMINI = { slug: 'test/gemini', id: 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb', hostModel: 'fake-gemini' };
/** Two hosts: the first (`fake-gemini-first`, at $9/M) fails before output; the second serves at $0.50/M and $0.75/M. */
const FALLBACK = { slug: 'test/gemini-fallback', id: 'cccccccc-cccc-4ccc-8ccc-cccccccccccc', hostModel: 'fake-gemini-second' };

/** Models Google holds to its rules (see the fake's geminiProblem): Gemini 3 checks call signatures; 2.5 Pro always thinks. */
const GEMINI3 = { slug: 'test/gemini-3', id: 'c3c3c3c3-c3c3-4c3c-8c3c-c3c3c3c3c3c3', hostModel: 'gemini-3-pro-preview' };
const GEMINI25_PRO = { slug: 'test/gemini-2.5-pro', id: 'c4c4c4c4-c4c4-4c4c-8c4c-c4c4c4c4c4c4', hostModel: 'gemini-2.5-pro' };

/** Without an id, as Gemini 2.5 sends its calls: the gateway names it. */
const CALL = { id: '', name: 'get_weather', arguments: '{"city":"Paris"}' };

/** A model of Gemini's context, a million tokens. */
const model = (m: { slug: string; id: string }, hosts: unknown[]) => modelEntry(m, hosts, { contextLength: 1_000_000 });

const catalogue = withOwn((fake) => ({
  hosts: [
    { id: 'fake-gemini', kind: 'gemini', baseUrl: `${fake.url}/v1beta`, apiKeyEnv: 'FAKE_OPENAI_KEY' },
    { id: 'fake-gemini-flaky', kind: 'gemini', baseUrl: `${fake.url}/v1beta` },
  ].map(calledOnce),
  models: [
    model(GEMINI, [
      { host: 'fake-gemini', model: GEMINI.hostModel, pricing: { input: '1.25', cacheRead: '0.3125', output: '10.00' } },
    ]),
    ...[GEMINI3, GEMINI25_PRO].map((m) =>
      model(m, [{ host: 'fake-gemini', model: m.hostModel, pricing: { input: '1.25', output: '10.00' } }]),
    ),
    model(FALLBACK, [
      { host: 'fake-gemini-flaky', model: 'fake-gemini-first', pricing: { input: '9.00', output: '9.00' } },
      { host: 'fake-gemini', model: FALLBACK.hostModel, pricing: { input: '0.50', output: '0.75' } },
    ]),
  ],
}));

/** Every client surface, Google's own API among them. */
const SURFACES: Array<Surface<string>> = [CHAT_COMPLETIONS, MESSAGES, RESPONSES, GENERATE_CONTENT, NATIVE];

/** A 1×1 PNG, inline. */
const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

/** A body whose user turn carries the PIXEL image inline, on each surface that carries images to other formats. */
const WITH_IMAGE: Partial<Record<string, (slug: string, stream: boolean) => Record<string, unknown>>> = {
  messages: (slug, stream) => ({
    model: slug,
    stream,
    max_tokens: 1000,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PIXEL } },
          { type: 'text', text: 'What is this?' },
        ],
      },
    ],
  }),
  responses: (slug, stream) => ({
    model: slug,
    stream,
    input: [
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'What is this?' },
          { type: 'input_image', image_url: `data:image/png;base64,${PIXEL}` },
        ],
      },
    ],
  }),
  gemini: () => ({
    contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data: PIXEL } }, { text: 'What is this?' }] }],
  }),
};

let g: TestGateway;
beforeAll(async () => {
  g = await startGateway({ catalogue });
});
afterAll(() => auditThenClose(g));

const through = throughGateway(() => g);
const { send, sent, settlementOf } = through;

/** What every request here asks for besides, on the surfaces that ask for thinking by a budget: 512 tokens of it, under the model's cap of 1,000. */
const asked = (tools = false): Asked => ({ tools, thinkingBudget: 512 });

const call = (surface: Surface<string>, slug: string, stream: boolean, tools = false) =>
  through.call(surface, slug, stream, asked(tools));

const host = hostUnderTest(through, {
  model: GEMINI,
  fallback: { ...FALLBACK, firstHostModel: 'fake-gemini-first' },
  asked: asked(),
});

/** The model's parts of a Gemini API reply, whole or streamed. */
const partsOf = (text: string, stream: boolean): any[] =>
  (stream ? sseData(text) : [JSON.parse(text)]).flatMap((r) => r.candidates[0].content.parts);

describe.each(SURFACES)('the $name surface on a gemini host', (surface) => {
  describe.each([false, true])('streamed: %s', (stream) => {
    it('is sent as a generateContent request with the key, and gets the text back', async () => {
      const { out, upstream } = await host.answers(surface, stream, { text: TEXT });
      expect(out.text).toBe(TEXT);
      expect(upstream.path).toBe(`/v1beta/models/fake-gemini:${stream ? 'streamGenerateContent' : 'generateContent'}`);
      expect(upstream.headers['x-goog-api-key']).toBe('upstream-openai-key');
      expect(upstream.headers.authorization).toBeUndefined();
      expect(upstream.body.contents).toEqual([{ role: 'user', parts: [{ text: 'Hello' }] }]);
      expect(upstream.body.generationConfig).toMatchObject({ candidateCount: 1, maxOutputTokens: 1000 });
      if (surface.name !== 'native') expect(upstream.body.systemInstruction).toEqual({ parts: [{ text: 'Be brief.' }] });
    });

    if (surface.tools) {
      it('carries a tool call with its arguments, and the thoughts before it', async () => {
        const { out, upstream } = await host.answers(surface, stream, { thinking: THINKING, toolCalls: [CALL] }, { tools: true });
        expect(out.calls).toEqual([{ ...CALL, id: expect.stringMatching(/^call_[0-9a-f]{24}$/) }]);
        expect(out.reasoning).toBe(THINKING);
        expect(upstream.body.tools).toEqual([
          {
            functionDeclarations: [
              { name: WEATHER.name, description: WEATHER.description, parametersJsonSchema: WEATHER.parameters },
            ],
          },
        ]);
        expect(upstream.body.generationConfig.thinkingConfig).toEqual(
          surface.name === 'messages' || surface.name === 'gemini'
            ? { thinkingBudget: 512, includeThoughts: true }
            : // Effort low: Google's budget for it.
              { thinkingBudget: 1024, includeThoughts: true },
        );
      });

      const withImage = WITH_IMAGE[surface.name];
      if (withImage)
        it('sends an image inline', async () => {
          g.fake.on(GEMINI.hostModel, { kind: 'reply', reply: { text: 'A pixel.' } });
          const { res, text } = await send(surface, GEMINI.slug, stream, withImage(GEMINI.slug, stream));
          expect(res.status).toBe(200);
          expect(surface.read(text, stream).text).toBe('A pixel.');
          expect(sent(GEMINI.hostModel).body.contents).toEqual([
            { role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data: PIXEL } }, { text: 'What is this?' }] },
          ]);
        });
    }

    it('bills every token class at its price, rounded up once', async () => {
      // promptTokenCount 20,124 of which 20,001 cached, 45 tool-use prompt tokens; 777 output tokens, 333 of them thoughts.
      const usage = { input: 123, cacheRead: 20_001, toolPrompt: 45, output: 777, reasoning: 333 };
      const { res } = await host.answers(surface, stream, { text: TEXT, usage });
      // (123 + 45) × $1.25 + 20,001 × $0.3125 + 777 × $10 = 210 + 6,250.3125 + 7,770 = $14,230.3125 per million
      // = 14,230,312.5 nano-credits, rounded up once.
      // A stream has no end marker: its finishing chunk with the usage completes it, as a whole reply completes.
      expect(await settlementOf(res)).toMatchObject({
        status: 'ok',
        host: 'fake-gemini',
        inputTokens: 168,
        cacheReadTokens: 20_001,
        cacheWriteTokens: 0,
        cacheWrite1hTokens: 0,
        outputTokens: 777,
        amount: 14_230_313,
      });
    });

    it(
      'falls back to the next host on a 429, a 5xx or a 401 before output',
      // 1,000 × $0.50 + 1,000 × $0.75 = $1,250 per million
      host.failsBeforeOutput(surface, stream, [429, 500, 503, 401], { status: 'ok', host: 'fake-gemini', amount: 1_250_000 }),
    );
  });

  it(
    'bills a cut stream for what was delivered',
    host.cutsItsStream(surface, {
      // The host counted the prompt (12 tokens) in every chunk; the output only at its end, which never came.
      then: ({ text, settled }) => {
        expect(text).not.toContain('four');
        expect(settled.inputTokens).toBe(12);
      },
    }),
  );

  it('fails a stream whose host reports an error after output, billing what was delivered', host.failsAfterOutput(surface));

  it(
    'does not believe absurd usage',
    host.reportsAbsurdUsage(surface, '{"promptTokenCount":12,"candidatesTokenCount":1e12,"totalTokenCount":1e12}'),
  );
});

describe('a thought signature', () => {
  const messages = MESSAGES;

  it.each([false, true])(
    'reaches a messages client and goes back to Gemini on the call it signed (streamed: %s)',
    async (stream) => {
      g.fake.on(GEMINI.hostModel, { kind: 'reply', reply: { thinking: THINKING, toolCalls: [CALL] } });
      const first = await call(messages, GEMINI.slug, stream, true);
      expect(first.res.status).toBe(200);
      const out = messages.read(first.text, stream);
      expect(out.signatures).toEqual([thoughtSignatureOf(THINKING)]);
      const [called] = out.calls;

      // The client sends the turn back as it got it (thinking block, signature and call), with the call's result.
      g.fake.on(GEMINI.hostModel, { kind: 'reply', reply: { text: TEXT } });
      const body = messages.body(GEMINI.slug, stream, asked(true));
      const next = await send(messages, GEMINI.slug, stream, {
        ...body,
        messages: [
          ...(body.messages as unknown[]),
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: out.reasoning, signature: out.signatures[0] },
              { type: 'tool_use', id: called.id, name: called.name, input: JSON.parse(called.arguments) },
            ],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: called.id, content: '18°C, sunny' }] },
        ],
      });
      expect(next.res.status).toBe(200);
      expect(messages.read(next.text, stream).text).toBe(TEXT);
      expect(sent(GEMINI.hostModel).body.contents).toEqual([
        { role: 'user', parts: [{ text: 'Hello' }] },
        {
          role: 'model',
          parts: [{ functionCall: { name: CALL.name, args: { city: 'Paris' } }, thoughtSignature: thoughtSignatureOf(THINKING) }],
        },
        { role: 'user', parts: [{ functionResponse: { name: CALL.name, response: { output: '18°C, sunny' } } }] },
      ]);
    },
  );
});

describe('a thought signature, to a Gemini client', () => {
  const gemini = GENERATE_CONTENT;

  it.each([false, true])(
    'goes back to Gemini on the call it signed, from the turn the client sends back (streamed: %s)',
    async (stream) => {
      g.fake.on(GEMINI.hostModel, { kind: 'reply', reply: { thinking: THINKING, toolCalls: [CALL] } });
      const first = await call(gemini, GEMINI.slug, stream, true);
      expect(first.res.status).toBe(200);
      const out = gemini.read(first.text, stream);
      expect(out.signatures).toEqual([thoughtSignatureOf(THINKING)]);

      // The client sends back the model's parts as it got them (as @google/genai's chats do), and the call's result.
      const parts = partsOf(first.text, stream);
      g.fake.on(GEMINI.hostModel, { kind: 'reply', reply: { text: TEXT } });
      const body = gemini.body(GEMINI.slug, stream, asked(true));
      const next = await send(gemini, GEMINI.slug, stream, {
        ...body,
        contents: [
          ...(body.contents as unknown[]),
          { role: 'model', parts },
          { role: 'user', parts: [{ functionResponse: { name: CALL.name, response: { output: '18°C, sunny' } } }] },
        ],
      });
      expect(next.res.status).toBe(200);
      expect(gemini.read(next.text, stream).text).toBe(TEXT);
      expect(sent(GEMINI.hostModel).body.contents[1]).toEqual({
        role: 'model',
        parts: [{ functionCall: { name: CALL.name, args: { city: 'Paris' } }, thoughtSignature: thoughtSignatureOf(THINKING) }],
      });
    },
  );
});

describe('a Gemini reply', () => {
  it('that stopped at MAX_TOKENS finishes as a length', async () => {
    g.fake.on(GEMINI.hostModel, { kind: 'reply', reply: { text: TEXT, finish: 'length' } });
    for (const stream of [false, true]) {
      const { res, text } = await call(CHAT_COMPLETIONS, GEMINI.slug, stream);
      expect(res.status).toBe(200);
      expect(CHAT_COMPLETIONS.read(text, stream).finish).toBe('length');
    }
  });

  it('that cannot be read is the host’s failure, reported to the client, not a crash', async () => {
    g.fake.on(GEMINI.hostModel, { kind: 'malformed', afterPieces: 0 });
    const { res, text } = await call(CHAT_COMPLETIONS, GEMINI.slug, false);
    expect(res.status).toBe(502);
    expect(text).toMatch(/not JSON/);
  });

  it('an error status reaches the client with the host’s message', async () => {
    g.fake.on(GEMINI.hostModel, {
      kind: 'status',
      status: 400,
      body: JSON.stringify({
        error: { code: 400, message: 'Function call is missing a thought_signature.', status: 'INVALID_ARGUMENT' },
      }),
    });
    const { res, text } = await call(CHAT_COMPLETIONS, GEMINI.slug, false);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(text).toContain('Function call is missing a thought_signature.');
  });
});

describe('what Google refuses, not sent', () => {
  const chat = CHAT_COMPLETIONS;
  const responses = RESPONSES;
  const gemini = GENERATE_CONTENT;
  const weatherTool = { type: 'function', function: WEATHER };

  it.each([false, true])(
    'a chat-completions client’s second tool-loop turn on Gemini 3 goes with the placeholder signature (streamed: %s)',
    async (stream) => {
      g.fake.on(GEMINI3.hostModel, { kind: 'reply', reply: { text: TEXT } });
      const { res, text } = await send(chat, GEMINI3.slug, stream, {
        model: GEMINI3.slug,
        stream,
        tools: [weatherTool],
        messages: [
          { role: 'user', content: 'Weather in Paris?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
          },
          { role: 'tool', tool_call_id: 'call_1', content: '18°C' },
        ],
      });
      expect(res.status).toBe(200);
      expect(chat.read(text, stream).text).toBe(TEXT);
      expect(sent(GEMINI3.hostModel).body.contents[1]).toEqual({
        role: 'model',
        parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: SKIP_SIGNATURE }],
      });
    },
  );

  it('a Responses client’s second tool-loop turn on Gemini 3 too', async () => {
    g.fake.on(GEMINI3.hostModel, { kind: 'reply', reply: { text: TEXT } });
    const { res } = await send(responses, GEMINI3.slug, false, {
      model: GEMINI3.slug,
      tools: [{ type: 'function', ...WEATHER }],
      input: [
        { role: 'user', content: 'Weather in Paris?' },
        { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', call_id: 'call_1', output: '18°C' },
      ],
    });
    expect(res.status).toBe(200);
  });

  it.each([false, true])(
    'reasoning_effort none on Gemini 2.5 Pro, which only thinks: its least budget, and the header says so (streamed: %s)',
    async (stream) => {
      g.fake.on(GEMINI25_PRO.hostModel, { kind: 'reply', reply: { text: TEXT } });
      const { res, text } = await send(chat, GEMINI25_PRO.slug, stream, {
        model: GEMINI25_PRO.slug,
        stream,
        reasoning_effort: 'none',
        messages: [{ role: 'user', content: 'Hi' }],
      });
      expect(res.status).toBe(200);
      expect(chat.read(text, stream).text).toBe(TEXT);
      if (!stream) expect(res.headers.get('x-gateway-omitted-reasoning')).toBe('thinking_required');
      expect(sent(GEMINI25_PRO.hostModel).body.generationConfig.thinkingConfig).toEqual({ thinkingBudget: 128 });
    },
  );

  it('a Gemini client’s budget 0, or one above the range, on Gemini 2.5 Pro: the range’s bound', async () => {
    g.fake.on(GEMINI25_PRO.hostModel, { kind: 'reply', reply: { text: TEXT } });
    const ask = (thinkingConfig: object) =>
      send(gemini, GEMINI25_PRO.slug, false, {
        contents: [{ role: 'user', parts: [{ text: 'Hi' }] }],
        generationConfig: { thinkingConfig },
      });
    const off = await ask({ thinkingBudget: 0 });
    expect(off.res.status).toBe(200);
    expect(off.res.headers.get('x-gateway-omitted-reasoning')).toBe('thinking_required');
    expect(sent(GEMINI25_PRO.hostModel).body.generationConfig.thinkingConfig).toEqual({ thinkingBudget: 128 });
    const over = await ask({ thinkingBudget: 50000, includeThoughts: true });
    expect(over.res.status).toBe(200);
    expect(over.res.headers.get('x-gateway-omitted-reasoning')).toBeNull();
    expect(sent(GEMINI25_PRO.hostModel).body.generationConfig.thinkingConfig).toEqual({
      thinkingBudget: 32768,
      includeThoughts: true,
    });
  });

  it('a Gemini client’s includeThoughts alone asks for the thoughts, the model’s own amount of them', async () => {
    g.fake.on(GEMINI25_PRO.hostModel, { kind: 'reply', reply: { thinking: THINKING, text: TEXT } });
    const { res, text } = await send(gemini, GEMINI25_PRO.slug, false, {
      contents: [{ role: 'user', parts: [{ text: 'Hi' }] }],
      generationConfig: { thinkingConfig: { includeThoughts: true } },
    });
    expect(res.status).toBe(200);
    expect(gemini.read(text, false).reasoning).toBe(THINKING);
    expect(sent(GEMINI25_PRO.hostModel).body.generationConfig.thinkingConfig).toEqual({ includeThoughts: true });
  });

  it.each([false, true])(
    'a Gemini client not asking for thoughts gets the signature on the call, and sending the call back is accepted (streamed: %s)',
    async (stream) => {
      g.fake.on(GEMINI3.hostModel, { kind: 'reply', reply: { thinking: THINKING, toolCalls: [CALL] } });
      const body: Record<string, any> = { ...gemini.body(GEMINI3.slug, stream, asked(true)), generationConfig: {} };
      const first = await send(gemini, GEMINI3.slug, stream, body);
      expect(first.res.status).toBe(200);
      const parts = partsOf(first.text, stream);
      const calls = parts.filter((part) => part.functionCall);
      expect(calls).toEqual([
        { functionCall: expect.objectContaining({ name: CALL.name }), thoughtSignature: thoughtSignatureOf(THINKING) },
      ]);
      expect(parts.filter((part) => part.thought)).toEqual([]);

      // As Gemini CLI keeps it: the call part alone, and the call's result.
      g.fake.on(GEMINI3.hostModel, { kind: 'reply', reply: { text: TEXT } });
      const next = await send(gemini, GEMINI3.slug, stream, {
        ...body,
        contents: [
          ...body.contents,
          { role: 'model', parts: calls },
          { role: 'user', parts: [{ functionResponse: { name: CALL.name, response: { output: '18°C, sunny' } } }] },
        ],
      });
      expect(next.res.status).toBe(200);
      expect(sent(GEMINI3.hostModel).body.contents[1].parts[0].thoughtSignature).toBe(thoughtSignatureOf(THINKING));
    },
  );

  it('a Gemini client’s toolConfig.includeServerSideToolInvocations is taken', async () => {
    g.fake.on(GEMINI3.hostModel, { kind: 'reply', reply: { text: TEXT } });
    const body = gemini.body(GEMINI3.slug, false, asked(true));
    const { res } = await send(gemini, GEMINI3.slug, false, { ...body, toolConfig: { includeServerSideToolInvocations: true } });
    expect(res.status).toBe(200);
  });
});

describe('what generateContent refuses outright, refused before the call', () => {
  const chat = CHAT_COMPLETIONS;
  const messages = MESSAGES;

  it('a messages client’s six stop sequences (Google takes five): a 400 in its format naming the field and the limit', async () => {
    const before = g.fake.requests.length;
    const stops = ['1', '2', '3', '4', '5', '6'];
    const body = { model: GEMINI.slug, max_tokens: 100, stop_sequences: stops, messages: [{ role: 'user', content: 'Count.' }] };
    const { res, text } = await send(messages, GEMINI.slug, false, body);
    expect(res.status).toBe(400);
    expect(JSON.parse(text)).toMatchObject({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: `no host of model "${GEMINI.slug}" takes this request: stop_sequences has 6 stop sequences, and host fake-gemini takes at most 5`,
      },
    });
    expect(g.fake.requests.length).toBe(before);
  });

  it('a chat-completions client’s tool named as OpenAI allows and Google does not: a 400 naming the tool and the rule', async () => {
    const before = g.fake.requests.length;
    const tool = { type: 'function', function: { ...WEATHER, name: '9lives' } };
    const body = { model: GEMINI.slug, tools: [tool], messages: [{ role: 'user', content: 'Weather?' }] };
    const { res, text } = await send(chat, GEMINI.slug, false, body);
    expect(res.status).toBe(400);
    expect(JSON.parse(text).error.message).toBe(
      `no host of model "${GEMINI.slug}" takes this request: tool "9lives": host fake-gemini takes tool names of a letter or an ` +
        'underscore, then letters, digits, underscores, dots, colons and dashes, at most 128 characters',
    );
    expect(g.fake.requests.length).toBe(before);
  });

  it('five stop sequences and a dotted name go, as Google takes them', async () => {
    g.fake.on(GEMINI.hostModel, { kind: 'reply', reply: { text: TEXT } });
    const tool = { name: 'files.read', input_schema: { type: 'object' } };
    const body = {
      model: GEMINI.slug,
      max_tokens: 100,
      stop_sequences: ['1', '2', '3', '4', '5'],
      tools: [tool],
      messages: [{ role: 'user', content: 'Count.' }],
    };
    const { res } = await send(messages, GEMINI.slug, false, body);
    expect(res.status).toBe(200);
    expect(sent(GEMINI.hostModel).body.generationConfig.stopSequences).toHaveLength(5);
  });
});
