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
 * The requests under way, for the end of the shutdown's grace period: each still open then is
 * ended instead of having its connection cut under it. The pipeline's (inference, embeddings, token
 * counts) are ended by their use case as `shutdown`: their host call given up, their hold settled
 * for what was delivered (as a client leaving would be) or released, and answered — a 503 in their
 * surface's format, or, once a stream has started, its error event. Every other route's are
 * answered a 503 in their route's format (see http/grace-end.ts).
 */
@Injectable()
export class OpenRequests {
  private readonly enders = new Set<() => void | Promise<unknown>>();
  private over = false;
  /** What the requests ended at the grace period's end are still doing before their ending is in hand. */
  private ending: Promise<unknown> = Promise.resolve();

  /**
   * `end` is called once if the grace period ends while the request is open; when its ending takes
   * more than the call (a host call to give up first), it returns a promise that resolves once its
   * settlement is tracked (InFlightSettlements) or its answer is on its way. Returns what forgets it
   * (the request has ended), or null when the grace period is already over: the request is to end now.
   */
  whileOpen(end: () => void | Promise<unknown>): (() => void) | null {
    if (this.over) return null;
    this.enders.add(end);
    return () => void this.enders.delete(end);
  }

  /** The grace period is over: ends every request under way, and each that reaches its host call from now on. How many it ended. */
  endAll(): number {
    this.over = true;
    const open = [...this.enders];
    this.enders.clear();
    this.ending = Promise.allSettled(open.map((end) => Promise.resolve(end())));
    return open.length;
  }

  /** Resolves once every request endAll ended has its settlement tracked or its answer on its way. */
  ended(): Promise<void> {
    return this.ending.then(() => undefined);
  }
}
