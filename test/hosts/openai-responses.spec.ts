import type { FakeReply } from '../support/fake-upstream';
import { auditThenClose, startGateway, TestGateway } from '../support/gateway';
import { calledOnce, modelEntry, withOwn } from '../support/spec-catalogue';
import { CHAT_COMPLETIONS, sseEvents, SURFACES, WEATHER } from '../support/surfaces';
import { throughGateway } from '../support/through-gateway';
import { hostUnderTest, TEXT, THINKING } from './support/host-under-test';

/**
 * A model on an `openai-responses` host, through every client surface, whole and streamed: what
 * the host replies (text, reasoning, a call with its arguments streamed) reaches the client, its
 * usage is billed by class at the catalogue's prices, a cut stream is billed for what was
 * delivered, a failure before output falls back, and absurd usage is not believed.
 */

/** $1/M input, $0.25/M cached input, $2/M output. */
const RESPONSES = { slug: 'test/responses', id: '99999999-9999-4999-8999-999999999999', hostModel: 'fake-responses' };
/** Two hosts: the first (`fake-responses-first`, at $9/M) fails before output; the second serves at $0.50/M and $0.75/M. */
const FALLBACK = {
  slug: 'test/responses-fallback',
  id: 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  hostModel: 'fake-responses-second',
};

const catalogue = withOwn((fake) => {
  const responses = { kind: 'openai-responses', baseUrl: `${fake.url}/v1` };
  return {
    hosts: [
      { id: 'fake-responses', ...responses, apiKeyEnv: 'FAKE_OPENAI_KEY' },
      { id: 'fake-responses-flaky', ...responses },
    ].map(calledOnce),
    models: [
      modelEntry(RESPONSES, [
        { host: 'fake-responses', model: RESPONSES.hostModel, pricing: { input: '1.00', cacheRead: '0.25', output: '2.00' } },
      ]),
      modelEntry(FALLBACK, [
        { host: 'fake-responses-flaky', model: 'fake-responses-first', pricing: { input: '9.00', output: '9.00' } },
        { host: 'fake-responses', model: FALLBACK.hostModel, pricing: { input: '0.50', output: '0.75' } },
      ]),
    ],
  };
});

let g: TestGateway;
beforeAll(async () => {
  g = await startGateway({ catalogue });
});
afterAll(() => auditThenClose(g));

const through = throughGateway(() => g);
const { call, post, sent, settlementOf } = through;
const host = hostUnderTest(through, { model: RESPONSES, fallback: { ...FALLBACK, firstHostModel: 'fake-responses-first' } });

const CALL = { id: 'call_weather_1', name: 'get_weather', arguments: '{"city":"Paris"}' };

describe.each(SURFACES)('the $name surface on an openai-responses host', (surface) => {
  describe.each([false, true])('streamed: %s', (stream) => {
    it('is sent as a Responses request with the key, and gets the text back', async () => {
      const { out, upstream } = await host.answers(surface, stream, { text: TEXT });
      expect(out.text).toBe(TEXT);
      expect(upstream.path).toBe('/v1/responses');
      expect(upstream.headers.authorization).toBe('Bearer upstream-openai-key');
      if (surface.name === 'responses') {
        // The client's own body, whole: only the model renamed and the cap set to the model's.
        expect(upstream.body).toEqual({
          ...surface.body(RESPONSES.slug, stream),
          model: RESPONSES.hostModel,
          max_output_tokens: 1000,
        });
        return;
      }
      expect(upstream.body).toMatchObject({ stream, store: false, max_output_tokens: 1000 });
      expect(upstream.body.input).toEqual([{ role: 'user', content: 'Hello' }]);
      if (surface.name !== 'native') expect(upstream.body.instructions).toBe('Be brief.');
    });

    if (surface.tools) {
      it('carries a tool call with its arguments, and the reasoning before it', async () => {
        const { out, upstream } = await host.answers(surface, stream, { thinking: THINKING, toolCalls: [CALL] }, { tools: true });
        expect(out.calls).toEqual([CALL]);
        expect(out.reasoning).toBe(THINKING);
        expect(upstream.body.tools).toEqual([{ type: 'function', ...WEATHER, strict: false }]);
        if (surface.name === 'responses') expect(upstream.body.reasoning).toEqual({ effort: 'low' });
        else expect(upstream.body.reasoning).toEqual({ effort: 'low', summary: 'auto' });
      });
    }

    it('bills every token class at its price', async () => {
      // input_tokens 20,100 of which 20,000 cached; 500 output tokens, 200 of them reasoning.
      const usage = { input: 100, cacheRead: 20_000, output: 500, reasoning: 200 };
      const { res } = await host.answers(surface, stream, { text: TEXT, usage });
      // 100 × $1 + 20,000 × $0.25 + 500 × $2 = 100 + 5,000 + 1,000 = $6,100 per million = 6,100,000 nano-credits
      expect(await settlementOf(res)).toMatchObject({
        host: 'fake-responses',
        inputTokens: 100,
        cacheReadTokens: 20_000,
        cacheWriteTokens: 0,
        outputTokens: 500,
        amount: 6_100_000,
      });
    });

    it(
      'falls back to the next host on a 429, a 5xx or a 401 before output',
      // 1,000 × $0.50 + 1,000 × $0.75 = $1,250 per million
      host.failsBeforeOutput(surface, stream, [429, 500, 503, 401], { host: 'fake-responses', amount: 1_250_000 }),
    );
  });

  it('bills a cut stream for what was delivered', host.cutsItsStream(surface));

  it('fails a stream whose host reports an error after output, billing what was delivered', host.failsAfterOutput(surface));

  it(
    'does not believe absurd usage',
    host.reportsAbsurdUsage(surface, '{"input_tokens":12,"input_tokens_details":{"cached_tokens":0},"output_tokens":1e12}'),
  );
});

describe('a Responses client on an openai-responses host, passed whole', () => {
  const body = (stream: boolean) => ({
    model: RESPONSES.slug,
    stream,
    input: 'Hello',
    store: false,
    reasoning: { effort: 'low', summary: 'auto' },
    include: ['reasoning.encrypted_content'],
    some_future_field: { kept: true },
  });

  it.each([false, true])(
    'gets the host’s response as it was, under the slug, with the cost in its usage (streamed: %s)',
    async (stream) => {
      g.fake.on(RESPONSES.hostModel, {
        kind: 'reply',
        reply: { thinking: THINKING, text: TEXT, usage: { input: 100, cacheRead: 20_000, output: 500, reasoning: 200 } },
      });
      const res = await post('responses', body(stream));
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(sent(RESPONSES.hostModel).body).toEqual({ ...body(stream), model: RESPONSES.hostModel, max_output_tokens: 1000 });
      let response: any;
      if (stream) {
        const events = sseEvents(text);
        // Every event the host sent, in its order, its sequence numbers kept.
        expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
        expect(events.every((e) => e.event === e.data.type)).toBe(true);
        expect(events.map((e) => e.event)).toContain('response.reasoning_summary_text.delta');
        expect(events[0].data.response.model).toBe(RESPONSES.slug);
        response = events.at(-1)!.data.response;
        expect(events.at(-1)!.event).toBe('response.completed');
      } else response = JSON.parse(text);
      expect(response.id).toMatch(/^resp_/);
      expect(response.model).toBe(RESPONSES.slug);
      // The reasoning item's encrypted content, which only a host of this format can give back.
      expect(response.output[0]).toMatchObject({
        type: 'reasoning',
        summary: [{ type: 'summary_text', text: THINKING }],
        encrypted_content: expect.any(String),
      });
      expect(response.output[1].content[0].text).toBe(TEXT);
      // 6,100,000 nano-credits, as billed by class above.
      expect(response.usage).toEqual({
        input_tokens: 20_100,
        input_tokens_details: { cached_tokens: 20_000, cache_write_tokens: 0 },
        output_tokens: 500,
        output_tokens_details: { reasoning_tokens: 200 },
        total_tokens: 20_600,
        cost: 0.0061,
      });
      expect(await settlementOf(res)).toMatchObject({ cacheReadTokens: 20_000, inputTokens: 100, amount: 6_100_000 });
    },
  );

  it('leaves out the hosted tools it announces as left out: the host gets only the client’s own tools', async () => {
    g.fake.on(RESPONSES.hostModel, { kind: 'reply', reply: { text: TEXT } });
    const fn = { type: 'function', ...WEATHER };
    const res = await post('responses', { ...body(false), tools: [{ type: 'web_search' }, fn], tool_choice: 'auto' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-omitted-tools')).toBe('web_search');
    expect(sent(RESPONSES.hostModel).body).toMatchObject({ tools: [fn], tool_choice: 'auto' });

    // With no tool left, no tool_choice either (hosts refuse one without tools).
    const alone = await post('responses', { ...body(false), tools: [{ type: 'web_search' }], tool_choice: 'auto' });
    expect(alone.status).toBe(200);
    expect(sent(RESPONSES.hostModel).body).not.toHaveProperty('tools');
    expect(sent(RESPONSES.hostModel).body).not.toHaveProperty('tool_choice');
  });
});

describe("a cap below the Responses API's least (16), which the fake refuses as OpenAI does", () => {
  const probe = (route: string, body: Record<string, unknown>) => post(route, { model: RESPONSES.slug, ...body });
  const probes: Array<[string, string, (cap: number) => Record<string, unknown>]> = [
    [
      'a messages client (max_tokens 1, as Claude Code probes its quota)',
      'messages',
      (cap) => ({ max_tokens: cap, messages: [{ role: 'user', content: 'quota' }] }),
    ],
    [
      'a chat-completions client (max_tokens 1)',
      'chat/completions',
      (cap) => ({ max_tokens: cap, messages: [{ role: 'user', content: 'quota' }] }),
    ],
  ];

  it.each(probes)(
    '%s is served: the host is sent 16, and its count is billed, within what was held',
    async (_client, path, body) => {
      // The host may write the 16 tokens it was allowed.
      g.fake.on(RESPONSES.hostModel, { kind: 'reply', reply: { text: 'Hi', finish: 'length', usage: { input: 8, output: 16 } } });
      const res = await probe(path, body(1));
      expect(res.status).toBe(200);
      expect(sent(RESPONSES.hostModel).body.max_output_tokens).toBe(16);
      const settled = await settlementOf(res);
      // 8 × $1 + 16 × $2 per million: the host's count, believed (no flag, nothing estimated).
      expect(settled).toMatchObject({ inputTokens: 8, outputTokens: 16, amount: 40_000 });
      expect(settled).not.toHaveProperty('usageFlag');
      expect(settled).not.toHaveProperty('estimated');
      // Held as for a cap of 16: the same request asking 16 holds the same.
      const asked16 = await settlementOf(await probe(path, body(16)));
      expect(settled.held).toBe(asked16.held);
      expect(settled.held).toBeGreaterThanOrEqual(settled.amount);
    },
  );

  it("a Responses client's body passed whole is sent 16 in place of a lower cap", async () => {
    g.fake.on(RESPONSES.hostModel, { kind: 'reply', reply: { text: TEXT } });
    const res = await probe('responses', { input: 'Hello', max_output_tokens: 5 });
    expect(res.status).toBe(200);
    expect(sent(RESPONSES.hostModel).body.max_output_tokens).toBe(16);
  });
});

describe('a Responses reply', () => {
  it('that stopped at max_output_tokens finishes as a length', async () => {
    const reply: FakeReply = { text: TEXT, finish: 'length' };
    g.fake.on(RESPONSES.hostModel, { kind: 'reply', reply });
    for (const stream of [false, true]) {
      const { res, text } = await call(CHAT_COMPLETIONS, RESPONSES.slug, stream);
      expect(res.status).toBe(200);
      expect(CHAT_COMPLETIONS.read(text, stream).finish).toBe('length');
    }
  });
});
