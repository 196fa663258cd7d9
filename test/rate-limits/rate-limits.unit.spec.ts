import { ApiError } from '../../src/http/api-error';
import { Buckets, checkLimits, limitsFor, limitState, rateLimited, rateLimitHeaders } from '../../src/rate-limits/rate-limits';

const at = (second: number, ms = 0) => second * 1000 + ms;

describe('rate limits, decided', () => {
  it("a key's own limits replace its organization's default; none at all is null", () => {
    expect(limitsFor({ requestsPerMinute: 5 }, { requestsPerMinute: 1, tokensPerMinute: 9 })).toEqual({ requestsPerMinute: 5 });
    expect(limitsFor(undefined, { tokensPerMinute: 9 })).toEqual({ tokensPerMinute: 9 });
    expect(limitsFor(undefined, undefined)).toBeNull();
    expect(limitsFor({}, undefined)).toBeNull();
  });

  it('admits up to the limit within any 60 seconds, counting each admitted request once', () => {
    const requests: Buckets = new Map();
    const tokens: Buckets = new Map();
    const outcomes = Array.from({ length: 5 }, (_, i) => checkLimits({ requestsPerMinute: 3 }, requests, tokens, at(100, i)));
    expect(outcomes.map((o) => o.admitted)).toEqual([true, true, true, false, false]);
    expect(outcomes.map((o) => o.requests!.remaining)).toEqual([2, 1, 0, 0, 0]);
    expect([...requests]).toEqual([[100, 3]]);
  });

  it('a refused request may retry when enough of the window has left it; the window slides by the second', () => {
    const requests: Buckets = new Map([
      [100, 1],
      [130, 2],
    ]);
    const refused = checkLimits({ requestsPerMinute: 3 }, requests, new Map(), at(150, 250));
    expect(refused.admitted).toBe(false);
    // The request of second 100 leaves the window at second 160: 9.75 s from now.
    expect(refused.requests!.retryMs).toBe(9_750);
    // Everything has left it at second 190.
    expect(refused.requests!.resetMs).toBe(39_750);
    expect(checkLimits({ requestsPerMinute: 3 }, requests, new Map(), at(160)).admitted).toBe(true);
    expect([...requests]).toEqual([
      [130, 2],
      [160, 1],
    ]);
  });

  it('tokens: admitted while the tokens billed in the window are below the limit', () => {
    const tokens: Buckets = new Map([[100, 999]]);
    expect(checkLimits({ tokensPerMinute: 1000 }, new Map(), tokens, at(101)).admitted).toBe(true);
    tokens.set(101, 1);
    const refused = checkLimits({ tokensPerMinute: 1000 }, new Map(), tokens, at(101));
    expect(refused.admitted).toBe(false);
    expect(refused.tokens).toEqual({ limit: 1000, remaining: 0, resetMs: 60_000, retryMs: 59_000 });
  });

  it('a request over its tokens is not counted as a request', () => {
    const requests: Buckets = new Map();
    const check = checkLimits({ requestsPerMinute: 5, tokensPerMinute: 10 }, requests, new Map([[100, 10]]), at(100));
    expect(check.admitted).toBe(false);
    expect(requests.size).toBe(0);
  });

  it('headers name each limit, what remains and when it is whole again; the 429 adds Retry-After', () => {
    const check = checkLimits({ requestsPerMinute: 1, tokensPerMinute: 50 }, new Map([[100, 1]]), new Map(), at(120, 500));
    expect(rateLimitHeaders(check)).toEqual({
      'x-ratelimit-limit-requests': '1',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': '40s',
      'x-ratelimit-limit-tokens': '50',
      'x-ratelimit-remaining-tokens': '50',
      'x-ratelimit-reset-tokens': '0s',
    });
    const error = rateLimited(check);
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(429);
    expect(error.message).toBe('rate limit reached: this key may make 1 request per minute; try again in 40 s');
    expect(error.headers).toMatchObject({ 'retry-after': '40', 'x-ratelimit-remaining-requests': '0' });
  });

  it('a limit state over no buckets is whole', () => {
    expect(limitState(new Map(), 7, at(5))).toEqual({ limit: 7, remaining: 7, resetMs: 0, retryMs: 0 });
  });
});
