import { person } from '../support/dashboard';
import { OtherInstance, startGateway, startOtherInstance, TestGateway } from '../support/gateway';
import { gatewayOnOwnRedis, GatewayOnOwnRedis } from '../support/gateway-on-own-redis';
import { hasRedisServer } from '../support/own-redis';
import { describeWithRedis } from '../support/redis';

/**
 * The dashboard's attempt limits with several processes on one Redis: one allowance in all, not one
 * per process; and with Redis away, attempts refused (503), never let through uncounted.
 */

const post = (base: string, path: string, body: object, headers: Record<string, string> = {}) =>
  fetch(`${base}/dashboard/api/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

describeWithRedis('dashboard attempt limits shared by two instances', () => {
  let g: TestGateway;
  let other: OtherInstance;

  beforeAll(async () => {
    g = await startGateway({ redis: true, credits: 0 });
    other = await startOtherInstance(g);
  });
  afterEach(() => {
    jest.restoreAllMocks();
  });
  afterAll(async () => {
    await other.close();
    await g.close();
  });

  it('evaluates 4 wrong passwords on one account from one address in all, however they are split between the instances', async () => {
    expect((await post(g.baseUrl, 'signup', { email: 'victim@example.com', password: 'the right password' })).status).toBe(202);
    // The clock stands still (both instances run in this process): the first delay never runs out mid-test.
    jest.spyOn(Date, 'now').mockReturnValue(Date.now());
    const guesses = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        post(i % 2 === 0 ? g.baseUrl : other.url, 'signin', { email: 'victim@example.com', password: `guess ${i}` }),
      ),
    );
    const statuses = guesses.map((r) => r.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(4);
    expect(statuses.filter((s) => s === 429)).toHaveLength(8);
    // Each instance refuses the next one, the right password too, until the wait is over.
    for (const base of [g.baseUrl, other.url]) {
      const refused = await post(base, 'signin', { email: 'victim@example.com', password: 'the right password' });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('2');
    }
  });

  it('lets an owner try 10 additions of members in all, however they are split between the instances', async () => {
    const owner = await person(g, 'prober@example.com');
    const created = await owner.post('/organizations', { name: 'Probe' }).expect(201);
    // The session now names the organization: its new cookie serves on either instance.
    const cookie = String(created.headers['set-cookie']).split(';')[0];
    const headers = { cookie, 'x-csrf-token': owner.csrf };
    const guesses = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        post(i % 2 === 0 ? g.baseUrl : other.url, 'members', { email: `guess-${i}@example.com` }, headers),
      ),
    );
    const statuses = guesses.map((r) => r.status);
    expect(statuses.filter((s) => s === 404)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(6);
  });
});

(hasRedisServer ? describe : describe.skip)('dashboard attempt limits with Redis away', () => {
  let own: GatewayOnOwnRedis;
  let g: TestGateway;

  beforeAll(async () => {
    own = await gatewayOnOwnRedis({ credits: 0 });
    g = own.g;
  });
  afterAll(() => own.close());

  it('refuses sign-ins and sign-ups with a 503 in the dashboard’s format, never letting them through uncounted', async () => {
    expect((await post(g.baseUrl, 'signup', { email: 'ada@example.com', password: 'the right password' })).status).toBe(202);
    await own.stopRedis();
    for (const [path, email] of [
      ['signin', 'ada@example.com'],
      ['signup', 'bob@example.com'],
    ]) {
      const refused = await post(g.baseUrl, path, { email, password: 'the right password' });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(await refused.json()).toEqual({
        error: {
          code: 'unavailable',
          message: expect.stringMatching(/cannot count attempts right now \(its Redis is unreachable\)/),
        },
      });
    }
  });
});
