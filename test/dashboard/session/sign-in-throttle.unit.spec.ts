import { SignInThrottle, SignInThrottles } from '../../../src/dashboard/session/sign-in-throttle';

// Pure: every call is given the time, nothing is read from a clock or a store.
describe('sign-in throttle', () => {
  const T = 1_000_000;

  it('lets the free attempts through, then makes each further one wait twice as long, up to the cap', () => {
    // given a throttle with 3 free attempts, 2 s first delay, 10 s cap
    const throttle = new SignInThrottle(3, 2_000, 10_000);
    const key = ['email:a@example.com'];
    // when the free attempts fail: no wait
    for (let i = 0; i < 3; i++) throttle.failed(key, T);
    expect(throttle.waitFor(key, T)).toBe(0);
    // then each further failure doubles the wait: 2 s, 4 s, 8 s, then the 10 s cap
    const waits = [2_000, 4_000, 8_000, 10_000, 10_000].map(() => {
      throttle.failed(key, T);
      return throttle.waitFor(key, T);
    });
    expect(waits).toEqual([2_000, 4_000, 8_000, 10_000, 10_000]);
  });

  it('counts the wait down with time, and forgets a key on success', () => {
    // given a key that must wait 2 s
    const throttle = new SignInThrottle(0, 2_000);
    throttle.failed(['k'], T);
    // then it waits less as time passes, and not at all once the time is up
    expect(throttle.waitFor(['k'], T + 500)).toBe(1_500);
    expect(throttle.waitFor(['k'], T + 2_500)).toBe(0);
    // when the next attempt succeeds, the count starts over
    throttle.succeeded(['k']);
    throttle.failed(['k'], T);
    expect(throttle.waitFor(['k'], T)).toBe(2_000);
  });

  it('waits for the longest of several keys; an unknown key waits for nothing', () => {
    const throttle = new SignInThrottle(0, 1_000);
    throttle.failed(['a'], T);
    throttle.failed(['b'], T);
    throttle.failed(['b'], T);
    expect(throttle.waitFor(['a', 'b', 'c'], T)).toBe(2_000);
    expect(throttle.waitFor(['c'], T)).toBe(0);
  });

  describe('the dashboard’s throttles (per email and per address)', () => {
    it('throttles an email after 3 failures, whatever its case and spaces, from any address', () => {
      // given 4 failed sign-ins for one email from different addresses
      const throttles = new SignInThrottles();
      ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4'].forEach((ip) => throttles.failed('Ada@Example.com ', ip, T));
      // then the same email must wait, from a fifth address too; another email need not
      expect(throttles.waitFor('ada@example.com', '10.0.0.5', T)).toBe(2_000);
      expect(throttles.waitFor('bob@example.com', '10.0.0.5', T)).toBe(0);
    });

    it('throttles an address after 20 failures, whatever the emails', () => {
      // given 21 failures from one address, each for another email
      const throttles = new SignInThrottles();
      for (let i = 0; i <= 20; i++) throttles.failed(`user${i}@example.com`, '10.0.0.9', T);
      // then a new email from that address waits; from another address it does not
      expect(throttles.waitFor('new@example.com', '10.0.0.9', T)).toBe(2_000);
      expect(throttles.waitFor('new@example.com', '10.0.0.10', T)).toBe(0);
    });

    it('clears the email’s count on success, not the address’s', () => {
      // given an address with 21 failures, the last 4 for ada
      const throttles = new SignInThrottles();
      for (let i = 0; i < 17; i++) throttles.failed(`user${i}@example.com`, '10.0.0.9', T);
      for (let i = 0; i < 4; i++) throttles.failed('ada@example.com', '10.0.0.9', T);
      // when ada signs in (the waits are over)
      throttles.succeeded('ada@example.com');
      // then ada is free from elsewhere, but the address still waits
      expect(throttles.waitFor('ada@example.com', '10.0.0.1', T)).toBe(0);
      expect(throttles.waitFor('ada@example.com', '10.0.0.9', T)).toBe(2_000);
    });
  });
});
