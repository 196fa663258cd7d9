import { randomUUID } from 'node:crypto';
import {
  AccessDeniedError,
  AppendResult,
  DeadlineExceededError,
  END,
  EventData,
  MaxAppendSizeExceededError,
  Position,
  ReadPosition,
  RecordedEvent,
  START,
  StreamNotFoundError,
  UnavailableError,
  WrongExpectedVersionError,
} from '@eventstore/db-client';
import type { EsdbClient } from '../../src/eventstore/eventstoredb-event-store';

/**
 * A model of the EventStoreDB server as the adapter sees it through client 6.x, with no network:
 * a transaction file where each event's position is the byte offset of its record (so positions
 * are far apart and most numbers are nobody's), system events mixed in, idempotent appends by
 * event id, and reads of $all that accept only an exact event position (anything else is recorded
 * and refused, as the server refuses it). Faults can be queued for the next appends.
 */
export type AppendFault =
  | 'unknown-after-commit' // written, then the reply is lost (deadline exceeded)
  | 'unknown-before-commit' // nothing written, connection lost
  | 'access-denied'
  | 'too-large';

interface StoredEvent {
  streamId: string;
  id: string;
  revision: bigint;
  type: string;
  data: unknown;
  position: Position;
  created: Date;
}

type Read = { event?: RecordedEvent };

/** A read or subscription as the client hands it out: async-iterable, cancellable. */
class SimulatedRead {
  private readonly queue: Read[] = [];
  private waiting: (() => void) | null = null;
  private ended = false;
  private failure: Error | null = null;

  constructor(private readonly onEnd: (read: SimulatedRead) => void = () => {}) {}

  push(item: Read): void {
    if (this.ended) return;
    this.queue.push(item);
    this.wake();
  }

  end(failure: Error | null = null): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = failure;
    this.onEnd(this);
    this.wake();
  }

  private wake(): void {
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.();
  }

  get readableLength(): number {
    return this.queue.length;
  }

  async cancel(): Promise<void> {
    this.end();
  }

  async unsubscribe(): Promise<void> {
    this.end();
  }

  /** As a Node stream's `iterator()`; the simulated read holds nothing to release when left early. */
  iterator(): AsyncGenerator<Read> {
    return this[Symbol.asyncIterator]();
  }

  on(): this {
    return this;
  }

  resume(): this {
    return this;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Read> {
    for (;;) {
      const next = this.queue.shift();
      if (next) {
        yield next;
        continue;
      }
      if (this.ended) {
        if (this.failure) throw this.failure;
        return;
      }
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
  }
}

export class SimulatedEventStoreDb implements EsdbClient {
  readonly log: StoredEvent[] = [];
  /** Positions sent that are not an event's exact position (each was refused). */
  readonly invalidPositions: unknown[] = [];
  /** Every append as it reached the server. */
  readonly appends: Array<{ streamId: string; ids: string[]; credentials: unknown }> = [];
  readonly reads = { all: 0, stream: 0 };
  /** Faults for the next appends, in order. */
  readonly faults: AppendFault[] = [];
  /** How positions are reported: 'zeros' as client 6.x fills a missing one, 'transaction' with commit after prepare. */
  positions: 'exact' | 'zeros' | 'transaction' = 'exact';
  private next = 1_000n;
  private readonly live = new Set<SimulatedRead>();

  constructor(options: { systemEvents?: boolean } = {}) {
    if (options.systemEvents ?? true) this.write('$stats-127.0.0.1:2113', [{ type: '$statsCollected', data: {}, id: 'x' }]);
  }

  /** Writes events the way the server's own processes do ($stats and the like), between ours. */
  systemEvent(): void {
    this.write('$stats-127.0.0.1:2113', [{ type: '$statsCollected', data: { at: this.next.toString() }, id: 'x' }]);
  }

  private revisionOf(streamId: string): bigint | 'no_stream' {
    let last: bigint | 'no_stream' = 'no_stream';
    for (const e of this.log) if (e.streamId === streamId) last = e.revision;
    return last;
  }

  private write(streamId: string, events: Array<{ type: string; data: unknown; id: string }>): StoredEvent[] {
    const current = this.revisionOf(streamId);
    let revision = current === 'no_stream' ? -1n : current;
    const written = events.map((e) => {
      revision += 1n;
      const position = this.next;
      // A record's size: header and body, never 1.
      this.next += 100n + BigInt(JSON.stringify(e.data).length);
      const stored: StoredEvent = {
        ...e,
        streamId,
        revision,
        position: { commit: position, prepare: position },
        created: new Date(),
      };
      this.log.push(stored);
      return stored;
    });
    for (const stored of written) for (const read of this.live) this.deliver(read, stored);
    return written;
  }

  private deliver(read: SimulatedRead & { filterSystem?: boolean }, stored: StoredEvent): void {
    if (read.filterSystem && stored.type.startsWith('$')) return;
    read.push({ event: this.recorded(stored) });
  }

  private recorded(stored: StoredEvent): RecordedEvent {
    const { commit } = stored.position;
    const position =
      this.positions === 'zeros'
        ? { commit: 0n, prepare: 0n }
        : this.positions === 'transaction'
          ? { commit: commit + 50n, prepare: commit }
          : { commit, prepare: commit };
    return {
      streamId: stored.streamId,
      id: stored.id,
      revision: stored.revision,
      type: stored.type,
      data: stored.data as never,
      metadata: undefined as never,
      isJson: true,
      created: stored.created,
      position,
    };
  }

  /** The index of the event at an exact position; a refusal for anything else. */
  private indexAt(position: Position): number {
    const index = this.log.findIndex((e) => e.position.commit === position.commit && e.position.prepare === position.prepare);
    if (index < 0) {
      this.invalidPositions.push(position);
      throw new Error(`invalid position ${position.commit}/${position.prepare}`);
    }
    return index;
  }

  appendToStream = (async (
    streamId: string,
    event: EventData | EventData[],
    options: { expectedRevision?: bigint | 'any' | 'no_stream' | 'stream_exists'; credentials?: unknown } = {},
  ): Promise<AppendResult> => {
    const events = Array.isArray(event) ? event : [event];
    const ids = events.map((e) => e.id);
    this.appends.push({ streamId, ids, credentials: options.credentials });
    const fault = this.faults.shift();
    if (fault === 'unknown-before-commit') throw new UnavailableError(undefined, 'connection lost');
    if (fault === 'access-denied') throw new AccessDeniedError(undefined, 'access denied');
    if (fault === 'too-large') throw new MaxAppendSizeExceededError(undefined, 1_048_576);
    const expected = options.expectedRevision ?? 'any';
    const current = this.revisionOf(streamId);
    const ours = this.log.filter((e) => e.streamId === streamId);
    // Idempotent: the events the append would write are there, with its ids.
    if (expected !== 'any' && expected !== 'stream_exists') {
      const first = expected === 'no_stream' ? 0 : Number(expected) + 1;
      const there = ours.slice(first, first + ids.length);
      if (there.length > 0 && there.every((e, i) => e.id === ids[i])) {
        if (there.length !== ids.length)
          throw new WrongExpectedVersionError(undefined, { streamName: streamId, current, expected });
        // The server answers a recognised repeat without a position.
        return { success: true, nextExpectedRevision: there[there.length - 1].revision, position: undefined };
      }
      const matches = expected === 'no_stream' ? current === 'no_stream' : current === expected;
      if (!matches) throw new WrongExpectedVersionError(undefined, { streamName: streamId, current, expected });
    }
    const written = this.write(
      streamId,
      events.map((e) => ({ type: e.type, data: e.data, id: e.id })),
    );
    if (fault === 'unknown-after-commit') throw new DeadlineExceededError(undefined, 'deadline exceeded');
    // Reported by one position, the first event's: not the last one's when there are several.
    return { success: true, nextExpectedRevision: written[written.length - 1].revision, position: written[0].position };
  }) as EsdbClient['appendToStream'];

  readStream = ((streamId: string, options: { fromRevision?: bigint; maxCount?: number } = {}) => {
    this.reads.stream += 1;
    const read = new SimulatedRead();
    const events = this.log.filter((e) => e.streamId === streamId);
    if (events.length === 0) read.end(new StreamNotFoundError(undefined, streamId));
    else {
      const from = options.fromRevision ?? 0n;
      for (const e of events.filter((x) => x.revision >= from).slice(0, options.maxCount ?? Infinity))
        read.push({ event: this.recorded(e) });
      read.end();
    }
    return read;
  }) as unknown as EsdbClient['readStream'];

  readAll = ((options: { fromPosition?: ReadPosition; direction?: 'forwards' | 'backwards'; maxCount?: number } = {}) => {
    this.reads.all += 1;
    const read = new SimulatedRead();
    const from = options.fromPosition ?? START;
    let events: StoredEvent[];
    try {
      if (options.direction === 'backwards') {
        // Backwards from a position: the events before it.
        const end = from === END ? this.log.length : from === START ? 0 : this.indexAt(from);
        events = this.log.slice(0, end).reverse();
      } else {
        // Forwards from a position: that event and those after it.
        const start = from === START ? 0 : from === END ? this.log.length : this.indexAt(from);
        events = this.log.slice(start);
      }
    } catch (error) {
      read.end(error as Error);
      return read;
    }
    for (const e of events.slice(0, options.maxCount ?? Infinity)) read.push({ event: this.recorded(e) });
    read.end();
    return read;
  }) as unknown as EsdbClient['readAll'];

  subscribeToAll = ((options: { fromPosition?: ReadPosition } = {}) => {
    const read = new SimulatedRead((r) => this.live.delete(r)) as SimulatedRead & { filterSystem?: boolean };
    read.filterSystem = true;
    const from = options.fromPosition ?? START;
    let start = 0;
    try {
      // Subscriptions start after their position.
      start = from === START ? 0 : from === END ? this.log.length : this.indexAt(from) + 1;
    } catch (error) {
      read.end(error as Error);
      return read;
    }
    for (const e of this.log.slice(start)) this.deliver(read, e);
    this.live.add(read);
    return read;
  }) as unknown as EsdbClient['subscribeToAll'];

  /** Stream metadata: the last `$metadata` event of `$$name`, as the client reads it. */
  getStreamMetadata = (async (streamName: string) => {
    const last = this.log.filter((e) => e.streamId === `$$${streamName}`).at(-1);
    if (!last) return { streamName };
    const { $maxAge, $maxCount } = last.data as { $maxAge?: number; $maxCount?: number };
    return { streamName, metadata: { maxAge: $maxAge, maxCount: $maxCount }, metastreamRevision: last.position.commit };
  }) as unknown as EsdbClient['getStreamMetadata'];

  setStreamMetadata = (async (streamName: string, metadata: { maxAge?: number; maxCount?: number }) => {
    const [written] = this.write(`$$${streamName}`, [
      { type: '$metadata', data: { $maxAge: metadata.maxAge, $maxCount: metadata.maxCount }, id: randomUUID() },
    ]);
    return { success: true, nextExpectedRevision: written.revision, position: written.position };
  }) as unknown as EsdbClient['setStreamMetadata'];

  dispose = async (): Promise<void> => {
    for (const read of [...this.live]) read.end();
  };
}
