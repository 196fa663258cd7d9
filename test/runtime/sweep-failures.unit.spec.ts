import { SweepFailures } from '../../src/runtime/sweep-failures';
import { LeveledLines } from '../support/leveled-lines';

describe('what the sweeper says of failed sweeps', () => {
  let at: number;
  let lines: LeveledLines;
  let failures: SweepFailures;
  beforeEach(() => {
    at = 1_000_000;
    lines = new LeveledLines();
    failures = new SweepFailures(lines, () => at);
  });
  /** One sweep a second, `n` of them, failing. */
  const failFor = (n: number) => {
    for (let i = 0; i < n; i++) {
      at += 1_000;
      failures.failed('Redis: The client is offline');
    }
  };

  it('says nothing while sweeps succeed', () => {
    failures.succeeded();
    failures.succeeded();
    expect(lines.lines).toEqual([]);
  });

  it('says the first failure at error, then one line a minute counting the sweeps failed since', () => {
    failFor(1);
    expect(lines.lines).toEqual([{ level: 'error', line: 'sweeper: Redis: The client is offline' }]);
    failFor(59);
    expect(lines.lines).toHaveLength(1);
    failFor(1);
    expect(lines.lines[1]).toEqual({
      level: 'error',
      line: 'sweeper: Redis: The client is offline (still failing: 60 sweeps failed since the last line, 61 in 60 s)',
    });
    failFor(59);
    expect(lines.lines).toHaveLength(2);
    failFor(1);
    expect(lines.lines[2].line).toBe(
      'sweeper: Redis: The client is offline (still failing: 60 sweeps failed since the last line, 121 in 120 s)',
    );
  });

  it('says once, at info, that it sweeps again, how many failed and for how long; the next outage starts afresh', () => {
    failFor(90);
    at += 1_000;
    failures.succeeded();
    failures.succeeded();
    expect(lines.lines.filter((l) => l.level === 'info')).toEqual([
      { level: 'info', line: 'sweeper: sweeping again, after 90 failed sweeps in 90 s' },
    ]);
    const before = lines.lines.length;
    failFor(1);
    expect(lines.lines.slice(before)).toEqual([{ level: 'error', line: 'sweeper: Redis: The client is offline' }]);
  });

  it('a failure of a different kind within the minute is counted, not said', () => {
    failFor(1);
    at += 1_000;
    failures.failed('event log: SQLITE_FULL');
    expect(lines.lines).toHaveLength(1);
  });

  it('counts every failed sweep for the metric, said or not, across outages; a success takes nothing off', () => {
    expect(failures.total).toBe(0);
    failFor(90);
    expect(failures.total).toBe(90);
    failures.succeeded();
    expect(failures.total).toBe(90);
    failFor(3);
    expect(failures.total).toBe(93);
  });
});
