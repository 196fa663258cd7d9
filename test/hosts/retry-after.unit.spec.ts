import { parseRetryAfter } from '../../src/hosts/retry-after';

describe("an upstream's Retry-After", () => {
  const now = Date.parse('2026-11-26T12:00:00Z');

  it('in seconds', () => {
    expect(parseRetryAfter('2', now)).toBe(2_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
  });

  it('as an HTTP-date: the time until it, none for one past', () => {
    expect(parseRetryAfter('Thu, 26 Nov 2026 12:00:03 GMT', now)).toBe(3_000);
    expect(parseRetryAfter('Thu, 26 Nov 2026 11:59:00 GMT', now)).toBe(0);
  });

  it('absent or unreadable: null', () => {
    expect(parseRetryAfter(undefined, now)).toBeNull();
    expect(parseRetryAfter('', now)).toBeNull();
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter('-5', now)).toBeNull();
  });

  it('a huge number of seconds is read as a day at most', () => {
    expect(parseRetryAfter('99999999999', now)).toBe(86_400_000);
  });
});
