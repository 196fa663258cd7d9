/**
 * The event store port. The log is the truth: every balance, every key and every charge is
 * derived from it. Adapters: the embedded SQLite log and EventStoreDB.
 */
export interface NewEvent<T extends string = string, D = unknown> {
  type: T;
  data: D;
}

export interface RecordedEvent<T extends string = string, D = unknown> extends NewEvent<T, D> {
  streamId: string;
  /** 0-based index of the event in its stream. */
  revision: number;
  /** Global position in the log: strictly increasing, a safe integer, > 0. */
  position: number;
  /** Milliseconds since the epoch when the store recorded it. */
  recordedAt: number;
  /**
   * The event's link in its chain (see event-chain.ts), where the log records one: the SQLite log's
   * writer stamps it at commit, for the events of the chain rule it was opened with; on EventStoreDB
   * the adapter joins the link a sealer recorded in the chain's stream (absent until sealed). Absent otherwise.
   */
  chainLink?: string;
}

/** `no_stream`: the stream must not exist; a number: the revision of its last event. */
export type ExpectedRevision = number | 'no_stream' | 'any';

export interface AppendResult {
  /** Revision of the last appended event: the expected revision for the next append. */
  nextExpectedRevision: number;
  /** Position of the last appended event. */
  position: number;
}

/**
 * The log may or may not hold an append: the connection was lost, or the server timed out, after
 * the request was sent. Nothing is known either way: an event it carried may still show up when
 * the log is read. The adapter has already retried what it safely could.
 */
export class AppendOutcomeUnknownError extends Error {
  constructor(
    readonly streamId: string,
    cause: unknown,
  ) {
    super(`append to ${streamId}: outcome unknown (${cause instanceof Error ? cause.message : String(cause)})`, { cause });
    this.name = 'AppendOutcomeUnknownError';
  }
}

export class WrongExpectedRevisionError extends Error {
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedRevision,
    readonly actual: number | 'no_stream',
  ) {
    super(`stream ${streamId}: expected revision ${expected}, found ${actual}`);
    this.name = 'WrongExpectedRevisionError';
  }
}

/**
 * The stream is behind a revision it was known to have reached (or gone): a log never loses
 * events, so the log answering is not the one the writer read (emptied, replaced, restored).
 */
export const revisionWentBack = (error: WrongExpectedRevisionError): boolean =>
  typeof error.expected === 'number' && (error.actual === 'no_stream' || error.actual < error.expected);

/**
 * What an append has reached when it resolves. `disk` (the default): the disk, surviving the
 * machine's power loss. `log`: the log, read by every reader and surviving this process's crash,
 * but on the embedded log not a power loss until a later append reaches the disk: the log is a
 * prefix of its appends either way, so such an append is lost only with all that follows it. For
 * a reservation that is enough: one lost with the machine would only have been released.
 * EventStoreDB takes every append to the disk.
 */
export type Durability = 'disk' | 'log';

export interface EventStore {
  /**
   * Appends `events` after the stream's revision `expected`, atomically, or not at all: a
   * WrongExpectedRevisionError if the stream is elsewhere, AppendOutcomeUnknownError if whether it
   * went in cannot be known. An adapter that retries an append itself records it at most once.
   */
  append(streamId: string, events: NewEvent[], expected: ExpectedRevision, durability?: Durability): Promise<AppendResult>;
  /** Every event of a stream in order; empty when the stream does not exist. */
  readStream(streamId: string): Promise<RecordedEvent[]>;
  /**
   * Up to `limit` events with a position greater than `after`, in log order. `after` is any safe
   * integer ≥ 0: it need not be an event's position (a checkpoint minus one, one from another log).
   * `chainLinks`: with each chained event's link (true), or only the events of one chain (its id),
   * where the log records links after the fact (EventStoreDB joins them from the chain streams, a read
   * per chain and batch); a log that stamps links at commit carries them always.
   */
  readAll(after: number, limit: number, options?: { chainLinks?: boolean | string }): Promise<RecordedEvent[]>;
  /** Position of the newest event, 0 when the log is empty. */
  headPosition(): Promise<number>;
  /**
   * Events after `after`: first those already in the log, then live ones as they are appended
   * (by this process or any other), in batches, in log order, leaving out those up to `reached()`
   * when given (see onCommitted). Ends when `signal` aborts.
   */
  subscribe(after: number, signal: AbortSignal, reached?: () => number): AsyncIterable<RecordedEvent[]>;
  /**
   * Where subscriptions look for other processes' events at intervals (the embedded log): they
   * look now, not at their next interval. A log that pushes every event to its subscriptions has none.
   */
  lookNow?(): void;
  /**
   * Where the log can say so at once (the embedded log), `taker` is handed this process's events as
   * they commit, in log order, before their appenders hear (to apply them to read models in this
   * process). A subscription whose `reached()` (where its consumer got by other means) is past them
   * then leaves them out and is not woken for them.
   */
  onCommitted?(taker: (events: RecordedEvent[]) => void): void;
  /**
   * Why the log takes no appends now, or null when it does. Null until an append fails for a reason
   * of the store itself (a full disk, a server that does not answer; never a conflict); from then
   * on each call tries a small write of the store's own, and null again once that write or an
   * append succeeds. Readiness asks it: an instance whose log refuses appends serves nothing.
   */
  appendFailure(): Promise<Error | null>;
  /**
   * The log's identity: a random id written into the log when it is first opened, the same for
   * every process on it and for a copy of it (a backup restored), another for another log. Read
   * models record it beside their checkpoint, so that they are never trusted on a log they are not of.
   */
  logId(): Promise<string>;
  /** The log's identity as it holds it now, written by nobody: null when it has none (an emptied EventStoreDB node). */
  readLogId(): Promise<string | null>;
  /**
   * A chain's last stamped link, its position and how many events the chain holds, read by index; null
   * when the chain has no event. Present only on a log that records links (see RecordedEvent.chainLink);
   * on EventStoreDB, the head as sealed (events not sealed yet are not in it).
   */
  chainHead?(chainId: string): Promise<{ head: string; position: number; events: number } | null>;
  /**
   * Where the log indexes its chains (the embedded log, opened with a chain rule): up to `limit`
   * events of one chain with a position greater than `after`, in log order, each with its link. A
   * reader of one organization's ledger reads it instead of the whole log (see ledgerBatches).
   */
  readChain?(chainId: string, after: number, limit: number): Promise<RecordedEvent[]>;
  /**
   * On a log whose links are sealed after the fact (EventStoreDB), how long a chained event may go
   * without its link while sealers run: older than that, its missing link is a difference. Absent
   * where links are stamped at commit (an event without one is a difference at once) or not recorded.
   */
  readonly chainSealedWithinMs?: number;
  close(): Promise<void>;
}
