import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { ReservationSettled } from '../../src/ledger/ledger.events';
import type { FakeUpstream, FakeUsage } from '../support/fake-upstream';
import { auditThenClose, startGateway, TEST_MODELS, testCatalogueFile, TestGateway } from '../support/gateway';
import { sseEvents as events } from '../support/surfaces';

/**
 * Billing by token class, end to end: a host reports cache reads, cache writes and reasoning in its
 * own wire format; every surface bills each class at its price and says what was cached.
 */

const M = TEST_MODELS;

/** A model on an `openai-responses` host, at the prices of M.gpt: cache reads and writes each at its own. */
const RESPONSES = { slug: 'test/responses-cache', id: '12121212-1212-4121-8121-121212121212', hostModel: 'fake-responses-cache' };

function catalogue(fake: FakeUpstream) {
  const file = testCatalogueFile(fake);
  return {
    hosts: [
      ...file.hosts,
      { id: 'fake-openai-responses', kind: 'openai-responses', baseUrl: `${fake.url}/v1`, apiKeyEnv: 'FAKE_OPENAI_KEY' },
    ],
    models: [
      ...file.models,
      {
        ...RESPONSES,
        name: RESPONSES.slug,
        contextLength: 128_000,
        maxOutputTokens: 1000,
        reasoning: true,
        hosts: [
          {
            host: 'fake-openai-responses',
            model: RESPONSES.hostModel,
            pricing: { input: '1.00', cacheRead: '0.25', cacheWrite: '1.25', output: '2.00' },
          },
        ],
      },
    ],
  };
}

interface Case {
  host: 'openai' | 'anthropic' | 'openai-responses';
  model: { slug: string; hostModel: string };
  usage: FakeUsage;
  /** Nano-credits, worked out by hand below. */
  charge: number;
  /** The same tokens, every input token at the input price. */
  atInputPrice: number;
  prices: Record<'input' | 'cacheRead' | 'cacheWrite' | 'cacheWrite1h' | 'output', number>;
}

const CASES: Case[] = [
  {
    host: 'openai',
    model: M.gpt,
    // prompt_tokens 23,100 of which 20,000 cached_tokens and 3,000 cache_write_tokens; 500 completion tokens, 200 of them reasoning.
    usage: { input: 100, cacheRead: 20_000, cacheWrite: 3_000, output: 500, reasoning: 200 },
    // 100 × $1 + 20,000 × $0.25 + 3,000 × $1.25 + 500 × $2 = 100 + 5,000 + 3,750 + 1,000 = $9,850 per million
    //   = 0.00985 credits = 9,850,000 nano-credits
    charge: 9_850_000,
    // 23,100 × $1 + 500 × $2 = $24,100 per million = 24,100,000 nano-credits
    atInputPrice: 24_100_000,
    prices: { input: 1e9, cacheRead: 0.25e9, cacheWrite: 1.25e9, cacheWrite1h: 1e9, output: 2e9 },
  },
  {
    host: 'anthropic',
    model: M.claude,
    // input_tokens 100 (uncached), cache_read_input_tokens 20,000, cache_creation_input_tokens 4,000 (3,000 for 5 minutes, 1,000 for an hour).
    usage: { input: 100, cacheRead: 20_000, cacheWrite: 3_000, cacheWrite1h: 1_000, output: 500 },
    // Anthropic's list multiples of $3 input: reads $0.30, 5-minute writes $3.75, 1-hour writes $6.
    // 100 × $3 + 20,000 × $0.30 + 3,000 × $3.75 + 1,000 × $6 + 500 × $15 = 300 + 6,000 + 11,250 + 6,000 + 7,500
    //   = $31,050 per million = 0.03105 credits = 31,050,000 nano-credits
    charge: 31_050_000,
    // 24,100 × $3 + 500 × $15 = 72,300 + 7,500 = $79,800 per million = 79,800,000 nano-credits
    atInputPrice: 79_800_000,
    prices: { input: 3e9, cacheRead: 0.3e9, cacheWrite: 3.75e9, cacheWrite1h: 6e9, output: 15e9 },
  },
  {
    host: 'openai-responses',
    model: RESPONSES,
    // input_tokens 23,100 of which 20,000 cached_tokens and 3,000 cache_write_tokens; 500 output tokens, 200 of them reasoning:
    // the openai case's counts, in the Responses API's fields, at the same prices.
    usage: { input: 100, cacheRead: 20_000, cacheWrite: 3_000, output: 500, reasoning: 200 },
    charge: 9_850_000,
    atInputPrice: 24_100_000,
    prices: { input: 1e9, cacheRead: 0.25e9, cacheWrite: 1.25e9, cacheWrite1h: 1e9, output: 2e9 },
  },
];

const cacheWrites = (c: Case) => (c.usage.cacheWrite ?? 0) + (c.usage.cacheWrite1h ?? 0);
const allInput = (c: Case) => c.usage.input + (c.usage.cacheRead ?? 0) + cacheWrites(c);

let g: TestGateway;
beforeAll(async () => {
  g = await startGateway({ catalogue });
});
afterAll(async () => {
  await auditThenClose(g);
});

async function post(path: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${g.key}` }) {
  const res = await fetch(`${g.baseUrl}/api/v1/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  return res;
}

/** The settlement of the request the response names, and its request log entry. */
async function billed(res: Response) {
  const requestId = res.headers.get('x-request-id')!;
  const entry = await g.logged(requestId);
  await g.settled();
  const log = await g.t.runtime.events.readAll(0, 100_000);
  const settled = log.find((e) => e.type === 'ReservationSettled' && (e.data as { requestId: string }).requestId === requestId);
  return { entry, settled: settled!.data as ReservationSettled['data'] };
}

/** What every request of a case must have billed: each class at its price, recorded on the event and in the log. */
async function expectBilled(c: Case, res: Response) {
  const { entry, settled } = await billed(res);
  expect(settled).toMatchObject({
    host: `fake-${c.host}`,
    hostModel: c.model.hostModel,
    inputTokens: c.usage.input,
    cacheReadTokens: c.usage.cacheRead ?? 0,
    cacheWriteTokens: c.usage.cacheWrite ?? 0,
    cacheWrite1hTokens: c.usage.cacheWrite1h ?? 0,
    outputTokens: c.usage.output,
    prices: c.prices,
    amount: c.charge,
  });
  expect(entry).toMatchObject({
    inputTokens: c.usage.input,
    cacheReadTokens: c.usage.cacheRead ?? 0,
    cacheWriteTokens: cacheWrites(c),
    outputTokens: c.usage.output,
    cost: c.charge,
  });
}

describe.each(CASES)('a model on an $host host reporting cached tokens', (c) => {
  beforeEach(() => g.fake.on(c.model.hostModel, { kind: 'reply', reply: { text: 'Cached and served.', usage: c.usage } }));

  it('costs a different amount than the same tokens at the plain input price', () => {
    expect(c.charge).not.toBe(c.atInputPrice);
  });

  describe('on the chat-completions surface', () => {
    const ask = { model: c.model.slug, messages: [{ role: 'user', content: 'Again, from the cache' }] };
    // An openai host's own usage comes back whole (its every detail), with the cost added.
    const hostDetails = c.host === 'openai';
    const usage = () => ({
      prompt_tokens: allInput(c),
      completion_tokens: c.usage.output,
      total_tokens: allInput(c) + c.usage.output,
      prompt_tokens_details: {
        cached_tokens: c.usage.cacheRead,
        cache_write_tokens: cacheWrites(c),
        ...(hostDetails ? { audio_tokens: 0 } : {}),
      },
      completion_tokens_details: {
        reasoning_tokens: c.usage.reasoning ?? 0,
        ...(hostDetails ? { audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 } : {}),
      },
      cost: c.charge / 1e9,
    });

    it('whole: bills each class at its price; usage has every input token, the cached ones detailed, and reasoning', async () => {
      const res = await post('chat/completions', ask);
      expect(((await res.json()) as { usage: unknown }).usage).toEqual(usage());
      await expectBilled(c, res);
    });

    it('streamed: the same, in the usage chunk (read by the official client)', async () => {
      const res = await post('chat/completions', { ...ask, stream: true, stream_options: { include_usage: true } });
      const chunks = events(await res.text());
      expect(chunks.at(-2)!.data).toMatchObject({ choices: [], usage: usage() });
      await expectBilled(c, res);

      const client = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: g.key, maxRetries: 0 });
      const stream = await client.chat.completions.create({
        ...ask,
        stream: true,
        stream_options: { include_usage: true },
      } as never);
      let last: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>) last = chunk.usage ?? last;
      expect(last?.prompt_tokens_details?.cached_tokens).toBe(c.usage.cacheRead);
      expect(last?.completion_tokens_details?.reasoning_tokens).toBe(c.usage.reasoning ?? 0);
    });
  });

  describe('on the messages surface', () => {
    const ask = { model: c.model.slug, max_tokens: 800, messages: [{ role: 'user', content: 'Again, from the cache' }] };
    const headers = () => ({ 'x-api-key': g.key, 'anthropic-version': '2023-06-01' });
    // Translated, the usage names every field of the format's: the reasoning's share, and null for what the host did not say.
    const translated = (thinking: number) => ({
      output_tokens_details: { thinking_tokens: thinking },
      server_tool_use: null,
      service_tier: null,
      inference_geo: null,
      speed: null,
    });
    // An anthropic host's own usage comes back whole (its service tier too).
    const usage = () => ({
      input_tokens: c.usage.input,
      cache_creation_input_tokens: cacheWrites(c),
      cache_read_input_tokens: c.usage.cacheRead,
      cache_creation: { ephemeral_5m_input_tokens: c.usage.cacheWrite, ephemeral_1h_input_tokens: c.usage.cacheWrite1h ?? 0 },
      output_tokens: c.usage.output,
      ...(c.host === 'anthropic' ? { service_tier: 'standard' } : translated(c.usage.reasoning ?? 0)),
    });

    it('whole: bills each class at its price; usage has the uncached input and the cache reads and writes apart', async () => {
      const res = await post('messages', ask, headers());
      expect(((await res.json()) as { usage: unknown }).usage).toEqual(usage());
      await expectBilled(c, res);
    });

    it('streamed: message_delta has the final counts; message_start what the host had counted by then', async () => {
      const res = await post('messages', { ...ask, stream: true }, headers());
      const stream = events(await res.text());
      expect(stream.map((e) => e.event)).toEqual([
        'message_start',
        'ping',
        'content_block_start',
        ...stream.slice(3, -3).map(() => 'content_block_delta'),
        'content_block_stop',
        'message_delta',
        'message_stop',
      ]);
      // An anthropic host counts the input at its start (its output then provisional); an openai host counts all at the end.
      const none = {
        input_tokens: 0,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
        output_tokens: 0,
        ...translated(0),
      };
      expect(stream[0].data.message.usage).toEqual(c.host === 'anthropic' ? { ...usage(), output_tokens: 1 } : none);
      // An anthropic host's own message_delta, whole: its cumulative counts (the split is in message_start only).
      const { cache_creation: _split, service_tier: _tier, ...counts } = usage();
      expect(stream.at(-2)!.data.usage).toEqual(c.host === 'anthropic' ? counts : usage());
      await expectBilled(c, res);
    });

    it("streamed, read by the official client: the final message's usage is the reply's", async () => {
      const client = new Anthropic({ baseURL: `${g.baseUrl}/api`, apiKey: g.key, maxRetries: 0 });
      const message = await client.messages.stream(ask as Anthropic.MessageCreateParams).finalMessage();
      // The client takes the writes' 5-minute/1-hour split from message_start only, where an openai host has counted nothing yet.
      const { cache_creation: split, ...counts } = usage();
      expect(message.usage).toMatchObject(c.host === 'anthropic' ? { ...counts, cache_creation: split } : counts);
    });
  });

  describe('on the responses surface', () => {
    const ask = { model: c.model.slug, input: 'Again, from the cache' };
    const usage = () => ({
      input_tokens: allInput(c),
      input_tokens_details: { cached_tokens: c.usage.cacheRead, cache_write_tokens: cacheWrites(c) },
      output_tokens: c.usage.output,
      output_tokens_details: { reasoning_tokens: c.usage.reasoning ?? 0 },
      total_tokens: allInput(c) + c.usage.output,
      cost: c.charge / 1e9,
    });

    it('whole: bills each class at its price; usage has every input token, the cached ones detailed, and reasoning', async () => {
      const res = await post('responses', ask);
      expect(((await res.json()) as { usage: unknown }).usage).toEqual(usage());
      await expectBilled(c, res);
    });

    it('streamed: the same, in response.completed (read by the official client too)', async () => {
      const res = await post('responses', { ...ask, stream: true });
      const completed = events(await res.text()).at(-1)!;
      expect(completed.event).toBe('response.completed');
      expect(completed.data.response.usage).toEqual(usage());
      await expectBilled(c, res);

      const client = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: g.key, maxRetries: 0 });
      const response = await client.responses.stream(ask).finalResponse();
      expect(response.usage).toEqual(usage());
    });
  });

  describe('on the native surface', () => {
    const ask = { messages: [{ role: 'user', content: 'Again, from the cache' }] };
    const accounting = () => ({
      usage: {
        input_tokens: c.usage.input,
        output_tokens: c.usage.output,
        cache_read_tokens: c.usage.cacheRead,
        cache_write_tokens: cacheWrites(c),
      },
      cost: c.charge / 1e9,
      cost_nano: c.charge,
    });

    it('whole: bills each class at its price; usage adds the cache reads and writes', async () => {
      const res = await post(`models/${c.model.slug}/chat`, ask);
      expect(await res.json()).toMatchObject(accounting());
      await expectBilled(c, res);
    });

    it('streamed: the same, in the done event', async () => {
      const res = await post(`models/${c.model.slug}/chat`, { ...ask, stream: true });
      const done = events(await res.text()).find((e) => e.event === 'done');
      // The settlement's position, after the reservation's the headers named (read your writes).
      expect(done?.data).toEqual({ finish_reason: 'stop', ...accounting(), ledger_position: expect.any(Number) });
      expect(done!.data.ledger_position).toBeGreaterThan(Number(res.headers.get('x-ledger-position')));
      await expectBilled(c, res);
    });
  });
});

describe('a host that reports no usage', () => {
  it('is billed from its estimate and the characters delivered, all as uncached input and output', async () => {
    g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'Sixteen letters.', usage: null } });
    const res = await post(`models/${M.claude.slug}/chat`, { messages: [{ role: 'user', content: 'Hello' }] });
    const { settled } = await billed(res);
    expect(settled).toMatchObject({ cacheReadTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0, outputTokens: 4 });
    expect(((await res.json()) as { usage: unknown }).usage).toMatchObject({ cache_read_tokens: 0, cache_write_tokens: 0 });
  });
});
