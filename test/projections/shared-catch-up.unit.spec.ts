import { sharedCatchUp } from '../../src/projections/shared-catch-up';

/** A catch-up the test ends when it likes: each call recorded with its resolve. */
function controlled() {
  const calls: Array<{ end: () => void; fail: (error: Error) => void }> = [];
  const catchUpNow = jest.fn(
    () =>
      new Promise<void>((resolve, reject) => {
        calls.push({ end: resolve, fail: reject });
      }),
  );
  return { calls, catchUpNow };
}

/** Whether `promise` has settled by the time the microtasks queued now have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('a catch-up shared by the requests that need one', () => {
  it('runs one at a time; those who ask while one runs share the next, begun when it ends', async () => {
    const { calls, catchUpNow } = controlled();
    const catchUp = sharedCatchUp(catchUpNow, 60_000);

    const first = catchUp();
    expect(catchUpNow).toHaveBeenCalledTimes(1);
    // Asked while the first runs (it may have read the log's head before what they need): the next one, shared.
    const second = catchUp();
    const third = catchUp();
    expect(second).toBe(third);
    expect(catchUpNow).toHaveBeenCalledTimes(1);

    calls[0].end();
    expect(await settled(first)).toBe(true);
    expect(await settled(second)).toBe(false);
    expect(catchUpNow).toHaveBeenCalledTimes(2);

    // Asked while the second runs: a third, after it.
    const fourth = catchUp();
    calls[1].end();
    expect(await settled(second)).toBe(true);
    expect(await settled(fourth)).toBe(false);
    expect(catchUpNow).toHaveBeenCalledTimes(3);
    calls[2].end();
    expect(await settled(fourth)).toBe(true);

    // None running: the next caller begins one at once.
    const fifth = catchUp();
    expect(catchUpNow).toHaveBeenCalledTimes(4);
    calls[3].end();
    expect(await settled(fifth)).toBe(true);
  });

  it('never rejects: a catch-up that fails lets its callers go on', async () => {
    const { calls, catchUpNow } = controlled();
    const catchUp = sharedCatchUp(catchUpNow, 60_000);
    const asked = catchUp();
    calls[0].fail(new Error('read models did not reach position 7 in time'));
    await expect(asked).resolves.toBeUndefined();
  });

  it('is bounded: a catch-up that never ends lets its callers go on after the bound, and the next begins then', async () => {
    const { catchUpNow } = controlled();
    const catchUp = sharedCatchUp(catchUpNow, 30);
    const started = performance.now();
    await catchUp();
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
    expect(catchUpNow).toHaveBeenCalledWith(30);
    await catchUp();
    expect(catchUpNow).toHaveBeenCalledTimes(2);
  });
});
