import type { RequestLogEntry } from './read-models';

/**
 * An organization's request log in this process: the newest `retention` entries in a ring (a push
 * never shifts the others), and an index by id (the request's, and its host's id for the reply) that
 * forgets an entry when the ring drops it. Two entries may share an id (a client's own x-request-id):
 * the index finds the newest. The index is
 * made by the first lookup and kept from then on, so a replay that looks nothing up never pays for it.
 */
export class RequestLog {
  private readonly ring: RequestLogEntry[] = [];
  /** Where the next entry goes once the ring is full: the oldest entry's slot. */
  private next = 0;
  private byId: Map<string, RequestLogEntry> | null = null;

  constructor(private readonly retention: number) {}

  push(entry: RequestLogEntry): void {
    if (this.ring.length < this.retention) this.ring.push(entry);
    else {
      const dropped = this.ring[this.next];
      if (this.byId) forget(this.byId, dropped);
      this.ring[this.next] = entry;
      this.next = (this.next + 1) % this.retention;
    }
    if (this.byId) index(this.byId, entry);
  }

  find(requestId: string): RequestLogEntry | null {
    if (this.byId === null) {
      this.byId = new Map();
      // Oldest first: of two entries with one id, the newer is set last.
      for (const entry of this.oldestFirst()) index(this.byId, entry);
    }
    return this.byId.get(requestId) ?? null;
  }

  /** Newest first, at most `limit`. */
  newest(limit: number): RequestLogEntry[] {
    const count = Math.min(limit, this.ring.length);
    const entries = new Array<RequestLogEntry>(count);
    for (let i = 0; i < count; i++) entries[i] = this.ring[(this.next - 1 - i + this.ring.length) % this.ring.length];
    return entries;
  }

  /** Every entry, oldest first (a new array: later pushes do not change it). */
  oldestFirst(): RequestLogEntry[] {
    return [...this.ring.slice(this.next), ...this.ring.slice(0, this.next)];
  }
}

/** The ids an entry is found by: its request's, and its host's for the reply when known. */
function index(byId: Map<string, RequestLogEntry>, entry: RequestLogEntry): void {
  byId.set(entry.requestId, entry);
  if (entry.upstreamId !== undefined) byId.set(entry.upstreamId, entry);
}

function forget(byId: Map<string, RequestLogEntry>, dropped: RequestLogEntry): void {
  if (byId.get(dropped.requestId) === dropped) byId.delete(dropped.requestId);
  if (dropped.upstreamId !== undefined && byId.get(dropped.upstreamId) === dropped) byId.delete(dropped.upstreamId);
}
