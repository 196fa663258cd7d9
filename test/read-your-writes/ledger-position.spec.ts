import { startGateway, TEST_EMBEDDING_MODELS, TEST_MODELS, TestGateway } from '../support/gateway';
import { sseEvents } from '../support/surfaces';

/**
 * Read your writes for clients: every reply names the ledger position of its settlement
 * (`x-ledger-position`; a stream's header its reservation's, its last event the settlement's), and
 * `/credits`, `/key` and `/generation` with `min_position` answer once their read models include
 * it — waiting on the projector, up to MIN_POSITION_WAIT_MS, then a 503 — naming what they reflect.
 */

const M = TEST_MODELS;
const WAIT_MS = 400;
const ask = [{ role: 'user', content: 'Hi' }];

let g: TestGateway;

beforeAll(async () => {
  g = await startGateway({ env: { MIN_POSITION_WAIT_MS: String(WAIT_MS) } });
  g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello there.' } });
  g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'Hello there.' } });
  g.fake.on('fake-first', { kind: 'status', status: 503 });
  g.fake.on(M.fallback.hostModel, { kind: 'status', status: 500 });
  g.fake.on(TEST_EMBEDDING_MODELS.embed.hostModel, { kind: 'reply', reply: {} });
});
afterAll(() => g.close());

const post = (path: string, body: object, headers: Record<string, string>) =>
  fetch(`${g.baseUrl}/api/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
const bearer = () => ({ authorization: `Bearer ${g.key}` });
const messagesKey = () => ({ 'x-api-key': g.key, 'anthropic-version': '2023-06-01' });
const googKey = () => ({ 'x-goog-api-key': g.key });

/** The event the log holds at `position`. */
async function eventAt(position: number) {
  const [event] = await g.t.runtime.events.readAll(position - 1, 1);
  expect(event?.position).toBe(position);
  return event as { type: string; data: { requestId: string } };
}

/** The header's position, checked to be a whole number. */
function headerPosition(res: Response): number {
  const text = res.headers.get('x-ledger-position');
  expect(text).toMatch(/^\d+$/);
  return Number(text);
}

interface SurfaceCase {
  name: string;
  send: (stream: boolean) => Promise<Response>;
  /** The settlement's position, as the stream's last event names it. */
  streamedPosition: (events: Array<{ event?: string; data: any }>) => unknown;
}

const CASES: SurfaceCase[] = [
  {
    // An openai host: the host's own chunks are passed on; the usage chunk is ours.
    name: 'chat-completions',
    send: (stream) =>
      post(
        'v1/chat/completions',
        { model: M.gpt.slug, messages: ask, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) },
        bearer(),
      ),
    streamedPosition: (events) => events.find((e) => e.data !== '[DONE]' && e.data.usage)?.data.ledger_position,
  },
  {
    // An anthropic host: the host's own events are passed on, its message_delta named with the position.
    name: 'messages',
    send: (stream) => post('v1/messages', { model: M.claude.slug, max_tokens: 50, messages: ask, stream }, messagesKey()),
    streamedPosition: (events) => events.find((e) => e.event === 'message_delta')?.data.ledger_position,
  },
  {
    name: 'messages, translated',
    send: (stream) => post('v1/messages', { model: M.gpt.slug, max_tokens: 50, messages: ask, stream }, messagesKey()),
    streamedPosition: (events) => events.find((e) => e.event === 'message_delta')?.data.ledger_position,
  },
  {
    name: 'native',
    send: (stream) => post(`v1/models/${encodeURIComponent(M.gpt.slug)}/chat`, { messages: ask, stream }, bearer()),
    streamedPosition: (events) => events.find((e) => e.event === 'done')?.data.ledger_position,
  },
  {
    name: 'Responses',
    send: (stream) => post('v1/responses', { model: M.gpt.slug, input: 'Hi', stream }, bearer()),
    streamedPosition: (events) => events.find((e) => e.event === 'response.completed')?.data.ledger_position,
  },
  {
    name: 'Gemini',
    send: (stream) =>
      post(
        `v1beta/models/${M.gpt.slug}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
        { contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] },
        googKey(),
      ),
    streamedPosition: (events) => events[events.length - 1]?.data.ledgerPosition,
  },
];

describe('x-ledger-position on replies', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s, whole: the header names its settlement', async (_name, c) => {
    const res = await c.send(false);
    expect(res.status).toBe(200);
    await res.text();
    const event = await eventAt(headerPosition(res));
    expect(event.type).toBe('ReservationSettled');
    expect(event.data.requestId).toBe(res.headers.get('x-request-id'));
  });

  it.each(CASES.map((c) => [c.name, c] as const))(
    '%s, streamed: the header names its reservation, the last event its settlement',
    async (_name, c) => {
      const res = await c.send(true);
      expect(res.status).toBe(200);
      const events = sseEvents(await res.text());
      const requestId = res.headers.get('x-request-id');
      const reserved = await eventAt(headerPosition(res));
      expect(reserved).toMatchObject({ type: 'CreditsReserved', data: { requestId } });
      const settledAt = c.streamedPosition(events);
      expect(typeof settledAt).toBe('number');
      expect(await eventAt(settledAt as number)).toMatchObject({ type: 'ReservationSettled', data: { requestId } });
      expect(settledAt as number).toBeGreaterThan(headerPosition(res));
    },
  );

  it('embeddings: the header names its settlement', async () => {
    const res = await post('v1/embeddings', { model: TEST_EMBEDDING_MODELS.embed.slug, input: 'Hello' }, bearer());
    expect(res.status).toBe(200);
    const event = await eventAt(headerPosition(res));
    expect(event).toMatchObject({ type: 'ReservationSettled', data: { requestId: res.headers.get('x-request-id') } });
  });

  it("a failure answered whole names its hold's release", async () => {
    const res = await post('v1/chat/completions', { model: M.fallback.slug, messages: ask }, bearer());
    expect(res.status).toBe(502);
    const event = await eventAt(headerPosition(res));
    expect(event).toMatchObject({ type: 'ReservationReleased', data: { requestId: res.headers.get('x-request-id') } });
  });
});

/** A read route with the caller's key. */
const read = (path: string) => fetch(`${g.baseUrl}/api/v1/${path}`, { headers: bearer() });

/**
 * Holds the projector's next batch until released, and tells when a read has begun waiting for a
 * position: so a test can see a read wait for an event the read models have not applied yet.
 */
function holdTheProjector() {
  const store = g.t.runtime.projections;
  const projector = g.t.runtime.projector;
  const apply = store.apply.bind(store);
  const waitFor = projector.waitFor.bind(projector);
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let held!: () => void;
  const holding = new Promise<void>((resolve) => (held = resolve));
  const waiting = new Map<number, () => void>();
  store.apply = async (batch) => {
    held();
    await released;
    return apply(batch);
  };
  // In-process read models take this process's events as they commit (Projector.applyCommitted): without it, they go through apply.
  const applyNow = Object.getOwnPropertyDescriptor(store, 'applyNow');
  store.applyNow = undefined;
  projector.waitFor = (position, timeoutMs) => {
    waiting.get(position)?.();
    return waitFor(position, timeoutMs);
  };
  return {
    holding,
    /** Resolves once a read waits for `position`. */
    waitedFor: (position: number) => new Promise<void>((resolve) => waiting.set(position, resolve)),
    release: async () => {
      release();
      store.apply = apply;
      if (applyNow) Object.defineProperty(store, 'applyNow', applyNow);
      else delete store.applyNow;
      projector.waitFor = waitFor;
      await projector.catchUp();
    },
  };
}

describe('min_position on /credits, /key and /generation', () => {
  it('answers at once once the read models hold the position, naming what they reflect', async () => {
    const res = await post('v1/chat/completions', { model: M.gpt.slug, messages: ask }, bearer());
    await res.text();
    const position = headerPosition(res);
    const requestId = res.headers.get('x-request-id')!;
    for (const path of ['credits', 'key', `generation?id=${requestId}&`]) {
      const sep = path.endsWith('&') ? '' : '?';
      const answer = await read(`${path}${sep}min_position=${position}`);
      expect(answer.status).toBe(200);
      expect(headerPosition(answer)).toBeGreaterThanOrEqual(position);
    }
    // Without min_position too, each says the position it reflects.
    expect(headerPosition(await read('credits'))).toBeGreaterThanOrEqual(position);
  });

  it.each([
    ['credits', 'credits?'],
    ['key', 'key?'],
    ['generation', 'generation?id=anything&'],
  ])('/%s waits for a position not yet applied, then answers with it included', async (_name, path) => {
    const before = (await (await read('credits')).json()) as { data: { total_credits: number } };
    const hold = holdTheProjector();
    const grant = g.t.runtime.ledger.grant(g.orgId, 2_000_000_000, 'read your writes');
    await hold.holding;
    await grant;
    const position = await g.t.runtime.events.headPosition();
    const waited = hold.waitedFor(position);
    const answer = read(`${path}min_position=${position}`);
    await waited;
    await hold.release();
    const res = await answer;
    expect(headerPosition(res)).toBeGreaterThanOrEqual(position);
    if (path.startsWith('generation'))
      expect(res.status).toBe(404); // waited, then looked: no such request
    else expect(res.status).toBe(200);
    const after = (await (await read('credits')).json()) as { data: { total_credits: number } };
    expect(after.data.total_credits).toBeCloseTo(before.data.total_credits + 2, 9);
    if (path === 'credits?') expect(((await res.json()) as typeof after).data.total_credits).toBe(after.data.total_credits);
  });

  it("is a 503 naming the position once the bound passes, in OpenRouter's format", async () => {
    const hold = holdTheProjector();
    const grant = g.t.runtime.ledger.grant(g.orgId, 1_000_000_000, 'never applied in time');
    await hold.holding;
    await grant;
    const position = await g.t.runtime.events.headPosition();
    try {
      for (const path of ['credits?', 'key?', 'generation?id=x&']) {
        const started = Date.now();
        const res = await read(`${path}min_position=${position}`);
        expect(res.status).toBe(503);
        expect(await res.json()).toEqual({
          error: {
            code: 503,
            message: expect.stringContaining(`did not reach ledger position ${position} within ${WAIT_MS} ms`),
          },
        });
        // Bounded: the wait, plus the projector's sweep (100 ms) and slack for a shared machine.
        expect(Date.now() - started).toBeLessThan(WAIT_MS + 1_500);
      }
    } finally {
      await hold.release();
    }
  });

  it.each(['credits?', 'key?', 'generation?id=x&'])('%s: a bad min_position is a 400 naming it, never a wait', async (path) => {
    const head = await g.t.runtime.events.headPosition();
    for (const bad of ['-1', '1.5', 'abc', '1e3', '', '0x10', '99999999999999999', String(head + 1_000_000)]) {
      const res = await read(`${path}min_position=${encodeURIComponent(bad)}`);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: { code: 400, message: expect.stringContaining('min_position') } });
    }
    // Repeated: one position only.
    const repeated = await read(`${path}min_position=1&min_position=2`);
    expect(repeated.status).toBe(400);
  });
});
