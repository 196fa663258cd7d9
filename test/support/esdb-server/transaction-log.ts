import { randomUUID } from 'node:crypto';

/**
 * The data of an in-memory EventStoreDB node: its transaction log, shared by every node of a test
 * cluster (replication is instant here; what the tests look at is who takes writes).
 *
 * As in the real server (docs: "Positions in EventStoreDB"), an event's position in $all is the
 * byte offset of its record in the transaction file, so positions are far apart and most numbers
 * are nobody's. An event appended through gRPC is committed at its own record: commit == prepare.
 */

export interface ProposedEvent {
  id: string;
  type: string;
  contentType: string;
  data: Uint8Array;
  metadata: Uint8Array;
}

export interface StoredEvent extends ProposedEvent {
  streamId: string;
  revision: bigint;
  /** Commit and prepare position (equal). */
  position: bigint;
  /** 100-nanosecond ticks since the Unix epoch, as the server sends `created`. */
  created: bigint;
}

/** Where the first record starts: the chunk header comes first (a 128-byte header in the real file). */
const FIRST_POSITION = 128n;
/** A prepare record's fixed part: header, ids, flags, timestamps (about this in the real format). */
const RECORD_OVERHEAD = 90n;

export class TransactionLog {
  readonly events: StoredEvent[] = [];
  private readonly streams = new Map<string, StoredEvent[]>();
  private readonly positions = new Map<bigint, number>();
  private readonly listeners = new Set<(event: StoredEvent) => void>();
  /** Where the next record goes; also the log's end, a valid place to read from. */
  end = FIRST_POSITION;

  constructor() {
    // What a fresh node writes for itself before any client does (insecure or not): its settings
    // and its default users. Records of the server's own, interleaved with ours from the start.
    this.write('$settings', [systemEvent('$settings', { $userStreamAcl: { $r: '$all', $w: '$all' } })]);
    for (const user of ['admin', 'ops']) {
      this.write('$users', [systemEvent('$User', user)]);
      this.write(`$user-${user}`, [systemEvent('$UserCreated', { loginName: user })]);
    }
  }

  stream(streamId: string): readonly StoredEvent[] {
    return this.streams.get(streamId) ?? [];
  }

  /** -1 for no stream. */
  lastRevision(streamId: string): bigint {
    const events = this.streams.get(streamId);
    return events ? events[events.length - 1].revision : -1n;
  }

  /** The index in `events` of the event recorded at exactly `position`; -1 if none starts there. */
  indexAt(position: bigint): number {
    return this.positions.get(position) ?? -1;
  }

  /** The index of the first event at or after `position` (events.length past the end). */
  firstIndexFrom(position: bigint): number {
    let low = 0;
    let high = this.events.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (this.events[middle].position < position) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  write(streamId: string, proposed: ProposedEvent[]): StoredEvent[] {
    let revision = this.lastRevision(streamId);
    const written = proposed.map((event) => {
      revision += 1n;
      const stored: StoredEvent = {
        ...event,
        streamId,
        revision,
        position: this.end,
        created: BigInt(Date.now()) * 10_000n,
      };
      this.end +=
        RECORD_OVERHEAD +
        BigInt(Buffer.byteLength(streamId) + Buffer.byteLength(event.type) + event.data.length + event.metadata.length);
      this.positions.set(stored.position, this.events.length);
      this.events.push(stored);
      const events = this.streams.get(streamId) ?? [];
      events.push(stored);
      this.streams.set(streamId, events);
      return stored;
    });
    for (const event of written) for (const listener of [...this.listeners]) listener(event);
    return written;
  }

  /**
   * Tampering, for tests: the event recorded at `position` taken out of $all and its stream, as
   * someone editing the node's files would (the others keep their positions and revisions).
   */
  remove(position: bigint): void {
    const index = this.indexAt(position);
    if (index < 0) throw new Error(`no event at ${position}`);
    const [removed] = this.events.splice(index, 1);
    const stream = this.streams.get(removed.streamId)!;
    stream.splice(stream.indexOf(removed), 1);
    this.positions.delete(position);
    for (let i = index; i < this.events.length; i++) this.positions.set(this.events[i].position, i);
  }

  /** Calls `listener` with every event written from now on, until the returned function is called. */
  listen(listener: (event: StoredEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

export function systemEvent(type: string, data: unknown): ProposedEvent {
  return {
    id: randomUUID(),
    type,
    contentType: 'application/json',
    data: Buffer.from(JSON.stringify(data)),
    metadata: new Uint8Array(),
  };
}
