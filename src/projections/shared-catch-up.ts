import { setTimeout as delay } from 'node:timers/promises';

/**
 * A catch-up with the log for requests that cannot be answered until the read models hold what
 * another process wrote a moment ago, shared by whoever asks meanwhile. The function returned
 * resolves (never rejects) once a catch-up begun after it was called has ended: the read models
 * then hold everything the log held when the caller asked, unless `boundMs` ran out first (each
 * catch-up is given that long, the log's head read included).
 *
 * One catch-up runs at a time however many ask. Joining the one under way would not do: it may have
 * read the log's head before the event the caller needs was there. So callers share the next one,
 * begun as soon as the one under way ends; a caller waits at most twice `boundMs`.
 */
export function sharedCatchUp(catchUpNow: (timeoutMs: number) => Promise<void>, boundMs: number): () => Promise<void> {
  let running: Promise<void> | null = null;
  let next: Promise<void> | null = null;
  const begin = (): Promise<void> => {
    const bounded = Promise.race([catchUpNow(boundMs).catch(() => undefined), delay(boundMs, undefined, { ref: false })]);
    running = bounded.finally(() => (running = null));
    return running;
  };
  return () => {
    if (next !== null) return next;
    if (running === null) return begin();
    next = running.then(() => {
      next = null;
      return begin();
    });
    return next;
  };
}
