/**
 * Measured host health, per host and model, over a rolling window (5 minutes by default, in
 * 30-second buckets): mean latency to first byte, output tokens per second of generation, and the
 * share of calls that failed by the host's fault. What this instance saw of its own calls: cheap
 * to feed (a few additions per call), read by routing (`sort: latency | throughput`) and by the
 * metrics. Pure but for the map it keeps; the caller brings the clock.
 */

/** One host call, as measured. */
export interface CallSample {
  /** When it ended (ms since the epoch). */
  at: number;
  /** It served (false: it failed by the host's fault). */
  ok: boolean;
  /** From the call's start to the host's first byte (its headers); null when none came. */
  firstByteMs: number | null;
  /** Output tokens it generated (0 when unknown). */
  outputTokens: number;
  /** From the first byte to the reply's end: the time those tokens took. */
  generationMs: number;
}

/** A host's health for one model over the window, as routing reads it. */
export interface HostHealthSnapshot {
  /** Calls ended within the window. */
  calls: number;
  /** Failed calls ÷ calls. */
  errorRate: number;
  /** Mean time to first byte of the calls that had one; null when none did. */
  firstByteMs: number | null;
  /** Output tokens ÷ seconds of generation, over the calls that reported tokens; null when none did. */
  outputTokensPerSecond: number | null;
}

/** What routing reads of host health (see HostHealth.of). */
export interface HostHealthReader {
  /** The health of `hostId` serving `model` (the catalogue slug) over the window ending `now`; null: no call in the window. */
  of(hostId: string, model: string, now?: number): HostHealthSnapshot | null;
}

interface Bucket {
  /** Start of the bucket's span (a multiple of its width). */
  start: number;
  calls: number;
  errors: number;
  firstByteMsSum: number;
  firstByteCount: number;
  outputTokens: number;
  generationMs: number;
}

export interface WindowSettings {
  windowMs: number;
  buckets: number;
}

export const DEFAULT_WINDOW: WindowSettings = { windowMs: 300_000, buckets: 10 };

/** Calls over the last `windowMs`, summed in a ring of buckets: fixed memory, old buckets reused. */
export class RollingWindow {
  private readonly ring: Bucket[];
  private readonly width: number;

  constructor(private readonly settings: WindowSettings = DEFAULT_WINDOW) {
    this.width = Math.ceil(settings.windowMs / settings.buckets);
    this.ring = Array.from({ length: settings.buckets }, () => emptyBucket(-Infinity));
  }

  add(sample: CallSample): void {
    const start = Math.floor(sample.at / this.width) * this.width;
    const slot = Math.floor(sample.at / this.width) % this.settings.buckets;
    let bucket = this.ring[slot];
    if (bucket.start !== start) {
      // A sample older than the bucket's holder belongs to a span already out of the window.
      if (bucket.start > start) return;
      bucket = this.ring[slot] = emptyBucket(start);
    }
    bucket.calls += 1;
    if (!sample.ok) bucket.errors += 1;
    if (sample.firstByteMs !== null) {
      bucket.firstByteMsSum += sample.firstByteMs;
      bucket.firstByteCount += 1;
    }
    if (sample.ok && sample.outputTokens > 0 && sample.generationMs > 0) {
      bucket.outputTokens += sample.outputTokens;
      bucket.generationMs += sample.generationMs;
    }
  }

  /** The window ending at `now` (buckets whose span ends after now − windowMs); null when it holds no call. */
  summary(now: number): HostHealthSnapshot | null {
    const oldest = now - this.settings.windowMs;
    let calls = 0;
    let errors = 0;
    let firstByteMsSum = 0;
    let firstByteCount = 0;
    let outputTokens = 0;
    let generationMs = 0;
    for (const b of this.ring) {
      if (b.start + this.width <= oldest || b.start > now) continue;
      calls += b.calls;
      errors += b.errors;
      firstByteMsSum += b.firstByteMsSum;
      firstByteCount += b.firstByteCount;
      outputTokens += b.outputTokens;
      generationMs += b.generationMs;
    }
    if (calls === 0) return null;
    return {
      calls,
      errorRate: errors / calls,
      firstByteMs: firstByteCount === 0 ? null : firstByteMsSum / firstByteCount,
      outputTokensPerSecond: generationMs === 0 ? null : outputTokens / (generationMs / 1000),
    };
  }
}

const emptyBucket = (start: number): Bucket => ({
  start,
  calls: 0,
  errors: 0,
  firstByteMsSum: 0,
  firstByteCount: 0,
  outputTokens: 0,
  generationMs: 0,
});

/** Every host and model's rolling window, in this process. */
export class HostHealth implements HostHealthReader {
  private readonly windows = new Map<string, { hostId: string; model: string; window: RollingWindow }>();

  constructor(private readonly settings: WindowSettings = DEFAULT_WINDOW) {}

  observe(hostId: string, model: string, sample: CallSample): void {
    const key = `${hostId}\n${model}`;
    let entry = this.windows.get(key);
    if (!entry) this.windows.set(key, (entry = { hostId, model, window: new RollingWindow(this.settings) }));
    entry.window.add(sample);
  }

  of(hostId: string, model: string, now = Date.now()): HostHealthSnapshot | null {
    return this.windows.get(`${hostId}\n${model}`)?.window.summary(now) ?? null;
  }

  /** Every host and model with calls in the window (for the metrics). */
  all(now = Date.now()): Array<{ hostId: string; model: string; health: HostHealthSnapshot }> {
    const found: Array<{ hostId: string; model: string; health: HostHealthSnapshot }> = [];
    for (const { hostId, model, window } of this.windows.values()) {
      const health = window.summary(now);
      if (health) found.push({ hostId, model, health });
    }
    return found;
  }
}
