import { revisionWentBack, WrongExpectedRevisionError } from '../../src/eventstore/event-store';
import { appendLandedBehind, judgeLogContinuity } from '../../src/projections/log-continuity';

describe('the log a running gateway writes to is the log its read models describe', () => {
  const followed = { logId: 'log-a', applied: 900 };

  it('given the same log at or past what was applied, then the same', () => {
    expect(judgeLogContinuity(followed, { logId: 'log-a', head: 900 })).toEqual({ same: true });
    expect(judgeLogContinuity(followed, { logId: 'log-a', head: 1_400 })).toEqual({ same: true });
  });

  it('given a log with no identity (an EventStoreDB node restarted empty), then replaced, naming the log followed', () => {
    expect(judgeLogContinuity(followed, { logId: null, head: 0 })).toEqual({
      same: false,
      reason: 'the log holds no identity (emptied?); the read models describe log log-a',
    });
  });

  it('given another log, wherever its head is, then replaced, naming both', () => {
    const reason = 'the log is log-b; the read models describe log log-a';
    expect(judgeLogContinuity(followed, { logId: 'log-b', head: 5_000 })).toEqual({ same: false, reason });
    expect(judgeLogContinuity(followed, { logId: 'log-b', head: 10 })).toEqual({ same: false, reason });
  });

  it('given the same log behind what was applied (restored from an older backup), then replaced', () => {
    expect(judgeLogContinuity(followed, { logId: 'log-a', head: 899 })).toEqual({
      same: false,
      reason: "the log's head 899 is behind the 900 applied here (events lost: restored from an older backup?)",
    });
  });
});

describe('an append that landed behind what was applied', () => {
  it('given a position past every event applied, then on the log followed; at or before one, then on another', () => {
    expect(appendLandedBehind(901, 900)).toBe(false);
    expect(appendLandedBehind(900, 900)).toBe(true);
    expect(appendLandedBehind(12, 900)).toBe(true);
  });
});

describe('an append that finds its stream gone back', () => {
  const conflict = (expected: number | 'no_stream' | 'any', actual: number | 'no_stream') =>
    new WrongExpectedRevisionError('reservation-1', expected, actual);

  it('given a stream behind the revision expected, or gone, then it went back', () => {
    expect(revisionWentBack(conflict(3, 1))).toBe(true);
    expect(revisionWentBack(conflict(0, 'no_stream'))).toBe(true);
  });

  it('given a stream moved on by another writer, or one that exists when none was expected, then an ordinary conflict', () => {
    expect(revisionWentBack(conflict(3, 4))).toBe(false);
    expect(revisionWentBack(conflict('no_stream', 0))).toBe(false);
  });
});
