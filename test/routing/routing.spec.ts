import { chargeFor, parseCredits, reservationFor, TokenPrices } from '../../src/ledger/money';
import { CreditsReserved, ReservationSettled, settledPrices, settledUsage } from '../../src/ledger/ledger.events';
import type { CanonicalRequest } from '../../src/canonical/canonical';
import { conversationOf } from '../../src/routing/preferences';
import { STICKY_ROUTES } from '../../src/routing/routing.providers';
import type { StickyRoutes } from '../../src/routing/sticky';
import type { FakeUpstream, ReceivedRequest } from '../support/fake-upstream';
import { auditThenClose, startGateway, TestGateway } from '../support/gateway';
import { LogCapture } from '../support/log-capture';
import { CHAT_COMPLETIONS, MESSAGES, NATIVE, RESPONSES, Surface, SURFACES } from '../support/surfaces';

/**
 * Routing against the fake upstream: key pools, provider preferences on every surface, `models`
 * fallbacks billed at the serving model's prices, and cache-sticky routing. Every host of this
 * catalogue is the same fake; each serves its own host model, so the fake's log says which host was called.
 * Its hosts are not retried (`"retry": {"attempts": 0}`): each failure moves on at once, as routing is
 * tested here (retries with routing: test/routing/retries.spec.ts).
 */

const POOL_KEYS = { POOL_KEY_1: 'pool-secret-one', POOL_KEY_2: 'pool-secret-two', POOL_KEY_3: 'pool-secret-three' };
const keyOf = (r: ReceivedRequest) =>
  Object.entries(POOL_KEYS).find(([, secret]) => r.headers.authorization === `Bearer ${secret}`)?.[0];

const model = (slug: string, id: string, hosts: Array<[string, string, string, string]>) => ({
  slug,
  id,
  name: slug,
  contextLength: 128_000,
  maxOutputTokens: 1000,
  hosts: hosts.map(([host, hostModel, input, output]) => ({ host, model: hostModel, pricing: { input, output } })),
});

function catalogue(fake: FakeUpstream) {
  const base = `${fake.url}/v1`;
  const noRetry = { retry: { attempts: 0 } };
  const host = (id: string, extra: Record<string, unknown> = {}) => ({ id, kind: 'openai', baseUrl: base, ...noRetry, ...extra });
  return {
    hosts: [
      host('pool', { apiKeyEnv: ['POOL_KEY_1', { env: 'POOL_KEY_2', weight: 1 }, 'POOL_KEY_3'] }),
      host('pool-backup'),
      // The same keys as another pool: credentials of their own, with their own use and rests.
      host('pool-2', { apiKeyEnv: ['POOL_KEY_1', 'POOL_KEY_2', 'POOL_KEY_3'] }),
      host('h-dear'),
      host('h-cheap'),
      host('h-mid'),
      { id: 'h-anthropic', kind: 'anthropic', baseUrl: base, ...noRetry },
      host('sticky-1'),
      host('sticky-2'),
    ],
    models: [
      model('test/pooled', 'a0000000-0000-4000-8000-000000000001', [
        ['pool', 'fake-pooled', '1.00', '2.00'],
        ['pool-backup', 'fake-pool-backup', '1.00', '2.00'],
      ]),
      model('test/pooled-2', 'a0000000-0000-4000-8000-000000000007', [
        ['pool-2', 'fake-pooled-2', '1.00', '2.00'],
        ['pool-backup', 'fake-pool-backup', '1.00', '2.00'],
      ]),
      {
        ...model('test/pooled-embed', 'a0000000-0000-4000-8000-000000000006', [
          ['pool-2', 'fake-pooled-embed', '0.10', '0'],
          ['pool-backup', 'fake-pool-backup-embed', '0.10', '0'],
        ]),
        kind: 'embedding',
      },
      // In the catalogue's order: the dearest first.
      model('test/routed', 'a0000000-0000-4000-8000-000000000002', [
        ['h-dear', 'fake-dear', '3.00', '15.00'],
        ['h-cheap', 'fake-cheap', '1.00', '2.00'],
        ['h-mid', 'fake-mid', '2.00', '4.00'],
      ]),
      model('test/primary', 'a0000000-0000-4000-8000-000000000003', [['h-dear', 'fake-primary', '5.00', '5.00']]),
      model('test/backup', 'a0000000-0000-4000-8000-000000000004', [['h-anthropic', 'fake-backup', '0.50', '0.75']]),
      model('test/sticky', 'a0000000-0000-4000-8000-000000000005', [
        ['sticky-1', 'fake-sticky-1', '1.00', '2.00'],
        ['sticky-2', 'fake-sticky-2', '1.00', '2.00'],
      ]),
    ],
  };
}

/** A request on `surface`, with `routing` ({provider, models}) in the body, or in the headers on the messages surface. */
async function ask(
  g: TestGateway,
  surface: Surface,
  slug: string,
  routing: { provider?: unknown; models?: string[] } = {},
  extra: Record<string, unknown> = {},
) {
  const headers: Record<string, string> = { ...surface.headers(g.key), 'content-type': 'application/json' };
  let body: Record<string, unknown> = { ...surface.body(slug, false), ...extra };
  if (surface === MESSAGES) {
    if (routing.provider) headers['x-gateway-provider'] = JSON.stringify(routing.provider);
    if (routing.models) headers['x-gateway-models'] = JSON.stringify(routing.models);
  } else body = { ...body, ...routing };
  const res = await fetch(`${g.baseUrl}/api/v1/${surface.path(slug)}`, { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, text, headers: res.headers };
}

const prices = (input: string, output: string): TokenPrices => {
  const [i, o] = [parseCredits(input), parseCredits(output)];
  return { input: i, cacheRead: i, cacheWrite: i, cacheWrite1h: i, output: o };
};

/** The input tokens a reservation of `amount` was estimated for, at `output` tokens and `at` prices (throws when none fits). */
function estimatedInput(amount: number, output: number, at: TokenPrices): number {
  for (let input = 1; input < 100_000; input++) if (reservationFor(input, output, at) === amount) return input;
  throw new Error(`no estimate reserves ${amount} at these prices`);
}

/** The host models the fake was called for since `from`. */
const calledSince = (fake: FakeUpstream, from: number) => fake.requests.slice(from).map((r) => r.body.model as string);

async function lastEvent<T>(g: TestGateway, type: string): Promise<T> {
  await g.t.runtime.projector.catchUp();
  const events = await g.t.runtime.events.readAll(0, 100_000);
  return [...events].reverse().find((e) => e.type === type)!.data as T;
}

describe('routing', () => {
  let g: TestGateway;
  const log = new LogCapture();
  beforeAll(async () => {
    g = await startGateway({ redis: true, catalogue, hostKeys: POOL_KEYS, logStream: log });
  });
  afterAll(async () => {
    const report = await auditThenClose(g);
    expect(report.settlements + report.releases + report.expiries).toBe(report.reservations);
  });
  afterEach(async () => {
    await g.settled();
    for (const m of ['fake-pooled', 'fake-dear', 'fake-cheap', 'fake-mid', 'fake-primary', 'fake-sticky-1', 'fake-sticky-2'])
      g.fake.on(m, { kind: 'reply', reply: { text: 'ok', usage: { input: 20, output: 5 } } });
  });

  describe('key pools', () => {
    it('spreads a pool of three keys, cools one answered 429 for its Retry-After, takes one answered 401 out', async () => {
      const from = g.fake.requests.length;
      for (let i = 0; i < 6; i++) expect((await ask(g, CHAT_COMPLETIONS, 'test/pooled')).status).toBe(200);
      const spread = g.fake.requests.slice(from).map(keyOf);
      expect(spread).toEqual(['POOL_KEY_1', 'POOL_KEY_2', 'POOL_KEY_3', 'POOL_KEY_1', 'POOL_KEY_2', 'POOL_KEY_3']);
      // Each settlement names the credential its call used.
      await g.settled();
      await g.t.runtime.projector.catchUp();
      const settlements = (await g.t.runtime.events.readAll(0, 100_000)).filter((e) => e.type === 'ReservationSettled').slice(-6);
      expect(settlements.map((e) => (e.data as ReservationSettled['data']).attempts?.map((a) => a.credential))).toEqual(
        spread.map((key) => [key]),
      );

      // Key 2 is rate-limited for a minute: its request goes on at once with another key of the pool
      // (not the next host), and the pool goes on without key 2.
      g.fake.on('fake-pooled', (r) =>
        keyOf(r) === 'POOL_KEY_2'
          ? { kind: 'status', status: 429, headers: { 'retry-after': '60' } }
          : { kind: 'reply', reply: { text: 'ok' } },
      );
      const cooling = g.fake.requests.length;
      for (let i = 0; i < 7; i++) expect((await ask(g, CHAT_COMPLETIONS, 'test/pooled')).status).toBe(200);
      const afterCooling = g.fake.requests.slice(cooling);
      expect(afterCooling.filter((r) => keyOf(r) === 'POOL_KEY_2')).toHaveLength(1);
      expect(afterCooling.filter((r) => r.body.model === 'fake-pool-backup')).toHaveLength(0);
      expect(afterCooling).toHaveLength(8);
      expect(afterCooling.filter((r) => keyOf(r) === 'POOL_KEY_1').length).toBeGreaterThanOrEqual(3);
      expect(afterCooling.filter((r) => keyOf(r) === 'POOL_KEY_3').length).toBeGreaterThanOrEqual(3);
      await log.waitFor((l) => /credential POOL_KEY_2 rate-limited; resting it 60000 ms/.test(l.msg));
      await g.settled();
      await g.t.runtime.projector.catchUp();
      const moved = (await g.t.runtime.events.readAll(0, 100_000))
        .filter((e) => e.type === 'ReservationSettled')
        .map((e) => (e.data as ReservationSettled['data']).attempts!)
        .find((attempts) => attempts.some((a) => a.status === 429))!;
      expect(moved.map(({ host, credential, status, reason }) => ({ host, credential, status, reason }))).toEqual([
        { host: 'pool', credential: 'POOL_KEY_2', status: 429, reason: 'rate_limited' },
        { host: 'pool', credential: expect.stringMatching(/^POOL_KEY_[13]$/), status: null, reason: 'ok' },
      ]);

      // Key 3 is refused: taken out and logged by its name; only key 1 serves from then on.
      g.fake.on('fake-pooled', (r) =>
        keyOf(r) === 'POOL_KEY_3' ? { kind: 'status', status: 401 } : { kind: 'reply', reply: { text: 'ok' } },
      );
      const refused = g.fake.requests.length;
      for (let i = 0; i < 5; i++) expect((await ask(g, CHAT_COMPLETIONS, 'test/pooled')).status).toBe(200);
      const pooled = g.fake.requests.slice(refused).filter((r) => r.body.model === 'fake-pooled');
      expect(pooled.filter((r) => keyOf(r) === 'POOL_KEY_3')).toHaveLength(1);
      expect(pooled.filter((r) => keyOf(r) === 'POOL_KEY_1').length).toBeGreaterThanOrEqual(4);
      const line = await log.waitFor((l) => /credential POOL_KEY_3 refused/.test(l.msg));
      expect(JSON.stringify(line)).not.toContain(POOL_KEYS.POOL_KEY_3);
    });

    it('moves to the next host when every other key of the pool is cooling: a key is tried once per request', async () => {
      // Every key rate-limited, asking no rest (so none is cooling): each is called once, then the next host serves.
      g.fake.on('fake-pooled-2', { kind: 'status', status: 429, headers: { 'retry-after': '0' } });
      const from = g.fake.requests.length;
      expect((await ask(g, CHAT_COMPLETIONS, 'test/pooled-2')).status).toBe(200);
      const called = g.fake.requests.slice(from);
      expect(called.map((r) => r.body.model)).toEqual(['fake-pooled-2', 'fake-pooled-2', 'fake-pooled-2', 'fake-pool-backup']);
      expect(new Set(called.slice(0, 3).map(keyOf)).size).toBe(3);
    });

    it('embeddings lease the same pools: spread over the keys, a key answered 429 cooled and the request moved to another', async () => {
      const embed = () =>
        fetch(`${g.baseUrl}/api/v1/embeddings`, {
          method: 'POST',
          headers: { authorization: `Bearer ${g.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'test/pooled-embed', input: 'to embed' }),
        });
      const from = g.fake.requests.length;
      for (let i = 0; i < 3; i++) expect((await embed()).status).toBe(200);
      expect(g.fake.requests.slice(from).map((r) => r.body.model)).toEqual(Array(3).fill('fake-pooled-embed'));
      expect(new Set(g.fake.requests.slice(from).map(keyOf))).toEqual(new Set(['POOL_KEY_1', 'POOL_KEY_2', 'POOL_KEY_3']));

      const limited = g.fake.requests.length;
      const first = keyOf(g.fake.requests[limited - 3])!;
      g.fake.on('fake-pooled-embed', (r) =>
        keyOf(r) === first
          ? { kind: 'status', status: 429, headers: { 'retry-after': '60' } }
          : { kind: 'reply', reply: { text: '' } },
      );
      for (let i = 0; i < 4; i++) expect((await embed()).status).toBe(200);
      const called = g.fake.requests.slice(limited);
      expect(called.map((r) => r.body.model)).not.toContain('fake-pool-backup-embed');
      expect(called.filter((r) => keyOf(r) === first)).toHaveLength(1);
      expect(called).toHaveLength(5);
      await log.waitFor((l) => new RegExp(`credential ${first} rate-limited; resting it 60000 ms`).test(l.msg));
      const settled = await lastEvent<ReservationSettled['data']>(g, 'ReservationSettled');
      expect(settled.attempts!.every((a) => a.host === 'pool-2' && a.credential !== null && a.credential !== first)).toBe(true);
    });

    it('puts on the record the credential each call used, by its variable', async () => {
      g.fake.on('fake-pooled', { kind: 'status', status: 500 });
      const from = g.fake.requests.length;
      expect((await ask(g, CHAT_COMPLETIONS, 'test/pooled')).status).toBe(200);
      const [pooled, backup] = g.fake.requests.slice(from);
      expect([pooled.body.model, backup.body.model]).toEqual(['fake-pooled', 'fake-pool-backup']);
      expect(keyOf(pooled)).toMatch(/^POOL_KEY_\d$/);
      const settled = await lastEvent<ReservationSettled['data']>(g, 'ReservationSettled');
      expect(settled.attempts).toEqual([
        { host: 'pool', credential: keyOf(pooled), status: 500, reason: 'server_error', durationMs: expect.any(Number) },
        { host: 'pool-backup', credential: null, status: null, reason: 'ok', durationMs: expect.any(Number) },
      ]);
    });
  });

  describe('provider preferences, on every surface', () => {
    it.each(SURFACES.map((s) => [s.name, s] as const))(
      '%s: order, only, ignore, sort by price and latency',
      async (_, surface) => {
        // The dear and cheap hosts are slow to answer: latency, as measured, puts the mid-priced host first.
        const slow = (firstByteDelayMs: number) => ({ kind: 'reply' as const, reply: { text: 'ok' }, firstByteDelayMs });
        g.fake.on('fake-dear', slow(100));
        g.fake.on('fake-cheap', slow(200));
        const cases: Array<[unknown, string]> = [
          [{ order: ['h-mid', 'h-cheap'] }, 'fake-mid'],
          [{ only: ['h-cheap', 'h-mid'] }, 'fake-cheap'],
          [{ ignore: ['h-dear', 'h-cheap'] }, 'fake-mid'],
          [{ sort: 'price' }, 'fake-cheap'],
          [{ sort: 'latency' }, 'fake-mid'],
          [undefined, 'fake-dear'],
        ];
        for (const [provider, served] of cases) {
          const from = g.fake.requests.length;
          const answer = await ask(g, surface, 'test/routed', { provider });
          expect([provider, answer.status]).toEqual([provider, 200]);
          expect([provider, calledSince(g.fake, from)]).toEqual([provider, [served]]);
          const provided = g.fake.requests.at(-1)!.body;
          expect(provided.provider).toBeUndefined();
          expect(provided.models).toBeUndefined();
        }
      },
    );

    it('only: a failing host falls back to the next one allowed, not to one left out', async () => {
      g.fake.on('fake-cheap', { kind: 'status', status: 500 });
      const from = g.fake.requests.length;
      expect((await ask(g, CHAT_COMPLETIONS, 'test/routed', { provider: { only: ['h-cheap', 'h-mid'] } })).status).toBe(200);
      expect(calledSince(g.fake, from)).toEqual(['fake-cheap', 'fake-mid']);
    });

    it('allow_fallbacks false: the ordered hosts only, the failure answered', async () => {
      g.fake.on('fake-cheap', { kind: 'status', status: 500 });
      const from = g.fake.requests.length;
      const answer = await ask(g, CHAT_COMPLETIONS, 'test/routed', {
        provider: { order: ['h-cheap'], allow_fallbacks: false },
      });
      expect(answer.status).toBe(502);
      expect(calledSince(g.fake, from)).toEqual(['fake-cheap']);
    });

    it('the reservation is sized for the hosts the preferences allow', async () => {
      await ask(g, CHAT_COMPLETIONS, 'test/routed');
      const all = await lastEvent<CreditsReserved['data']>(g, 'CreditsReserved');
      await ask(g, CHAT_COMPLETIONS, 'test/routed', { provider: { only: ['h-cheap'] } });
      const cheap = await lastEvent<CreditsReserved['data']>(g, 'CreditsReserved');
      const settled = await lastEvent<ReservationSettled['data']>(g, 'ReservationSettled');
      expect(settled.host).toBe('h-cheap');
      // The same estimate, at the dearest prices allowed: $3/$15 per million for all, $1/$2 for h-cheap alone.
      const input = estimatedInput(all.amount, 1000, prices('3', '15'));
      expect(cheap.amount).toBe(reservationFor(input, 1000, prices('1', '2')));
      expect(cheap.amount).toBeLessThan(all.amount);
    });

    it.each(SURFACES.map((s) => [s.name, s] as const))(
      '%s: max_price leaves out the dearer hosts, and with none left refuses with a 402 naming it',
      async (_, surface) => {
        const from = g.fake.requests.length;
        expect((await ask(g, surface, 'test/routed', { provider: { max_price: { prompt: 2, completion: 4 } } })).status).toBe(
          200,
        );
        expect(calledSince(g.fake, from)).toEqual(['fake-cheap']);
        const refused = await ask(g, surface, 'test/routed', { provider: { max_price: { prompt: 0.5 } } });
        expect(refused.status).toBe(402);
        expect(surface.error(refused.text).message).toMatch(/max_price/);
        expect(calledSince(g.fake, from)).toHaveLength(1);
      },
    );

    it('a malformed provider object is a 400 in the caller’s format, naming the field', async () => {
      for (const surface of SURFACES) {
        const answer = await ask(g, surface, 'test/routed', { provider: { sort: 'fastest' } });
        expect([surface.name, answer.status]).toEqual([surface.name, 400]);
        expect(surface.error(answer.text).message).toMatch(/sort/);
      }
    });
  });

  describe('models fallbacks', () => {
    it.each([CHAT_COMPLETIONS, MESSAGES, RESPONSES, NATIVE].map((s) => [s.name, s] as const))(
      '%s: the next model serves when every host of the first fails; the reply names it and the charge is at its prices',
      async (_, surface) => {
        g.fake.on('fake-primary', { kind: 'status', status: 503 });
        g.fake.on('fake-backup', { kind: 'reply', reply: { text: 'from the backup', usage: { input: 40, output: 10 } } });
        const from = g.fake.requests.length;
        const answer = await ask(g, surface, 'test/primary', { models: ['test/backup'] });
        expect(answer.status).toBe(200);
        expect(calledSince(g.fake, from)).toEqual(['fake-primary', 'fake-backup']);
        expect(surface.read(answer.text, false).text).toBe('from the backup');
        expect(JSON.parse(answer.text).model).toBe('test/backup');
        const reserved = await lastEvent<CreditsReserved['data']>(g, 'CreditsReserved');
        const settled = await lastEvent<ReservationSettled['data']>(g, 'ReservationSettled');
        expect(settled).toMatchObject({ host: 'h-anthropic', hostModel: 'fake-backup' });
        const backupPrices = { input: parseCredits('0.50'), output: parseCredits('0.75') };
        expect(settled.prices).toMatchObject(backupPrices);
        expect(settled.amount).toBe(chargeFor(settledUsage(settled), settledPrices(settled)));
        // The hold covered the dearer model ($5 per million both ways) and its 1,000 output tokens.
        expect(estimatedInput(reserved.amount, 1000, prices('5', '5'))).toBeGreaterThan(0);
      },
    );

    it('gemini: provider preferences and models in headers, the reply naming the model that served', async () => {
      g.fake.on('fake-primary', { kind: 'status', status: 503 });
      g.fake.on('fake-backup', { kind: 'reply', reply: { text: 'from the backup', usage: { input: 40, output: 10 } } });
      const gemini = (slug: string, headers: Record<string, string>) =>
        fetch(`${g.baseUrl}/api/v1beta/models/${encodeURIComponent(slug)}:generateContent`, {
          method: 'POST',
          headers: { 'x-goog-api-key': g.key, 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'Hello' }] }] }),
        });
      let from = g.fake.requests.length;
      const ordered = await gemini('test/routed', { 'x-gateway-provider': JSON.stringify({ order: ['h-mid'] }) });
      expect(ordered.status).toBe(200);
      expect(calledSince(g.fake, from)).toEqual(['fake-mid']);
      from = g.fake.requests.length;
      const fellBack = await gemini('test/primary', { 'x-gateway-models': 'test/backup' });
      expect(fellBack.status).toBe(200);
      expect(calledSince(g.fake, from)).toEqual(['fake-primary', 'fake-backup']);
      expect(((await fellBack.json()) as { modelVersion: string }).modelVersion).toBe('test/backup');
      const priced = await gemini('test/routed', { 'x-gateway-provider': JSON.stringify({ max_price: { prompt: 0.1 } }) });
      expect(priced.status).toBe(402);
      expect(((await priced.json()) as { error: { message: string } }).error.message).toMatch(/max_price/);
    });

    it("measures each host for the model it was called for: the failing first model's host, the fallback's", () => {
      const { health } = g.t.runtime.routing;
      expect(health.of('h-dear', 'test/primary')).toMatchObject({ errorRate: 1 });
      expect(health.of('h-anthropic', 'test/backup')).toMatchObject({ errorRate: 0 });
      expect(health.of('h-anthropic', 'test/primary')).toBeNull();
    });

    it('a fallback model not in the catalogue is a 400', async () => {
      const answer = await ask(g, CHAT_COMPLETIONS, 'test/primary', { models: ['nobody/none'] });
      expect(answer.status).toBe(400);
      expect(CHAT_COMPLETIONS.error(answer.text).message).toMatch(/models: model "nobody\/none" is not in the catalogue/);
    });
  });

  describe('cache-sticky routing', () => {
    const turn = (conversation: string) => ask(g, CHAT_COMPLETIONS, 'test/sticky', {}, { prompt_cache_key: conversation });

    it('keeps a conversation on the host that served it, and leaves that host when it fails', async () => {
      const from = g.fake.requests.length;
      expect((await turn('conversation-a')).status).toBe(200);
      // The first host fails: the conversation moves to the second…
      g.fake.on('fake-sticky-1', { kind: 'status', status: 500 });
      expect((await turn('conversation-a')).status).toBe(200);
      // …and stays there once the first is back, while another conversation starts on the first.
      g.fake.on('fake-sticky-1', { kind: 'reply', reply: { text: 'ok' } });
      expect((await turn('conversation-a')).status).toBe(200);
      expect((await turn('conversation-a')).status).toBe(200);
      expect((await turn('conversation-b')).status).toBe(200);
      expect(calledSince(g.fake, from)).toEqual([
        'fake-sticky-1',
        'fake-sticky-1',
        'fake-sticky-2',
        'fake-sticky-2',
        'fake-sticky-2',
        'fake-sticky-1',
      ]);
      // The second host fails in turn: the conversation leaves it.
      g.fake.on('fake-sticky-2', { kind: 'status', status: 500 });
      const later = g.fake.requests.length;
      expect((await turn('conversation-a')).status).toBe(200);
      expect((await turn('conversation-a')).status).toBe(200);
      expect(calledSince(g.fake, later)).toEqual(['fake-sticky-2', 'fake-sticky-1', 'fake-sticky-1']);
    });

    it('remembers a conversation only for a model with hosts to choose among (one host: its prompt is not even hashed)', async () => {
      const sticky = g.app.get<StickyRoutes>(STICKY_ROUTES);
      const named = (key: string) =>
        conversationOf(
          {
            messages: [],
            original: { format: 'chat-completions', body: { prompt_cache_key: key } },
          } as unknown as CanonicalRequest,
          {},
        )!;
      expect((await turn('conversation-two-hosts')).status).toBe(200);
      expect((await ask(g, CHAT_COMPLETIONS, 'test/primary', {}, { prompt_cache_key: 'conversation-one-host' })).status).toBe(
        200,
      );
      expect(await sticky.hostsOf(g.orgId, named('conversation-two-hosts'), ['test/sticky'])).toEqual(
        new Map([['test/sticky', 'sticky-1']]),
      );
      expect(await sticky.hostsOf(g.orgId, named('conversation-one-host'), ['test/primary'])).toEqual(new Map());
    });

    it('an explicit order wins over the conversation’s host', async () => {
      await turn('conversation-c');
      g.fake.on('fake-sticky-1', { kind: 'status', status: 500 });
      await turn('conversation-c');
      g.fake.on('fake-sticky-1', { kind: 'reply', reply: { text: 'ok' } });
      const from = g.fake.requests.length;
      const answer = await ask(
        g,
        CHAT_COMPLETIONS,
        'test/sticky',
        { provider: { order: ['sticky-1'] } },
        { prompt_cache_key: 'conversation-c' },
      );
      expect(answer.status).toBe(200);
      expect(calledSince(g.fake, from)).toEqual(['fake-sticky-1']);
    });
  });
});
