import { retryAfterMs } from '../../src/hosts/transport';

describe('Retry-After, as a host error carries it', () => {
  const now = Date.parse('2026-11-26T12:00:00Z');

  it('reads seconds or an HTTP date, as ms from now', () => {
    expect(retryAfterMs('30', now)).toBe(30_000);
    expect(retryAfterMs('1.5', now)).toBe(1_500);
    expect(retryAfterMs(['7', '9'], now)).toBe(7_000);
    expect(retryAfterMs('Thu, 26 Nov 2026 12:01:00 GMT', now)).toBe(60_000);
    expect(retryAfterMs('Thu, 26 Nov 2026 11:00:00 GMT', now)).toBe(0);
  });

  it('is null when absent or unreadable', () => {
    expect(retryAfterMs(undefined, now)).toBeNull();
    expect(retryAfterMs(' ', now)).toBeNull();
    expect(retryAfterMs('soon', now)).toBeNull();
    expect(retryAfterMs('-5', now)).toBeNull();
  });
});
