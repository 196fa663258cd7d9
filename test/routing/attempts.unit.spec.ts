import { HostError } from '../../src/canonical/canonical';
import { attemptReason, circuitOpen, hostAtFault, hostAttempt } from '../../src/routing/attempts';

describe("a request's attempts", () => {
  it.each([
    [new HostError('status', 'slow down', 429), 'rate_limited', true],
    [new HostError('status', 'oops', 503), 'server_error', true],
    [new HostError('status', 'who are you', 401), 'rejected', true],
    [new HostError('status', 'no such model', 404), 'rejected', true],
    [new HostError('status', 'bad request', 400), 'rejected', false],
    [new HostError('status', 'too large', 413), 'rejected', false],
    [new HostError('status', 'unprocessable', 422), 'rejected', false],
    [new HostError('connection', 'refused'), 'connection', true],
    [new HostError('timeout', 'late'), 'timeout', true],
    [new HostError('malformed', 'garbage'), 'malformed', true],
    [new HostError('upstream_error', 'overloaded'), 'upstream_error', true],
    [circuitOpen('h'), 'circuit_open', false],
  ])('%s: reason %s, against the host: %s', (error, reason, fault) => {
    expect(attemptReason(error)).toBe(reason);
    expect(hostAtFault(error)).toBe(fault);
  });

  it('names the credential by its variable, never its value, and rounds the duration', () => {
    expect(hostAttempt('h', 'H_KEY', 503, 'server_error', 12.6)).toEqual({
      host: 'h',
      credential: 'H_KEY',
      status: 503,
      reason: 'server_error',
      durationMs: 13,
    });
    expect(hostAttempt('h', null, null, 'ok', 0).credential).toBeNull();
  });
});
