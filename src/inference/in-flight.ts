import { Injectable, OnApplicationShutdown } from '@nestjs/common';

/**
 * Reservations being resolved: a request whose client has gone is settled after its reply, and
 * shutting down must wait for that (closing the log under it would leave the reservation to
 * expire instead of billing what was delivered). Nest calls the hook once the HTTP server has closed.
 */
@Injectable()
export class InFlightSettlements implements OnApplicationShutdown {
  private readonly pending = new Set<Promise<unknown>>();

  /** Tracks `settling` until it ends; resolves then, whichever way it ended. */
  track(settling: Promise<unknown>): Promise<void> {
    this.pending.add(settling);
    const done = () => void this.pending.delete(settling);
    return settling.then(done, done);
  }

  get size(): number {
    return this.pending.size;
  }

  /** Resolves once no reservation is being resolved. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  onApplicationShutdown(): Promise<void> {
    return this.settled();
  }
}

/**
 * The pipeline's requests under way, for the end of the shutdown's grace period: each still open
 * then is ended as `shutdown` — settled for what it delivered, as a client leaving would be, and
 * answered (a 503 in its surface's format, or, once its stream has started, its error event)
 * instead of having its connection cut under it.
 */
@Injectable()
export class OpenRequests {
  private readonly enders = new Set<() => void>();
  private over = false;

  /**
   * `end` is called once if the grace period ends while the request is open. Returns what forgets it
   * (the request has ended), or null when the grace period is already over: the request is to end now.
   */
  whileOpen(end: () => void): (() => void) | null {
    if (this.over) return null;
    this.enders.add(end);
    return () => void this.enders.delete(end);
  }

  /** The grace period is over: ends every request under way, and each that reaches its host call from now on. How many it ended. */
  endAll(): number {
    this.over = true;
    const open = [...this.enders];
    this.enders.clear();
    for (const end of open) end();
    return open.length;
  }
}
