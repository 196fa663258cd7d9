import { signatureOf } from '../support/fake-upstream';
import { BEDROCK_TEST_API_KEY, BEDROCK_TEST_CREDENTIALS, eventMessage, rotateBedrockSecret } from '../support/fakes/bedrock';
import { auditThenClose, startGateway, TestGateway } from '../support/gateway';
import { calledOnce, modelEntry, withOwn } from '../support/spec-catalogue';
import { CHAT_COMPLETIONS, MESSAGES, SURFACES, WEATHER } from '../support/surfaces';
import { throughGateway } from '../support/through-gateway';
import { hostUnderTest, TEXT, THINKING } from './support/host-under-test';

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

/** A model of Claude's context on Bedrock: 200,000 tokens, 8,000 of output. */
const model = (m: { slug: string; id: string }, hosts: unknown[]) =>
  modelEntry(m, hosts, { contextLength: 200_000, maxOutputTokens: 8000 });

const catalogue = withOwn((fake) => {
  const bedrock = (id: string, extra: object = {}) =>
    calledOnce({ id, kind: 'bedrock', baseUrl: fake.url, region: 'us-east-1', ...extra });
  return {
    hosts: [
      bedrock('fake-bedrock'),
      bedrock('fake-bedrock-flaky'),
      bedrock('fake-bedrock-invoke', { api: 'invoke' }),
      bedrock('fake-bedrock-keyed', { apiKeyEnv: 'FAKE_BEDROCK_API_KEY' }),
    ],
    models: [
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
});

/** A 1×1 PNG, inline. */
const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

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

const through = throughGateway(() => g);
const { call, send, post, sent, settlementOf } = through;
const host = hostUnderTest(through, { model: CONVERSE, fallback: { ...FALLBACK, firstHostModel: 'fake-bedrock-first' } });

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
      const { out, upstream } = await host.answers(surface, stream, { text: TEXT });
      expect(out.text).toBe(TEXT);
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
        const { out, upstream } = await host.answers(surface, stream, { thinking: THINKING, toolCalls: [CALL] }, { tools: true });
        expect(out.calls).toEqual([CALL]);
        expect(out.reasoning).toBe(THINKING);
        if (surface.name === 'messages') expect(out.signatures).toEqual([signatureOf(THINKING)]);
        expect(upstream.body.toolConfig).toEqual({
          tools: [
            { toolSpec: { name: WEATHER.name, description: WEATHER.description, inputSchema: { json: WEATHER.parameters } } },
          ],
        });
        expect(upstream.body.additionalModelRequestFields.thinking).toEqual({
          type: 'enabled',
          budget_tokens: expect.any(Number),
        });
      });

      // The chat-completions surface hands its images on only to hosts of its own format (main's translation has none).
      if (surface.name !== 'chat-completions')
        it('sends an image inline, as its bytes', async () => {
          const { upstream } = await host.answers(surface, stream, { text: TEXT }, { image: `data:image/png;base64,${PIXEL}` });
          expect(upstream.body.messages[0].content).toEqual([
            { image: { format: 'png', source: { bytes: PIXEL } } },
            { text: 'Hello' },
          ]);
        });
    }

    it('bills every token class exactly at its price', async () => {
      const { res } = await host.answers(surface, stream, { text: TEXT, usage: EVERY_CLASS });
      expect(await settlementOf(res)).toMatchObject({ host: 'fake-bedrock', ...EVERY_CLASS_BILLED });
    });

    it(
      'falls back to the next host on a 429, a 500, a 503 or a 403 before output',
      // 1,000 × $0.50 + 1,000 × $0.75 = $1,250 per million
      host.failsBeforeOutput(surface, stream, [429, 500, 503, 403], { host: 'fake-bedrock', amount: 1_250_000 }),
    );
  });

  it('bills a cut stream for what was delivered', host.cutsItsStream(surface));

  it('fails a stream whose host raises an exception after output, billing what was delivered', host.failsAfterOutput(surface));

  it('falls back when the exception comes before any output', async () => {
    g.fake.on('fake-bedrock-first', { kind: 'stream_error', afterPieces: 0 });
    g.fake.on(FALLBACK.hostModel, { kind: 'reply', reply: { text: TEXT, usage: { input: 1000, output: 1000 } } });
    const { res, text } = await call(surface, FALLBACK.slug, true);
    expect(res.status).toBe(200);
    expect(surface.read(text, true).text).toBe(TEXT);
    expect(await settlementOf(res)).toMatchObject({ host: 'fake-bedrock', amount: 1_250_000 });
  });

  it(
    'does not believe absurd usage',
    host.reportsAbsurdUsage(surface, '{"inputTokens":12,"outputTokens":1e12,"totalTokens":1e12}', [false, true]),
  );
});

describe('a Converse stream', () => {
  it('that turns unreadable (a checksum wrong) fails after the text before it, billing what was delivered', async () => {
    g.fake.on(CONVERSE.hostModel, { kind: 'malformed', afterPieces: 2 });
    const { res, text } = await call(CHAT_COMPLETIONS, CONVERSE.slug, true);
    expect(res.status).toBe(200);
    expect(CHAT_COMPLETIONS.read(text, true).text).toBe('Hello from');
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
    const { res, text } = await call(CHAT_COMPLETIONS, CONVERSE.slug, true);
    expect(res.status).toBe(200);
    expect(CHAT_COMPLETIONS.read(text, true).text).toBe('Cited');
    // 10 × $3 + 4 × $15 = $90 per million
    expect(await settlementOf(res)).toMatchObject({ inputTokens: 10, outputTokens: 4, amount: 90_000 });
  });
});

describe('an image by URL', () => {
  it('is refused with 400 in the client’s format, the host not called (Converse takes image bytes only)', async () => {
    const before = g.fake.requests.length;
    const res = await post('messages', {
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
    post('chat/completions', {
      model: LLAMA.slug,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [{ type: 'function', function: WEATHER }],
      tool_choice,
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
      const served = await call(CHAT_COMPLETIONS, KEYED.slug, false);
      expect(served.res.status).toBe(200);
      expect(CHAT_COMPLETIONS.read(served.text, false).text).toBe(TEXT);
      expect(await settlementOf(served.res)).toMatchObject({ host: 'fake-bedrock-keyed', amount: 3_000_000 });

      const refused = await call(CHAT_COMPLETIONS, CONVERSE.slug, false);
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
    const { res, text } = await call(CHAT_COMPLETIONS, KEYED.slug, stream);
    expect(res.status).toBe(200);
    expect(CHAT_COMPLETIONS.read(text, stream).text).toBe(TEXT);
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
      const { res, text } = await send(MESSAGES, INVOKE.slug, stream, body(stream));
      expect(res.status).toBe(200);
      const out = MESSAGES.read(text, stream);
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
      const { res, text } = await call(CHAT_COMPLETIONS, INVOKE.slug, stream, { tools: true });
      expect(res.status).toBe(200);
      expect(CHAT_COMPLETIONS.read(text, stream)).toMatchObject({ reasoning: THINKING, calls: [CALL] });
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
    post('chat/completions', { model: slug, reasoning_effort: 'low', messages: [{ role: 'user', content: 'Hi' }], ...body });

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
    post('messages', {
      model: CONVERSE.slug,
      max_tokens: 4000,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      tools,
      ...body,
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
