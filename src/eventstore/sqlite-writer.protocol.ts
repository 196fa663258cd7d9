import type { ChainRule } from './event-chain';

/**
 * What the SQLite log's main side (sqlite-event-store.ts) and its writer thread
 * (sqlite-writer.worker.ts) tell each other. Types only: the worker imports nothing at run time
 * from the project's own modules but event-chain.ts (pure, node:crypto only).
 */

/** The writer's start-up options (its `workerData`). */
export interface WriterOptions {
  path: string;
  /** Commit appends that arrive together in one transaction; off: one commit per append. */
  groupCommit: boolean;
  /** Which events the writer stamps with their chain's link at commit (see event-chain.ts); none when absent. */
  chain?: ChainRule;
}

export interface WriterAppend {
  id: number;
  streamId: string;
  /**
   * Event types and their data, already JSON; for an event of a chain (see event-chain.ts), the chain's
   * id and its data in canonical JSON (RFC 8785), which the writer links as it is.
   */
  events: Array<{ type: string; data: string; chainId?: string }>;
  expected: number | 'no_stream' | 'any';
}

export type WriterResult =
  | { id: number; ok: { nextExpectedRevision: number; position: number }; recordedAt: number }
  | { id: number; conflict: number | 'no_stream' }
  | { id: number; error: string };

/**
 * To the writer: the appends gathered since its last answer (one message per turn of the
 * sender's event loop), 'probe' (try a small write of its own and say how it went: whether the
 * log takes appends now), or 'close' (after the appends sent before it, committed as they came: close the connection, answer 'closed').
 */
export type ToWriter = WriterAppend[] | 'probe' | 'close';

/** Why the probe's write failed (the database's message), or null when it succeeded. */
export interface ProbeResult {
  probe: string | null;
}

/** From the writer: the results of the appends it committed together, a probe's result, or 'closed'. */
export type FromWriter = WriterResult[] | ProbeResult | 'closed';
