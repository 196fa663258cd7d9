import { type AttemptAllowance, delayAfter, delaySchedule, MemoryAttemptStore } from '../../../src/attempt-limits/attempt-store';
import { SignInThrottles } from '../../../src/dashboard/session/sign-in-throttle';
import { describeAttemptStore } from '../../attempt-limits/attempt-store.contract';

// Pure: every call is given the time, nothing is read from a clock or a store.
describe('the waits after attempts (one rule for every store)', () => {
  const allowance = { attempts: 3, firstDelayMs: 2_000, maxDelayMs: 10_000 };

  it('none within the allowance, then doubling from the first delay up to the cap', () => {
    expect([1, 2, 3, 4, 5, 6, 50].map((n) => delayAfter(allowance, n))).toEqual([0, 0, 2_000, 4_000, 8_000, 10_000, 10_000]);
  });

  it('is tabled up to the first wait every later attempt repeats (what the Redis scripts are given)', () => {
    expect(delaySchedule(allowance)).toEqual([0, 0, 2_000, 4_000, 8_000, 10_000]);
    expect(delaySchedule({ attempts: 2, firstDelayMs: 0, maxDelayMs: 0 })).toEqual([0, 0]);
    expect(delaySchedule({ attempts: 1, firstDelayMs: 60_000, maxDelayMs: 1_000 })).toEqual([1_000]);
  });
});

describeAttemptStore('in-process', async () => ({ store: new MemoryAttemptStore(), close: async () => undefined }));

describe('the dashboard’s sign-in throttle (per account and address, per address)', () => {
  const T = 1_000_000;
  const throttlesOf = (perAccountAndAddress?: AttemptAllowance, perAddress?: AttemptAllowance) =>
    new SignInThrottles(new MemoryAttemptStore(), perAccountAndAddress, perAddress);

  it('evaluates 4 attempts on one account from one address, whatever its case and spaces, then waits', async () => {
    const throttles = throttlesOf();
    const results = [];
    for (const email of ['Ada@Example.com ', 'ada@example.com', 'ADA@example.com', 'ada@example.com', 'ada@example.com'])
      results.push(await throttles.take(email, '10.0.0.1', T));
    expect(results).toEqual([0, 0, 0, 0, 2_000]);
  });

  it('does not hold the rightful user at another address, nor other people at the guessing address', async () => {
    // given 200 guesses at ada's password from one address, all at once
    const throttles = throttlesOf();
    const waits = await Promise.all(Array.from({ length: 200 }, () => throttles.take('ada@example.com', '10.6.6.6', T)));
    expect(waits.filter((w) => w === 0)).toHaveLength(4);
    // then ada signs in from her own address at once, and bob from the guessing address
    expect(await throttles.take('ada@example.com', '10.0.0.1', T)).toBe(0);
    expect(await throttles.take('bob@example.com', '10.6.6.6', T)).toBe(0);
    // and from the guessing address ada waits only the first delay, not the cap
    expect(await throttles.take('ada@example.com', '10.6.6.6', T + 2_000)).toBe(0);
  });

  it('clears the account’s count at that address on success, and gives the address its attempt back', async () => {
    const throttles = throttlesOf(
      { attempts: 2, firstDelayMs: 1_000, maxDelayMs: 5_000 },
      { attempts: 3, firstDelayMs: 1_000, maxDelayMs: 5_000 },
    );
    await throttles.take('ada@example.com', '10.0.0.1', T);
    await throttles.take('ada@example.com', '10.0.0.1', T);
    await throttles.succeeded('ada@example.com', '10.0.0.1', T);
    expect(await throttles.take('ada@example.com', '10.0.0.1', T)).toBe(0);
    // the address has used 2 of its 3 (one was given back): one more, then a wait for everyone there
    expect(await throttles.take('bob@example.com', '10.0.0.1', T)).toBe(0);
    expect(await throttles.take('carol@example.com', '10.0.0.1', T)).toBe(1_000);
  });

  it('throttles an address spraying guesses at many accounts after 30, whatever the emails', async () => {
    const throttles = throttlesOf();
    for (let i = 0; i < 30; i++) expect(await throttles.take(`user${i}@example.com`, '10.0.0.9', T)).toBe(0);
    expect(await throttles.take('new@example.com', '10.0.0.9', T)).toBe(2_000);
    expect(await throttles.take('new@example.com', '10.0.0.10', T)).toBe(0);
  });
});
