import type { NewEvent } from '../../src/eventstore/event-store';
import { auditThenClose, startGateway, TEST_EMBEDDING_MODELS, TEST_MODELS, TestGateway } from '../support/gateway';
import { eventually } from '../support/processes';

/**
 * The order of durability, on every surface and host kind, streamed and whole: the host is called
 * only once the reservation is in the log, and a reply's last event (or its body) leaves only once
 * its settlement is; a log that refuses either withdraws the reply.
 */

const M = TEST_MODELS;
const E = TEST_EMBEDDING_MODELS;
/** How long a test waits for something that must not happen (it would, at once, if it could). */
const WAIT_MS = 300;

/** A promise the test opens. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

const within = <T>(promise: Promise<T>, ms: number): Promise<T | 'not yet'> =>
  Promise.race([promise, new Promise<'not yet'>((resolve) => setTimeout(() => resolve('not yet'), ms))]);

type Host = { kind: 'openai' | 'anthropic'; slug: string; hostModel: string };
const HOSTS: Host[] = [
  { kind: 'openai', slug: M.gpt.slug, hostModel: M.gpt.hostModel },
  { kind: 'anthropic', slug: M.claude.slug, hostModel: M.claude.hostModel },
];

interface Surface {
  name: string;
  send(g: TestGateway, slug: string, stream: boolean): Promise<Response>;
  /** What ends a stream on this surface: none may arrive before the settlement is in the log. */
  terminal: string[];
  /** The in-stream error that takes the terminal events' place when the log refuses the settlement. */
  streamError: string;
  /** A whole error body in the surface's format, for a 503. */
  errorBody: object;
}

const post = (g: TestGateway, path: string, body: object, headers: Record<string, string>) =>
  fetch(`${g.baseUrl}/api/v1/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
const bearer = (g: TestGateway) => ({ authorization: `Bearer ${g.key}` });
const ask = [{ role: 'user', content: 'Hi' }];
const unavailable = { error: { code: 'unavailable', message: expect.stringContaining('could not be recorded') } };

const SURFACES: Surface[] = [
  {
    name: 'chat-completions',
    send: (g, model, stream) =>
      post(
        g,
        'chat/completions',
        { model, messages: ask, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) },
        bearer(g),
      ),
    terminal: ['"choices":[]', 'data: [DONE]'],
    streamError: '"error":{',
    errorBody: unavailable,
  },
  {
    name: 'messages',
    send: (g, model, stream) =>
      post(
        g,
        'messages',
        { model, max_tokens: 50, messages: ask, stream },
        { 'x-api-key': g.key, 'anthropic-version': '2023-06-01' },
      ),
    terminal: ['event: message_delta', 'event: message_stop'],
    streamError: 'event: error',
    errorBody: { type: 'error', error: { type: 'overloaded_error', message: expect.stringContaining('could not be recorded') } },
  },
  {
    name: 'responses',
    send: (g, model, stream) => post(g, 'responses', { model, input: 'Hi', stream }, bearer(g)),
    terminal: ['response.completed'],
    streamError: 'response.failed',
    errorBody: unavailable,
  },
  {
    name: 'native',
    send: (g, model, stream) => post(g, `models/${encodeURIComponent(model)}/chat`, { messages: ask, stream }, bearer(g)),
    terminal: ['event: done'],
    streamError: 'event: error',
    errorBody: unavailable,
  },
];

const CASES = SURFACES.flatMap((surface) => HOSTS.flatMap((host) => [false, true].map((stream) => ({ surface, host, stream }))));
const caseName = ({ surface, host, stream }: (typeof CASES)[number]) =>
  `${surface.name} on an ${host.kind} host, ${stream ? 'streamed' : 'whole'}`;

/** A reply's body read as it arrives: what has come so far, and its end. */
function reading(res: Response) {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const body = { seen: '', ended: Promise.resolve('') };
  body.ended = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return body.seen;
      body.seen += decoder.decode(value, { stream: true });
    }
  })();
  return body;
}

/** The log, wrapped: appends of the chosen event types held at a gate, or refused (as a full disk would). */
function interpose(g: TestGateway) {
  const events = g.t.runtime.events;
  const append = events.append.bind(events);
  const held = {
    types: [] as string[],
    gate: gate(),
    refuse: false,
    /** Resolved when an append of those types has reached the log (the gate passed). */
    entered: gate(),
    order: [] as string[],
  };
  events.append = async (stream: string, batch: NewEvent[], expected) => {
    const type = batch.find((e) => held.types.includes(e.type))?.type;
    if (type === undefined) return append(stream, batch, expected);
    held.order.push(`${type} appending`);
    held.entered.open();
    await held.gate.opened;
    if (held.refuse) throw new Error('SQLITE_FULL: database or disk is full');
    const result = await append(stream, batch, expected);
    held.order.push(`${type} in the log`);
    return result;
  };
  return {
    held,
    /** Appends of `types` from now on: held until the returned gate opens, then written or refused (as a full disk would). */
    intercept(types: string[], how: 'hold' | 'refuse') {
      held.types = types;
      held.refuse = how === 'refuse';
      held.gate = gate();
      held.entered = gate();
      held.order = [];
      return held.gate;
    },
    stop() {
      held.types = [];
      held.gate.open();
    },
  };
}

describe('the host is called only once the reservation is in the log', () => {
  let g: TestGateway;
  let log: ReturnType<typeof interpose>;

  beforeAll(async () => {
    g = await startGateway();
    log = interpose(g);
  });
  afterEach(() => log.stop());
  afterAll(() => auditThenClose(g));

  const called = (hostModel: string) => {
    const nth = g.fake.requests.filter((r) => (r.body as { model?: string })?.model === hostModel).length;
    return g.fake.received(hostModel, nth).then(() => {
      log.held.order.push('host called');
      return 'called';
    });
  };

  const RESERVING = [
    ...CASES.filter((c) => c.host.kind === 'openai' || c.surface.name === 'messages').map((c) => ({
      name: caseName(c),
      hostModel: c.host.hostModel,
      send: () => c.surface.send(g, c.host.slug, c.stream),
      errorBody: c.surface.errorBody,
    })),
    {
      name: 'embeddings',
      hostModel: E.embed.hostModel,
      send: () => post(g, 'embeddings', { model: E.embed.slug, input: 'x' }, bearer(g)),
      errorBody: unavailable,
    },
  ];

  it.each(RESERVING)('$name: no request reaches the host while the reservation is being written', async (c) => {
    g.fake.on(c.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
    const reservation = log.intercept(['CreditsReserved'], 'hold');
    const host = called(c.hostModel);
    const res = c.send();
    await log.held.entered.opened;
    // The reservation is held at the log's door: the host would be called at once if it could be.
    expect(await within(host, WAIT_MS)).toBe('not yet');
    reservation.open();
    expect((await res).status).toBe(200);
    await (await res).text();
    await host;
    expect(log.held.order).toEqual(['CreditsReserved appending', 'CreditsReserved in the log', 'host called']);
  });

  it.each(RESERVING)(
    "$name: a reservation the log refuses is a 503 in the surface's format, the host never called",
    async (c) => {
      g.fake.on(c.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
      const refusal = log.intercept(['CreditsReserved'], 'refuse');
      const host = called(c.hostModel);
      const sent = c.send();
      await log.held.entered.opened;
      // The log takes its time, then refuses (as a full disk does): the host must not have been called meanwhile.
      expect(await within(host, WAIT_MS)).toBe('not yet');
      refusal.open();
      const res = await sent;
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject(c.errorBody);
      expect(log.held.order).toEqual(['CreditsReserved appending']);
      log.stop();
      await g.settled();
      expect(await g.t.runtime.projections.balance(g.orgId)).toMatchObject({ reserved: 0, pending: 0 });
    },
  );
});

describe("a reply's end leaves only once its settlement is in the log", () => {
  let g: TestGateway;
  let log: ReturnType<typeof interpose>;

  beforeAll(async () => {
    // Short reservations, swept often: the holds of replies withdrawn expire within the tests.
    g = await startGateway({
      sweep: true,
      env: { REQUEST_TIMEOUT_MS: '2000', RESERVATION_TTL_MS: '2500', SWEEP_INTERVAL_MS: '50' },
    });
    log = interpose(g);
  });
  afterEach(() => log.stop());
  afterAll(() => auditThenClose(g));

  const ENDINGS = [
    ...CASES.map((c) => ({
      name: caseName(c),
      stream: c.stream,
      hostModel: c.host.hostModel,
      send: () => c.surface.send(g, c.host.slug, c.stream),
      terminal: c.surface.terminal,
      streamError: c.surface.streamError,
      errorBody: c.surface.errorBody,
    })),
    {
      name: 'embeddings',
      stream: false,
      hostModel: E.embed.hostModel,
      send: () => post(g, 'embeddings', { model: E.embed.slug, input: 'x' }, bearer(g)),
      terminal: [],
      streamError: '',
      errorBody: unavailable,
    },
  ];

  it.each(ENDINGS)('$name: nothing of its end reaches the client while the settlement is being written', async (c) => {
    g.fake.on(c.hostModel, { kind: 'reply', reply: { text: 'Hello there, reader.' } });
    const settlement = log.intercept(['ReservationSettled'], 'hold');
    const sent = c.send();
    if (!c.stream) {
      await log.held.entered.opened;
      // The whole reply is its end: it would be answered at once if it could be.
      expect(await within(sent, WAIT_MS)).toBe('not yet');
      settlement.open();
      const res = await sent;
      expect(res.status).toBe(200);
      await res.json();
      expect(log.held.order).toEqual(['ReservationSettled appending', 'ReservationSettled in the log']);
      return;
    }
    const body = reading(await sent);
    await log.held.entered.opened;
    // The text reaches the client; the end would follow at once if it could.
    await eventually(() => body.seen.includes('reader.'), 15_000);
    expect(await within(body.ended, WAIT_MS)).toBe('not yet');
    for (const marker of c.terminal) expect(body.seen).not.toContain(marker);
    const beforeSettled = body.seen.length;
    settlement.open();
    const whole = await body.ended;
    for (const marker of c.terminal) expect(whole.indexOf(marker)).toBeGreaterThanOrEqual(beforeSettled);
    expect(log.held.order).toEqual(['ReservationSettled appending', 'ReservationSettled in the log']);
  });

  it.each(ENDINGS)('$name: a settlement the log refuses withdraws the reply, its end never sent', async (c) => {
    g.fake.on(c.hostModel, { kind: 'reply', reply: { text: 'Hello there, reader.' } });
    const refusal = log.intercept(['ReservationSettled'], 'refuse');
    const sent = c.send();
    await log.held.entered.opened;
    refusal.open();
    const res = await sent;
    if (!c.stream) {
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject(c.errorBody);
      return;
    }
    expect(res.status).toBe(200);
    const whole = await res.text();
    expect(whole).toContain('there');
    expect(whole).toContain(c.streamError);
    for (const marker of c.terminal) expect(whole).not.toContain(marker);
  });
});
