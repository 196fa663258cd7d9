import {
  ANY,
  AppendExpectedRevision,
  BACKWARDS,
  END,
  EventStoreDBClient,
  JSONType,
  NO_STREAM,
  ReadPosition,
  RecordedEvent as EsdbRecordedEvent,
  START,
  StreamingRead,
  StreamNotFoundError,
  WrongExpectedVersionError,
  excludeSystemEvents,
  jsonEvent,
} from '@eventstore/db-client';
import { AppendResult, EventStore, ExpectedRevision, NewEvent, RecordedEvent, WrongExpectedRevisionError } from './event-store';

/** Upper bound of a subscription batch, and of the events buffered ahead of the consumer. */
const BATCH_SIZE = 1000;

const toRecorded = (event: EsdbRecordedEvent): RecordedEvent => {
  if (!event.position) throw new Error('EventStoreDB 22.6 or later is required: events carry no position');
  return {
    streamId: event.streamId,
    revision: Number(event.revision),
    // The events of one append share a commit position; the prepare position is each event's own
    // record in the log, so it is unique and increases with every event of $all.
    position: Number(event.position.prepare),
    type: event.type,
    data: event.data,
    // Client 6.x converts the server's ticks to a Date.
    recordedAt: event.created.getTime(),
  };
};

/** Records the server writes for itself ($stats, stream metadata, projection links...), not part of our log. */
const isSystemEvent = (event: EsdbRecordedEvent): boolean => event.type.startsWith('$') || event.streamId.startsWith('$');

/** An event's prepare position is the start of its record, so it is a valid place to resume $all from. */
const readFrom = (after: number): ReadPosition => (after > 0 ? { commit: BigInt(after), prepare: BigInt(after) } : START);

const toExpectedRevision = (expected: ExpectedRevision): AppendExpectedRevision =>
  expected === 'any' ? ANY : expected === 'no_stream' ? NO_STREAM : BigInt(expected);

/** Iterates a read. When the caller stops early, destroying the Node stream alone would leave the call open. */
async function* eventsOf<E>(read: StreamingRead<E>): AsyncGenerator<E> {
  try {
    yield* read;
  } finally {
    await read.cancel();
  }
}

/**
 * The event log in EventStoreDB. Our events are every non-system event of $all, addressed by
 * their prepare position. Client 6.x offers server-side filters on subscriptions only, so reads of
 * $all skip system events here.
 */
export class EventStoreDbEventStore implements EventStore {
  private closed = false;

  private constructor(private readonly client: EventStoreDBClient) {}

  /** The client connects lazily: an unreachable server surfaces on the first operation. */
  static async connect(connectionString: string): Promise<EventStoreDbEventStore> {
    return new EventStoreDbEventStore(EventStoreDBClient.connectionString(connectionString));
  }

  async append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (events.length === 0) throw new Error('append needs at least one event');
    let result;
    try {
      result = await this.client.appendToStream(
        streamId,
        // The client serialises data with JSON.stringify, like the SQLite log; its JSONType is narrower.
        events.map(({ type, data }) => jsonEvent({ type, data: data as JSONType })),
        { expectedRevision: toExpectedRevision(expected) },
      );
    } catch (error) {
      if (error instanceof WrongExpectedVersionError) {
        const actual = typeof error.actualVersion === 'bigint' ? Number(error.actualVersion) : 'no_stream';
        throw new WrongExpectedRevisionError(streamId, expected, actual);
      }
      throw error;
    }
    if (!result.position) throw new Error(`append to ${streamId} returned no position`);
    // The server reports the record of the last appended event in both fields.
    return {
      nextExpectedRevision: Number(result.nextExpectedRevision),
      position: Number(result.position.prepare),
    };
  }

  async readStream(streamId: string): Promise<RecordedEvent[]> {
    const events: RecordedEvent[] = [];
    try {
      for await (const { event } of eventsOf(this.client.readStream(streamId))) {
        if (event) events.push(toRecorded(event));
      }
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw error;
    }
    return events;
  }

  async readAll(after: number, limit: number): Promise<RecordedEvent[]> {
    const events: RecordedEvent[] = [];
    if (limit <= 0) return events;
    // No maxCount: system events are skipped here, so the read stops once `limit` of ours are in.
    for await (const { event } of eventsOf(this.client.readAll({ fromPosition: readFrom(after) }))) {
      if (!event || isSystemEvent(event)) continue;
      const recorded = toRecorded(event);
      // Reads of $all include the event at the starting position.
      if (recorded.position <= after) continue;
      events.push(recorded);
      if (events.length >= limit) break;
    }
    return events;
  }

  async headPosition(): Promise<number> {
    const read = this.client.readAll({ direction: BACKWARDS, fromPosition: END });
    for await (const { event } of eventsOf(read)) {
      if (event && !isSystemEvent(event)) return toRecorded(event).position;
    }
    return 0;
  }

  async *subscribe(after: number, signal: AbortSignal): AsyncIterable<RecordedEvent[]> {
    if (signal.aborted || this.closed) return;
    // The server moves the subscription from catch-up to live itself, so nothing falls in between.
    const subscription = this.client.subscribeToAll(
      { fromPosition: readFrom(after), filter: excludeSystemEvents() },
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
          const recorded = toRecorded(event);
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

  /** Disposing cancels every open call, which also ends running subscriptions. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.client.dispose();
  }
}
