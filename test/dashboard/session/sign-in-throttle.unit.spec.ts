import { AttemptLimit, SignInThrottles } from '../../../src/dashboard/session/sign-in-throttle';

// Pure: every call is given the time, nothing is read from a clock or a store.
describe('attempt limits', () => {
  const T = 1_000_000;

  it('lets the allowance through, then makes each further attempt wait twice as long, up to the cap', () => {
    // given 3 attempts, a 2 s first delay, a 10 s cap
    const limit = new AttemptLimit({ attempts: 3, firstDelayMs: 2_000, maxDelayMs: 10_000 });
    // when the allowance is taken: the first two leave no wait, the third starts one
    expect([limit.take(['k'], T), limit.take(['k'], T), limit.take(['k'], T)]).toEqual([0, 0, 0]);
    expect(limit.waitFor(['k'], T)).toBe(2_000);
    // then each attempt taken once the wait is over doubles it: 4 s, 8 s, then the 10 s cap
    let now = T;
    const waits = [1, 2, 3, 4].map(() => {
      now += limit.waitFor(['k'], now);
      expect(limit.take(['k'], now)).toBe(0);
      return limit.waitFor(['k'], now);
    });
    expect(waits).toEqual([4_000, 8_000, 10_000, 10_000]);
  });

  it('takes exactly the allowance of attempts arriving together; the refused ones do not lengthen the wait', () => {
    const limit = new AttemptLimit({ attempts: 4, firstDelayMs: 2_000, maxDelayMs: 300_000 });
    const taken = Array.from({ length: 200 }, () => limit.take(['k'], T)).filter((wait) => wait === 0);
    expect(taken).toHaveLength(4);
    expect(limit.waitFor(['k'], T)).toBe(2_000);
  });

  it('counts the wait down with time, gives an attempt back, and starts afresh after the cap past the wait', () => {
    const limit = new AttemptLimit({ attempts: 2, firstDelayMs: 1_000, maxDelayMs: 5_000 });
    limit.take(['k'], T);
    limit.take(['k'], T);
    expect(limit.waitFor(['k'], T + 400)).toBe(600);
    // an attempt given back (it succeeded) lifts the wait it caused
    limit.giveBack(['k'], T + 400);
    expect(limit.waitFor(['k'], T + 400)).toBe(0);
    limit.take(['k'], T + 400);
    expect(limit.waitFor(['k'], T + 400)).toBe(1_000);
    // left alone for the cap past its wait, the key has its whole allowance again
    const later = T + 400 + 1_000 + 5_001;
    expect([limit.take(['k'], later), limit.take(['k'], later)]).toEqual([0, 0]);
    expect(limit.take(['k'], later)).toBe(1_000);
  });

  it('takes an attempt on several keys at once or on none', () => {
    const limit = new AttemptLimit({ attempts: 1, firstDelayMs: 1_000, maxDelayMs: 5_000 });
    limit.take(['a'], T);
    expect(limit.take(['a', 'b'], T)).toBe(1_000);
    // b was not counted by the refused attempt
    expect(limit.take(['b'], T)).toBe(0);
  });
});

describe('the dashboard’s sign-in throttle (per account and address, per address)', () => {
  const T = 1_000_000;

  it('evaluates 4 attempts on one account from one address, whatever its case and spaces, then waits', () => {
    const throttles = new SignInThrottles();
    const results = ['Ada@Example.com ', 'ada@example.com', 'ADA@example.com', 'ada@example.com', 'ada@example.com'].map(
      (email) => throttles.take(email, '10.0.0.1', T),
    );
    expect(results).toEqual([0, 0, 0, 0, 2_000]);
  });

  it('does not hold the rightful user at another address, nor other people at the guessing address', () => {
    // given 200 guesses at ada's password from one address, all at once
    const throttles = new SignInThrottles();
    const evaluated = Array.from({ length: 200 }, () => throttles.take('ada@example.com', '10.6.6.6', T)).filter((w) => w === 0);
    expect(evaluated).toHaveLength(4);
    // then ada signs in from her own address at once, and bob from the guessing address
    expect(throttles.take('ada@example.com', '10.0.0.1', T)).toBe(0);
    expect(throttles.take('bob@example.com', '10.6.6.6', T)).toBe(0);
    // and from the guessing address ada waits only the first delay, not the cap
    expect(throttles.take('ada@example.com', '10.6.6.6', T + 2_000)).toBe(0);
  });

  it('clears the account’s count at that address on success, and gives the address its attempt back', () => {
    const throttles = new SignInThrottles(
      { attempts: 2, firstDelayMs: 1_000, maxDelayMs: 5_000 },
      { attempts: 3, firstDelayMs: 1_000, maxDelayMs: 5_000 },
    );
    throttles.take('ada@example.com', '10.0.0.1', T);
    throttles.take('ada@example.com', '10.0.0.1', T);
    throttles.succeeded('ada@example.com', '10.0.0.1', T);
    expect(throttles.take('ada@example.com', '10.0.0.1', T)).toBe(0);
    // the address has used 2 of its 3 (one was given back): one more, then a wait for everyone there
    expect(throttles.take('bob@example.com', '10.0.0.1', T)).toBe(0);
    expect(throttles.take('carol@example.com', '10.0.0.1', T)).toBe(1_000);
  });

  it('throttles an address spraying guesses at many accounts after 30, whatever the emails', () => {
    const throttles = new SignInThrottles();
    for (let i = 0; i < 30; i++) expect(throttles.take(`user${i}@example.com`, '10.0.0.9', T)).toBe(0);
    expect(throttles.take('new@example.com', '10.0.0.9', T)).toBe(2_000);
    expect(throttles.take('new@example.com', '10.0.0.10', T)).toBe(0);
  });
});
