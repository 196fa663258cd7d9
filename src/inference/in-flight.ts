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
