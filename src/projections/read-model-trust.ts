import type { EventStore } from '../eventstore/event-store';

/**
 * Whether read models may be served from, or must be rebuilt from the log first. Read models say
 * which log and which position of it they reflect; they are trusted only for that log, and only
 * where it still is: a fresh log (a new `DATA_DIR`) beside a Redis that holds an earlier log's read
 * models, or a log restored from a backup older than their checkpoint, would otherwise be served
 * from balances and keys of events that are not in it, and its new events skipped. The judgement
 * (trustReadModels) is pure; judgeAgainstLog gathers its facts from the log. The projector and the
 * alert follower (its saved state) do what it says.
 */

/** An event as the read models and the log name it. */
export interface EventAt {
  streamId: string;
  revision: number;
}

/** What the read models say they reflect. */
export interface ReadModelOrigin {
  /** The identity of the log they were folded from; null when they record none (made before logs had one). */
  logId: string | null;
  /** Their checkpoint: every event of the log up to here is in them, and none after. */
  position: number;
  /** Built the way this version of the service builds them (Redis: their schema number). */
  ofThisVersion: boolean;
  /** The event at their checkpoint, when they record it (the in-process read models' saved copy). */
  last?: EventAt;
}

export interface TrustFacts {
  /** The identity of the log being served. */
  logId: string;
  /** Its newest event's position. */
  head: number;
  /** The log's event at the read models' checkpoint, when they record theirs (null: none there). */
  atCheckpoint?: EventAt | null;
  /** What this process had applied to them before (their store reconnected); 0 at start. */
  applied: number;
}

export type Verdict = { trust: true } | { trust: false; reason: string };

/** What is judged, as its reasons name it: the read models, or the alert follower's saved state. */
export interface Judged {
  name: string;
  are: 'is' | 'are';
}

export const READ_MODELS: Judged = { name: 'read models', are: 'are' };

/** `origin` null: there is none of what is judged (an empty Redis, no saved copy). */
export function trustReadModels(origin: ReadModelOrigin | null, facts: TrustFacts, judged = READ_MODELS): Verdict {
  const rebuild = (reason: string): Verdict => ({ trust: false, reason });
  const { name, are } = judged;
  if (origin === null) return rebuild(`there ${are} no ${name}`);
  if (!origin.ofThisVersion) return rebuild(`the ${name} ${are} of another version of the service`);
  if (origin.logId !== facts.logId) {
    return rebuild(`the ${name} ${are} of another log (${origin.logId ?? 'none recorded'}; this log is ${facts.logId})`);
  }
  if (origin.position > facts.head) return rebuild(`checkpoint ${origin.position} is past the log's head ${facts.head}`);
  if (origin.last !== undefined && origin.position > 0) {
    const at = facts.atCheckpoint;
    if (!at || at.streamId !== origin.last.streamId || at.revision !== origin.last.revision) {
      return rebuild(`the log holds another event at checkpoint ${origin.position} than the last one in the ${name}`);
    }
  }
  if (origin.position < facts.applied) {
    return rebuild(
      `checkpoint ${origin.position} is behind the ${facts.applied} applied here before (their store lost what followed)`,
    );
  }
  return { trust: true };
}

/** `origin` (read first) judged against the log as it is now; `applied`: what this process applied before (0 at start). */
export async function judgeAgainstLog(
  events: EventStore,
  origin: ReadModelOrigin | null,
  applied: number,
  judged = READ_MODELS,
): Promise<Verdict> {
  // Read after the origin: the log's head only grows, so a checkpoint read before it is never wrongly past it.
  const logId = await events.logId();
  const head = await events.headPosition();
  let atCheckpoint;
  if (origin?.last !== undefined && origin.position > 0) {
    const [event] = await events.readAll(origin.position - 1, 1);
    atCheckpoint = event?.position === origin.position ? { streamId: event.streamId, revision: event.revision } : null;
  }
  return trustReadModels(origin, { logId, head, atCheckpoint, applied }, judged);
}
