/**
 * Load generation for the gateway bench, with undici (already a dependency of the service).
 *
 * Why undici and not autocannon: the goals are sub-millisecond (added p50 ≤ 1 ms), and autocannon
 * records latencies into a histogram whose smallest unit is 1 ms, paces `overallRate` as bursts of
 * up to N requests at the start of each second (per connection, and only on an idle connection),
 * and cannot time the first byte of a streamed body. With undici every request is timed with
 * `performance.now()` (microseconds), the fixed rate is an open loop (one request every 1/rate s,
 * on its schedule whether or not earlier ones have answered), and streamed bodies are read chunk
 * by chunk. One load generator for every figure keeps the targets comparable.
 */
import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import { Client, Dispatcher, Pool } from 'undici';
import { cpuMs, memoryMiB } from './processes';

export interface Target {
  /** Short name used in progress lines. */
  key: string;
  label: string;
  origin: string;
  path: string;
  headers: Record<string, string>;
  /** Request bodies: answered at once (non-streamed and streamed). */
  body: { plain: string; streamed: string };
}

export interface Latencies {
  /** Milliseconds, one per successful request. */
  ms: number[];
  requests: number;
  errors: number;
  firstError: string | null;
}

export const percentile = (xs: number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

export function recorder(): Latencies & { fail(reason: string): void } {
  const result = {
    ms: [] as number[],
    requests: 0,
    errors: 0,
    firstError: null as string | null,
    fail(reason: string) {
      result.errors += 1;
      result.firstError ??= reason;
    },
  };
  return result;
}

/**
 * One request; resolves with the milliseconds until the whole body was read (or, with
 * `firstEvent`, until the first body chunk carrying an SSE `data:` line arrived, the time to
 * first byte a streaming client sees), then drains the rest of the body.
 */
export async function timed(
  dispatcher: Dispatcher,
  target: Target,
  streamed: boolean,
  firstEvent: boolean,
  signal?: AbortSignal,
): Promise<number> {
  const start = performance.now();
  const response = await dispatcher.request({
    origin: target.origin,
    path: target.path,
    method: 'POST',
    headers: target.headers,
    body: streamed ? target.body.streamed : target.body.plain,
    signal,
  });
  if (response.statusCode !== 200) {
    const text = await response.body.text().catch(() => '');
    throw new Error(`HTTP ${response.statusCode}: ${text.slice(0, 300)}`);
  }
  if (!firstEvent) {
    await response.body.text();
    return performance.now() - start;
  }
  let first = NaN;
  let seen = '';
  for await (const chunk of response.body) {
    if (Number.isNaN(first)) {
      // Looked for in the whole chunk (an event larger than the tail kept would hide it), with the
      // previous chunk's tail in front for a `data:` cut in two.
      const text = seen + (chunk as Buffer).toString('utf8');
      if (text.includes('data:')) first = performance.now() - start;
      seen = text.slice(-64);
    }
  }
  if (Number.isNaN(first)) throw new Error('the stream carried no data: line');
  return first;
}

/** Why a target cannot be measured (a request, non-streamed or streamed, not answered 200), or null. */
export async function probeFailure(target: Target): Promise<string | null> {
  for (const streamed of [false, true]) {
    const client = new Client(target.origin);
    try {
      const response = await client.request({
        path: target.path,
        method: 'POST',
        headers: target.headers,
        body: streamed ? target.body.streamed : target.body.plain,
        headersTimeout: 10_000,
        bodyTimeout: 10_000,
      });
      const text = (await response.body.text()).slice(0, 200);
      if (response.statusCode !== 200)
        return `answered ${response.statusCode} (${streamed ? 'streamed' : 'non-streamed'}): ${text.replace(/\s+/g, ' ')}`;
    } catch (error) {
      return `answered nothing (${streamed ? 'streamed' : 'non-streamed'}): ${(error as Error).message}`;
    } finally {
      await client.close();
    }
  }
  return null;
}

/** `count` requests one after another on one keep-alive connection. */
export async function sequential(target: Target, count: number, options: { streamed: boolean }): Promise<Latencies> {
  const client = new Client(target.origin, { pipelining: 1, keepAliveTimeout: 60_000 });
  const result = recorder();
  try {
    for (let i = 0; i < count; i++) {
      result.requests += 1;
      try {
        result.ms.push(await timed(client, target, options.streamed, options.streamed));
      } catch (error) {
        result.fail((error as Error).message);
      }
    }
  } finally {
    await client.close();
  }
  return result;
}

/**
 * Open loop at a fixed rate: request i is sent at start + i / rate whatever happened to the
 * earlier ones, over a pool large enough that no request waits for a connection in the client;
 * each is timed from the moment it is sent.
 */
export async function fixedRate(target: Target, rate: number, durationMs: number): Promise<Latencies & { lateMs: number }> {
  const pool = new Pool(target.origin, { connections: 128, pipelining: 1, keepAliveTimeout: 60_000 });
  const result = recorder();
  const total = Math.round((rate * durationMs) / 1000);
  const interval = 1000 / rate;
  const inFlight: Promise<void>[] = [];
  let lateMs = 0;
  const start = performance.now();
  try {
    for (let i = 0; i < total; i++) {
      const due = start + i * interval;
      // Timers wake up to ~1 ms late; a late request is sent at once (catching up), and is timed
      // from when it was sent, so the lateness shows in `lateMs`, not in the latencies.
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      lateMs = Math.max(lateMs, performance.now() - due);
      result.requests += 1;
      inFlight.push(
        timed(pool, target, false, false).then(
          (ms) => void result.ms.push(ms),
          (error: Error) => result.fail(error.message),
        ),
      );
    }
    await Promise.all(inFlight);
  } finally {
    await pool.close();
  }
  return { ...result, lateMs };
}

/**
 * Closed loop: `connections` clients each sending their next request as soon as the last answered.
 * Also reports the CPU time each of `pids` spent per request over the measured window.
 */
export async function throughput(
  target: Target,
  connections: number,
  warmupMs: number,
  durationMs: number,
  pids: number[],
): Promise<{ rps: number; cpuMsPerRequest: number[]; errors: number; firstError: string | null }> {
  const pool = new Pool(target.origin, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const result = recorder();
  const begin = performance.now();
  const from = begin + warmupMs;
  const until = from + durationMs;
  let counted = 0;
  let cpuFrom: number[] = [];
  let cpuUntil: number[] = [];
  const marks = [
    setTimeout(() => (cpuFrom = pids.map(cpuMs)), warmupMs),
    setTimeout(() => (cpuUntil = pids.map(cpuMs)), warmupMs + durationMs),
  ];
  const worker = async () => {
    while (performance.now() < until) {
      try {
        await timed(pool, target, false, false);
        const now = performance.now();
        if (now >= from && now < until) counted += 1;
      } catch (error) {
        result.fail((error as Error).message);
        await sleep(1);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: connections }, worker));
    // On a loaded machine the workers can finish before the end mark's timer has run.
    if (cpuUntil.length === 0) cpuUntil = pids.map(cpuMs);
  } finally {
    marks.forEach(clearTimeout);
    await pool.close();
  }
  const cpuMsPerRequest = pids.map((_, i) => (cpuUntil[i] - cpuFrom[i]) / counted);
  return { rps: counted / (durationMs / 1000), cpuMsPerRequest, errors: result.errors, firstError: result.firstError };
}

export interface OpenStreams {
  /** Streams whose first event arrived before the deadline. */
  opened: number;
  /** Seconds until the last of them opened. */
  openSeconds: number;
  idleMiB: number;
  /** Highest VmRSS sampled while the streams were held open. */
  peakRssMiB: number;
  /** VmHWM (the process's lifetime peak) at the end of the hold. */
  hwmMiB: number;
  errors: number;
  firstError: string | null;
}

/**
 * Opens `count` streams to a slow upstream through a target (in waves, so the listen backlog is
 * not the bottleneck), waits until each has delivered its first event, samples the RSS of `pid`
 * while they are all held open, then aborts them.
 */
export async function openStreams(
  target: Target,
  count: number,
  pid: number,
  options: { openTimeoutMs: number; stallMs: number; holdMs: number; wave: number; waveGapMs: number },
): Promise<OpenStreams> {
  const pool = new Pool(target.origin, { connections: count, pipelining: 1, keepAliveTimeout: 60_000 });
  const abort = new AbortController();
  setMaxListeners(count + 10, abort.signal);
  const result = recorder();
  const idleMiB = memoryMiB(pid).rss;
  let opened = 0;
  let allOpen: () => void = () => {};
  const everyOpen = new Promise<void>((done) => (allOpen = done));
  const one = async () => {
    try {
      const response = await pool.request({
        origin: target.origin,
        path: target.path,
        method: 'POST',
        headers: target.headers,
        body: target.body.streamed,
        signal: abort.signal,
      });
      if (response.statusCode !== 200)
        throw new Error(`HTTP ${response.statusCode}: ${(await response.body.text()).slice(0, 300)}`);
      let counted = false;
      for await (const chunk of response.body) {
        if (!counted && (chunk as Buffer).includes('data:')) {
          counted = true;
          if (++opened === count) allOpen();
        }
      }
      if (!abort.signal.aborted) result.fail('a stream ended before the hold was over');
    } catch (error) {
      if (!abort.signal.aborted) result.fail((error as Error).message);
    }
  };
  const streams: Promise<void>[] = [];
  const start = performance.now();
  let peakRssMiB = idleMiB;
  const sampler = setInterval(() => (peakRssMiB = Math.max(peakRssMiB, memoryMiB(pid).rss)), 50);
  try {
    for (let i = 0; i < count; i += options.wave) {
      for (let j = i; j < Math.min(count, i + options.wave); j++) streams.push(one());
      await sleep(options.waveGapMs);
    }
    // Wait until every stream has opened, or none has opened for `stallMs` (a target that queues
    // streams beyond some limit), or the deadline.
    let lastCount = -1;
    let lastProgress = performance.now();
    let openedAt = performance.now();
    let watch: NodeJS.Timeout | undefined;
    const stalled = new Promise<void>((done) => {
      watch = setInterval(() => {
        const now = performance.now();
        if (opened !== lastCount) {
          lastCount = opened;
          lastProgress = now;
          openedAt = now;
        }
        if (now - lastProgress >= options.stallMs || now - start >= options.openTimeoutMs) done();
      }, 50);
    });
    await Promise.race([everyOpen.then(() => (openedAt = performance.now())), stalled]);
    clearInterval(watch);
    const openSeconds = (openedAt - start) / 1000;
    const openedThen = opened;
    // Hold: every stream stays open (the upstream paces 2 tokens/s); the RSS is sampled throughout.
    await sleep(options.holdMs);
    peakRssMiB = Math.max(peakRssMiB, memoryMiB(pid).rss);
    const hwmMiB = memoryMiB(pid).hwm;
    return { opened: openedThen, openSeconds, idleMiB, peakRssMiB, hwmMiB, errors: result.errors, firstError: result.firstError };
  } finally {
    clearInterval(sampler);
    abort.abort();
    await Promise.allSettled(streams);
    await pool.destroy();
  }
}
