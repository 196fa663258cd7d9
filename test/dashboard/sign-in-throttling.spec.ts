import type { FastifyInstance } from 'fastify';
import { startGateway, TestGateway } from '../support/gateway';

describe('dashboard: sign-in and sign-up under attack', () => {
  let g: TestGateway;
  let fastify: FastifyInstance;
  const post = (url: string, body: object, remoteAddress: string) =>
    fastify.inject({ method: 'POST', url: `/dashboard/api/${url}`, payload: body, remoteAddress });

  beforeAll(async () => {
    g = await startGateway({ credits: 0 });
    fastify = g.app.getHttpAdapter().getInstance();
    for (const email of ['victim@example.com', 'neighbour@example.com']) {
      expect((await post('signup', { email, password: 'the right password' }, '10.0.0.1')).statusCode).toBe(202);
    }
  });
  afterEach(() => {
    jest.restoreAllMocks();
  });
  afterAll(async () => {
    await g.close();
  });

  it('evaluates exactly the allowance of 200 parallel wrong passwords, and locks out neither the victim elsewhere nor the address’s other users', async () => {
    // The clock stands still: the first delay (2 s) must not run out on a slow machine before the last sign-in.
    jest.spyOn(Date, 'now').mockReturnValue(Date.now());
    const guesses = await Promise.all(
      Array.from({ length: 200 }, (_, i) => post('signin', { email: 'victim@example.com', password: `guess ${i}` }, '10.6.6.6')),
    );
    const statuses = guesses.map((r) => r.statusCode);
    // 4 evaluated (wrong password), the other 196 refused before any password was checked
    expect(statuses.filter((s) => s === 401)).toHaveLength(4);
    expect(statuses.filter((s) => s === 429)).toHaveLength(196);
    const refused = guesses.find((r) => r.statusCode === 429)!;
    expect(refused.json()).toEqual({
      error: { code: 'rate_limited', message: expect.stringMatching(/too many failed sign-ins/) },
      retryAfterSeconds: 2,
    });
    expect(refused.headers['retry-after']).toBe('2');
    // the rightful user, from her own address: in at once
    const victim = await post('signin', { email: 'victim@example.com', password: 'the right password' }, '10.0.0.1');
    expect(victim.statusCode).toBe(200);
    // someone else behind the guessing address: in at once too
    const neighbour = await post('signin', { email: 'neighbour@example.com', password: 'the right password' }, '10.6.6.6');
    expect(neighbour.statusCode).toBe(200);
    // the victim from the guessing address waits (only the first delay: see the unit tests for the time)
    const there = await post('signin', { email: 'victim@example.com', password: 'the right password' }, '10.6.6.6');
    expect(there.statusCode).toBe(429);
  });

  it('answers a sign-up for an existing email exactly as for a new one, and never changes the existing account', async () => {
    const fresh = await post('signup', { email: 'newcomer@example.com', password: 'some password' }, '10.0.0.2');
    const taken = await post('signup', { email: 'VICTIM@example.com', password: 'attacker password' }, '10.0.0.3');
    expect(taken.statusCode).toBe(fresh.statusCode);
    expect(taken.json()).toEqual(fresh.json());
    expect(taken.headers['set-cookie']).toBeUndefined();
    expect(fresh.headers['set-cookie']).toBeUndefined();
    expect((await post('signin', { email: 'victim@example.com', password: 'attacker password' }, '10.0.0.3')).statusCode).toBe(
      401,
    );
    expect((await post('signin', { email: 'victim@example.com', password: 'the right password' }, '10.0.0.3')).statusCode).toBe(
      200,
    );
    expect((await post('signin', { email: 'newcomer@example.com', password: 'some password' }, '10.0.0.2')).statusCode).toBe(200);
  });

  it('throttles sign-ups per address: 10, then 429 with Retry-After; other addresses are not held', async () => {
    const statuses = [];
    for (let i = 0; i < 12; i++) {
      statuses.push((await post('signup', { email: `bulk${i}@example.com`, password: 'bulk password' }, '10.7.7.7')).statusCode);
    }
    expect(statuses).toEqual([...Array<number>(10).fill(202), 429, 429]);
    const refused = await post('signup', { email: 'bulk99@example.com', password: 'bulk password' }, '10.7.7.7');
    expect(refused.json().error.message).toMatch(/too many sign-ups/);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect((await post('signup', { email: 'elsewhere@example.com', password: 'bulk password' }, '10.7.7.8')).statusCode).toBe(
      202,
    );
  });

  it('does not reflect the Host header into the base URLs it shows', async () => {
    const res = await fastify.inject({ method: 'GET', url: '/dashboard/api/config', headers: { host: 'evil.example' } });
    expect(res.statusCode).toBe(200);
    expect(JSON.stringify(res.json())).not.toContain('evil.example');
    expect(res.json().baseUrls).toEqual({ chatCompletions: '/api/v1', messages: '/api' });
  });

  it('shows the configured public address instead', async () => {
    const configured = await startGateway({ env: { PUBLIC_BASE_URL: 'https://gateway.example.com/' } });
    try {
      const res = await configured.app
        .getHttpAdapter()
        .getInstance()
        .inject({ method: 'GET', url: '/dashboard/api/config', headers: { host: 'evil.example' } });
      expect(res.json().baseUrls).toEqual({
        chatCompletions: 'https://gateway.example.com/api/v1',
        messages: 'https://gateway.example.com/api',
      });
    } finally {
      await configured.close();
    }
  });
});
