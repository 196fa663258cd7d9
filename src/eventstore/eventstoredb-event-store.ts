import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import {
  ANY,
  AccessDeniedError,
  AppendExpectedRevision,
  AppendResult as EsdbAppendResult,
  BACKWARDS,
  Credentials,
  END,
  EventStoreDBClient,
  FORWARDS,
  InvalidArgumentError,
  InvalidTransactionError,
  JSONType,
  MaxAppendSizeExceededError,
  NO_STREAM,
  NotLeaderError,
  ReadPosition,
  RecordedEvent as EsdbRecordedEvent,
  START,
  StreamDeletedError,
  StreamingRead,
  StreamNotFoundError,
  WrongExpectedVersionError,
  convertToCommandError,
  excludeSystemEvents,
  jsonEvent,
} from '@eventstore/db-client';
import {
  AppendOutcomeUnknownError,
  AppendResult,
  EventStore,
  ExpectedRevision,
  NewEvent,
  RecordedEvent,
  WrongExpectedRevisionError,
} from './event-store';
import { type ChainRule, chainIdOf } from './event-chain';
import { CHAIN_SEALED, CHAIN_SEALED_WITHIN_MS, type ChainSealed, chainStreamOf } from './eventstoredb-chain-sealer';
import { parseEventStoreUrl } from './eventstoredb-connection';
import {
  EsdbPosition,
  KnownPositions,
  checkPortPosition,
  exactPosition,
  isAnchorFor,
  planStart,
  toPortPosition,
} from './eventstoredb-positions';

/** Upper bound of a subscription batch, and of the events buffered ahead of the consumer. */
const BATCH_SIZE = 1000;

/** What the adapter uses of the official client (a narrower surface keeps it testable without a server). */
export type EsdbClient = Pick<
  EventStoreDBClient,
  'appendToStream' | 'readStream' | 'readAll' | 'subscribeToAll' | 'getStreamMetadata' | 'setStreamMetadata' | 'dispose'
>;

export interface EventStoreDbOptions {
  /**
   * Credentials sent with every append. Passing any makes client 6.2.1 use its one-call-per-append
   * path instead of batch append (see `append`); in insecure mode the client sends none of them.
   */
  appendCredentials: Credentials;
  /** Waits before each retry of an append whose outcome is unknown (default 50, 250, 1000 ms). */
  retryDelaysMs?: number[];
  /** How long `close()` waits for the client's calls to end (default 2 s). */
  closeDeadlineMs?: number;
  /**
   * The chains whose links a sealer records in `chain-{id}` streams (see eventstoredb-chain-sealer.ts):
   * with it, `readAll` joins each chained event's sealed link and `chainHead` reads a chain's sealed head.
   */
  chain?: ChainRule;
  /** How long a chained event may wait for its link (default CHAIN_SEALED_WITHIN_MS): `chainSealedWithinMs`. */
  sealedWithinMs?: number;
}

/** Where `readAll` is in one chain's sealed batches: the links read and not yet handed out. */
interface LinkCursor {
  /** The chain stream's next revision to read, and the last position its batches read so far cover. */
  nextRevision: number;
  through: number;
  /** Links of positions after `floor` (the `after` of the last read): memory stays about a batch, reading in order. */
  floor: number;
  links: Map<number, string>;
}

/**
 * Where the write probe appends while appends fail: one `WriteProbed` event per probe that goes
 * through (one per recovery). No fold reads it; it is the gateway's, not the ledger's.
 */
export const WRITE_PROBE_STREAM = 'gateway-write-probe';
/**
 * The log's identity: the first event of this stream (`LogIdentified`, holding a random `logId`),
 * appended by whichever process first opens the log. No fold reads it.
 */
export const LOG_IDENTITY_STREAM = 'gateway-log-identity';

/** A probe waits no longer than this for the server: readiness answers within it. */
const PROBE_DEADLINE_MS = 2_000;

/** Records the server writes for itself ($stats, stream metadata, projection links...), not part of our log. */
const isSystemEvent = (event: EsdbRecordedEvent): boolean => event.type.startsWith('$') || event.streamId.startsWith('$');

const toExpectedRevision = (expected: ExpectedRevision): AppendExpectedRevision =>
  expected === 'any' ? ANY : expected === 'no_stream' ? NO_STREAM : BigInt(expected);

const toRevision = (revision: bigint, what: string): number => {
  if (revision < 0n || revision > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`${what}: revision ${revision} out of range`);
  return Number(revision);
};

/**
 * Failures after which the log certainly holds nothing of the append: the server refused it. Any
 * other failure (deadline passed, connection lost, server timeout) leaves the outcome unknown.
 */
const isRefusal = (error: unknown): boolean =>
  error instanceof WrongExpectedVersionError ||
  error instanceof AccessDeniedError ||
  error instanceof StreamDeletedError ||
  error instanceof MaxAppendSizeExceededError ||
  error instanceof InvalidArgumentError ||
  error instanceof InvalidTransactionError ||
  error instanceof NotLeaderError;

/**
 * Failures that say the server takes no appends now, whatever the append: none arrived (outcome
 * unknown after the retries), the credentials may not write, the node is no leader. A conflict, a
 * deleted stream or an append too large are that append's own.
 */
const isStoreFailure = (error: unknown): error is Error =>
  error instanceof AppendOutcomeUnknownError || error instanceof AccessDeniedError || error instanceof NotLeaderError;

/** How long `close()` waits for the client to end its calls. */
const CLOSE_DEADLINE_MS = 2_000;

/**
 * Iterates a read to its end or until the caller stops. Client 6.2.1 pipes the gRPC call into the
 * read; when the caller stops early, destroying the read unpipes the call, and a call the server
 * has already completed (everything sent, status OK) keeps what it buffered forever: cancelling
 * it does nothing, it never ends, and the client's `dispose()` waits for it. So a read left early
 * is cancelled (which ends a call still running) and then drained to its end, its events dropped,
 * its errors heard and ignored.
 */
export async function* eventsOf<E>(read: StreamingRead<E>): AsyncGenerator<E> {
  let ended = false;
  try {
    for await (const item of read.iterator({ destroyOnReturn: false })) yield item as E;
    ended = true;
  } finally {
    if (!ended) {
      // Heard before cancelling: the call's failure ("Call cancelled", or its node gone in a leader
      // change) may come while cancel() is awaited, and an error nobody hears ends the process.
      read.on('error', () => undefined);
      await read.cancel();
      read.resume();
    }
  }
}

/**
 * The event log in EventStoreDB. Our events are every non-system event of $all; an event's port
 * position is its commit (== prepare) position, checked on every event read (see
 * eventstoredb-positions.ts). Only exact positions of events are ever sent to the server.
 * Client 6.x offers server-side filters on subscriptions only, so reads of $all skip system events here.
 */
export class EventStoreDbEventStore implements EventStore {
  private closed = false;
  private readonly known = new KnownPositions();
  private readonly retryDelaysMs: number[];
  private readonly closeDeadlineMs: number;
  /** Why the last append failed for a reason of the server, until an append or a probe succeeds. */
  private failure: Error | null = null;
  /** The probe in flight, shared by whoever asks meanwhile. */
  private probing: Promise<Error | null> | null = null;
  readonly chainHead?: EventStore['chainHead'];
  readonly chainSealedWithinMs?: number;
  private readonly linkCursors = new Map<string, LinkCursor>();
  /** Joins run one at a time: the cursors are shared, and a join spans several reads. */
  private joining: Promise<void> = Promise.resolve();

  private constructor(
    private readonly client: EsdbClient,
    private readonly options: EventStoreDbOptions,
  ) {
    this.retryDelaysMs = options.retryDelaysMs ?? [50, 250, 1000];
    this.closeDeadlineMs = options.closeDeadlineMs ?? CLOSE_DEADLINE_MS;
    if (options.chain) {
      this.chainHead = (chainId) => this.readChainHead(chainId);
      this.chainSealedWithinMs = options.sealedWithinMs ?? CHAIN_SEALED_WITHIN_MS;
    }
  }

  /** The client connects lazily: an unreachable server surfaces on the first operation. */
  static async connect(url: string, options: Partial<EventStoreDbOptions> = {}): Promise<EventStoreDbEventStore> {
    const connection = parseEventStoreUrl(url);
    const client = EventStoreDBClient.connectionString(connection.connectionString);
    // Insecure mode: the client drops credentials (it sends no authorization header); any will do.
    const appendCredentials = connection.credentials ?? { username: 'insecure', password: 'insecure' };
    return new EventStoreDbEventStore(client, { appendCredentials, ...options });
  }

  /** Over a client made elsewhere (the adapter's tests use a simulated one). */
  static withClient(client: EsdbClient, options: EventStoreDbOptions): EventStoreDbEventStore {
    return new EventStoreDbEventStore(client, options);
  }

  private recorded(event: EsdbRecordedEvent): RecordedEvent {
    const position = toPortPosition(event.position, `event ${event.revision} of ${event.streamId}`);
    this.known.add(position);
    return {
      streamId: event.streamId,
      revision: toRevision(event.revision, event.streamId),
      position,
      type: event.type,
      data: event.data,
      // Client 6.x converts the server's ticks to a Date.
      recordedAt: event.created.getTime(),
    };
  }

  /**
   * Appends with an id for each event, chosen once per append. The server recognises events it
   * holds by their ids: sent again with the same exact expected revision (or no_stream), an append
   * that went in is answered with success and not written twice (idempotent); with 'any' only
   * recent ones are recognised (best effort). So an append whose outcome is unknown (deadline
   * passed, connection lost, server timeout) is sent again, same ids, a few times; if it stays
   * unknown, AppendOutcomeUnknownError. (Ids derived from the events' content would make two
   * decisions that happen to be alike, say two "add 1", into one.)
   *
   * Client 6.2.1 sends appends without explicit credentials through batch append, whose one
   * process-wide table of pending appends lets one stream's error reject every append in flight
   * and a late reply throw inside a data handler (a crash). With credentials given, it makes one
   * call per append instead: each append's failure is its own.
   */
  async append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    try {
      const result = await this.appendWithRetries(streamId, events, expected);
      this.failure = null;
      return result;
    } catch (error) {
      if (isStoreFailure(error)) this.failure = error;
      // The server answered: it takes appends.
      else if (error instanceof WrongExpectedRevisionError) this.failure = null;
      throw error;
    }
  }

  private async appendWithRetries(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (events.length === 0) throw new Error('append needs at least one event');
    if (this.closed) throw new Error('event store is closed');
    // The client serialises data with JSON.stringify, like the SQLite log; its JSONType is narrower.
    const proposed = events.map(({ type, data }) => jsonEvent({ id: randomUUID(), type, data: data as JSONType }));
    const options = { expectedRevision: toExpectedRevision(expected), credentials: this.options.appendCredentials };
    let unknown: unknown;
    for (let attempt = 0; attempt <= this.retryDelaysMs.length; attempt++) {
      if (attempt > 0) await delay(this.retryDelaysMs[attempt - 1]);
      if (this.closed) break;
      let result: EsdbAppendResult;
      try {
        result = await this.client.appendToStream(streamId, proposed, options);
      } catch (raw) {
        // The client throws some failures as they come from gRPC, and a few as strings.
        const error: unknown = raw instanceof Error ? convertToCommandError(raw) : raw;
        if (error instanceof WrongExpectedVersionError) {
          const actual = typeof error.actualVersion === 'bigint' ? toRevision(error.actualVersion, streamId) : 'no_stream';
          throw new WrongExpectedRevisionError(streamId, expected, actual);
        }
        if (error instanceof MaxAppendSizeExceededError) {
          throw new Error(
            `append to ${streamId} is larger than EventStoreDB's maximum append size (${error.maxAppendSize} bytes; 1 MiB unless the server sets MaxAppendSize)`,
            { cause: error },
          );
        }
        if (isRefusal(error)) throw error;
        unknown = error;
        continue;
      }
      // With throwOnAppendFailure (the configuration refuses to turn it off), success is always true.
      if (!result.success) throw new WrongExpectedRevisionError(streamId, expected, 'no_stream');
      return this.appended(streamId, events.length, result);
    }
    throw new AppendOutcomeUnknownError(streamId, unknown ?? new Error('event store closed'));
  }

  /**
   * The position of the last event of an append. A one-event append's result carries it; the
   * server reports a several-event append by one position that is not reliably the last event's,
   * and a repeat it recognised (idempotent) by none: the last event is then read back.
   */
  private async appended(streamId: string, count: number, result: EsdbAppendResult): Promise<AppendResult> {
    const nextExpectedRevision = toRevision(result.nextExpectedRevision, streamId);
    let position: number;
    if (count === 1 && result.position && result.position.commit > 0n) {
      position = toPortPosition(result.position, `append to ${streamId}`);
    } else {
      const read = this.client.readStream(streamId, {
        fromRevision: BigInt(nextExpectedRevision),
        maxCount: 1,
        direction: FORWARDS,
      });
      let last: RecordedEvent | undefined;
      for await (const { event } of eventsOf(read)) if (event) last = this.recorded(event);
      if (!last || last.revision !== nextExpectedRevision)
        throw new Error(`append to ${streamId}: its last event could not be read back`);
      position = last.position;
    }
    this.known.add(position);
    return { nextExpectedRevision, position };
  }

  async readStream(streamId: string): Promise<RecordedEvent[]> {
    const events: RecordedEvent[] = [];
    try {
      for await (const { event } of eventsOf(this.client.readStream(streamId))) {
        if (event) events.push(this.recorded(event));
      }
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw error;
    }
    return events;
  }

  /**
   * Where a read of what follows `after` starts: an exact position the server accepts. A number
   * not known to be an event's position (a checkpoint minus one, one from another log, one saved
   * before a restart) is resolved first to the newest event at or before it.
   */
  private async startAfter(after: number): Promise<ReadPosition> {
    const plan = planStart(after, this.known);
    if (plan.from === 'start') return START;
    if (plan.from === 'exact') return exactPosition(plan.position);
    return (await this.anchorAtOrBefore(after)) ?? START;
  }

  /** The exact position of the newest event of $all (ours or the server's) at or before `after`; null if there is none. */
  private async anchorAtOrBefore(after: number): Promise<EsdbPosition | null> {
    // A number below the first event (a checkpoint from the SQLite log, usually) needs no search.
    for await (const { event } of eventsOf(this.client.readAll({ fromPosition: START, maxCount: 1 }))) {
      if (event?.position && event.position.commit > 0n && !isAnchorFor(after, event.position)) return null;
    }
    // Back from the end: as many events as come after `after`, which the caller is about to read anyway.
    for await (const { event } of eventsOf(this.client.readAll({ direction: BACKWARDS, fromPosition: END }))) {
      const position = event?.position;
      if (position && position.commit > 0n && isAnchorFor(after, position))
        return { commit: position.commit, prepare: position.prepare };
    }
    return null;
  }

  async readAll(after: number, limit: number, options: { chainLinks?: boolean | string } = {}): Promise<RecordedEvent[]> {
    checkPortPosition(after);
    const events: RecordedEvent[] = [];
    if (limit <= 0) return events;
    const fromPosition = await this.startAfter(after);
    // No maxCount: system events are skipped here, so the read stops once `limit` of ours are in.
    for await (const { event } of eventsOf(this.client.readAll({ fromPosition }))) {
      if (!event || isSystemEvent(event)) continue;
      const recorded = this.recorded(event);
      // Reads of $all include the event they start from, and a search may start before `after`.
      if (recorded.position <= after) continue;
      events.push(recorded);
      if (events.length >= limit) break;
    }
    const rule = this.options.chain;
    if (options.chainLinks && rule) {
      const only = typeof options.chainLinks === 'string' ? options.chainLinks : null;
      const joined = this.joining.then(() => this.joinLinks(rule, after, events, only));
      this.joining = joined.catch(() => undefined);
      await joined;
    }
    return events;
  }

  /**
   * Gives each chained event the link its chain stream holds for its position (none while it is not
   * sealed yet). Reads each chain's batches forward from where the last read left them: reading the
   * log in order reads every chain stream once; a read from further back (or two readers at once,
   * taking turns) starts that chain over.
   */
  private async joinLinks(rule: ChainRule, after: number, events: RecordedEvent[], only: string | null): Promise<void> {
    const needed = new Map<string, number>();
    for (const event of events) {
      const chainId = chainIdOf(rule, event.type, event.data);
      if (chainId !== null && (only === null || chainId === only)) needed.set(chainId, event.position);
    }
    for (const [chainId, upTo] of needed) {
      let cursor = this.linkCursors.get(chainId);
      if (cursor === undefined || after < cursor.floor) {
        cursor = { nextRevision: 0, through: 0, floor: after, links: new Map() };
        this.linkCursors.set(chainId, cursor);
      }
      for (const position of cursor.links.keys()) if (position <= after) cursor.links.delete(position);
      cursor.floor = after;
      while (cursor.through < upTo) {
        const batches = await this.readStreamFrom(chainStreamOf(chainId), cursor.nextRevision, 100);
        if (batches.length === 0) break;
        for (const batch of batches) {
          const sealed = batch.data as ChainSealed;
          for (const { position, link } of sealed.links) if (position > after) cursor.links.set(position, link);
          cursor.through = sealed.toPosition;
          cursor.nextRevision = batch.revision + 1;
        }
      }
    }
    for (const event of events) {
      const chainId = chainIdOf(rule, event.type, event.data);
      const link =
        chainId === null || !needed.has(chainId) ? undefined : this.linkCursors.get(chainId)?.links.get(event.position);
      if (link !== undefined) event.chainLink = link;
    }
  }

  /** Up to `limit` events of a stream from revision `from` on; empty when there are none (or no stream). */
  async readStreamFrom(streamId: string, from: number, limit: number): Promise<RecordedEvent[]> {
    const events: RecordedEvent[] = [];
    try {
      const read = this.client.readStream(streamId, { fromRevision: BigInt(from), maxCount: limit, direction: FORWARDS });
      for await (const { event } of eventsOf(read)) if (event) events.push(this.recorded(event));
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw error;
    }
    return events;
  }

  /**
   * Up to `limit` events of a stream, newest first, from its end or from before revision `before`;
   * empty when there are none (or no stream, or none its metadata keeps).
   */
  async readStreamBackwards(streamId: string, limit: number, before?: number): Promise<RecordedEvent[]> {
    const events: RecordedEvent[] = [];
    if (before !== undefined && before <= 0) return events;
    try {
      const fromRevision = before === undefined ? END : BigInt(before - 1);
      const read = this.client.readStream(streamId, { fromRevision, maxCount: limit, direction: BACKWARDS });
      for await (const { event } of eventsOf(read)) if (event) events.push(this.recorded(event));
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw error;
    }
    return events;
  }

  /**
   * Gives a stream of the gateway's own `$maxAge` (seconds) in its metadata, unless it has it: its
   * events older than that are gone from reads of it, and the server's scavenge removes them. For
   * streams read only for their recent events (the serving claims), never for the ledger's.
   */
  async keepStreamFor(streamId: string, maxAgeSeconds: number): Promise<void> {
    const { metadata } = await this.client.getStreamMetadata(streamId);
    if (metadata?.maxAge === maxAgeSeconds) return;
    // Credentials given: client 6.2.1 appends without batch append (see `append`).
    await this.client.setStreamMetadata(
      streamId,
      { ...metadata, maxAge: maxAgeSeconds },
      { expectedRevision: ANY, credentials: this.options.appendCredentials },
    );
  }

  /** A stream's last event, or null when it has none. */
  async lastOfStream(streamId: string): Promise<RecordedEvent | null> {
    try {
      const read = this.client.readStream(streamId, { fromRevision: END, maxCount: 1, direction: BACKWARDS });
      for await (const { event } of eventsOf(read)) if (event) return this.recorded(event);
    } catch (error) {
      if (error instanceof StreamNotFoundError) return null;
      throw error;
    }
    return null;
  }

  /** The newest event of $all of this type (a type of ours), read back from the end; null if none. */
  async lastOfType(type: string): Promise<RecordedEvent | null> {
    for await (const { event } of eventsOf(this.client.readAll({ direction: BACKWARDS, fromPosition: END }))) {
      if (event && !isSystemEvent(event) && event.type === type) return this.recorded(event);
    }
    return null;
  }

  /** A chain's head as sealed: its chain stream's last batch (events recorded since are not in it yet). */
  private async readChainHead(chainId: string): Promise<{ head: string; position: number; events: number } | null> {
    const last = await this.lastOfStream(chainStreamOf(chainId));
    if (last === null || last.type !== CHAIN_SEALED) return null;
    const sealed = last.data as ChainSealed;
    return { head: sealed.head, position: sealed.toPosition, events: sealed.events };
  }

  async headPosition(): Promise<number> {
    const read = this.client.readAll({ direction: BACKWARDS, fromPosition: END });
    for await (const { event } of eventsOf(read)) {
      if (event && !isSystemEvent(event)) return this.recorded(event).position;
    }
    return 0;
  }

  async *subscribe(after: number, signal: AbortSignal): AsyncIterable<RecordedEvent[]> {
    checkPortPosition(after);
    if (signal.aborted || this.closed) return;
    const fromPosition = await this.startAfter(after);
    if (signal.aborted || this.closed) return;
    // The server moves the subscription from catch-up to live itself, so nothing falls in between.
    // It starts after `fromPosition` (exclusive), which is `after` or an event before it.
    const subscription = this.client.subscribeToAll(
      { fromPosition, filter: excludeSystemEvents() },
      { highWaterMark: BATCH_SIZE },
    );
    // Cancelling ends the subscription's stream, which ends the loop below. A call that failed to
    // start has nothing to cancel; its error reaches the loop.
    const stop = (): void => void subscription.unsubscribe().catch(() => undefined);
    signal.addEventListener('abort', stop, { once: true });
    let last = after;
    let batch: RecordedEvent[] = [];
    try {
      for await (const { event } of subscription) {
        if (signal.aborted || this.closed) break;
        // The filter matches event types only; stream names are checked here.
        if (event && !isSystemEvent(event)) {
          const recorded = this.recorded(event);
          if (recorded.position > last) {
            batch.push(recorded);
            last = recorded.position;
          }
        }
        // Hand over what has arrived once the buffer is drained: no delay when live, and bigger
        // batches when the consumer falls behind.
        if (batch.length > 0 && (subscription.readableLength === 0 || batch.length >= BATCH_SIZE)) {
          yield batch;
          batch = [];
        }
      }
    } finally {
      signal.removeEventListener('abort', stop);
      await subscription.unsubscribe();
    }
    // Consumers rely on the subscription lasting until they abort it.
    if (!signal.aborted && !this.closed) throw new Error('EventStoreDB ended the subscription');
  }

  /**
   * Null while appends succeed. After one failed for a reason of the server (see isStoreFailure),
   * each call appends a `WriteProbed` event to WRITE_PROBE_STREAM, once, within PROBE_DEADLINE_MS
   * (one probe at a time, shared by concurrent callers): null again as soon as the server takes it.
   */
  async appendFailure(): Promise<Error | null> {
    if (this.failure === null || this.closed) return this.failure;
    this.probing ??= this.probe().finally(() => (this.probing = null));
    return this.probing;
  }

  private async probe(): Promise<Error | null> {
    const event = jsonEvent({ id: randomUUID(), type: 'WriteProbed', data: { probedAt: Date.now() } });
    try {
      await this.client.appendToStream(WRITE_PROBE_STREAM, event, {
        expectedRevision: ANY,
        credentials: this.options.appendCredentials,
        deadline: PROBE_DEADLINE_MS,
      });
      this.failure = null;
    } catch (raw) {
      const error: unknown = raw instanceof Error ? convertToCommandError(raw) : raw;
      this.failure = error instanceof Error ? error : new Error(String(error));
    }
    return this.failure;
  }

  /**
   * The first `LogIdentified` event's id, written now if the log has none. Read each time it is
   * asked (at start and when the read models are checked again), so that a client pointed at another
   * database answers that database's. Two processes identifying a new log at once: one append wins
   * (the stream must not exist), and both read the winner's.
   */
  async logId(): Promise<string> {
    const found = await this.readLogId();
    if (found !== null) return found;
    try {
      await this.append(
        LOG_IDENTITY_STREAM,
        [{ type: 'LogIdentified', data: { logId: randomUUID(), identifiedAt: Date.now() } }],
        'no_stream',
      );
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
    }
    const identity = await this.readLogId();
    if (identity === null) throw new Error(`the stream ${LOG_IDENTITY_STREAM} holds no log identity`);
    return identity;
  }

  async readLogId(): Promise<string | null> {
    const [first] = await this.readStream(LOG_IDENTITY_STREAM);
    return (first?.data as { logId?: string } | undefined)?.logId ?? null;
  }

  /**
   * Disposing cancels every open call, which also ends running subscriptions. Client 6.2.1 waits
   * for each of its calls to end; a call that does not (see `eventsOf`) must not keep a stopping
   * process alive, so the wait is bounded.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.closeDeadlineMs)));
    try {
      await Promise.race([this.client.dispose(), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }
}
