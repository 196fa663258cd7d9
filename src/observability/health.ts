/**
 * Whether the service is going away (SIGTERM). `leaving`: it reports not ready but still takes
 * requests (SHUTDOWN_DRAIN_MS); `draining`: it also answers every new request 503. `starting`: why
 * it is not ready yet though it serves (a worker of a set: how many of the set serve), or null.
 */
export interface Lifecycle {
  draining: boolean;
  leaving?: boolean;
  starting?: string | null;
}

/** Read models further behind the log than this (events) are not ready to serve balances. */
export const READY_LAG_BOUND = 1_000;

export interface ReadinessFacts {
  draining: boolean;
  /** Events in the log the read models have not applied (counted up to past the bound), or the log's error. */
  behind: number | Error;
  /** Why the log takes no appends (a full disk: every billed request would be refused), or null. */
  appends: Error | null;
  /** Whether the read models' store answers (Redis, when configured): null, or the error asking gave. */
  store: Error | null;
  /** Why the log is not the one the read models describe (see Projector.logReplaced), or null. */
  logReplaced: string | null;
  /** Why it is not ready yet though it serves (see Lifecycle.starting); absent or null: it is. */
  starting?: string | null;
  /** Why it admits nothing: its claim in the log on its read models' store lapsed or was lost (see Runtime.servingRefusal); absent or null: it holds it. */
  servingClaim?: string | null;
}

export interface Readiness {
  ready: boolean;
  reasons: string[];
}

/**
 * Ready: not starting (a worker set: every worker serves), not draining, the event log answers, takes appends and is the one the read models describe,
 * the read models' store answers, and the read models are within the bound of the log.
 */
export function readiness(facts: ReadinessFacts): Readiness {
  const reasons: string[] = [];
  if (facts.starting) reasons.push(`starting: ${facts.starting}`);
  if (facts.draining) reasons.push('draining: the service is shutting down');
  if (facts.behind instanceof Error) reasons.push(`event log: ${facts.behind.message}`);
  if (facts.logReplaced !== null) reasons.push(`event log: not the log the read models describe (${facts.logReplaced})`);
  if (facts.servingClaim) reasons.push(`serving claim: ${facts.servingClaim}`);
  if (facts.appends !== null) reasons.push(`event log: it takes no appends (${facts.appends.message})`);
  if (facts.store !== null) reasons.push(`read models: their store does not answer (${facts.store.message})`);
  else if (!(facts.behind instanceof Error) && facts.behind > READY_LAG_BOUND) {
    reasons.push(`read models: more than ${READY_LAG_BOUND} events behind the log`);
  }
  return { ready: reasons.length === 0, reasons };
}

/**
 * Events after `applied` in the log, counted up to `cap` (positions are not counts: EventStoreDB's
 * are byte offsets in its log), reading only when the read models are behind at all.
 */
export async function eventsBehind(
  events: { headPosition(): Promise<number>; readAll(after: number, limit: number): Promise<unknown[]> },
  applied: number,
  cap: number,
): Promise<number> {
  if ((await events.headPosition()) <= applied) return 0;
  return (await events.readAll(applied, cap)).length;
}
