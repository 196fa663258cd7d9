import type { ChainRule } from './event-chain';

/**
 * What the SQLite log's main side (sqlite-event-store.ts) and its writer thread
 * (sqlite-writer.worker.ts) tell each other. Appends and their results travel as flat arrays of
 * strings and numbers: a message is cloned on one thread and rebuilt on the other, and an array of
 * primitives costs about half what the same in objects does, on both threads, for every append.
 * The worker imports nothing at run time from the project's own modules but this file and
 * event-chain.ts (both pure).
 */

/** The writer's start-up options (its `workerData`). */
export interface WriterOptions {
  path: string;
  /** Commit appends that arrive together in one transaction; off: one commit per append. */
  groupCommit: boolean;
  /** Which events the writer stamps with their chain's link at commit (see event-chain.ts); none when absent. */
  chain?: ChainRule;
}

/**
 * Appends, one after the other, each as: its id, its stream, the revision expected (a number,
 * 'no_stream' or 'any'), how many events, whether it must reach the disk (DISK or LOG_ONLY, see
 * Durability), then for each event its type, its data already JSON, and for an event of a chain
 * (see event-chain.ts) the chain's id with its data in canonical JSON (RFC 8785), which the writer
 * links as it is, else null.
 */
export type WriterBatch = Array<string | number | null>;

/** Members of a WriterBatch before an append's events, and of each event. */
export const APPEND_HEAD = 5;
export const EVENT_FIELDS = 3;
/** Where an append's durability sits in its head, and its values. */
export const DURABILITY_AT = 4;
export const DISK = 1;
export const LOG_ONLY = 0;

/**
 * The results of a batch's appends, in its order, RESULT_FIELDS each: the append's id, then
 * OK, the stream's revision, the position of its last event and the recording time; or CONFLICT,
 * the stream's actual revision (a number or 'no_stream'), 0, 0; or FAILED, the database's message, 0, 0.
 */
export type WriterResults = Array<string | number>;
export const RESULT_FIELDS = 5;
export const OK = 0;
export const CONFLICT = 1;
export const FAILED = 2;

/**
 * To the writer: the appends gathered since its last answer (sent once it has answered the last
 * batch), 'probe' (try a small write of its own and say how it went: whether the log takes appends
 * now), or 'close' (after the appends sent before it: close the connection, answer 'closed').
 */
export type ToWriter = WriterBatch | 'probe' | 'close';

/** Why the probe's write failed (the database's message), or null when it succeeded. */
export interface ProbeResult {
  probe: string | null;
}

/** From the writer: the results of the appends it committed together, a probe's result, or 'closed'. */
export type FromWriter = WriterResults | ProbeResult | 'closed';
