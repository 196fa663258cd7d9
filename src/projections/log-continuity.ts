/**
 * Whether the log a running gateway reads and writes is still the log its read models (and its
 * own state: holds, tickets, the position applied) describe. An EventStoreDB node restarted empty,
 * or a log swapped or restored under a running gateway, would otherwise be written to on balances
 * folded from another log: spending recorded with nothing granted. Checked when the log's
 * subscription comes back after a failure, and when an append finds a stream's revision gone
 * back. Pure: the projector gathers the facts and does what this says.
 */

/** What the gateway follows: the log it started on and how far it has applied it. */
export interface FollowedLog {
  logId: string;
  applied: number;
}

/** The log as it answers now. */
export interface LogNow {
  /** Its identity, or null when it holds none (an emptied node: nobody has identified it yet). */
  logId: string | null;
  /** Its newest event's position. */
  head: number;
}

export type Continuity = { same: true } | { same: false; reason: string };

/**
 * An append lands after every event of the log when it was sent: one at or before a position
 * applied before it was sent was written to another log (a node restarted empty answers appends at
 * its first positions). `applied` must be taken before sending: the append's own events may be
 * applied (delivered by the subscription) before its answer arrives.
 */
export const appendLandedBehind = (position: number, applied: number): boolean => position <= applied;

export function judgeLogContinuity(followed: FollowedLog, now: LogNow): Continuity {
  const replaced = (reason: string): Continuity => ({ same: false, reason });
  if (now.logId === null) return replaced(`the log holds no identity (emptied?); the read models describe log ${followed.logId}`);
  if (now.logId !== followed.logId) return replaced(`the log is ${now.logId}; the read models describe log ${followed.logId}`);
  if (now.head < followed.applied) {
    return replaced(
      `the log's head ${now.head} is behind the ${followed.applied} applied here (events lost: restored from an older backup?)`,
    );
  }
  return { same: true };
}
