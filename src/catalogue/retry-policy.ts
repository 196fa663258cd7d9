/** A catalogue host's retry policy, as its entry's `retry` gives it (src/routing/retry.ts decides with it). */

/** How a host is retried: `attempts` calls after the first, each after a delay of at most `min(maxMs, baseMs × 2^n)`. */
export interface RetryPolicy {
  readonly attempts: number;
  readonly baseMs: number;
  readonly maxMs: number;
}

/** A catalogue host that says nothing of retries: two more calls, after up to 250 ms then 500 ms; nothing waits more than 5 s. */
export const DEFAULT_RETRY: RetryPolicy = { attempts: 2, baseMs: 250, maxMs: 5_000 };

/** Bounds of a catalogue's `retry` fields. */
export const RETRY_LIMITS = { attempts: 10, delayMs: 600_000 } as const;
