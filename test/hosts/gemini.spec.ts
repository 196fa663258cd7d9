import type { ReservationSettled } from '../../src/ledger/ledger.events';
import type { FakeUpstream } from '../support/fake-upstream';
import { thoughtSignatureOf } from '../support/fakes/gemini';
import { SKIP_SIGNATURE } from '../../src/hosts/gemini/gemini.host';
import { auditThenClose, startGateway, testCatalogueFile, TestGateway } from '../support/gateway';

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

const model = (m: typeof GEMINI, hosts: unknown[]) => ({
  slug: m.slug,
  id: m.id,
  name: m.slug,
  contextLength: 1_000_000,
  maxOutputTokens: 1000,
  reasoning: true,
  hosts,
});

function catalogue(fake: FakeUpstream) {
  const file = testCatalogueFile(fake);
  return {
    hosts: [
      ...file.hosts,
      // Each host is called once per request, as the shared catalogue's are: what a failure leads to
      // here is the next host; retrying the same one is routing/retries.spec's.
      ...[
        { id: 'fake-gemini', kind: 'gemini', baseUrl: `${fake.url}/v1beta`, apiKeyEnv: 'FAKE_OPENAI_KEY' },
        { id: 'fake-gemini-flaky', kind: 'gemini', baseUrl: `${fake.url}/v1beta` },
      ].map((host) => ({ ...host, retry: { attempts: 0 } })),
    ],
    models: [
      ...file.models,
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
  };
}

const WEATHER = {
  name: 'get_weather',
  description: 'Weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/** A 1×1 PNG, inline. */
const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

/** What a client got, whatever its surface: text, reasoning (and its signature), calls with their whole arguments. */
interface Got {
  text: string;
  reasoning: string;
  signature: string;
  calls: Array<{ id: string; name: string; arguments: string }>;
}

/** The `data:` payloads of a server-sent event stream, with their event names. */
function sseEvents(text: string): Array<{ event?: string; data: any }> {
  return text
    .split('\n\n')
    .filter((block) => block.includes('data: '))
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)![1];
      return { event, data: data === '[DONE]' ? data : JSON.parse(data) };
    });
}

interface Surface {
  name: string;
  /** The surface carries tool calls, reasoning and images (native carries text only). */
  tools: boolean;
  /** The route under `/api`. */
  path(slug: string, stream: boolean): string;
  headers(key: string): Record<string, string>;
  body(slug: string, stream: boolean, withTools: boolean): Record<string, unknown>;
  /** A body whose user turn carries the PIXEL image inline (the surfaces that carry images to other formats). */
  withImage?: (slug: string, stream: boolean) => Record<string, unknown>;
  read(body: string, stream: boolean): Got;
}

const got = (): Got => ({ text: '', reasoning: '', signature: '', calls: [] });

const SURFACES: Surface[] = [
  {
    name: 'chat-completions',
    tools: true,
    path: () => 'v1/chat/completions',
    headers: (key) => ({ authorization: `Bearer ${key}` }),
    body: (slug, stream, withTools) => ({
      model: slug,
      stream,
      reasoning_effort: 'low',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello' },
      ],
      ...(withTools ? { tools: [{ type: 'function', function: WEATHER }] } : {}),
    }),
    read(body, stream) {
      const out = got();
      const parts = stream
        ? sseEvents(body)
            .filter((e) => e.data !== '[DONE]')
            .map((e) => e.data.choices?.[0]?.delta ?? {})
        : [JSON.parse(body).choices[0].message];
      for (const part of parts) {
        out.text += part.content ?? '';
        out.reasoning += part.reasoning_content ?? '';
        for (const [i, call] of (part.tool_calls ?? []).entries()) {
          const index = call.index ?? i;
          out.calls[index] ??= { id: call.id, name: call.function.name, arguments: '' };
          out.calls[index].arguments += call.function.arguments ?? '';
        }
      }
      return out;
    },
  },
  {
    name: 'messages',
    tools: true,
    path: () => 'v1/messages',
    headers: (key) => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' }),
    body: (slug, stream, withTools) => ({
      model: slug,
      stream,
      max_tokens: 1000,
      thinking: { type: 'enabled', budget_tokens: 512 },
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Hello' }],
      ...(withTools
        ? { tools: [{ name: WEATHER.name, description: WEATHER.description, input_schema: WEATHER.parameters }] }
        : {}),
    }),
    withImage: (slug, stream) => ({
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
    read(body, stream) {
      const out = got();
      if (!stream) {
        for (const block of JSON.parse(body).content) {
          if (block.type === 'text') out.text += block.text;
          if (block.type === 'thinking') {
            out.reasoning += block.thinking;
            out.signature += block.signature;
          }
          if (block.type === 'tool_use')
            out.calls.push({ id: block.id, name: block.name, arguments: JSON.stringify(block.input) });
        }
        return out;
      }
      const calls = new Map<number, Got['calls'][number]>();
      for (const { data } of sseEvents(body)) {
        if (data.type === 'content_block_start' && data.content_block.type === 'tool_use') {
          calls.set(data.index, { id: data.content_block.id, name: data.content_block.name, arguments: '' });
          out.calls.push(calls.get(data.index)!);
        }
        if (data.type !== 'content_block_delta') continue;
        out.text += data.delta.text ?? '';
        out.reasoning += data.delta.thinking ?? '';
        out.signature += data.delta.signature ?? '';
        if (data.delta.type === 'input_json_delta') calls.get(data.index)!.arguments += data.delta.partial_json;
      }
      return out;
    },
  },
  {
    name: 'responses',
    tools: true,
    path: () => 'v1/responses',
    headers: (key) => ({ authorization: `Bearer ${key}` }),
    body: (slug, stream, withTools) => ({
      model: slug,
      stream,
      instructions: 'Be brief.',
      input: 'Hello',
      reasoning: { effort: 'low' },
      ...(withTools ? { tools: [{ type: 'function', ...WEATHER, strict: false }] } : {}),
    }),
    withImage: (slug, stream) => ({
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
    read(body, stream) {
      const out = got();
      const items: any[] = stream
        ? sseEvents(body)
            .filter((e) => e.data.type === 'response.output_item.done')
            .map((e) => e.data.item)
        : JSON.parse(body).output;
      for (const item of items) {
        if (item.type === 'message') out.text += item.content.map((c: any) => c.text).join('');
        if (item.type === 'reasoning')
          out.reasoning += [...item.summary, ...(item.content ?? [])].map((c: any) => c.text).join('');
        if (item.type === 'function_call') out.calls.push({ id: item.call_id, name: item.name, arguments: item.arguments });
      }
      return out;
    },
  },
  {
    name: 'gemini',
    tools: true,
    path: (slug, stream) => `v1beta/models/${slug}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
    headers: (key) => ({ 'x-goog-api-key': key }),
    body: (_slug, _stream, withTools) => ({
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      contents: [{ role: 'user', parts: [{ text: 'Hello' }] }],
      generationConfig: { thinkingConfig: { thinkingBudget: 512, includeThoughts: true } },
      ...(withTools
        ? { tools: [{ functionDeclarations: [{ ...WEATHER, parameters: undefined, parametersJsonSchema: WEATHER.parameters }] }] }
        : {}),
    }),
    withImage: () => ({
      contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data: PIXEL } }, { text: 'What is this?' }] }],
    }),
    read(body, stream) {
      const out = got();
      const responses: any[] = stream ? sseEvents(body).map((e) => e.data) : [JSON.parse(body)];
      for (const part of responses.flatMap((r) => r.candidates?.[0]?.content?.parts ?? [])) {
        if (part.thought) out.reasoning += part.text ?? '';
        else if (typeof part.text === 'string') out.text += part.text;
        out.signature += part.thoughtSignature ?? '';
        if (part.functionCall)
          out.calls.push({
            id: part.functionCall.id,
            name: part.functionCall.name,
            arguments: JSON.stringify(part.functionCall.args),
          });
      }
      return out;
    },
  },
  {
    name: 'native',
    tools: false,
    path: (slug) => `v1/models/${slug}/chat`,
    headers: (key) => ({ authorization: `Bearer ${key}` }),
    body: (_slug, stream) => ({ stream, messages: [{ role: 'user', content: 'Hello' }] }),
    read(body, stream) {
      const out = got();
      if (!stream) out.text = JSON.parse(body).text;
      else for (const e of sseEvents(body).filter((e) => e.event === 'delta')) out.text += e.data.text;
      return out;
    },
  },
];

let g: TestGateway;
beforeAll(async () => {
  g = await startGateway({ catalogue });
});
afterAll(async () => {
  await auditThenClose(g);
});

async function post(surface: Surface, slug: string, body: Record<string, unknown>, stream: boolean) {
  const res = await fetch(`${g.baseUrl}/api/${surface.path(slug, stream)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...surface.headers(g.key) },
    body: JSON.stringify(body),
  });
  return { res, text: await res.text() };
}

const call = (surface: Surface, slug: string, stream: boolean, withTools = false) =>
  post(surface, slug, surface.body(slug, stream, withTools), stream);

/** The settlement of the request the response names. */
async function settlementOf(res: Response): Promise<ReservationSettled['data']> {
  const requestId = res.headers.get('x-request-id')!;
  await g.logged(requestId);
  await g.settled();
  const log = await g.t.runtime.events.readAll(0, 100_000);
  const settled = log.find((e) => e.type === 'ReservationSettled' && (e.data as { requestId: string }).requestId === requestId);
  return settled!.data as ReservationSettled['data'];
}

/** The last request the host was sent, for a host model (Gemini names it in the path). */
const sent = (hostModel: string) => g.fake.requests.filter((r) => r.model === hostModel).at(-1)!;

const TEXT = 'Sunny in Paris today.';
const THINKING = 'The user wants the weather.';
/** Without an id, as Gemini 2.5 sends its calls: the gateway names it. */
const CALL = { id: '', name: 'get_weather', arguments: '{"city":"Paris"}' };

describe.each(SURFACES)('the $name surface on a gemini host', (surface) => {
  describe.each([false, true])('streamed: %s', (stream) => {
    it('is sent as a generateContent request with the key, and gets the text back', async () => {
      g.fake.on(GEMINI.hostModel, { kind: 'reply', reply: { text: TEXT } });
      const { res, text } = await call(surface, GEMINI.slug, stream);
      expect(res.status).toBe(200);
      expect(surface.read(text, stream).text).toBe(TEXT);
      const upstream = sent(GEMINI.hostModel);
      expect(upstream.path).toBe(`/v1beta/models/fake-gemini:${stream ? 'streamGenerateContent' : 'generateContent'}`);
      expect(upstream.headers['x-goog-api-key']).toBe('upstream-openai-key');
      expect(upstream.headers.authorization).toBeUndefined();
      expect(upstream.body.contents).toEqual([{ role: 'user', parts: [{ text: 'Hello' }] }]);
      expect(upstream.body.generationConfig).toMatchObject({ candidateCount: 1, maxOutputTokens: 1000 });
      if (surface.name !== 'native') expect(upstream.body.systemInstruction).toEqual({ parts: [{ text: 'Be brief.' }] });
    });

    if (surface.tools) {
      it('carries a tool call with its arguments, and the thoughts before it', async () => {
        g.fake.on(GEMINI.hostModel, { kind: 'reply', reply: { thinking: THINKING, toolCalls: [CALL] } });
        const { res, text } = await call(surface, GEMINI.slug, stream, true);
        expect(res.status).toBe(200);
        const out = surface.read(text, stream);
        expect(out.calls).toEqual([{ ...CALL, id: expect.stringMatching(/^call_[0-9a-f]{24}$/) }]);
        expect(out.reasoning).toBe(THINKING);
        const upstream = sent(GEMINI.hostModel).body;
        expect(upstream.tools).toEqual([
          {
            functionDeclarations: [
              { name: WEATHER.name, description: WEATHER.description, parametersJsonSchema: WEATHER.parameters },
            ],
          },
        ]);
        expect(upstream.generationConfig.thinkingConfig).toEqual(
          surface.name === 'messages' || surface.name === 'gemini'
            ? { thinkingBudget: 512, includeThoughts: true }
            : // Effort low: Google's budget for it.
              { thinkingBudget: 1024, includeThoughts: true },
        );
      });

      const withImage = surface.withImage;
      if (withImage)
        it('sends an image inline', async () => {
          g.fake.on(GEMINI.hostModel, { kind: 'reply', reply: { text: 'A pixel.' } });
          const { res, text } = await post(surface, GEMINI.slug, withImage(GEMINI.slug, stream), stream);
          expect(res.status).toBe(200);
          expect(surface.read(text, stream).text).toBe('A pixel.');
          expect(sent(GEMINI.hostModel).body.contents).toEqual([
            { role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data: PIXEL } }, { text: 'What is this?' }] },
          ]);
        });
    }

    it('bills every token class at its price, rounded up once', async () => {
      // promptTokenCount 20,124 of which 20,001 cached, 45 tool-use prompt tokens; 777 output tokens, 333 of them thoughts.
      g.fake.on(GEMINI.hostModel, {
        kind: 'reply',
        reply: { text: TEXT, usage: { input: 123, cacheRead: 20_001, toolPrompt: 45, output: 777, reasoning: 333 } },
      });
      const { res } = await call(surface, GEMINI.slug, stream);
      expect(res.status).toBe(200);
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

    it('falls back to the next host on a 429, a 5xx or a 401 before output', async () => {
      for (const status of [429, 500, 503, 401]) {
        g.fake.on('fake-gemini-first', { kind: 'status', status });
        g.fake.on(FALLBACK.hostModel, { kind: 'reply', reply: { text: TEXT, usage: { input: 1000, output: 1000 } } });
        const { res, text } = await call(surface, FALLBACK.slug, stream);
        expect(res.status).toBe(200);
        expect(surface.read(text, stream).text).toBe(TEXT);
        // 1,000 × $0.50 + 1,000 × $0.75 = $1,250 per million
        expect(await settlementOf(res)).toMatchObject({ status: 'ok', host: 'fake-gemini', amount: 1_250_000 });
      }
    });
  });

  it('bills a cut stream for what was delivered', async () => {
    g.fake.on(GEMINI.hostModel, { kind: 'cut', reply: { text: 'one two three four five six' }, afterPieces: 3 });
    const { res, text } = await call(surface, GEMINI.slug, true);
    expect(res.status).toBe(200);
    expect(text).toContain('three');
    expect(text).not.toContain('four');
    const settled = await settlementOf(res);
    // The host counted the prompt (12 tokens) in every chunk; the output only at its end, which never came:
    // the gateway's count of the three words delivered (4 characters a token).
    expect(settled.inputTokens).toBe(12);
    expect(settled.outputTokens).toBe(Math.ceil('one two three'.length / 4));
  });

  it('fails a stream whose host reports an error after output, billing what was delivered', async () => {
    g.fake.on(GEMINI.hostModel, { kind: 'stream_error', afterPieces: 2 });
    const { res, text } = await call(surface, GEMINI.slug, true);
    expect(res.status).toBe(200);
    expect(text).toMatch(/error/);
    const settled = await settlementOf(res);
    expect(settled.outputTokens).toBeGreaterThan(0);
    expect(settled.amount).toBeGreaterThan(0);
  });

  it('does not believe absurd usage', async () => {
    g.fake.on(GEMINI.hostModel, {
      kind: 'reply',
      reply: { text: TEXT, wireUsage: '{"promptTokenCount":12,"candidatesTokenCount":1e12,"totalTokenCount":1e12}' },
    });
    const { res } = await call(surface, GEMINI.slug, false);
    expect(res.status).toBe(200);
    const settled = await settlementOf(res);
    // The cap is 1,000: 10^12 output tokens is not believed, the delivered text is counted instead.
    expect(settled.outputTokens).toBe(Math.ceil(TEXT.length / 4));
    expect(settled.inputTokens).toBe(12);
  });
});

describe('a thought signature', () => {
  const messages = SURFACES[1];

  it.each([false, true])(
    'reaches a messages client and goes back to Gemini on the call it signed (streamed: %s)',
    async (stream) => {
      g.fake.on(GEMINI.hostModel, { kind: 'reply', reply: { thinking: THINKING, toolCalls: [CALL] } });
      const first = await call(messages, GEMINI.slug, stream, true);
      expect(first.res.status).toBe(200);
      const out = messages.read(first.text, stream);
      expect(out.signature).toBe(thoughtSignatureOf(THINKING));
      const [called] = out.calls;

      // The client sends the turn back as it got it (thinking block, signature and call), with the call's result.
      g.fake.on(GEMINI.hostModel, { kind: 'reply', reply: { text: TEXT } });
      const body = messages.body(GEMINI.slug, stream, true);
      const next = await post(
        messages,
        GEMINI.slug,
        {
          ...body,
          messages: [
            ...(body.messages as unknown[]),
            {
              role: 'assistant',
              content: [
                { type: 'thinking', thinking: out.reasoning, signature: out.signature },
                { type: 'tool_use', id: called.id, name: called.name, input: JSON.parse(called.arguments) },
              ],
            },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: called.id, content: '18°C, sunny' }] },
          ],
        },
        stream,
      );
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
  const gemini = SURFACES[3];

  it.each([false, true])(
    'goes back to Gemini on the call it signed, from the turn the client sends back (streamed: %s)',
    async (stream) => {
      g.fake.on(GEMINI.hostModel, { kind: 'reply', reply: { thinking: THINKING, toolCalls: [CALL] } });
      const first = await call(gemini, GEMINI.slug, stream, true);
      expect(first.res.status).toBe(200);
      const out = gemini.read(first.text, stream);
      expect(out.signature).toBe(thoughtSignatureOf(THINKING));

      // The client sends back the model's parts as it got them (as @google/genai's chats do), and the call's result.
      const parts: unknown[] = (stream ? sseEvents(first.text).map((e) => e.data) : [JSON.parse(first.text)]).flatMap(
        (r: any) => r.candidates[0].content.parts,
      );
      g.fake.on(GEMINI.hostModel, { kind: 'reply', reply: { text: TEXT } });
      const body = gemini.body(GEMINI.slug, stream, true);
      const next = await post(
        gemini,
        GEMINI.slug,
        {
          ...body,
          contents: [
            ...(body.contents as unknown[]),
            { role: 'model', parts },
            { role: 'user', parts: [{ functionResponse: { name: CALL.name, response: { output: '18°C, sunny' } } }] },
          ],
        },
        stream,
      );
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
      const { res, text } = await call(SURFACES[0], GEMINI.slug, stream);
      expect(res.status).toBe(200);
      const finish = stream
        ? sseEvents(text)
            .filter((e) => e.data !== '[DONE]')
            .map((e) => e.data.choices?.[0]?.finish_reason)
            .find(Boolean)
        : JSON.parse(text).choices[0].finish_reason;
      expect(finish).toBe('length');
    }
  });

  it('that cannot be read is the host’s failure, reported to the client, not a crash', async () => {
    g.fake.on(GEMINI.hostModel, { kind: 'malformed', afterPieces: 0 });
    const { res, text } = await call(SURFACES[0], GEMINI.slug, false);
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
    const { res, text } = await call(SURFACES[0], GEMINI.slug, false);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(text).toContain('Function call is missing a thought_signature.');
  });
});

describe('what Google refuses, not sent', () => {
  const chat = SURFACES[0];
  const responses = SURFACES[2];
  const gemini = SURFACES[3];
  const weatherTool = { type: 'function', function: WEATHER };

  it.each([false, true])(
    'a chat-completions client’s second tool-loop turn on Gemini 3 goes with the placeholder signature (streamed: %s)',
    async (stream) => {
      g.fake.on(GEMINI3.hostModel, { kind: 'reply', reply: { text: TEXT } });
      const { res, text } = await post(
        chat,
        GEMINI3.slug,
        {
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
        },
        stream,
      );
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
    const { res } = await post(
      responses,
      GEMINI3.slug,
      {
        model: GEMINI3.slug,
        tools: [{ type: 'function', ...WEATHER }],
        input: [
          { role: 'user', content: 'Weather in Paris?' },
          { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { type: 'function_call_output', call_id: 'call_1', output: '18°C' },
        ],
      },
      false,
    );
    expect(res.status).toBe(200);
  });

  it.each([false, true])(
    'reasoning_effort none on Gemini 2.5 Pro, which only thinks: its least budget, and the header says so (streamed: %s)',
    async (stream) => {
      g.fake.on(GEMINI25_PRO.hostModel, { kind: 'reply', reply: { text: TEXT } });
      const { res, text } = await post(
        chat,
        GEMINI25_PRO.slug,
        { model: GEMINI25_PRO.slug, stream, reasoning_effort: 'none', messages: [{ role: 'user', content: 'Hi' }] },
        stream,
      );
      expect(res.status).toBe(200);
      expect(chat.read(text, stream).text).toBe(TEXT);
      if (!stream) expect(res.headers.get('x-gateway-omitted-reasoning')).toBe('thinking_required');
      expect(sent(GEMINI25_PRO.hostModel).body.generationConfig.thinkingConfig).toEqual({ thinkingBudget: 128 });
    },
  );

  it('a Gemini client’s budget 0, or one above the range, on Gemini 2.5 Pro: the range’s bound', async () => {
    g.fake.on(GEMINI25_PRO.hostModel, { kind: 'reply', reply: { text: TEXT } });
    const ask = (thinkingConfig: object) =>
      post(
        gemini,
        GEMINI25_PRO.slug,
        { contents: [{ role: 'user', parts: [{ text: 'Hi' }] }], generationConfig: { thinkingConfig } },
        false,
      );
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
    const { res, text } = await post(
      gemini,
      GEMINI25_PRO.slug,
      { contents: [{ role: 'user', parts: [{ text: 'Hi' }] }], generationConfig: { thinkingConfig: { includeThoughts: true } } },
      false,
    );
    expect(res.status).toBe(200);
    expect(gemini.read(text, false).reasoning).toBe(THINKING);
    expect(sent(GEMINI25_PRO.hostModel).body.generationConfig.thinkingConfig).toEqual({ includeThoughts: true });
  });

  it.each([false, true])(
    'a Gemini client not asking for thoughts gets the signature on the call, and sending the call back is accepted (streamed: %s)',
    async (stream) => {
      g.fake.on(GEMINI3.hostModel, { kind: 'reply', reply: { thinking: THINKING, toolCalls: [CALL] } });
      const body: Record<string, any> = { ...gemini.body(GEMINI3.slug, stream, true), generationConfig: {} };
      const first = await post(gemini, GEMINI3.slug, body, stream);
      expect(first.res.status).toBe(200);
      const parts: any[] = (stream ? sseEvents(first.text).map((e) => e.data) : [JSON.parse(first.text)]).flatMap(
        (r: any) => r.candidates[0].content.parts,
      );
      const calls = parts.filter((part) => part.functionCall);
      expect(calls).toEqual([
        { functionCall: expect.objectContaining({ name: CALL.name }), thoughtSignature: thoughtSignatureOf(THINKING) },
      ]);
      expect(parts.filter((part) => part.thought)).toEqual([]);

      // As Gemini CLI keeps it: the call part alone, and the call's result.
      g.fake.on(GEMINI3.hostModel, { kind: 'reply', reply: { text: TEXT } });
      const next = await post(
        gemini,
        GEMINI3.slug,
        {
          ...body,
          contents: [
            ...body.contents,
            { role: 'model', parts: calls },
            { role: 'user', parts: [{ functionResponse: { name: CALL.name, response: { output: '18°C, sunny' } } }] },
          ],
        },
        stream,
      );
      expect(next.res.status).toBe(200);
      expect(sent(GEMINI3.hostModel).body.contents[1].parts[0].thoughtSignature).toBe(thoughtSignatureOf(THINKING));
    },
  );

  it('a Gemini client’s toolConfig.includeServerSideToolInvocations is taken', async () => {
    g.fake.on(GEMINI3.hostModel, { kind: 'reply', reply: { text: TEXT } });
    const body = gemini.body(GEMINI3.slug, false, true);
    const { res } = await post(gemini, GEMINI3.slug, { ...body, toolConfig: { includeServerSideToolInvocations: true } }, false);
    expect(res.status).toBe(200);
  });
});

describe('what generateContent refuses outright, refused before the call', () => {
  const chat = SURFACES[0];
  const messages = SURFACES[1];

  it('a messages client’s six stop sequences (Google takes five): a 400 in its format naming the field and the limit', async () => {
    const before = g.fake.requests.length;
    const stops = ['1', '2', '3', '4', '5', '6'];
    const body = { model: GEMINI.slug, max_tokens: 100, stop_sequences: stops, messages: [{ role: 'user', content: 'Count.' }] };
    const { res, text } = await post(messages, GEMINI.slug, body, false);
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
    const { res, text } = await post(chat, GEMINI.slug, body, false);
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
    const { res } = await post(messages, GEMINI.slug, body, false);
    expect(res.status).toBe(200);
    expect(sent(GEMINI.hostModel).body.generationConfig.stopSequences).toHaveLength(5);
  });
});
