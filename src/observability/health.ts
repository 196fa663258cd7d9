/** Whether the service is going away (set on SIGTERM): it then reports not ready. */
export interface Lifecycle {
  draining: boolean;
}

/** Read models further behind the log than this (events) are not ready to serve balances. */
export const READY_LAG_BOUND = 1_000;

export interface ReadinessFacts {
  draining: boolean;
  /** The log's head position, or the error asking for it gave. */
  head: number | Error;
  /** Position the read models have applied. */
  applied: number;
  /** Whether the read models' store answers (Redis, when configured): null, or the error asking gave. */
  store: Error | null;
}

export interface Readiness {
  ready: boolean;
  reasons: string[];
}

/** Ready: not draining, the event log and the read models' store answer, and the read models are within the bound of the log. */
export function readiness(facts: ReadinessFacts): Readiness {
  const reasons: string[] = [];
  if (facts.draining) reasons.push('draining: the service is shutting down');
  if (facts.head instanceof Error) reasons.push(`event log: ${facts.head.message}`);
  if (facts.store !== null) reasons.push(`read models: their store does not answer (${facts.store.message})`);
  else if (!(facts.head instanceof Error) && facts.head - facts.applied > READY_LAG_BOUND) {
    reasons.push(`read models: ${facts.head - facts.applied} events behind the log (bound ${READY_LAG_BOUND})`);
  }
  return { ready: reasons.length === 0, reasons };
}
