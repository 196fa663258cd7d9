import { readiness } from '../../src/observability/health';

describe('readiness when the log takes no appends', () => {
  const serving = { draining: false, behind: 0, appends: null, store: null, logReplaced: null };

  it('given a log whose appends fail for a reason of its own (a full disk), when asked, then not ready, naming the log and why', () => {
    const state = readiness({ ...serving, appends: new Error('database or disk is full') });
    expect(state).toEqual({ ready: false, reasons: ['event log: it takes no appends (database or disk is full)'] });
  });

  it('given a log that takes appends again, when asked, then ready', () => {
    expect(readiness(serving)).toEqual({ ready: true, reasons: [] });
  });

  it('given a full disk while draining, when asked, then both reasons', () => {
    const state = readiness({ ...serving, draining: true, appends: new Error('database or disk is full') });
    expect(state.reasons).toEqual([
      'draining: the service is shutting down',
      'event log: it takes no appends (database or disk is full)',
    ]);
  });
});

describe('readiness of a worker of a set (WORKERS > 1)', () => {
  const serving = { draining: false, behind: 0, appends: null, store: null, logReplaced: null };

  it('given a worker that serves while another of its set is still starting, when asked, then not ready, saying how many serve', () => {
    expect(readiness({ ...serving, starting: '1 of 2 workers of the set serve' })).toEqual({
      ready: false,
      reasons: ['starting: 1 of 2 workers of the set serve'],
    });
  });

  it('given every worker of the set serving, when asked, then ready', () => {
    expect(readiness({ ...serving, starting: null })).toEqual({ ready: true, reasons: [] });
  });
});
