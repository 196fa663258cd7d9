import { join } from 'node:path';
import fc from 'fast-check';
import { SignatureV4 } from '@smithy/signature-v4';
import { Sha256 } from '@aws-crypto/sha256-js';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { CanonicalEvent, CanonicalRequest, HostError, Usage } from '../../src/canonical/canonical';
import { Catalogue } from '../../src/catalogue/catalogue';
import { bedrockHost as host } from '../../src/hosts/bedrock/bedrock.host';
import { bedrockAuthorizer, signingAuthorizer } from '../../src/hosts/bedrock/bedrock.signing';
import type { SseMessage } from '../../src/hosts/host-kind';
import { signatureOf, type FakeReply } from '../support/fake-upstream';
import { converseReply, converseStream, eventMessage, exceptionMessage, invokeStream } from '../support/fakes/bedrock';
import { usage } from '../support/usage';

const counted = (counts: Partial<Usage>): CanonicalEvent => ({ type: 'usage', usage: usage(counts) });

const request = (overrides: Partial<CanonicalRequest> = {}): CanonicalRequest => ({
  system: ['Be brief.'],
  messages: [{ role: 'user', content: 'Hi' }],
  tools: [],
  stop: [],
  stream: false,
  maxTokens: 1000,
  ...overrides,
});

const CLAUDE = 'us.anthropic.claude-sonnet-4-20250514-v1:0';
const NOVA = 'amazon.nova-pro-v1:0';
const CONVERSE = { region: 'us-east-1', api: 'converse' };
const INVOKE = { region: 'us-east-1', api: 'invoke' };

const WEATHER = { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: {} } };

describe('bedrockHost.buildRequest (Converse)', () => {
  it('posts to /model/{id}/converse or /converse-stream, the id one encoded segment, signed (no key) or with a Bedrock API key', () => {
    const whole = host.buildRequest(request(), CLAUDE, null, CONVERSE);
    expect(whole.path).toBe('/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse');
    expect(whole.headers).toEqual({ 'content-type': 'application/json', accept: 'application/json' });
    const streamed = host.buildRequest(
      request({ stream: true }),
      'arn:aws:bedrock:us-east-1:1:inference-profile/x',
      'bk-1',
      CONVERSE,
    );
    expect(streamed.path).toBe('/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fx/converse-stream');
    expect(streamed.headers).toEqual({
      'content-type': 'application/json',
      accept: 'application/vnd.amazon.eventstream',
      authorization: 'Bearer bk-1',
    });
    expect(whole.passThrough).toBeUndefined();
  });

  it('translates a conversation: system, images as bytes, calls and results, inference settings, tools', () => {
    const upstream = host.buildRequest(
      request({
        system: ['One.', ''],
        messages: [
          { role: 'user', content: 'What is this?', images: [{ url: 'data:image/jpeg;base64,AAAA' }] },
          { role: 'assistant', content: 'Let me look.', toolCalls: [{ id: 'tu_1', name: 'lookup', arguments: '{"q":"x"}' }] },
          { role: 'tool', toolCallId: 'tu_1', content: 'a cat' },
          { role: 'user', content: 'And?' },
          { role: 'system', content: 'Answer in French.' },
          { role: 'assistant', content: '', toolCalls: [{ id: 'tu_2', name: 'lookup', arguments: 'cut sho' }] },
        ],
        tools: [WEATHER],
        toolChoice: 'required',
        temperature: 0.5,
        topP: 0.9,
        stop: ['END'],
      }),
      NOVA,
      null,
      CONVERSE,
    );
    expect(upstream.body).toEqual({
      messages: [
        { role: 'user', content: [{ image: { format: 'jpeg', source: { bytes: 'AAAA' } } }, { text: 'What is this?' }] },
        {
          role: 'assistant',
          content: [{ text: 'Let me look.' }, { toolUse: { toolUseId: 'tu_1', name: 'lookup', input: { q: 'x' } } }],
        },
        // The tool's result and the next user message: one user turn, as Converse requires turns to alternate.
        { role: 'user', content: [{ toolResult: { toolUseId: 'tu_1', content: [{ text: 'a cat' }] } }, { text: 'And?' }] },
        // A call whose arguments were cut short is replayed with {} (it happened; its input is lost).
        { role: 'assistant', content: [{ toolUse: { toolUseId: 'tu_2', name: 'lookup', input: {} } }] },
      ],
      // Converse takes instructions at the top level only: a later one joins them, in order.
      system: [{ text: 'One.' }, { text: 'Answer in French.' }],
      inferenceConfig: { maxTokens: 1000, temperature: 0.5, topP: 0.9, stopSequences: ['END'] },
      toolConfig: {
        tools: [
          { toolSpec: { name: 'get_weather', description: 'Weather in a city', inputSchema: { json: WEATHER.parameters } } },
        ],
        toolChoice: { any: {} },
      },
    });
  });

  it('says each tool choice as Converse does; "none" leaves the tools out unless the conversation holds calls', () => {
    const choice = (toolChoice: CanonicalRequest['toolChoice'], messages?: CanonicalRequest['messages']) =>
      (
        host.buildRequest(request({ tools: [WEATHER], toolChoice, ...(messages && { messages }) }), NOVA, null, CONVERSE)
          .body as any
      ).toolConfig;
    expect(choice('auto').toolChoice).toEqual({ auto: {} });
    expect(choice({ name: 'get_weather' }).toolChoice).toEqual({ tool: { name: 'get_weather' } });
    expect(choice(undefined)).toEqual({ tools: [expect.any(Object)] });
    expect(choice('none')).toBeUndefined();
    const history: CanonicalRequest['messages'] = [
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: '', toolCalls: [{ id: 't', name: 'get_weather', arguments: '{}' }] },
      { role: 'tool', toolCallId: 't', content: 'sun' },
    ];
    expect(choice('none', history)).toEqual({ tools: [expect.any(Object)] });
  });

  it('asks Anthropic models for thinking (or top_k) in their own terms, other models for neither', () => {
    const reasoning = request({ reasoning: { budgetTokens: 2048 }, maxTokens: 4000 });
    expect((host.buildRequest(reasoning, CLAUDE, null, CONVERSE).body as any).additionalModelRequestFields).toEqual({
      thinking: { type: 'enabled', budget_tokens: 2048 },
    });
    // Claude refuses top_k beside thinking: the client's top_k goes, its reasoning does not (and the reply says why).
    const sampled = request({ reasoning: { budgetTokens: 2048 }, topK: 5, maxTokens: 4000 });
    expect((host.buildRequest(sampled, CLAUDE, null, CONVERSE).body as any).additionalModelRequestFields).toEqual({ top_k: 5 });
    expect(host.omittedReasoning?.(sampled, CLAUDE, CONVERSE)).toBe('top_k');
    expect(host.omittedReasoning?.(reasoning, CLAUDE, CONVERSE)).toBeNull();
    // An effort: its share of the cap (high: 80% of 10,000).
    const effort = request({ reasoning: { effort: 'high' }, maxTokens: 10_000 });
    expect((host.buildRequest(effort, CLAUDE, null, CONVERSE).body as any).additionalModelRequestFields).toEqual({
      thinking: { type: 'enabled', budget_tokens: 8000 },
    });
    expect(host.buildRequest(reasoning, NOVA, null, CONVERSE).body).not.toHaveProperty('additionalModelRequestFields');
    expect(host.omittedReasoning?.(sampled, NOVA, CONVERSE)).toBeNull();
  });

  it("gives Claude a tool loop's signed thinking back as reasoningContent, first in the turn, and keeps thinking on", () => {
    const blocks = [{ thinking: 'Look it up.', signature: 'c2ln' }];
    const messages: CanonicalRequest['messages'] = [
      { role: 'user', content: 'Weather?' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: '{}' }],
        reasoning: { text: 'Look it up.', signature: 'c2ln', blocks },
      },
      { role: 'tool', toolCallId: 'toolu_1', content: '18°C' },
    ];
    const loop = request({ reasoning: { budgetTokens: 2048 }, maxTokens: 4000, tools: [WEATHER], messages });
    const body = host.buildRequest(loop, CLAUDE, null, CONVERSE).body as any;
    expect(body.additionalModelRequestFields).toEqual({ thinking: { type: 'enabled', budget_tokens: 2048 } });
    expect(body.messages[1].content).toEqual([
      { reasoningContent: { reasoningText: { text: 'Look it up.', signature: 'c2ln' } } },
      { toolUse: { toolUseId: 'toolu_1', name: 'get_weather', input: {} } },
    ]);
    expect(host.omittedReasoning?.(loop, CLAUDE, CONVERSE)).toBeNull();
    // Another model thinks in no Anthropic terms: nothing of it goes.
    expect((host.buildRequest(loop, NOVA, null, CONVERSE).body as any).messages[1].content).toEqual([
      { toolUse: { toolUseId: 'toolu_1', name: 'get_weather', input: {} } },
    ]);
  });

  it('sends toolChoice only to models that take it (Claude, Nova): auto is left to the others, a required tool refused naming the model', () => {
    const LLAMA = 'meta.llama3-3-70b-instruct-v1:0';
    const asked = (toolChoice: CanonicalRequest['toolChoice']) => request({ tools: [WEATHER], toolChoice });
    expect((host.buildRequest(asked('auto'), LLAMA, null, CONVERSE).body as any).toolConfig).not.toHaveProperty('toolChoice');
    expect((host.buildRequest(asked('required'), CLAUDE, null, CONVERSE).body as any).toolConfig.toolChoice).toEqual({ any: {} });
    for (const choice of ['required', { name: 'get_weather' }] as const) {
      const build = () => host.buildRequest(asked(choice), LLAMA, null, CONVERSE);
      expect(build).toThrow(HostError);
      expect(build).toThrow(
        `${LLAMA} on Bedrock's Converse takes no tool_choice requiring a tool (only Claude and Nova models do)`,
      );
      try {
        build();
      } catch (error) {
        expect((error as HostError).status).toBe(400);
      }
    }
  });

  it("sends Claude the temperature alone when both it and top_p are given (Claude's 4.5 models refuse both); other models both", () => {
    const both = request({ temperature: 0.2, topP: 0.9 });
    expect((host.buildRequest(both, CLAUDE, null, CONVERSE).body as any).inferenceConfig).toEqual({
      maxTokens: 1000,
      temperature: 0.2,
    });
    expect((host.buildRequest(both, NOVA, null, CONVERSE).body as any).inferenceConfig).toMatchObject({
      temperature: 0.2,
      topP: 0.9,
    });
    expect((host.buildRequest(request({ topP: 0.9 }), CLAUDE, null, CONVERSE).body as any).inferenceConfig).toMatchObject({
      topP: 0.9,
    });
  });

  it('refuses an image given by URL or in a format Bedrock does not take, as a 400 the client can fix', () => {
    for (const url of ['https://example.com/cat.png', 'data:image/tiff;base64,AAAA', 'data:__proto__;base64,AAAA']) {
      const build = () =>
        host.buildRequest(request({ messages: [{ role: 'user', content: 'x', images: [{ url }] }] }), NOVA, null, CONVERSE);
      expect(build).toThrow(HostError);
      try {
        build();
      } catch (error) {
        expect(error).toMatchObject({ kind: 'status', status: 400, retryable: false });
      }
    }
  });
});

describe('bedrockHost.buildRequest (InvokeModel, Anthropic models)', () => {
  it('sends the anthropic kind’s translation with Bedrock’s version and the betas in the body, no model or stream', () => {
    const upstream = host.buildRequest(
      request({ stream: true, betas: ['context-1m-2025-08-07'], reasoning: { budgetTokens: 2048 }, maxTokens: 4000 }),
      CLAUDE,
      null,
      INVOKE,
    );
    expect(upstream.path).toBe('/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/invoke-with-response-stream');
    expect(upstream.headers.accept).toBe('application/vnd.amazon.eventstream');
    expect(upstream.body).toEqual({
      anthropic_version: 'bedrock-2023-05-31',
      anthropic_beta: ['context-1m-2025-08-07'],
      max_tokens: 4000,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(host.buildRequest(request(), CLAUDE, null, INVOKE).path).toBe(
      '/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/invoke',
    );
  });

  it('passes a messages client’s body whole (cache breakpoints with their TTL, thinking blocks), with the cap lowered', () => {
    const original = {
      model: 'vendor/claude',
      stream: true,
      max_tokens: 64_000,
      system: [{ type: 'text', text: 'Long rules', cache_control: { type: 'ephemeral', ttl: '1h' } }],
      messages: [{ role: 'user', content: 'Hi' }],
    };
    const upstream = host.buildRequest(
      request({ stream: true, maxTokens: 8000, original: { format: 'messages', body: original } }),
      CLAUDE,
      null,
      INVOKE,
    );
    expect(upstream.passThrough).toBe(true);
    expect(upstream.body).toEqual({
      anthropic_version: 'bedrock-2023-05-31',
      max_tokens: 8000,
      system: original.system,
      messages: original.messages,
    });
  });
});

/** A Converse usage object with every class. */
const WIRE_USAGE = {
  inputTokens: 100,
  outputTokens: 50,
  totalTokens: 100 + 2000 + 300 + 400 + 50,
  cacheReadInputTokens: 2000,
  cacheWriteInputTokens: 700,
  cacheDetails: [
    { ttl: '1h', inputTokens: 400 },
    { ttl: '5m', inputTokens: 300 },
  ],
};
const EVERY_CLASS = { inputTokens: 100, cacheReadTokens: 2000, cacheWriteTokens: 300, cacheWrite1hTokens: 400, outputTokens: 50 };

describe('bedrockHost.decodeReply', () => {
  it('reads a Converse reply: reasoning with its signature, text, calls, how it ended, usage by class', () => {
    const events = host.decodeReply(
      JSON.stringify({
        output: {
          message: {
            role: 'assistant',
            content: [
              { reasoningContent: { reasoningText: { text: 'Hmm.', signature: 'sig' } } },
              { reasoningContent: { redactedContent: 'AAAA' } },
              { text: 'Calling.' },
              { toolUse: { toolUseId: 'tu_1', name: 'get_weather', input: { city: 'Paris' } } },
            ],
          },
        },
        stopReason: 'tool_use',
        usage: WIRE_USAGE,
        metrics: { latencyMs: 300 },
      }),
    );
    expect(events).toEqual([
      { type: 'reasoning', text: 'Hmm.', signature: 'sig' },
      { type: 'text', text: 'Calling.' },
      { type: 'tool_call', index: 0, id: 'tu_1', name: 'get_weather', argumentsDelta: '{"city":"Paris"}' },
      { type: 'finish', reason: 'tool_calls' },
      counted(EVERY_CLASS),
    ]);
  });

  it.each([
    ['end_turn', 'stop'],
    ['max_tokens', 'length'],
    ['stop_sequence', 'stop_sequence'],
    ['guardrail_intervened', 'content_filter'],
    ['content_filtered', 'content_filter'],
    ['model_context_window_exceeded', 'length'],
    ['some_future_reason', 'stop'],
  ])('maps stopReason %s to %s', (stopReason, reason) => {
    const events = host.decodeReply(JSON.stringify({ output: { message: { content: [{ text: 'x' }] } }, stopReason }));
    expect(events).toContainEqual({ type: 'finish', reason });
  });

  it('takes the stop sequence Anthropic models name, and usage without the cache’s fields as uncached', () => {
    const events = host.decodeReply(
      JSON.stringify({
        output: { message: { content: [{ text: 'x' }] } },
        stopReason: 'stop_sequence',
        additionalModelResponseFields: { stop_sequence: 'END' },
        usage: { inputTokens: 5, outputTokens: 2, totalTokens: 7 },
      }),
    );
    expect(events.slice(1)).toEqual([
      { type: 'finish', reason: 'stop_sequence', stopSequence: 'END' },
      counted({ inputTokens: 5, outputTokens: 2 }),
    ]);
  });

  it('leaves counts it cannot read for the pipeline to distrust (NaN), and refuses a reply it cannot read', () => {
    const [, , used] = host.decodeReply(
      JSON.stringify({ output: { message: { content: [{ text: 'x' }] } }, stopReason: 'end_turn', usage: { inputTokens: '5' } }),
    );
    expect((used as any).usage.inputTokens).toBeNaN();
    expect((used as any).usage.outputTokens).toBeNaN();
    expect(() => host.decodeReply('{"output":')).toThrow(HostError);
    expect(() => host.decodeReply('{"output":{}}')).toThrow(/output.message/);
  });

  it('reads an InvokeModel reply as Anthropic’s message, with the 1-hour writes it splits', () => {
    const events = host.decodeReply(
      JSON.stringify({
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        content: [{ type: 'text', text: 'Hi' }],
        stop_reason: 'end_turn',
        usage: {
          input_tokens: 10,
          cache_read_input_tokens: 20,
          cache_creation_input_tokens: 30,
          cache_creation: { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 20 },
          output_tokens: 5,
        },
      }),
    );
    expect(events).toEqual([
      { type: 'text', text: 'Hi' },
      { type: 'finish', reason: 'stop' },
      counted({ inputTokens: 10, cacheReadTokens: 20, cacheWriteTokens: 10, cacheWrite1hTokens: 20, outputTokens: 5 }),
    ]);
  });
});

describe('bedrockHost.errorMessage', () => {
  it('reads Bedrock’s {"message"} (and {"Message"}) bodies, else the text', () => {
    expect(host.errorMessage(429, '{"message":"Too many requests, please wait before trying again."}')).toBe(
      'Too many requests, please wait before trying again.',
    );
    expect(host.errorMessage(403, '{"Message":"User is not authorized"}')).toBe('User is not authorized');
    expect(host.errorMessage(502, '<html>Bad gateway</html>')).toBe('<html>Bad gateway</html>');
    expect(host.errorMessage(500, '')).toBe('upstream answered 500');
  });
});

// ---- streams: the framing (AWS's codec) and the decoders, across any cut of the bytes ----

const concat = (parts: Uint8Array[]) => Buffer.concat(parts.map((p) => Buffer.from(p)));

/** A stream's bytes as the fake sends them for a reply. */
function streamBytes(api: 'converse' | 'invoke', reply: FakeReply): Buffer {
  const s = api === 'converse' ? converseStream(reply) : invokeStream({ model: CLAUDE }, reply);
  return concat([...s.head, ...s.body, ...s.tail].map((f) => eventMessage(f.event!, f.data)));
}

/** The bytes fed to a fresh framing and decoder, cut at `cuts`: every event, and whether the decoder was done. */
function decodeStream(bytes: Uint8Array, cuts: number[], passThrough = false): { events: CanonicalEvent[]; done: boolean } {
  const framing = host.framing!();
  const decoder = host.decoder(passThrough);
  const events: CanonicalEvent[] = [];
  let from = 0;
  for (const at of [...cuts, bytes.length]) {
    for (const message of framing.feed(bytes.subarray(from, at))) events.push(...decoder.push(message));
    from = at;
  }
  return { events, done: decoder.done };
}

/** Consecutive text, reasoning and argument pieces joined: what a client assembles, whatever the cut. */
function assembled(events: CanonicalEvent[]) {
  return {
    text: events.flatMap((e) => (e.type === 'text' ? [e.text] : [])).join(''),
    reasoning: events.flatMap((e) => (e.type === 'reasoning' ? [e.text] : [])).join(''),
    signatures: events.flatMap((e) => (e.type === 'reasoning' && e.signature ? [e.signature] : [])),
    calls: events.flatMap((e) => (e.type === 'tool_call' && e.id ? [{ id: e.id, name: e.name }] : [])),
    arguments: events.flatMap((e) => (e.type === 'tool_call' ? [e.argumentsDelta] : [])).join(''),
    rest: events.filter((e) => e.type === 'finish' || e.type === 'usage'),
  };
}

/** A deterministic pseudo-random generator, so a failing cut can be replayed. */
function random(seed: number) {
  let state = seed;
  return () => ((state = (state * 1103515245 + 12345) % 2 ** 31), state / 2 ** 31);
}

const REPLY: FakeReply = {
  thinking: 'The user wants the weather.',
  text: 'Let me check.',
  toolCalls: [{ id: 'tu_weather', name: 'get_weather', arguments: '{"city":"Paris"}' }],
  usage: { input: 100, cacheRead: 2000, cacheWrite: 300, cacheWrite1h: 400, output: 50 },
};

describe.each(['converse', 'invoke'] as const)('the %s operation’s stream', (api) => {
  const bytes = streamBytes(api, REPLY);
  const expected = {
    text: 'Let me check.',
    reasoning: REPLY.thinking,
    signatures: [signatureOf(REPLY.thinking!)],
    calls: [{ id: 'tu_weather', name: 'get_weather' }],
    arguments: '{"city":"Paris"}',
    rest: [{ type: 'finish', reason: 'tool_calls' }, counted(EVERY_CLASS)],
  };

  it('decodes whole: reasoning with its signature, text, a call with streamed arguments, the finish, usage by class; then done', () => {
    const { events, done } = decodeStream(bytes, []);
    expect(done).toBe(true);
    const { rest, ...content } = assembled(events);
    const { rest: expectedRest, ...expectedContent } = expected;
    expect(content).toEqual(expectedContent);
    // Invoke's message_start counts the input before the end: the last usage is the whole count.
    expect(rest.find((e) => e.type === 'finish')).toEqual(expectedRest[0]);
    expect(rest.at(-1)).toEqual(expectedRest[1]);
  });

  it('decodes the same whatever the chunks: every single cut, and 200 random multi-cuts', () => {
    const whole = assembled(decodeStream(bytes, []).events);
    for (let at = 1; at < bytes.length; at++) expect(assembled(decodeStream(bytes, [at]).events)).toEqual(whole);
    const next = random(26);
    for (let run = 0; run < 200; run++) {
      const cuts = Array.from({ length: 1 + Math.floor(next() * 12) }, () => Math.floor(next() * bytes.length)).sort(
        (a, b) => a - b,
      );
      const { events, done } = decodeStream(bytes, cuts);
      expect(done).toBe(true);
      expect(assembled(events)).toEqual(whole);
    }
  });

  it('fails on an in-stream exception: retryable before output, not after it', () => {
    const throttled = Buffer.from(exceptionMessage('throttlingException', 'Too many tokens'));
    const before = () => decodeStream(throttled, []);
    expect(before).toThrow(HostError);
    try {
      before();
    } catch (error) {
      expect(error).toMatchObject({ kind: 'upstream_error', beforeOutput: true, retryable: true });
      expect((error as Error).message).toBe('throttlingException: Too many tokens');
    }
    const s = api === 'converse' ? converseStream(REPLY) : invokeStream({ model: CLAUDE }, REPLY);
    const started = concat([
      ...[...s.head, ...s.body.slice(0, 3)].map((f) => eventMessage(f.event!, f.data)),
      exceptionMessage('modelStreamErrorException', 'The model stopped'),
    ]);
    try {
      decodeStream(started, []);
      throw new Error('no failure');
    } catch (error) {
      expect(error).toMatchObject({ kind: 'upstream_error', beforeOutput: false, retryable: false });
    }
  });
});

describe('the event-stream framing', () => {
  const codec = new EventStreamCodec(toUtf8, fromUtf8);

  it('refuses a message whose checksum is wrong, or a length no message has', () => {
    const message = eventMessage('contentBlockDelta', '{"contentBlockIndex":0,"delta":{"text":"x"}}');
    message[message.length - 1] ^= 1;
    expect(() => host.framing!().feed(message)).toThrow(/checksum/);
    const huge = Buffer.alloc(16);
    huge.writeUInt32BE(0xffffffff, 0);
    expect(() => host.framing!().feed(huge)).toThrow(HostError);
  });

  it('fails the stream on the protocol’s own error message, and keeps a message in pieces until whole', () => {
    const error = codec.encode({
      headers: {
        ':message-type': { type: 'string', value: 'error' },
        ':error-code': { type: 'string', value: 'InternalFailure' },
        ':error-message': { type: 'string', value: 'try again' },
      },
      body: new Uint8Array(0),
    });
    expect(() => host.framing!().feed(error)).toThrow('InternalFailure: try again');
    const framing = host.framing!();
    const message = eventMessage('messageStop', '{"stopReason":"end_turn"}');
    const seen: SseMessage[] = [];
    for (const byte of message) seen.push(...framing.feed(Uint8Array.of(byte)));
    expect(seen).toEqual([{ event: 'messageStop', data: '{"stopReason":"end_turn"}' }]);
  });

  it('given any bytes, in any chunks: messages, or an error (a HostError or the codec’s), never anything else', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 8 }), (chunks) => {
        const framing = host.framing!();
        try {
          for (const chunk of chunks) for (const message of framing.feed(chunk)) expect(typeof message.data).toBe('string');
        } catch (error) {
          expect(error).toBeInstanceOf(Error);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('reads a whole reply from the fake as the decoder does', () => {
    const events = host.decodeReply(JSON.stringify(converseReply(REPLY)));
    expect(assembled(events)).toMatchObject({ text: 'Let me check.', reasoning: REPLY.thinking, arguments: '{"city":"Paris"}' });
  });
});

describe('the bedrock kind’s credentials', () => {
  const credentials = {
    accessKeyId: 'AKIDEXAMPLE',
    secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
    sessionToken: 'session-token',
  };
  const call = {
    method: 'POST' as const,
    url: new URL('https://bedrock-runtime.eu-west-3.amazonaws.com/model/amazon.nova-pro-v1%3A0/converse'),
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: '{"messages":[]}',
  };

  it('signs a call with SigV4 for the bedrock service in the entry’s region, as AWS’s signer verifies it', async () => {
    const added = await signingAuthorizer('eu-west-3', async () => credentials).headers(call);
    expect(Object.keys(added).sort()).toEqual(['authorization', 'x-amz-content-sha256', 'x-amz-date', 'x-amz-security-token']);
    expect(added.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-3\/bedrock\/aws4_request, SignedHeaders=accept;content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature=[0-9a-f]{64}$/,
    );
    // Recomputed independently over the same call at the same time: the same signature.
    const date = added['x-amz-date'];
    const signingDate = new Date(
      `${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`,
    );
    const again = await new SignatureV4({ credentials, region: 'eu-west-3', service: 'bedrock', sha256: Sha256 }).sign(
      {
        method: 'POST',
        protocol: 'https:',
        hostname: call.url.hostname,
        path: call.url.pathname,
        query: {},
        headers: { ...call.headers, host: call.url.host },
        body: call.body,
      },
      { signingDate },
    );
    expect(again.headers.authorization).toBe(added.authorization);
    // Another body, another signature.
    const other = await signingAuthorizer('eu-west-3', async () => credentials).headers({ ...call, body: '{}' });
    expect(other['x-amz-content-sha256']).not.toBe(added['x-amz-content-sha256']);
  });

  it('needs no signature for a host with a Bedrock API key (it goes as a bearer token)', () => {
    expect(bedrockAuthorizer({ id: 'b', baseUrl: 'https://x', apiKey: 'bk', settings: { region: 'us-east-1' } })).toBeNull();
    expect(bedrockAuthorizer({ id: 'b', baseUrl: 'https://x', apiKey: null, settings: { region: 'us-east-1' } })).not.toBeNull();
  });

  it('a credential the chain cannot find fails the call, naming no secret', async () => {
    const failing = signingAuthorizer('us-east-1', async () => {
      throw new Error('Could not load credentials from any providers');
    });
    await expect(failing.headers(call)).rejects.toThrow('Could not load credentials');
  });
});

describe('a bedrock catalogue entry', () => {
  const parse = (host: Record<string, unknown>) =>
    Catalogue.parse({
      hosts: [{ id: 'aws', kind: 'bedrock', ...host }],
      models: [
        {
          slug: 'aws/nova',
          id: '12345678-1234-4234-8234-123456789012',
          name: 'Nova',
          contextLength: 300_000,
          maxOutputTokens: 5000,
          hosts: [{ host: 'aws', model: NOVA, pricing: { input: '0.80', output: '3.20' } }],
        },
      ],
    });

  it('derives its base URL from its region, takes Converse by default, and may name another base URL', () => {
    expect(parse({ region: 'eu-central-1' }).hosts[0]).toMatchObject({
      baseUrl: 'https://bedrock-runtime.eu-central-1.amazonaws.com',
      settings: { region: 'eu-central-1', api: 'converse' },
      usable: true,
    });
    expect(
      parse({ region: 'us-west-2', api: 'invoke', baseUrl: 'https://vpce-1.bedrock-runtime.us-west-2.vpce.amazonaws.com' })
        .hosts[0],
    ).toMatchObject({
      baseUrl: 'https://vpce-1.bedrock-runtime.us-west-2.vpce.amazonaws.com',
      settings: { api: 'invoke' },
    });
  });

  it('in the shipped catalogue: a host with a Bedrock API key, in AWS_REGION (us-east-1 when unset), serving Nova, Llama and Claude', () => {
    const shipped = (env: Record<string, string>) => Catalogue.load(join(__dirname, '../../catalogue/default.json'), env);
    const keyed = shipped({ AWS_BEARER_TOKEN_BEDROCK: 'bk', AWS_REGION: 'eu-west-1' });
    expect(keyed.hosts.find((h) => h.kind === 'bedrock')).toMatchObject({
      baseUrl: 'https://bedrock-runtime.eu-west-1.amazonaws.com',
      settings: { region: 'eu-west-1', api: 'converse' },
      usable: true,
    });
    expect(keyed.find('amazon/nova-pro')?.hosts[0]).toMatchObject({ model: 'amazon.nova-pro-v1:0' });
    expect(keyed.find('anthropic/claude-sonnet-4')?.hosts.map((h) => h.host.id)).toEqual(['anthropic', 'bedrock', 'vertex']);
    const unkeyed = shipped({});
    expect(unkeyed.hosts.find((h) => h.kind === 'bedrock')).toMatchObject({
      baseUrl: 'https://bedrock-runtime.us-east-1.amazonaws.com',
      usable: false,
    });
    expect(unkeyed.servable().map((m) => m.slug)).not.toContain('amazon/nova-pro');
  });

  it('must name its region, and an API Bedrock has', () => {
    expect(() => parse({})).toThrow(/"region" must be a non-empty string/);
    expect(() => parse({ region: 'us-east-1', api: 'chat' })).toThrow(/"api" must be "converse" or "invoke"/);
  });
});
