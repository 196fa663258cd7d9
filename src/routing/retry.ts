import type { HostError } from '../canonical/canonical';
import type { RetryPolicy } from '../catalogue/retry-policy';

export { DEFAULT_RETRY, type RetryPolicy } from '../catalogue/retry-policy';

/**
 * Retries of one host: when a host that failed before any output is called again (after how
 * long), rather than the model's next host. Pure: the caller brings the clock and the dice.
 */

/**
 * Failures worth calling the same host again for: a rate limit (429), the host's own error (5xx), a
 * connection that failed, no first byte in time. A 4xx other than 429 would answer the same again.
 */
export function transient(error: HostError): boolean {
  if (!error.beforeOutput) return false;
  if (error.kind === 'connection' || error.kind === 'timeout') return true;
  return error.kind === 'status' && (error.status === 429 || (error.status ?? 0) >= 500);
}

/** What to do with a host that has just failed: call it again after `delayMs`, or move on. */
export type RetryDecision = { readonly retry: true; readonly delayMs: number } | { readonly retry: false };

const MOVE_ON: RetryDecision = { retry: false };

/**
 * Whether to call the host again after its `retried`-th retry (0: its first call) failed with
 * `error`, and after how long. Exponential backoff with full jitter (`random` in [0, 1)): a delay
 * drawn from [0, min(maxMs, baseMs × 2^retried)). A host's `Retry-After` is honoured when it is
 * within `maxMs` (a host asking for longer is left for the next); a delay that would end past the
 * request's deadline (`msLeft`) moves on at once.
 */
export function retryDecision(
  policy: RetryPolicy,
  error: HostError,
  retried: number,
  msLeft: number,
  random: number,
): RetryDecision {
  if (retried >= policy.attempts || !transient(error)) return MOVE_ON;
  let delayMs: number;
  if (error.retryAfterMs !== null) {
    if (error.retryAfterMs > policy.maxMs) return MOVE_ON;
    delayMs = error.retryAfterMs;
  } else {
    delayMs = Math.floor(random * backoffCeiling(policy, retried));
  }
  return delayMs < msLeft ? { retry: true, delayMs } : MOVE_ON;
}

/** The longest delay before retry `retried + 1`: baseMs doubled per retry already made, up to maxMs. */
export const backoffCeiling = (policy: RetryPolicy, retried: number): number =>
  Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(retried, 30));
