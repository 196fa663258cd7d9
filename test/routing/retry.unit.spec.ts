import { HostError } from '../../src/canonical/canonical';
import { backoffCeiling, DEFAULT_RETRY, retryDecision, transient } from '../../src/routing/retry';

const policy = { attempts: 3, baseMs: 250, maxMs: 1_000 };
const overloaded = new HostError('status', 'overloaded', 503);

describe('retries of a host', () => {
  it('by default: two retries, backoff from 250 ms, never more than 5 s', () => {
    expect(DEFAULT_RETRY).toEqual({ attempts: 2, baseMs: 250, maxMs: 5_000 });
  });

  it.each([
    ['a rate limit (429)', new HostError('status', 'slow down', 429), true],
    ['a server error (500)', new HostError('status', 'oops', 500), true],
    ['a gateway timeout (504)', new HostError('status', 'late', 504), true],
    ['a refused connection', new HostError('connection', 'refused'), true],
    ['no first byte in time', new HostError('timeout', 'late'), true],
    ['a bad request (400)', new HostError('status', 'bad', 400), false],
    ['a rejected key (401)', new HostError('status', 'who', 401), false],
    ['an unknown model (404)', new HostError('status', 'what', 404), false],
    ['an unreadable reply', new HostError('malformed', 'garbage'), false],
    ['an error inside the stream', new HostError('upstream_error', 'overloaded'), false],
    ['an open circuit', new HostError('circuit_open', 'failing'), false],
    ['a failure after output', new HostError('status', 'oops', 500, false), false],
  ])('%s is worth the same host again: %s', (_name, error, expected) => {
    expect(transient(error)).toBe(expected);
  });

  it('doubles the ceiling per retry, up to the cap', () => {
    expect([0, 1, 2, 3, 40].map((n) => backoffCeiling(policy, n))).toEqual([250, 500, 1_000, 1_000, 1_000]);
  });

  it('draws the delay anywhere under the ceiling (full jitter)', () => {
    expect(retryDecision(policy, overloaded, 1, 60_000, 0)).toEqual({ retry: true, delayMs: 0 });
    expect(retryDecision(policy, overloaded, 1, 60_000, 0.5)).toEqual({ retry: true, delayMs: 250 });
    expect(retryDecision(policy, overloaded, 1, 60_000, 0.999)).toEqual({ retry: true, delayMs: 499 });
  });

  it('stops after its attempts', () => {
    expect(retryDecision(policy, overloaded, 2, 60_000, 0).retry).toBe(true);
    expect(retryDecision(policy, overloaded, 3, 60_000, 0)).toEqual({ retry: false });
    expect(retryDecision({ ...policy, attempts: 0 }, overloaded, 0, 60_000, 0)).toEqual({ retry: false });
  });

  it("honours the host's Retry-After within the cap, and moves on from one beyond it", () => {
    const asked = (ms: number) => new HostError('status', 'slow down', 429, true, ms);
    expect(retryDecision(policy, asked(800), 0, 60_000, 0.1)).toEqual({ retry: true, delayMs: 800 });
    expect(retryDecision(policy, asked(0), 0, 60_000, 0.9)).toEqual({ retry: true, delayMs: 0 });
    expect(retryDecision(policy, asked(1_001), 0, 60_000, 0)).toEqual({ retry: false });
  });

  it('moves on when the wait would reach the deadline', () => {
    expect(retryDecision(policy, overloaded, 0, 100, 0.5)).toEqual({ retry: false });
    expect(retryDecision(policy, overloaded, 0, 126, 0.5)).toEqual({ retry: true, delayMs: 125 });
  });
});
