/**
 * Positions in EventStoreDB and the port's numbers, with no client and no I/O.
 *
 * EventStoreDB addresses an event of $all by {commit, prepare}: byte offsets of records in its
 * transaction file. Every append made through gRPC is an implicit transaction whose events are
 * each committed at their own record, so for our events commit == prepare, and that offset is the
 * port's position. Only an exact pair read from the server may be sent back: any other number
 * points into the middle of a record, which the server refuses (or worse, misreads). So a number
 * the port is given is sent as a position only once it is known to be an event's; otherwise the
 * read starts from an event found at or before it (see `EventStoreDbEventStore`).
 */

/** An exact position as the client carries it. */
export interface EsdbPosition {
  commit: bigint;
  prepare: bigint;
}

/** A position from the server that breaks what the port promises: the read or append stops. */
export class EventStorePositionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EventStorePositionError';
  }
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * The port's position of an event the server sent: commit and prepare present, > 0, equal, and
 * within the safe-integer range. The client (6.x) fills a missing position with zeros (its
 * generated getters default to "0"), so zero counts as missing.
 */
export function toPortPosition(position: EsdbPosition | undefined, what: string): number {
  if (!position || position.commit <= 0n || position.prepare <= 0n) {
    throw new EventStorePositionError(`${what}: EventStoreDB sent no position (EventStoreDB 22.6 or later is required)`);
  }
  if (position.commit !== position.prepare) {
    throw new EventStorePositionError(
      `${what}: commit position ${position.commit} differs from prepare position ${position.prepare}; ` +
        'events written in explicit transactions (the legacy TCP API) are not supported: use a database of its own for the gateway',
    );
  }
  if (position.commit > MAX_SAFE) {
    throw new EventStorePositionError(
      `${what}: position ${position.commit} is beyond ${Number.MAX_SAFE_INTEGER}, the largest the gateway can hold`,
    );
  }
  return Number(position.commit);
}

/** Checks a position the port was given: a safe integer ≥ 0. */
export function checkPortPosition(after: number): number {
  if (!Number.isSafeInteger(after) || after < 0) throw new RangeError(`position must be a safe integer ≥ 0, got ${after}`);
  return after;
}

/** The exact position of an event whose port position is `position` (commit == prepare). */
export const exactPosition = (position: number): EsdbPosition => ({ commit: BigInt(position), prepare: BigInt(position) });

/**
 * Where to start reading to get what follows `after`: from the beginning (nothing can be at or
 * before it), from an event's exact position (a number known to be one), or unknown: find the
 * newest event at or before `after` on the server first.
 */
export type StartPlan = { from: 'start' } | { from: 'exact'; position: number } | { from: 'search' };

export function planStart(after: number, known: KnownPositions): StartPlan {
  checkPortPosition(after);
  if (after === 0) return { from: 'start' };
  if (known.has(after)) return { from: 'exact', position: after };
  return { from: 'search' };
}

/**
 * An event found while searching back from the end of $all: the newest one at or before `after` is
 * the place to start. Events of $all are ordered by commit position; any event's exact pair (ours
 * or the server's own) is a valid place to start.
 */
export const isAnchorFor = (after: number, position: EsdbPosition): boolean => position.commit <= BigInt(after);

/**
 * Positions known to be events' exact positions (read or appended by this process): bounded, the
 * oldest forgotten first. Reads usually resume from the last event of the previous read, so this
 * saves the search for a starting point on every read.
 */
export class KnownPositions {
  private readonly positions = new Set<number>();

  constructor(private readonly limit = 100_000) {}

  add(position: number): void {
    if (this.positions.has(position)) return;
    this.positions.add(position);
    if (this.positions.size > this.limit) {
      const oldest = this.positions.values().next().value as number;
      this.positions.delete(oldest);
    }
  }

  has(position: number): boolean {
    return this.positions.has(position);
  }

  get size(): number {
    return this.positions.size;
  }
}
