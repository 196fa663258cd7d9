import { HostError } from '../canonical/canonical';
import type { HostAttempt } from '../ledger/ledger.events';

/** Why a host call did not serve, as the record of a request's attempts names it (see HostAttempt). */
export function attemptReason(error: HostError): string {
  if (error.kind !== 'status') return error.kind;
  if (error.status === 429) return 'rate_limited';
  return (error.status ?? 0) >= 500 ? 'server_error' : 'rejected';
}

/**
 * Whether a failure counts against the host (its circuit breaker, its error rate): everything but
 * the host refusing the request itself (400, 413, 422: the caller's to fix) and a host passed over.
 */
export function hostAtFault(error: HostError): boolean {
  if (error.kind === 'circuit_open') return false;
  return !(error.kind === 'status' && (error.status === 400 || error.status === 413 || error.status === 422));
}

/** A host passed over, its circuit open: a failure before output like any other, never retried (see HostError.retryable). */
export const circuitOpen = (hostId: string): HostError =>
  new HostError('circuit_open', `host ${hostId} is failing and is passed over until its circuit closes`);

/** One host call on the record: the credential by the name of its variable (null: a host that takes no key), never its value. */
export const hostAttempt = (
  hostId: string,
  credential: string | null,
  status: number | null,
  reason: string,
  durationMs: number,
): HostAttempt => ({
  host: hostId,
  credential,
  status,
  reason,
  durationMs: Math.round(durationMs),
});
