import fastify from 'fastify';
import { request } from 'undici';
import { RequestsAnswered } from '../../src/http/requests-answered';

/** Waits up to a thousand loop turns for the count to reach `expected` (a response's close may follow its body's end by a turn or two). */
async function countReaches(requests: RequestsAnswered, expected: number): Promise<number> {
  for (let turn = 0; turn < 1000 && requests.now !== expected; turn++) await new Promise((resolve) => setImmediate(resolve));
  return requests.now;
}

describe('RequestsAnswered', () => {
  /** A server whose /hold requests wait until released; `arrived` resolves as each one reaches its handler. */
  async function server() {
    const requests = new RequestsAnswered();
    const app = fastify();
    requests.track(app);
    const waiting: Array<() => void> = [];
    let arrivedNow: () => void = () => {};
    const arrivals: Array<Promise<void>> = [];
    const nextArrival = () => {
      const arrival = new Promise<void>((resolve) => (arrivedNow = resolve));
      arrivals.push(arrival);
      return arrival;
    };
    app.get('/hold', async () => {
      const released = new Promise<void>((resolve) => waiting.push(resolve));
      arrivedNow();
      await released;
      return { ok: true };
    });
    app.get('/at-once', async () => ({ answering: requests.now }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address();
    const origin = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    return { app, requests, origin, waiting, nextArrival };
  }

  it('counts each request from its arrival until its response is sent', async () => {
    const { app, requests, origin, waiting, nextArrival } = await server();
    try {
      const first = nextArrival();
      const one = request(`${origin}/hold`);
      await first;
      expect(requests.now).toBe(1);
      const second = nextArrival();
      const two = request(`${origin}/hold`);
      await second;
      expect(requests.now).toBe(2);
      // Counted while it is being answered: the answer says two others and itself.
      const alongside = await request(`${origin}/at-once`);
      expect(await alongside.body.json()).toEqual({ answering: 3 });
      for (const release of waiting) release();
      await Promise.all([one, two].map(async (answer) => (await answer).body.text()));
      expect(await countReaches(requests, 0)).toBe(0);
    } finally {
      await app.close();
    }
  });

  it('stops counting a request whose client went away before it was answered', async () => {
    const { app, requests, origin, waiting, nextArrival } = await server();
    try {
      const arrived = nextArrival();
      const abort = new AbortController();
      const gone = request(`${origin}/hold`, { signal: abort.signal }).catch(() => 'aborted');
      await arrived;
      expect(requests.now).toBe(1);
      abort.abort();
      expect(await gone).toBe('aborted');
      expect(await countReaches(requests, 0)).toBe(0);
      // Its handler ends later: answering a connection that is gone counts nothing more.
      for (const release of waiting) release();
      const after = await request(`${origin}/at-once`);
      expect(await after.body.json()).toEqual({ answering: 1 });
    } finally {
      await app.close();
    }
  });
});
