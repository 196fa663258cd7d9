import { restartDelayMs } from '../../src/runtime/worker-set';

describe('restarting a worker that died', () => {
  it('restarts at once the first time, then backs off doubling from 100 ms up to 30 s', () => {
    expect([1, 2, 3, 4, 5].map(restartDelayMs)).toEqual([0, 100, 200, 400, 800]);
    expect(restartDelayMs(10)).toBe(25_600);
    expect(restartDelayMs(11)).toBe(30_000);
    expect(restartDelayMs(1_000)).toBe(30_000);
  });
});
