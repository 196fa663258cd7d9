import type { ReservationSettled } from '../../src/ledger/ledger.events';
import type { FakeUpstream } from '../support/fake-upstream';
import { startGateway, TestGateway } from '../support/gateway';
import { chatCompletion } from '../support/streams';

/**
 * Provider preferences that compare prices (`sort: "price"`, `max_price`) against hosts with
 * long-context bands, end to end: a model on two hosts of the fake, `h-banded` the cheaper at its
 * base prices ($1 / $2) but the dearer above 1,000 prompt tokens ($10 / $20), `h-flat` at $2 / $4
 * whatever the prompt. A request is routed at the prices its estimated prompt takes on each host,
 * the band chosen as its hold chooses it.
 */

const SLUG = 'test/long-context-routed';

function catalogue(fake: FakeUpstream) {
  const host = (id: string) => ({ id, kind: 'openai', baseUrl: `${fake.url}/v1`, retry: { attempts: 0 } });
  return {
    hosts: [host('h-banded'), host('h-flat')],
    models: [
      {
        slug: SLUG,
        id: 'b0000000-0000-4000-8000-000000000001',
        name: 'Long-context routed',
        contextLength: 128_000,
        maxOutputTokens: 100,
        hosts: [
          {
            host: 'h-banded',
            model: 'fake-banded',
            pricing: { input: '1.00', output: '2.00' },
            longContext: { aboveInputTokens: 1_000, input: '10.00', output: '20.00' },
          },
          { host: 'h-flat', model: 'fake-flat', pricing: { input: '2.00', output: '4.00' } },
        ],
      },
    ],
  };
}

/** One user message estimated at ceil(chars / 4) tokens and 7 of framing: 3,972 characters are 1,000 tokens. */
const AT_THRESHOLD = 'x'.repeat(3_972);
const ABOVE_THRESHOLD = 'x'.repeat(3_976);

let g: TestGateway;
beforeAll(async () => {
  g = await startGateway({ catalogue });
});
afterAll(async () => {
  await g.settled();
  const report = await g.audit();
  expect(report.differences).toEqual([]);
  await g.close();
});
beforeEach(() => {
  for (const m of ['fake-banded', 'fake-flat'])
    g.fake.on(m, { kind: 'reply', reply: { text: 'ok', usage: { input: 20, output: 5 } } });
});

/** A chat completion of `content` with `provider` preferences: its status and the host models the fake was called for. */
async function ask(content: string, provider: Record<string, unknown>) {
  const from = g.fake.requests.length;
  const res = await chatCompletion(g.baseUrl, g.key, {
    model: SLUG,
    max_tokens: 50,
    messages: [{ role: 'user', content }],
    provider,
  });
  const body = await res.text();
  return {
    status: res.status,
    body,
    requestId: res.headers.get('x-request-id')!,
    called: g.fake.requests.slice(from).map((r) => r.body.model as string),
  };
}

/** The settlement of the request `requestId`. */
async function settlementOf(requestId: string): Promise<ReservationSettled['data']> {
  await g.logged(requestId);
  await g.settled();
  const events = await g.t.runtime.events.readAll(0, 100_000);
  return events.find((e) => e.type === 'ReservationSettled' && (e.data as { requestId: string }).requestId === requestId)!
    .data as ReservationSettled['data'];
}

describe('sort by price with long-context bands', () => {
  it('sends a prompt estimated at the threshold to the host cheapest at its base prices', async () => {
    const r = await ask(AT_THRESHOLD, { sort: 'price' });
    expect(r.status).toBe(200);
    expect(r.called).toEqual(['fake-banded']);
  });

  it('sends a prompt estimated above the threshold to the host cheapest at the prices of its band', async () => {
    const r = await ask(ABOVE_THRESHOLD, { sort: 'price' });
    expect(r.status).toBe(200);
    expect(r.called).toEqual(['fake-flat']);
    expect((await settlementOf(r.requestId)).host).toBe('h-flat');
  });

  it('falls back to the banded host after the cheaper one fails, and bills it at its band', async () => {
    g.fake.on('fake-flat', { kind: 'status', status: 500 });
    g.fake.on('fake-banded', { kind: 'reply', reply: { text: 'ok', usage: { input: 1_001, output: 5 } } });
    const r = await ask(ABOVE_THRESHOLD, { sort: 'price' });
    expect(r.status).toBe(200);
    expect(r.called).toEqual(['fake-flat', 'fake-banded']);
    expect((await settlementOf(r.requestId)).prices).toMatchObject({ input: 10_000_000_000, output: 20_000_000_000 });
  });
});

describe('max_price with long-context bands', () => {
  it('keeps a host whose base prices are within it for a prompt at the threshold', async () => {
    const r = await ask(AT_THRESHOLD, { max_price: { prompt: 5 } });
    expect(r.status).toBe(200);
    expect(r.called).toEqual(['fake-banded']);
  });

  it('leaves out a host whose band is above it for a prompt above the threshold: not even a fallback', async () => {
    g.fake.on('fake-flat', { kind: 'status', status: 500 });
    const r = await ask(ABOVE_THRESHOLD, { max_price: { prompt: 5 } });
    expect(r.status).toBe(502);
    expect(r.called).toEqual(['fake-flat']);
  });

  it('refuses with a 402 naming max_price when the bands leave no host within it', async () => {
    const r = await ask(ABOVE_THRESHOLD, { max_price: { completion: 3 } });
    expect(r.status).toBe(402);
    expect(r.body).toMatch(/max_price/);
    expect(r.called).toEqual([]);
    // The same limit serves a short prompt on the banded host at its base prices.
    const short = await ask(AT_THRESHOLD, { max_price: { completion: 3 } });
    expect([short.status, short.called]).toEqual([200, ['fake-banded']]);
  });
});
