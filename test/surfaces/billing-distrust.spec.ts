import { randomUUID } from 'node:crypto';
import { ReservationSettled, settledPrices, settledUsage } from '../../src/ledger/ledger.events';
import { chargeFor } from '../../src/ledger/money';
import { eventually } from '../support/processes';
import { auditThenClose, startGateway, TEST_MODELS, TestGateway } from '../support/gateway';

/**
 * An upstream's usage is not believed blindly: usage that is not whole numbers ≥ 0, or that the
 * request makes impossible, is billed from the gateway's own count of what was sent and
 * delivered, and the settlement says so. Through the gateway, on both surfaces, streamed and
 * whole, for hosts of both kinds; the gateway keeps serving and the ledger stays clean.
 */

const M = TEST_MODELS;
const TEXT = 'The quick brown fox jumps over the lazy dog, twice over.';
/** The gateway's count of TEXT: four characters a token, rounded up (14, where hosts below report 9). */
const COUNTED_OUTPUT = Math.ceil(TEXT.length / 4);
/** The test catalogue's output limit, which every request here is capped at. */
const CAP = 1000;

type Surface = 'chat-completions' | 'messages';

interface Route {
  name: string;
  surface: Surface;
  model: (typeof M)['gpt' | 'claude'];
  kind: 'openai' | 'anthropic';
}

const ROUTES: Route[] = [
  { name: 'chat-completions on an openai host', surface: 'chat-completions', model: M.gpt, kind: 'openai' },
  { name: 'messages on an anthropic host', surface: 'messages', model: M.claude, kind: 'anthropic' },
  { name: 'chat-completions on an anthropic host', surface: 'chat-completions', model: M.claude, kind: 'anthropic' },
  { name: 'messages on an openai host', surface: 'messages', model: M.gpt, kind: 'openai' },
];

/** A usage object in a host kind's own fields, with the input and output counts written as given (JSON text). */
const wire = (kind: Route['kind'], input: string, output: string): string =>
  kind === 'openai'
    ? `{"prompt_tokens":${input},"completion_tokens":${output},"total_tokens":18}`
    : `{"input_tokens":${input},"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":${output}}`;

interface Case {
  name: string;
  input: string;
  output: string;
  /** The input counted by the gateway (its estimate) instead of the host's. */
  inputCounted: boolean;
  /** The output counted by the gateway (the characters delivered) instead of the host's. */
  outputCounted: boolean;
  flag: RegExp;
}

const CASES: Case[] = [
  { name: 'a negative output', input: '12', output: '-5', inputCounted: false, outputCounted: true, flag: /-5 is not a whole/ },
  { name: 'a negative input', input: '-1000', output: '9', inputCounted: true, outputCounted: false, flag: /-1000 is not/ },
  { name: 'a fractional output', input: '12', output: '14.5', inputCounted: false, outputCounted: true, flag: /14\.5/ },
  { name: 'an exponent with a fraction', input: '1.25e1', output: '9', inputCounted: true, outputCounted: false, flag: /12\.5/ },
  { name: '10^12 output tokens', input: '12', output: '1e12', inputCounted: false, outputCounted: true, flag: /exceed the cap/ },
  {
    name: '10^12 input tokens',
    input: '1000000000000',
    output: '9',
    inputCounted: true,
    outputCounted: false,
    flag: /exceed the context length/,
  },
  {
    name: 'a number too large for a double',
    input: '1e400',
    output: '1e400',
    inputCounted: true,
    outputCounted: true,
    flag: /Infinity/,
  },
  { name: 'strings', input: '"12"', output: '"14"', inputCounted: true, outputCounted: true, flag: /not a number/ },
  { name: 'objects', input: '{"n":12}', output: '[14]', inputCounted: true, outputCounted: true, flag: /not a number/ },
  { name: 'no counts at all', input: 'null', output: 'null', inputCounted: true, outputCounted: true, flag: /not a number/ },
  {
    name: 'an output of 0 for a delivered reply',
    input: '12',
    output: '0',
    inputCounted: false,
    outputCounted: true,
    flag: /too few for what was delivered/,
  },
];

interface Answer {
  status: number;
  text: string;
  requestId: string;
}

/** Sends one request on a surface (streamed or not) and reads the whole answer. */
async function ask(g: TestGateway, route: Route, stream: boolean): Promise<Answer> {
  const requestId = `req_distrust_${randomUUID().replace(/-/g, '')}`;
  const messages = [{ role: 'user', content: 'Tell me about the fox.' }];
  const res =
    route.surface === 'chat-completions'
      ? await fetch(`${g.baseUrl}/api/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${g.key}`, 'content-type': 'application/json', 'x-request-id': requestId },
          body: JSON.stringify({ model: route.model.slug, messages, stream }),
        })
      : await fetch(`${g.baseUrl}/api/v1/messages`, {
          method: 'POST',
          headers: {
            'x-api-key': g.key,
            'anthropic-version': '2023-06-01',
            'content-type': 'application/json',
            'x-request-id': requestId,
          },
          body: JSON.stringify({ model: route.model.slug, max_tokens: CAP, messages, stream }),
        });
  return { status: res.status, text: await res.text(), requestId };
}

/** The text a reply delivered, whatever its surface and streaming. */
function deliveredText(surface: Surface, stream: boolean, body: string): string {
  if (!stream) {
    const parsed = JSON.parse(body);
    return surface === 'chat-completions'
      ? parsed.choices[0].message.content
      : parsed.content.map((b: { text?: string }) => b.text ?? '').join('');
  }
  const data = body
    .split('\n')
    .filter((line) => line.startsWith('data: {'))
    .map((line) => JSON.parse(line.slice(6)));
  return surface === 'chat-completions'
    ? data.map((c) => c.choices?.[0]?.delta?.content ?? '').join('')
    : data.map((e) => (e.type === 'content_block_delta' ? (e.delta.text ?? '') : '')).join('');
}

async function settlementOf(g: TestGateway, requestId: string): Promise<ReservationSettled['data']> {
  let found: ReservationSettled['data'] | undefined;
  await eventually(async () => {
    const events = await g.t.runtime.events.readAll(0, 100_000);
    const hit = events.find((e) => e.type === 'ReservationSettled' && (e.data as { requestId: string }).requestId === requestId);
    found = hit?.data as ReservationSettled['data'] | undefined;
    return found !== undefined;
  }, 15_000);
  return found!;
}

describe('usage an upstream reports is checked before it is billed', () => {
  let g: TestGateway;
  /** Per route: the input the gateway estimates for the request (what a host reporting no usage is billed). */
  const estimated = new Map<string, number>();

  beforeAll(async () => {
    g = await startGateway({ redis: true });
  });
  afterAll(async () => {
    const report = await auditThenClose(g);
    expect(report.settlements).toBe(report.reservations);
    // The operator's audit counts the flagged settlements: all but the sound hosts' (one per route, and the last).
    expect(report.flaggedSettlements).toBe(report.settlements - ROUTES.length - 1);
  });

  describe.each(ROUTES)('$name', (route) => {
    it.each([false, true])(
      'a host that reports no usage: billed the estimate and the delivered text, flagged (streamed: %s)',
      async (stream) => {
        g.fake.on(route.model.hostModel, { kind: 'reply', reply: { text: TEXT, usage: null } });
        const answer = await ask(g, route, stream);
        expect(answer.status).toBe(200);
        expect(deliveredText(route.surface, stream, answer.text)).toBe(TEXT);
        const settled = await settlementOf(g, answer.requestId);
        expect(settled.usageFlag).toBe('the host reported no usage');
        expect(settled.outputTokens).toBe(COUNTED_OUTPUT);
        expect(settled.inputTokens).toBeGreaterThan(0);
        estimated.set(route.name, settled.inputTokens);
      },
    );

    it('a host whose usage passes is billed as it reported, with no flag; exponent notation of a whole number passes', async () => {
      g.fake.on(route.model.hostModel, { kind: 'reply', reply: { text: TEXT, wireUsage: wire(route.kind, '1.2e1', '9') } });
      const answer = await ask(g, route, true);
      expect(answer.status).toBe(200);
      const settled = await settlementOf(g, answer.requestId);
      expect(settled).toMatchObject({ inputTokens: 12, outputTokens: 9, status: 'ok' });
      expect(settled).not.toHaveProperty('usageFlag');
    });

    describe.each(CASES)('$name', (c) => {
      it.each([false, true])('is billed from the gateway count and flagged (streamed: %s)', async (stream) => {
        g.fake.on(route.model.hostModel, {
          kind: 'reply',
          reply: { text: TEXT, wireUsage: wire(route.kind, c.input, c.output) },
        });
        const answer = await ask(g, route, stream);
        expect(answer.status).toBe(200);
        expect(deliveredText(route.surface, stream, answer.text)).toBe(TEXT);
        const settled = await settlementOf(g, answer.requestId);
        expect(settled.status).toBe('ok');
        expect(settled.usageFlag).toMatch(c.flag);
        expect(settled.outputTokens).toBe(c.outputCounted ? COUNTED_OUTPUT : 9);
        expect(settled.inputTokens).toBe(c.inputCounted ? estimated.get(route.name) : 12);
        expect(settled.amount).toBe(chargeFor(settledUsage(settled), settledPrices(settled)));
        // A flagged settlement never takes more than was held.
        expect(settled.amount).toBeLessThanOrEqual(settled.held);
      });
    });
  });

  it.each([false, true])(
    'a 5 MB chunk of text reported as 5 tokens is billed for what was delivered, at most the cap (streamed: %s)',
    async (stream) => {
      const route = ROUTES[1];
      const text = 'x'.repeat(5 * 1024 * 1024);
      g.fake.on(route.model.hostModel, {
        kind: 'reply',
        reply: { text, wireUsage: wire(route.kind, '12', '5') },
        pieces: 1,
      });
      const answer = await ask(g, route, stream);
      expect(answer.status).toBe(200);
      expect(deliveredText(route.surface, stream, answer.text)).toHaveLength(text.length);
      const settled = await settlementOf(g, answer.requestId);
      expect(settled.usageFlag).toMatch(/5 output tokens are too few for what was delivered/);
      // The host cannot have produced more than the cap: the gateway's count (1,310,720 tokens) stops there.
      expect(settled).toMatchObject({ inputTokens: 12, outputTokens: CAP });
    },
  );

  it('after all of that, the gateway still serves, and bills a sound host as it reported', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: TEXT, usage: { input: 20, output: 15 } } });
    const answer = await ask(g, ROUTES[0], false);
    expect(answer.status).toBe(200);
    const settled = await settlementOf(g, answer.requestId);
    expect(settled).toMatchObject({ inputTokens: 20, outputTokens: 15 });
    expect(settled).not.toHaveProperty('usageFlag');
  });
});
