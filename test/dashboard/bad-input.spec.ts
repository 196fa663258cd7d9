import fc from 'fast-check';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { bodiesFor, nested } from '../support/fuzz';

const M = TEST_MODELS;
/** Bodies (or URLs) per route: the bar. */
const RUNS = 5_000;
/**
 * 5,000 requests per route take 2–17 s alone on two cores, and over 30 s when other suites or jobs
 * share them: a slow machine is not a failure of this test.
 */
jest.setTimeout(120_000);

/** Every dashboard answer: never a 5xx, always an x-request-id, and its errors in the dashboard's format. */
function expectDashboardAnswer(res: LightMyRequestResponse, what: string): void {
  if (res.statusCode >= 500) throw new Error(`${what} answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
  expect(res.headers['x-request-id']).toMatch(/^req_/);
  if (res.statusCode >= 400) {
    const body = res.json<{ error?: { code?: unknown; message?: unknown } }>();
    expect(typeof body.error?.code).toBe('string');
    expect(typeof body.error?.message).toBe('string');
  }
}

describe('dashboard: bad input is a 4xx', () => {
  let g: TestGateway;
  let fastify: FastifyInstance;
  /** A signed-in person's cookie and CSRF token, with an active (unfunded) organization. */
  let signedIn: { cookie: string; 'x-csrf-token': string };
  let orgId: string;

  const post = (url: string, payload: string, headers: Record<string, string> = {}, remoteAddress = '10.1.1.1') =>
    fastify.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json', ...headers }, remoteAddress });

  const credentials = JSON.stringify({ email: 'fuzz@example.com', password: 'correct horse battery' });
  /** A new session of the fuzzing person. */
  const signIn = async () => {
    const signin = await post('/dashboard/api/signin', credentials, {}, '10.0.0.1');
    return {
      cookie: /mg_session=[^;]+/.exec(String(signin.headers['set-cookie']))![0],
      'x-csrf-token': signin.json<{ csrf: string }>().csrf,
    };
  };

  beforeAll(async () => {
    g = await startGateway({ credits: 0 });
    fastify = g.app.getHttpAdapter().getInstance();
    expect((await post('/dashboard/api/signup', credentials, {}, '10.0.0.1')).statusCode).toBe(202);
    const session = await signIn();
    let cookie = session.cookie;
    const csrf = session['x-csrf-token'];
    const org = await post('/dashboard/api/organizations', JSON.stringify({ name: 'Fuzz' }), { cookie, 'x-csrf-token': csrf });
    orgId = org.json<{ id: string }>().id;
    cookie = /mg_session=[^;]+/.exec(String(org.headers['set-cookie']))![0];
    signedIn = { cookie, 'x-csrf-token': csrf };
  });
  afterAll(async () => {
    await g.settled();
    expect((await g.audit()).differences).toEqual([]);
    await g.close();
  });

  const text = fc.string({ minLength: 1, maxLength: 40 });
  const routes: Array<[string, Record<string, fc.Arbitrary<unknown>>, boolean]> = [
    ['/dashboard/api/signup', { email: fc.emailAddress(), password: fc.string({ minLength: 8, maxLength: 30 }) }, false],
    ['/dashboard/api/signin', { email: fc.emailAddress(), password: fc.string({ minLength: 1, maxLength: 30 }) }, false],
    ['/dashboard/api/organizations', { name: text }, true],
    ['/dashboard/api/organizations/active', { orgId: fc.oneof(fc.uuid(), fc.constant('ORG')) }, true],
    ['/dashboard/api/keys', { name: text }, true],
    ['/dashboard/api/signout', {}, true],
    [
      '/dashboard/api/playground',
      {
        model: fc.constantFrom(M.gpt.slug, M.claude.slug, 'nobody/nothing'),
        system: fc.string({ maxLength: 20 }),
        messages: fc.array(fc.record({ role: fc.constantFrom('user', 'assistant'), content: text }), { maxLength: 3 }),
        max_tokens: fc.integer({ min: -5, max: 200_000 }),
      },
      true,
    ],
  ];

  // First, while the organization's keys and request log are short (each query reads them).
  it(`answers ${RUNS} fuzzed usage queries and key ids with no 5xx`, async () => {
    const day = fc.oneof(
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
      fc
        .tuple(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 0, max: 99 }), fc.integer({ min: 0, max: 99 }))
        .map(([y, m, d]) => `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`),
      fc.string({ maxLength: 20 }),
    );
    const query = fc.array(
      fc.tuple(
        fc.constantFrom('page', 'pageSize', 'from', 'to', 'keyId', 'model', 'x'),
        fc.oneof(day, fc.string(), fc.integer().map(String)),
      ),
      { maxLength: 6 },
    );
    await fc.assert(
      fc.asyncProperty(query, fc.string({ unit: 'binary', maxLength: 60 }), async (pairs, keyId) => {
        const usage = await fastify.inject({
          method: 'GET',
          url: `/dashboard/api/usage?${new URLSearchParams(pairs).toString()}`,
          headers: signedIn,
        });
        expectDashboardAnswer(usage, `GET usage ${JSON.stringify(pairs)}`);
        const revoke = await fastify.inject({
          method: 'POST',
          url: `/dashboard/api/keys/${encodeURIComponent(keyId)}/revoke`,
          headers: signedIn,
        });
        expectDashboardAnswer(revoke, `revoke ${JSON.stringify(keyId)}`);
      }),
      { numRuns: RUNS },
    );
  });

  it.each(routes)(
    `answers ${RUNS} fuzzed bodies on POST %s with no 5xx, each with an id and in the dashboard's format`,
    async (url, fields, session) => {
      const statuses = new Map<number, number>();
      // Signing out ends the session it is sent with: that route gets a session of its own.
      const headers = !session ? {} : url.endsWith('/signout') ? await signIn() : signedIn;
      await fc.assert(
        fc.asyncProperty(bodiesFor(fields), async (body) => {
          const raw = body.replace(/"ORG"/g, JSON.stringify(orgId));
          const res = await post(url, raw, headers);
          expectDashboardAnswer(res, `POST ${url} ${raw.slice(0, 200)}`);
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        }),
        { numRuns: RUNS },
      );
      // The fuzz reached past validation too (not only 400s).
      expect([...statuses.keys()].some((s) => s !== 400)).toBe(true);
    },
  );

  it.each([
    ['/dashboard/api/signin', (deep: string) => `{"email":${deep},"password":"x"}`, false],
    ['/dashboard/api/signup', (deep: string) => `{"email":"a@example.com","password":${deep}}`, false],
    ['/dashboard/api/playground', (deep: string) => `{"model":"test/gpt","messages":${deep}}`, true],
  ] as const)('refuses JSON nested 5,000 levels deep on %s with 400', async (url, bodyWith, session) => {
    for (const deep of [nested(5_000), nested(5_000, 'object')]) {
      const res = await post(url, bodyWith(deep), session ? signedIn : {}, '10.2.2.2');
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({
        error: { code: 'invalid_request', message: expect.stringMatching(/nests .* more than 128 levels/) },
      });
    }
    // Nesting within the bound is read as usual (here: the field's type is wrong, not its depth).
    const res = await post(url, bodyWith(nested(100)), session ? signedIn : {}, '10.2.2.2');
    expect(res.statusCode).toBe(400);
    expect(res.json().error.message).not.toMatch(/nests/);
  });

  it('refuses a day that does not exist in the usage range with 400', async () => {
    for (const query of ['to=2024-13-45', 'from=2024-02-30', 'to=2023-02-29', 'from=2024-00-10']) {
      const res = await fastify.inject({ method: 'GET', url: `/dashboard/api/usage?${query}`, headers: signedIn });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({
        error: { code: 'invalid_request', message: expect.stringMatching(/must be a date YYYY-MM-DD/) },
      });
    }
    const leap = await fastify.inject({ method: 'GET', url: '/dashboard/api/usage?to=2024-02-29', headers: signedIn });
    expect(leap.statusCode).toBe(200);
  });
});
