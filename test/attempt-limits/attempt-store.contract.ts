import type { Attempt, AttemptAllowance, AttemptStore } from '../../src/attempt-limits/attempt-store';

/**
 * What every attempt store does, given the time on each call (nothing read from a clock): run
 * against the in-process store (unit) and Redis (attempt-store.spec.ts), each test in a store of its own.
 */
export function describeAttemptStore(name: string, open: () => Promise<{ store: AttemptStore; close: () => Promise<void> }>) {
  describe(`attempt store: ${name}`, () => {
    const T = 1_000_000;
    let store: AttemptStore;
    let close: () => Promise<void>;
    beforeEach(async () => {
      ({ store, close } = await open());
    });
    afterEach(async () => {
      await close();
    });

    const one = (allowance: AttemptAllowance, key = 'k', group = 'g'): Attempt => ({ group, counts: [{ key, allowance }] });
    /** The wait a further attempt would get, or 0 once it is over (an attempt is taken then). */
    const waitOf = async (attempt: Attempt, now: number) => {
      const wait = await store.take(attempt, now);
      if (wait === 0) await store.giveBack(attempt, now);
      return wait;
    };

    it('lets the allowance through, then makes each further attempt wait twice as long, up to the cap', async () => {
      // given 3 attempts, a 2 s first delay, a 10 s cap
      const k = one({ attempts: 3, firstDelayMs: 2_000, maxDelayMs: 10_000 });
      // when the allowance is taken: the first two leave no wait, the third starts one
      expect([await store.take(k, T), await store.take(k, T), await store.take(k, T)]).toEqual([0, 0, 0]);
      expect(await store.take(k, T)).toBe(2_000);
      expect(await store.take(k, T + 1_500)).toBe(500);
      // then each attempt taken once the wait is over doubles it: 4 s, 8 s, then the 10 s cap
      let now = T + 2_000;
      const waits: number[] = [];
      for (let i = 0; i < 4; i++) {
        expect(await store.take(k, now)).toBe(0);
        waits.push(await store.take(k, now));
        now += waits[i];
      }
      expect(waits).toEqual([4_000, 8_000, 10_000, 10_000]);
    });

    it('takes exactly the allowance of attempts arriving together; the refused ones do not lengthen the wait', async () => {
      const k = one({ attempts: 4, firstDelayMs: 2_000, maxDelayMs: 300_000 });
      const waits = await Promise.all(Array.from({ length: 200 }, () => store.take(k, T)));
      expect(waits.filter((wait) => wait === 0)).toHaveLength(4);
      expect(waits.filter((wait) => wait === 2_000)).toHaveLength(196);
      expect(await store.take(k, T)).toBe(2_000);
    });

    it('counts the wait down with time, gives an attempt back, and starts afresh after the cap past the wait', async () => {
      const k = one({ attempts: 2, firstDelayMs: 1_000, maxDelayMs: 5_000 });
      await store.take(k, T);
      await store.take(k, T);
      expect(await store.take(k, T + 400)).toBe(600);
      // an attempt given back (it succeeded) lifts the wait it caused
      await store.giveBack(k, T + 400);
      expect(await store.take(k, T + 400)).toBe(0);
      expect(await store.take(k, T + 400)).toBe(1_000);
      // left alone for the cap past its wait, the key has its whole allowance again
      const later = T + 400 + 1_000 + 5_001;
      expect([await store.take(k, later), await store.take(k, later)]).toEqual([0, 0]);
      expect(await store.take(k, later)).toBe(1_000);
    });

    it('gives back nothing on a key that has no attempt, and clears what it is told to', async () => {
      const allowance = { attempts: 1, firstDelayMs: 1_000, maxDelayMs: 5_000 };
      await store.giveBack(one(allowance), T);
      expect(await store.take(one(allowance), T)).toBe(0);
      expect(await store.take(one(allowance), T)).toBe(1_000);
      await store.clear(one(allowance));
      expect(await store.take(one(allowance), T)).toBe(0);
    });

    it('takes an attempt on several counts at once or on none, each held to its own allowance', async () => {
      const tight = { attempts: 1, firstDelayMs: 1_000, maxDelayMs: 5_000 };
      const loose = { attempts: 3, firstDelayMs: 3_000, maxDelayMs: 5_000 };
      const both: Attempt = {
        group: 'g',
        counts: [
          { key: 'a', allowance: tight },
          { key: 'b', allowance: loose },
        ],
      };
      expect(await store.take(one(tight, 'a'), T)).toBe(0);
      expect(await store.take(both, T)).toBe(1_000);
      // b was not counted by the refused attempt: its whole allowance is left
      expect(await waitOf(one(loose, 'b'), T)).toBe(0);
      // once a's wait is over, both are counted: b has 2 of its 3 left, then its wait
      expect(await store.take(both, T + 1_000)).toBe(0);
      const b = () => store.take(one(loose, 'b'), T + 1_000);
      expect([await b(), await b(), await b()]).toEqual([0, 0, 3_000]);
    });

    it('counts a key apart in each group', async () => {
      const allowance = { attempts: 1, firstDelayMs: 1_000, maxDelayMs: 5_000 };
      expect(await store.take(one(allowance, 'k', 'here'), T)).toBe(0);
      expect(await store.take(one(allowance, 'k', 'here'), T)).toBe(1_000);
      expect(await store.take(one(allowance, 'k', 'there'), T)).toBe(0);
    });
  });
}
