import { HostHealth, RollingWindow } from '../../src/routing/health';

const window = { windowMs: 10_000, buckets: 5 };
const served = (at: number, firstByteMs: number, outputTokens: number, generationMs: number) => ({
  at,
  ok: true,
  firstByteMs,
  outputTokens,
  generationMs,
});
const failed = (at: number) => ({ at, ok: false, firstByteMs: null, outputTokens: 0, generationMs: 0 });

describe("a host's measured health", () => {
  it('sums the calls of the window: mean first byte, output tokens per second of generation, error rate', () => {
    const w = new RollingWindow(window);
    w.add(served(1_000, 100, 50, 1_000));
    w.add(served(3_000, 300, 150, 2_000));
    w.add(failed(4_000));
    w.add(failed(5_000));
    expect(w.summary(5_000)).toEqual({ calls: 4, errorRate: 0.5, firstByteMs: 200, outputTokensPerSecond: 200 / 3 });
  });

  it('forgets calls older than the window, bucket by bucket', () => {
    const w = new RollingWindow(window);
    w.add(failed(1_000));
    w.add(served(9_000, 80, 10, 100));
    expect(w.summary(9_000)?.calls).toBe(2);
    // At 12,000 the bucket of [0, 2,000) ended before the window's start (2,000).
    expect(w.summary(12_000)).toEqual({ calls: 1, errorRate: 0, firstByteMs: 80, outputTokensPerSecond: 100 });
    expect(w.summary(30_000)).toBeNull();
  });

  it('reuses a bucket for a later span, and drops a sample for a span already past', () => {
    const w = new RollingWindow(window);
    w.add(failed(1_000));
    w.add(served(11_000, 50, 0, 0)); // the same slot, one window later
    w.add(failed(1_500)); // late: its span is out of the window
    expect(w.summary(11_000)).toEqual({ calls: 1, errorRate: 0, firstByteMs: 50, outputTokensPerSecond: null });
  });

  it('by host and model, none for one without calls', () => {
    const health = new HostHealth(window);
    health.observe('host-a', 'vendor/model', served(1_000, 120, 0, 0));
    health.observe('host-b', 'vendor/model', failed(1_000));
    expect(health.of('host-a', 'vendor/model', 1_000)?.firstByteMs).toBe(120);
    expect(health.of('host-b', 'vendor/model', 1_000)?.errorRate).toBe(1);
    expect(health.of('host-a', 'vendor/other', 1_000)).toBeNull();
    expect(health.all(1_000).map((h) => h.hostId)).toEqual(['host-a', 'host-b']);
  });
});
