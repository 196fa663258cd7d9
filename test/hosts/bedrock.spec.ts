import type { ReservationSettled } from '../../src/ledger/ledger.events';
import { signatureOf, type FakeUpstream } from '../support/fake-upstream';
import { BEDROCK_TEST_API_KEY, BEDROCK_TEST_CREDENTIALS, eventMessage, rotateBedrockSecret } from '../support/fakes/bedrock';
import { auditThenClose, startGateway, testCatalogueFile, TestGateway } from '../support/gateway';

/**
 * Models on `bedrock` hosts (the fake's Bedrock Runtime, which verifies every call's SigV4 signature
 * with AWS's signer), through every client surface, whole and streamed: what the host replies (text,
 * reasoning with its signature, a call with its input streamed) reaches the client, every token
 * class is billed exactly at the catalogue's prices, a cut stream is billed for what was delivered,
 * failures before output fall back (429, 5xx, a signature AWS refuses), absurd usage is not
 * believed; InvokeModel carries a messages client's body whole; a Bedrock API key goes as a bearer.
 */

/** The AWS credentials the gateway's process has (AWS's chain reads them from the environment). */
const AWS_ENV = {
  AWS_ACCESS_KEY_ID: BEDROCK_TEST_CREDENTIALS.accessKeyId,
  AWS_SECRET_ACCESS_KEY: BEDROCK_TEST_CREDENTIALS.secretAccessKey,
  AWS_SESSION_TOKEN: 'fake-bedrock-session-token',
};

/** Converse, an Anthropic model: $3/M input, $0.30/M cache reads, $3.75/M 5-minute and $6/M 1-hour writes, $15/M output. */
const CONVERSE = { slug: 'test/bedrock', id: 'b0000000-0000-4000-8000-000000000001', hostModel: 'us.anthropic.claude-fake-v1:0' };
/** The first host (`fake-bedrock-first`, at $9/M) fails before output; the second serves at $0.50/M and $0.75/M. */
const FALLBACK = { slug: 'test/bedrock-fallback', id: 'b0000000-0000-4000-8000-000000000002', hostModel: 'fake-bedrock-second' };
/** InvokeModel with Anthropic's body, priced as CONVERSE. */
const INVOKE = {
  slug: 'test/bedrock-invoke',
  id: 'b0000000-0000-4000-8000-000000000003',
  hostModel: 'anthropic.claude-invoke-v1:0',
};
/** Signed first, then a host with a Bedrock API key ($1/M, $2/M). */
const KEYED = { slug: 'test/bedrock-keyed', id: 'b0000000-0000-4000-8000-000000000004', hostModel: 'amazon.nova-keyed-v1:0' };

/** A model that takes no toolChoice on Converse (only Claude and Nova do). */
const LLAMA = {
  slug: 'test/bedrock-llama',
  id: 'b0000000-0000-4000-8000-000000000005',
  hostModel: 'meta.llama3-3-70b-instruct-v1:0',
};

const ANTHROPIC_PRICES = { input: '3.00', cacheRead: '0.30', cacheWrite: '3.75', cacheWrite1h: '6.00', output: '15.00' };

const model = (m: { slug: string; id: string }, hosts: unknown[]) => ({
  slug: m.slug,
  id: m.id,
  name: m.slug,
  contextLength: 200_000,
  maxOutputTokens: 8000,
  reasoning: true,
  hosts,
});

function catalogue(fake: FakeUpstream) {
  const file = testCatalogueFile(fake);
  // Each host is called once per request, as the shared catalogue's are: what a failure leads to here
  // is the next host; retrying the same one is routing/retries.spec's.
  const bedrock = (id: string, extra: object = {}) => ({
    id,
    kind: 'bedrock',
    baseUrl: fake.url,
    region: 'us-east-1',
    retry: { attempts: 0 },
    ...extra,
  });
  return {
    hosts: [
      ...file.hosts,
      bedrock('fake-bedrock'),
      bedrock('fake-bedrock-flaky'),
      bedrock('fake-bedrock-invoke', { api: 'invoke' }),
      bedrock('fake-bedrock-keyed', { apiKeyEnv: 'FAKE_BEDROCK_API_KEY' }),
    ],
    models: [
      ...file.models,
      model(CONVERSE, [{ host: 'fake-bedrock', model: CONVERSE.hostModel, pricing: ANTHROPIC_PRICES }]),
      model(FALLBACK, [
        { host: 'fake-bedrock-flaky', model: 'fake-bedrock-first', pricing: { input: '9.00', output: '9.00' } },
        { host: 'fake-bedrock', model: FALLBACK.hostModel, pricing: { input: '0.50', output: '0.75' } },
      ]),
      model(INVOKE, [{ host: 'fake-bedrock-invoke', model: INVOKE.hostModel, pricing: ANTHROPIC_PRICES }]),
      model(LLAMA, [{ host: 'fake-bedrock', model: LLAMA.hostModel, pricing: { input: '0.72', output: '0.72' } }]),
      model(KEYED, [
        { host: 'fake-bedrock', model: 'amazon.nova-signed-v1:0', pricing: { input: '1.00', output: '2.00' } },
        { host: 'fake-bedrock-keyed', model: KEYED.hostModel, pricing: { input: '1.00', output: '2.00' } },
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

/** What a client got, whatever its surface. */
interface Got {
  text: string;
  reasoning: string;
  signatures: string[];
  calls: Array<{ id: string; name: string; arguments: string }>;
}

function sseEvents(text: string): Array<{ event?: string; data: any }> {
  return text
    .split('\n\n')
    .filter((block) => block.includes('data: '))
    .map((block) => {
      const data = /^data: (.*)$/m.exec(block)![1];
      return { event: /^event: (.*)$/m.exec(block)?.[1], data: data === '[DONE]' ? data : JSON.parse(data) };
    });
}

interface Surface {
  name: string;
  /** Carries tool calls and reasoning (native: text only). */
  tools: boolean;
  path(slug: string): string;
  headers(key: string): Record<string, string>;
  body(slug: string, stream: boolean, options: { tools?: boolean; image?: boolean }): Record<string, unknown>;
  read(body: string, stream: boolean): Got;
}

const got = (): Got => ({ text: '', reasoning: '', signatures: [], calls: [] });

const SURFACES: Surface[] = [
  {
    name: 'chat-completions',
    tools: true,
    path: () => 'chat/completions',
    headers: (key) => ({ authorization: `Bearer ${key}` }),
    body: (slug, stream, { tools }) => ({
      model: slug,
      stream,
      reasoning_effort: 'low',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello' },
      ],
      ...(tools ? { tools: [{ type: 'function', function: WEATHER }] } : {}),
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
    path: () => 'messages',
    headers: (key) => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' }),
    body: (slug, stream, { tools, image }) => ({
      model: slug,
      stream,
      max_tokens: 4000,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      system: 'Be brief.',
      messages: [
        {
          role: 'user',
          content: image
            ? [
                { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PIXEL } },
                { type: 'text', text: 'Hello' },
              ]
            : 'Hello',
        },
      ],
      ...(tools ? { tools: [{ name: WEATHER.name, description: WEATHER.description, input_schema: WEATHER.parameters }] } : {}),
    }),
    read(body, stream) {
      const out = got();
      if (!stream) {
        for (const block of JSON.parse(body).content) {
          if (block.type === 'text') out.text += block.text;
          if (block.type === 'thinking') {
            out.reasoning += block.thinking;
            out.signatures.push(block.signature);
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
        if (data.delta.type === 'signature_delta') out.signatures.push(data.delta.signature);
        if (data.delta.type === 'input_json_delta') calls.get(data.index)!.arguments += data.delta.partial_json;
      }
      return out;
    },
  },
  {
    name: 'responses',
    tools: true,
    path: () => 'responses',
    headers: (key) => ({ authorization: `Bearer ${key}` }),
    body: (slug, stream, { tools, image }) => ({
      model: slug,
      stream,
      instructions: 'Be brief.',
      input: image
        ? [
            {
              role: 'user',
              content: [
                { type: 'input_image', image_url: `data:image/png;base64,${PIXEL}` },
                { type: 'input_text', text: 'Hello' },
              ],
            },
          ]
        : 'Hello',
      reasoning: { effort: 'low' },
      ...(tools ? { tools: [{ type: 'function', ...WEATHER, strict: false }] } : {}),
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
    name: 'native',
    tools: false,
    path: (slug) => `models/${slug}/chat`,
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
const saved: Record<string, string | undefined> = {};
beforeAll(async () => {
  for (const [name, value] of Object.entries(AWS_ENV)) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
  g = await startGateway({ catalogue });
});
afterAll(async () => {
  try {
    await auditThenClose(g);
  } finally {
    for (const [name, value] of Object.entries(saved))
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
  }
});

async function call(surface: Surface, slug: string, stream: boolean, options: { tools?: boolean; image?: boolean } = {}) {
  const res = await fetch(`${g.baseUrl}/api/v1/${surface.path(slug)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...surface.headers(g.key) },
    body: JSON.stringify(surface.body(slug, stream, options)),
  });
  return { res, text: await res.text() };
}

async function settlementOf(res: Response): Promise<ReservationSettled['data']> {
  const requestId = res.headers.get('x-request-id')!;
  await g.logged(requestId);
  await g.settled();
  const log = await g.t.runtime.events.readAll(0, 100_000);
  const settled = log.find((e) => e.type === 'ReservationSettled' && (e.data as { requestId: string }).requestId === requestId);
  return settled!.data as ReservationSettled['data'];
}

/** The last call the host was sent for a model id. */
const sent = (hostModel: string) => g.fake.requests.filter((r) => r.model === hostModel).at(-1)!;

const TEXT = 'Sunny in Paris today.';
const THINKING = 'The user wants the weather.';
const CALL = { id: 'tooluse_weather_1', name: 'get_weather', arguments: '{"city":"Paris"}' };
/** Every class: 100 × $3 + 20,000 × $0.30 + 3,000 × $3.75 + 1,000 × $6 + 500 × $15 = $31,050 per million. */
const EVERY_CLASS = { input: 100, cacheRead: 20_000, cacheWrite: 3_000, cacheWrite1h: 1_000, output: 500 };
const EVERY_CLASS_BILLED = {
  inputTokens: 100,
  cacheReadTokens: 20_000,
  cacheWriteTokens: 3_000,
  cacheWrite1hTokens: 1_000,
  outputTokens: 500,
  amount: 31_050_000,
};

describe.each(SURFACES)('the $name surface on a bedrock (Converse) host', (surface) => {
  describe.each([false, true])('streamed: %s', (stream) => {
    it('is sent to Converse, signed with SigV4 as the fake verifies, and gets the text back', async () => {
      g.fake.on(CONVERSE.hostModel, { kind: 'reply', reply: { text: TEXT } });
      const { res, text } = await call(surface, CONVERSE.slug, stream);
      expect(res.status).toBe(200);
      expect(surface.read(text, stream).text).toBe(TEXT);
      const upstream = sent(CONVERSE.hostModel);
      expect(upstream.path).toBe(`/model/us.anthropic.claude-fake-v1%3A0/${stream ? 'converse-stream' : 'converse'}`);
      expect(upstream.headers.authorization).toMatch(
        new RegExp(
          `^AWS4-HMAC-SHA256 Credential=${BEDROCK_TEST_CREDENTIALS.accessKeyId}/\\d{8}/us-east-1/bedrock/aws4_request, `,
        ),
      );
      expect(upstream.headers['x-amz-security-token']).toBe(AWS_ENV.AWS_SESSION_TOKEN);
      expect(upstream.body).toMatchObject({
        messages: [{ role: 'user', content: [{ text: 'Hello' }] }],
        inferenceConfig: { maxTokens: expect.any(Number) },
      });
      expect(upstream.body).not.toHaveProperty('model');
      if (surface.name !== 'native') expect(upstream.body.system).toEqual([{ text: 'Be brief.' }]);
    });

    if (surface.tools) {
      it('carries a call with its input streamed, and the reasoning before it (with its signature where the client takes one)', async () => {
        g.fake.on(CONVERSE.hostModel, { kind: 'reply', reply: { thinking: THINKING, toolCalls: [CALL] } });
        const { res, text } = await call(surface, CONVERSE.slug, stream, { tools: true });
        expect(res.status).toBe(200);
        const out = surface.read(text, stream);
        expect(out.calls).toEqual([CALL]);
        expect(out.reasoning).toBe(THINKING);
        if (surface.name === 'messages') expect(out.signatures).toEqual([signatureOf(THINKING)]);
        const upstream = sent(CONVERSE.hostModel).body;
        expect(upstream.toolConfig).toEqual({
          tools: [
            { toolSpec: { name: WEATHER.name, description: WEATHER.description, inputSchema: { json: WEATHER.parameters } } },
          ],
        });
        expect(upstream.additionalModelRequestFields.thinking).toEqual({ type: 'enabled', budget_tokens: expect.any(Number) });
      });

      // The chat-completions surface hands its images on only to hosts of its own format (main's translation has none).
      if (surface.name !== 'chat-completions')
        it('sends an image inline, as its bytes', async () => {
          g.fake.on(CONVERSE.hostModel, { kind: 'reply', reply: { text: TEXT } });
          const { res } = await call(surface, CONVERSE.slug, stream, { image: true });
          expect(res.status).toBe(200);
          expect(sent(CONVERSE.hostModel).body.messages[0].content).toEqual([
            { image: { format: 'png', source: { bytes: PIXEL } } },
            { text: 'Hello' },
          ]);
        });
    }

    it('bills every token class exactly at its price', async () => {
      g.fake.on(CONVERSE.hostModel, { kind: 'reply', reply: { text: TEXT, usage: EVERY_CLASS } });
      const { res } = await call(surface, CONVERSE.slug, stream);
      expect(res.status).toBe(200);
      expect(await settlementOf(res)).toMatchObject({ host: 'fake-bedrock', ...EVERY_CLASS_BILLED });
    });

    it('falls back to the next host on a 429, a 500, a 503 or a 403 before output', async () => {
      for (const status of [429, 500, 503, 403]) {
        g.fake.on('fake-bedrock-first', { kind: 'status', status });
        g.fake.on(FALLBACK.hostModel, { kind: 'reply', reply: { text: TEXT, usage: { input: 1000, output: 1000 } } });
        const { res, text } = await call(surface, FALLBACK.slug, stream);
        expect(res.status).toBe(200);
        expect(surface.read(text, stream).text).toBe(TEXT);
        // 1,000 × $0.50 + 1,000 × $0.75 = $1,250 per million
        expect(await settlementOf(res)).toMatchObject({ host: 'fake-bedrock', amount: 1_250_000 });
      }
    });
  });

  it('bills a cut stream for what was delivered', async () => {
    g.fake.on(CONVERSE.hostModel, { kind: 'cut', reply: { text: 'one two three four five six' }, afterPieces: 3 });
    const { res, text } = await call(surface, CONVERSE.slug, true);
    expect(res.status).toBe(200);
    expect(text).toContain('three');
    const settled = await settlementOf(res);
    // No usage came (it ends the stream): the gateway's count of the three words delivered.
    expect(settled.outputTokens).toBe(Math.ceil('one two three'.length / 4));
    expect(settled.amount).toBeGreaterThan(0);
  });

  it('fails a stream whose host raises an exception after output, billing what was delivered', async () => {
    g.fake.on(CONVERSE.hostModel, { kind: 'stream_error', afterPieces: 2 });
    const { res, text } = await call(surface, CONVERSE.slug, true);
    expect(res.status).toBe(200);
    expect(text).toMatch(/error/);
    const settled = await settlementOf(res);
    expect(settled.outputTokens).toBeGreaterThan(0);
    expect(settled.amount).toBeGreaterThan(0);
  });

  it('falls back when the exception comes before any output', async () => {
    g.fake.on('fake-bedrock-first', { kind: 'stream_error', afterPieces: 0 });
    g.fake.on(FALLBACK.hostModel, { kind: 'reply', reply: { text: TEXT, usage: { input: 1000, output: 1000 } } });
    const { res, text } = await call(surface, FALLBACK.slug, true);
    expect(res.status).toBe(200);
    expect(surface.read(text, true).text).toBe(TEXT);
    expect(await settlementOf(res)).toMatchObject({ host: 'fake-bedrock', amount: 1_250_000 });
  });

  it('does not believe absurd usage', async () => {
    g.fake.on(CONVERSE.hostModel, {
      kind: 'reply',
      reply: { text: TEXT, wireUsage: '{"inputTokens":12,"outputTokens":1e12,"totalTokens":1e12}' },
    });
    for (const stream of [false, true]) {
      const { res } = await call(surface, CONVERSE.slug, stream);
      expect(res.status).toBe(200);
      const settled = await settlementOf(res);
      // 10^12 output tokens under a cap of 8,000 is not believed: the delivered text is counted instead.
      expect(settled.outputTokens).toBe(Math.ceil(TEXT.length / 4));
      expect(settled.inputTokens).toBe(12);
    }
  });
});

describe('a Converse stream', () => {
  it('that turns unreadable (a checksum wrong) fails after the text before it, billing what was delivered', async () => {
    g.fake.on(CONVERSE.hostModel, { kind: 'malformed', afterPieces: 2 });
    const { res, text } = await call(SURFACES[0], CONVERSE.slug, true);
    expect(res.status).toBe(200);
    expect(SURFACES[0].read(text, true).text).toBe('Hello from');
    expect(text).toMatch(/"error"/);
    const settled = await settlementOf(res);
    expect(settled.outputTokens).toBe(Math.ceil('Hello from'.length / 4));
  });

  it('with events and deltas this kind does not know (citations, a future event) reads the rest', async () => {
    const usage = { inputTokens: 10, outputTokens: 4, totalTokens: 14, cacheReadInputTokens: 0, cacheWriteInputTokens: 0 };
    const bytes = Buffer.concat(
      [
        eventMessage('messageStart', '{"role":"assistant"}'),
        eventMessage('contentBlockDelta', '{"contentBlockIndex":0,"delta":{"text":"Cited"}}'),
        eventMessage('contentBlockDelta', '{"contentBlockIndex":0,"delta":{"citation":{"title":"A source"}}}'),
        eventMessage('someFutureEvent', '{"anything":true}'),
        eventMessage('contentBlockStop', '{"contentBlockIndex":0}'),
        eventMessage('messageStop', '{"stopReason":"end_turn"}'),
        eventMessage('metadata', JSON.stringify({ usage, metrics: { latencyMs: 10 } })),
      ].map((m) => Buffer.from(m)),
    );
    g.fake.on(CONVERSE.hostModel, { kind: 'verbatim', body: bytes.toString('latin1') });
    const { res, text } = await call(SURFACES[0], CONVERSE.slug, true);
    expect(res.status).toBe(200);
    expect(SURFACES[0].read(text, true).text).toBe('Cited');
    // 10 × $3 + 4 × $15 = $90 per million
    expect(await settlementOf(res)).toMatchObject({ inputTokens: 10, outputTokens: 4, amount: 90_000 });
  });
});

describe('an image by URL', () => {
  it('is refused with 400 in the client’s format, the host not called (Converse takes image bytes only)', async () => {
    const before = g.fake.requests.length;
    const res = await fetch(`${g.baseUrl}/api/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': g.key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: CONVERSE.slug,
        max_tokens: 100,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
              { type: 'text', text: 'What is this?' },
            ],
          },
        ],
      }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { type: string; error: { type: string; message: string } };
    expect(body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(body.error.message).toMatch(/Bedrock takes images inline/);
    expect(g.fake.requests.length).toBe(before);
  });
});

describe('a model that takes no toolChoice on Converse (Llama): the fake refuses it, as AWS does', () => {
  const ask = (tool_choice: unknown) =>
    fetch(`${g.baseUrl}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${g.key}` },
      body: JSON.stringify({
        model: LLAMA.slug,
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: [{ type: 'function', function: WEATHER }],
        tool_choice,
      }),
    });

  it("auto is the model's own way: the tools go without a toolChoice, and it is answered", async () => {
    g.fake.on(LLAMA.hostModel, { kind: 'reply', reply: { text: 'Sunny.' } });
    const res = await ask('auto');
    expect(res.status).toBe(200);
    expect(sent(LLAMA.hostModel).body.toolConfig).toEqual({ tools: [expect.objectContaining({ toolSpec: expect.anything() })] });
  });

  it('a tool required is refused 400 naming the model, the host not called', async () => {
    const before = g.fake.requests.length;
    const res = await ask('required');
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { message: string } };
    expect(body.error.message).toContain(`${LLAMA.hostModel} on Bedrock's Converse takes no tool_choice requiring a tool`);
    expect(g.fake.requests.length).toBe(before);
  });
});

describe('a signature AWS does not take (a secret key rotated away)', () => {
  it('is a 403 from the host: the model’s next host (with an API key) serves, and a model with no other host fails clearly', async () => {
    const restore = rotateBedrockSecret('a-secret-the-gateway-does-not-have');
    try {
      g.fake.on(KEYED.hostModel, { kind: 'reply', reply: { text: TEXT, usage: { input: 1000, output: 1000 } } });
      const served = await call(SURFACES[0], KEYED.slug, false);
      expect(served.res.status).toBe(200);
      expect(SURFACES[0].read(served.text, false).text).toBe(TEXT);
      expect(await settlementOf(served.res)).toMatchObject({ host: 'fake-bedrock-keyed', amount: 3_000_000 });

      const refused = await call(SURFACES[0], CONVERSE.slug, false);
      expect(refused.res.status).toBe(502);
      expect(JSON.parse(refused.text).error.message).toMatch(
        /fake-bedrock failed: The request signature we calculated does not match/,
      );
    } finally {
      restore();
    }
  });
});

describe('a host with a Bedrock API key', () => {
  it.each([false, true])('sends it as a bearer token, unsigned (streamed: %s)', async (stream) => {
    g.fake.on('amazon.nova-signed-v1:0', { kind: 'status', status: 503 });
    g.fake.on(KEYED.hostModel, { kind: 'reply', reply: { text: TEXT, usage: { input: 1000, output: 1000 } } });
    const { res, text } = await call(SURFACES[0], KEYED.slug, stream);
    expect(res.status).toBe(200);
    expect(SURFACES[0].read(text, stream).text).toBe(TEXT);
    const upstream = sent(KEYED.hostModel);
    expect(upstream.headers.authorization).toBe(`Bearer ${BEDROCK_TEST_API_KEY}`);
    expect(upstream.headers).not.toHaveProperty('x-amz-date');
    // 1,000 × $1 + 1,000 × $2
    expect(await settlementOf(res)).toMatchObject({ host: 'fake-bedrock-keyed', amount: 3_000_000 });
  });
});

describe('an Anthropic model through InvokeModel', () => {
  const body = (stream: boolean) => ({
    model: INVOKE.slug,
    stream,
    max_tokens: 4000,
    system: [{ type: 'text', text: 'Long rules.', cache_control: { type: 'ephemeral', ttl: '1h' } }],
    messages: [{ role: 'user', content: 'Hello' }],
  });

  it.each([false, true])(
    'gets a messages client’s body whole (its cache breakpoints too) and bills the 1-hour writes apart (streamed: %s)',
    async (stream) => {
      g.fake.on(INVOKE.hostModel, { kind: 'reply', reply: { thinking: THINKING, text: TEXT, usage: EVERY_CLASS } });
      const res = await fetch(`${g.baseUrl}/api/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': g.key, 'anthropic-version': '2023-06-01' },
        body: JSON.stringify(body(stream)),
      });
      expect(res.status).toBe(200);
      const out = SURFACES[1].read(await res.text(), stream);
      expect(out).toMatchObject({ text: TEXT, reasoning: THINKING, signatures: [signatureOf(THINKING)] });
      const upstream = sent(INVOKE.hostModel);
      expect(upstream.path).toBe(`/model/anthropic.claude-invoke-v1%3A0/${stream ? 'invoke-with-response-stream' : 'invoke'}`);
      const { model: _model, stream: _stream, ...rest } = body(stream);
      expect(upstream.body).toEqual({ anthropic_version: 'bedrock-2023-05-31', ...rest });
      expect(await settlementOf(res)).toMatchObject({ host: 'fake-bedrock-invoke', ...EVERY_CLASS_BILLED });
    },
  );

  it.each([false, true])(
    'serves a chat-completions client through the anthropic kind’s translation (streamed: %s)',
    async (stream) => {
      g.fake.on(INVOKE.hostModel, { kind: 'reply', reply: { thinking: THINKING, toolCalls: [CALL] } });
      const { res, text } = await call(SURFACES[0], INVOKE.slug, stream, { tools: true });
      expect(res.status).toBe(200);
      expect(SURFACES[0].read(text, stream)).toMatchObject({ reasoning: THINKING, calls: [CALL] });
      expect(sent(INVOKE.hostModel).body).toMatchObject({
        anthropic_version: 'bedrock-2023-05-31',
        tools: [{ name: WEATHER.name, input_schema: WEATHER.parameters }],
        thinking: { type: 'enabled' },
      });
    },
  );
});

describe('reasoning from a chat-completions client, beside what Claude refuses with thinking', () => {
  const OMITTED = 'x-gateway-omitted-reasoning';
  const weather = { type: 'function', function: WEATHER };
  /** The second turn of a tool loop. */
  const LOOP = [
    { role: 'user', content: 'Weather in Paris?' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: CALL.id, type: 'function', function: { name: CALL.name, arguments: CALL.arguments } }],
    },
    { role: 'tool', tool_call_id: CALL.id, content: '18°C and sunny' },
  ];
  const chat = (slug: string, body: object) =>
    fetch(`${g.baseUrl}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${g.key}` },
      body: JSON.stringify({ model: slug, reasoning_effort: 'low', messages: [{ role: 'user', content: 'Hi' }], ...body }),
    });

  it.each([false, true])(
    'the second turn of a tool loop goes to Converse without thinking, and the reply says why (streamed: %s)',
    async (stream) => {
      g.fake.on(CONVERSE.hostModel, { kind: 'reply', reply: { text: TEXT } });
      const res = await chat(CONVERSE.slug, { messages: LOOP, tools: [weather], stream });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('Sunny');
      const upstream = sent(CONVERSE.hostModel).body;
      expect(upstream.messages[1].content).toEqual([
        { toolUse: { toolUseId: CALL.id, name: CALL.name, input: { city: 'Paris' } } },
      ]);
      expect(upstream).not.toHaveProperty('additionalModelRequestFields');
      expect(res.headers.get(OMITTED)).toBe('tool_loop');
    },
  );

  it('temperature 0.2 or a forced tool goes to Converse as asked, thinking not, and the reply says why', async () => {
    g.fake.on(CONVERSE.hostModel, { kind: 'reply', reply: { text: TEXT } });
    const warm = await chat(CONVERSE.slug, { temperature: 0.2 });
    expect(warm.status).toBe(200);
    expect(sent(CONVERSE.hostModel).body).toMatchObject({ inferenceConfig: { temperature: 0.2 } });
    expect(sent(CONVERSE.hostModel).body).not.toHaveProperty('additionalModelRequestFields');
    expect(warm.headers.get(OMITTED)).toBe('temperature');
    const forced = await chat(CONVERSE.slug, { tools: [weather], tool_choice: 'required' });
    expect(forced.status).toBe(200);
    expect(sent(CONVERSE.hostModel).body.toolConfig.toolChoice).toEqual({ any: {} });
    expect(sent(CONVERSE.hostModel).body).not.toHaveProperty('additionalModelRequestFields');
    expect(forced.headers.get(OMITTED)).toBe('tool_choice');
  });

  it('a first turn still thinks, on Converse and through InvokeModel; a tool loop through InvokeModel does not', async () => {
    g.fake.on(CONVERSE.hostModel, { kind: 'reply', reply: { text: TEXT } });
    g.fake.on(INVOKE.hostModel, { kind: 'reply', reply: { text: TEXT } });
    const first = await chat(CONVERSE.slug, { tools: [weather] });
    expect(first.status).toBe(200);
    expect(sent(CONVERSE.hostModel).body.additionalModelRequestFields.thinking).toEqual({
      type: 'enabled',
      budget_tokens: expect.any(Number),
    });
    expect(first.headers.get(OMITTED)).toBeNull();
    const invoked = await chat(INVOKE.slug, {});
    expect(invoked.status).toBe(200);
    expect(sent(INVOKE.hostModel).body.thinking).toEqual({ type: 'enabled', budget_tokens: expect.any(Number) });
    const loop = await chat(INVOKE.slug, { messages: LOOP, tools: [weather] });
    expect(loop.status).toBe(200);
    expect(sent(INVOKE.hostModel).body).not.toHaveProperty('thinking');
    expect(loop.headers.get(OMITTED)).toBe('tool_loop');
  });
});

describe("a messages client's tool loop with thinking, on Claude through Converse", () => {
  const OMITTED = 'x-gateway-omitted-reasoning';
  const tools = [{ name: WEATHER.name, description: WEATHER.description, input_schema: WEATHER.parameters }];
  const messages = (body: object) =>
    fetch(`${g.baseUrl}/api/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': g.key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: CONVERSE.slug,
        max_tokens: 4000,
        thinking: { type: 'enabled', budget_tokens: 2048 },
        tools,
        ...body,
      }),
    });

  it.each([false, true])(
    'gives the turn its signed thinking back as reasoningContent and keeps thinking on (streamed: %s)',
    async (stream) => {
      // The first turn: Converse thinks, signs and calls; the client keeps the content as it came.
      g.fake.on(CONVERSE.hostModel, { kind: 'reply', reply: { thinking: THINKING, toolCalls: [CALL] } });
      const first = await messages({ messages: [{ role: 'user', content: 'Weather in Paris?' }] });
      expect(first.status).toBe(200);
      const answered = (await first.json()) as { content: object[] };
      expect(answered.content[0]).toEqual({ type: 'thinking', thinking: THINKING, signature: signatureOf(THINKING) });
      // The second: the fake checks the signature and that the turn opens with it, as Claude does.
      g.fake.on(CONVERSE.hostModel, { kind: 'reply', reply: { text: TEXT } });
      const loop = [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: answered.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: CALL.id, content: '18°C and sunny' }] },
      ];
      const second = await messages({ stream, messages: loop });
      expect(second.status).toBe(200);
      expect(await second.text()).toContain('Sunny');
      expect(second.headers.get(OMITTED)).toBeNull();
      const upstream = sent(CONVERSE.hostModel).body;
      expect(upstream.additionalModelRequestFields).toEqual({ thinking: { type: 'enabled', budget_tokens: 2048 } });
      expect(upstream.messages[1].content).toEqual([
        { reasoningContent: { reasoningText: { text: THINKING, signature: signatureOf(THINKING) } } },
        { toolUse: { toolUseId: CALL.id, name: CALL.name, input: { city: 'Paris' } } },
      ]);
    },
  );

  it('passes on the refusal of a thinking block whose signature is not its own, as a 400 in the messages format', async () => {
    const loop = [
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Edited by the client.', signature: signatureOf(THINKING) },
          { type: 'tool_use', id: CALL.id, name: CALL.name, input: { city: 'Paris' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: CALL.id, content: '18°C and sunny' }] },
    ];
    const res = await messages({ messages: loop });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringContaining('Invalid `signature` in `thinking` block') },
    });
  });
});
