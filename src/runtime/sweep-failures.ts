import type { RuntimeLog } from '../runtime-log/runtime-log';

/** At most one line per this long while sweeps keep failing. */
export const SWEEP_FAILURE_LINE_EVERY_MS = 60_000;

/**
 * What the sweeper says of sweeps that fail (the reservations due are not expired: their credits
 * stay held) without a line a sweep, which is one a second while Redis is away: the first failure
 * at error, then at most one error line a minute while the failures last, counting the sweeps
 * failed since the line before, and one info line when a sweep succeeds again. `clock` is read only
 * while failing (tests give their own).
 */
export class SweepFailures {
  private failing: { since: number; failed: number; unsaid: number; saidAt: number } | null = null;
  private failedEver = 0;

  constructor(
    private readonly log: RuntimeLog,
    private readonly clock: () => number = Date.now,
    private readonly everyMs = SWEEP_FAILURE_LINE_EVERY_MS,
  ) {}

  /** Sweeps failed since the sweeper started, every one (the lines are throttled, this is not): for the metric. */
  get total(): number {
    return this.failedEver;
  }

  /** A sweep failed, for `reason` (the failure's text, its store named). */
  failed(reason: string): void {
    this.failedEver += 1;
    const now = this.clock();
    const f = this.failing;
    if (f === null) {
      this.failing = { since: now, failed: 1, unsaid: 0, saidAt: now };
      this.log.error(`sweeper: ${reason}`);
      return;
    }
    f.failed += 1;
    f.unsaid += 1;
    if (now - f.saidAt < this.everyMs) return;
    this.log.error(
      `sweeper: ${reason} (still failing: ${f.unsaid} sweeps failed since the last line, ${f.failed} in ${seconds(now - f.since)} s)`,
    );
    f.unsaid = 0;
    f.saidAt = now;
  }

  /** A sweep did its work: said once, when sweeps had been failing. */
  succeeded(): void {
    const f = this.failing;
    if (f === null) return;
    this.failing = null;
    this.log.info(`sweeper: sweeping again, after ${f.failed} failed sweeps in ${seconds(this.clock() - f.since)} s`);
  }
}

const seconds = (ms: number) => Math.round(ms / 1000);
