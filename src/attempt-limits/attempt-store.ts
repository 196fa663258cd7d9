/** How an attempt limit behaves: so many attempts, then a wait that doubles up to a cap. */
export interface AttemptAllowance {
  /** Attempts let through before any wait. */
  attempts: number;
  firstDelayMs: number;
  maxDelayMs: number;
}

/** The wait that follows the `count`th attempt: none within the allowance, then doubling up to the cap. */
export function delayAfter(allowance: AttemptAllowance, count: number): number {
  const { attempts, firstDelayMs, maxDelayMs } = allowance;
  return count < attempts ? 0 : Math.min(maxDelayMs, firstDelayMs * 2 ** (count - attempts));
}

/** delayAfter for the 1st, 2nd… attempt up to the first whose wait every later one repeats (the last stands for them all). */
export function delaySchedule(allowance: AttemptAllowance): number[] {
  const schedule: number[] = [];
  for (let count = 1; ; count++) {
    schedule.push(delayAfter(allowance, count));
    if (count >= allowance.attempts && delayAfter(allowance, count + 1) === schedule[count - 1]) return schedule;
  }
}

/**
 * Counts one attempt is taken on together: `group` holds them (in Redis, one hash tag: one script
 * touches them all); each count has its key, unique within the group, and its allowance.
 */
export interface Attempt {
  group: string;
  counts: Array<{ key: string; allowance: AttemptAllowance }>;
}

/**
 * Attempts counted per key, each one *before* it is evaluated: of any number of attempts arriving
 * at once, exactly the allowance is let through, and the rest are refused at once without being
 * counted (a burst does not lengthen the wait). Once the allowance is used, each further attempt
 * waits, twice as long each time, up to the cap; a key left alone for the cap past its wait starts
 * afresh. Every operation is atomic over all of an attempt's counts. Times are the caller's clock.
 */
export interface AttemptStore {
  /** Takes an attempt on every count at once, or on none: 0 when taken, else the milliseconds to wait. */
  take(attempt: Attempt, now: number): Promise<number>;
  /** An attempt taken that is not to count (it succeeded): given back; a wait it started is lifted. */
  giveBack(attempt: Attempt, now: number): Promise<void>;
  /** Forgets the counts (a success proves the person knows the password). */
  clear(attempt: Attempt): Promise<void>;
}

interface Counted {
  count: number;
  /** Until when further attempts wait. */
  until: number;
  /** When the last attempt was taken. */
  last: number;
  maxDelayMs: number;
}

/** Counts in this process (the service without Redis runs as one). Synchronous inside, so each operation is atomic. */
export class MemoryAttemptStore implements AttemptStore {
  private readonly counted = new Map<string, Counted>();

  take(attempt: Attempt, now: number): Promise<number> {
    const keys = attempt.counts.map(({ key }) => keyOf(attempt, key));
    const wait = Math.max(0, ...keys.map((k) => (this.current(k, now)?.until ?? 0) - now));
    if (wait > 0) return Promise.resolve(wait);
    attempt.counts.forEach(({ allowance }, i) => {
      const count = (this.current(keys[i], now)?.count ?? 0) + 1;
      this.counted.set(keys[i], {
        count,
        until: now + delayAfter(allowance, count),
        last: now,
        maxDelayMs: allowance.maxDelayMs,
      });
    });
    if (this.counted.size > 100_000) this.forgetOld(now);
    return Promise.resolve(0);
  }

  giveBack(attempt: Attempt, now: number): Promise<void> {
    for (const { key, allowance } of attempt.counts) {
      const k = keyOf(attempt, key);
      const entry = this.current(k, now);
      if (!entry) continue;
      const count = entry.count - 1;
      if (count <= 0) this.counted.delete(k);
      else this.counted.set(k, { ...entry, count, until: delayAfter(allowance, count) === 0 ? 0 : entry.until });
    }
    return Promise.resolve();
  }

  clear(attempt: Attempt): Promise<void> {
    for (const { key } of attempt.counts) this.counted.delete(keyOf(attempt, key));
    return Promise.resolve();
  }

  private current(key: string, now: number): Counted | undefined {
    const entry = this.counted.get(key);
    if (entry && stale(entry, now)) {
      this.counted.delete(key);
      return undefined;
    }
    return entry;
  }

  private forgetOld(now: number): void {
    for (const [key, entry] of this.counted) if (stale(entry, now)) this.counted.delete(key);
  }
}

const keyOf = (attempt: Attempt, key: string): string => `${attempt.group}\n${key}`;

const stale = (entry: Counted, now: number): boolean => Math.max(entry.until, entry.last) + entry.maxDelayMs < now;
