import type { TestGateway } from '../support/gateway';
import { LeveledLines } from '../support/leveled-lines';
import { hasRedisServer } from '../support/own-redis';
import { gatewayOnOwnRedis, GatewayOnOwnRedis } from '../support/gateway-on-own-redis';

/**
 * A clock the test moves by hand, counting its reads: the sweeper reads it once per failed sweep
 * (and once when sweeping again), so awaiting reads is awaiting failed sweeps.
 */
class StepClock {
  private at = 0;
  private reads = 0;
  private waiters: Array<{ reads: number; wake: () => void }> = [];

  readonly now = (): number => {
    this.reads += 1;
    this.waiters = this.waiters.filter((w) => (this.reads >= w.reads ? (w.wake(), false) : true));
    return this.at;
  };

  get count(): number {
    return this.reads;
  }

  advance(ms: number): void {
    this.at += ms;
  }

  /** Resolves once the clock has been read `reads` times in all. */
  readAtLeast(reads: number): Promise<void> {
    if (this.reads >= reads) return Promise.resolve();
    return new Promise((wake) => this.waiters.push({ reads, wake }));
  }
}

/** `gateway_sweeps_failed_total` in a scrape (its one sample). */
function sweepsFailed(scrape: string): number {
  const sample = scrape.split('\n').find((line) => line.startsWith('gateway_sweeps_failed_total '));
  expect(sample).toBeDefined();
  return Number(sample!.split(' ')[1]);
}

/**
 * The sweeper while Redis (a server of the test's own, killed under the gateway) is away: one
 * error line at the first failed sweep, then at most one a minute counting the sweeps failed since,
 * one info line when it sweeps again; the outage itself is on /health/ready and /metrics, and every
 * failed sweep in `gateway_sweeps_failed_total`.
 */
(hasRedisServer ? describe : describe.skip)('the sweeper through a Redis outage', () => {
  let own: GatewayOnOwnRedis;
  let g: TestGateway;
  const lines = new LeveledLines();
  const clock = new StepClock();
  const sweeperErrors = () => lines.lines.filter((l) => l.level === 'error' && l.line.startsWith('sweeper: '));

  beforeAll(async () => {
    own = await gatewayOnOwnRedis({
      sweep: true,
      env: { SWEEP_INTERVAL_MS: '20' },
      runtimeLog: lines,
      sweepFailureClock: clock.now,
    });
    g = own.g;
  });
  afterAll(() => own.close());

  it('says the first failure at error, then a line a minute at most with the count, and once when it sweeps again', async () => {
    // Sweeping as it should: nothing said, the clock never read, no sweep failed.
    expect(sweeperErrors()).toEqual([]);
    expect(clock.count).toBe(0);
    expect(sweepsFailed(await (await fetch(`${g.baseUrl}/metrics`)).text())).toBe(0);

    await own.stopRedis();
    await lines.waitFor((l) => l.level === 'error' && /^sweeper: Redis: /.test(l.line));
    // Five more sweeps fail within the minute: not a line for them.
    await clock.readAtLeast(clock.count + 5);
    expect(sweeperErrors()).toHaveLength(1);

    // What alerting watches shows the outage meanwhile: readiness and the store gauge.
    const ready = await fetch(`${g.baseUrl}/health/ready`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { reasons: string[] }).reasons).toContainEqual(
      expect.stringMatching(/^read models: their store does not answer \(Redis: /),
    );
    const scrape = await (await fetch(`${g.baseUrl}/metrics`)).text();
    expect(scrape.split('\n')).toContain('gateway_read_model_store_up 0');
    // Every failed sweep counted, not only those said: the clock has been read once for each so far.
    expect(sweepsFailed(scrape)).toBeGreaterThanOrEqual(6);

    // A minute on: the next failed sweep's line counts the sweeps failed since the first.
    clock.advance(60_000);
    const second = await lines.waitFor((l) => l.level === 'error' && / \(still failing: /.test(l.line));
    const counted = /^sweeper: Redis: .* \(still failing: (\d+) sweeps failed since the last line, (\d+) in 60 s\)$/.exec(
      second.line,
    );
    expect(counted).not.toBeNull();
    expect(Number(counted![1])).toBeGreaterThanOrEqual(5);
    // Every failure but the first line's.
    expect(Number(counted![2])).toBe(Number(counted![1]) + 1);

    // Short of a minute after that line: nothing more, however many fail.
    clock.advance(59_999);
    await clock.readAtLeast(clock.count + 5);
    expect(sweeperErrors()).toHaveLength(2);

    // Redis back: one info line, once a sweep does its work again.
    await own.startRedis();
    const back = await lines.waitFor((l) => l.level === 'info' && l.line.startsWith('sweeper: '), 30_000);
    expect(back.line).toMatch(/^sweeper: sweeping again, after \d+ failed sweeps in 120 s$/);
    // The counter holds every failed sweep the line counts (a counter: it does not fall back when sweeping again).
    const failedInAll = Number(/after (\d+) failed sweeps/.exec(back.line)![1]);
    expect(sweepsFailed(await (await fetch(`${g.baseUrl}/metrics`)).text())).toBe(failedInAll);
  });
});
