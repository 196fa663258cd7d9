import cluster, { type Worker } from 'node:cluster';
import type { Config } from '../config/config';
import { ConfigError } from '../config/config';
import { gatherForWorkers, WORKER_INDEX_VARIABLE } from '../observability/cluster-metrics';
import { jsonLinesLog } from '../observability/json-lines-log';
import { writePidFile } from './pid-file';
import { claimServing } from './serving-claim';

/** What a worker tells the primary once it listens and serves. */
export const WORKER_SERVING = 'gateway:serving';

/**
 * What the primary tells the workers serving while the set starts, each time one more serves: how
 * many of how many do. A worker is ready (/health/ready) only once all do: the workers share the port
 * through the primary, which hands connections only to those listening, so before that a load
 * balancer that found one worker ready would send the whole set's load to it.
 */
export const SET_SERVING = 'gateway:set-serving';
export interface SetServing {
  type: typeof SET_SERVING;
  serving: number;
  workers: number;
}

/** Set in the environment of a worker forked once the set has served (a restart): it is ready as soon as it serves. */
export const SET_SERVED_VARIABLE = 'GATEWAY_SET_SERVED';

/**
 * A worker's readiness while its set starts (see SET_SERVING): `update` is told why it is not ready
 * yet (how many serve), then null once every worker serves. Listens before the worker serves, so
 * that no word of the primary's is missed. A worker restarted after the set served is not held.
 */
export function followSetServing(workers: number, update: (starting: string | null) => void): void {
  if (process.env[SET_SERVED_VARIABLE] === '1') return update(null);
  const starting = (serving: number, of: number) => (serving >= of ? null : `${serving} of ${of} workers of the set serve`);
  update(starting(0, workers));
  const listener = (message: Partial<SetServing>) => {
    if (message?.type !== SET_SERVING || typeof message.serving !== 'number' || typeof message.workers !== 'number') return;
    update(starting(message.serving, message.workers));
    if (message.serving >= message.workers) process.off('message', listener);
  };
  process.on('message', listener);
}

/** A worker that served this long before it died is restarted at once: its death says nothing of the next one's. */
const HEALTHY_LIFETIME_MS = 30_000;
const FIRST_RESTART_DELAY_MS = 100;
const LONGEST_RESTART_DELAY_MS = 30_000;
/** Past the workers' own grace period, what a worker still needs to close its log before the primary gives up on it. */
const CLOSE_MARGIN_MS = 30_000;

/**
 * How long to wait before restarting a worker that died after `deathsInARow` deaths in a row
 * (each within HEALTHY_LIFETIME_MS of its start): at once for the first, then doubling, bounded.
 */
export function restartDelayMs(deathsInARow: number): number {
  if (deathsInARow <= 1) return 0;
  return Math.min(FIRST_RESTART_DELAY_MS * 2 ** (deathsInARow - 2), LONGEST_RESTART_DELAY_MS);
}

/**
 * Several workers only share read models in Redis: each with its own in-process copy would check
 * balances against it and, together, admit more than an organization holds.
 */
export function refusedWorkerSet(config: Config): ConfigError | null {
  if (config.workers <= 1 || config.redisUrl !== null) return null;
  return new ConfigError(
    'WORKERS',
    `needs REDIS_URL (here ${config.workers} workers): workers with in-process read models would each check ` +
      'balances against their own copy and together overdraw. Set REDIS_URL (shared read models), or WORKERS=1',
  );
}

/** The primary's lines, shaped as the workers' (pino's JSON, or plain for a terminal). */
const primaryLog = (config: Config) => jsonLinesLog({ level: config.logLevel, pretty: config.logPretty }, { role: 'primary' });

interface Slot {
  /** 1 to WORKERS: which of the set a worker is, kept across its restarts. */
  index: number;
  worker: Worker | null;
  startedAt: number;
  serving: boolean;
  deathsInARow: number;
  restart: NodeJS.Timeout | null;
  /** A reload asked while this worker was starting (before it handles SIGHUP): passed on once it serves. */
  reloadAsked: boolean;
}

/**
 * The primary of a worker set (WORKERS > 1): forks the workers (each a whole gateway with its own
 * log writer thread on the one SQLite file, and the read models in Redis), which share the port
 * through node:cluster. It serves no request itself (the caller has started the simulated host and
 * made what workers must not race to make), writes gateway.pid with its own id, passes
 * SIGHUP (catalogue reload) and SIGTERM/SIGINT (drain) to every worker, restarts a worker that dies
 * (at once, then backing off while they keep dying), and gathers the set's metrics for /metrics.
 */
export async function runWorkerSet(config: Config, simulated: { url: string; close(): Promise<void> } | null): Promise<void> {
  // The set serves the data directory as Redis-mode instances do (a shared claim, as each worker
  // takes): refused while an instance with in-process read models serves it, and it refuses one
  // even while its workers restart. The OS lets it go when the primary ends, however it ends.
  const claim = claimServing(config);
  const log = primaryLog(config);
  if (config.metrics) gatherForWorkers();
  const slots: Slot[] = Array.from({ length: config.workers }, (_, i) => ({
    index: i + 1,
    worker: null,
    startedAt: 0,
    serving: false,
    deathsInARow: 0,
    restart: null,
    reloadAsked: false,
  }));
  let everyoneServed = false;
  let stopping = false;
  let exitCode = 0;
  let removePidFile: (() => void) | null = null;

  const fork = (slot: Slot) => {
    slot.restart = null;
    slot.serving = false;
    slot.reloadAsked = false;
    slot.startedAt = Date.now();
    // Its place in the set labels its process metrics (heap, event-loop lag…), which are not summed.
    // One forked after the set has served (a restart) is ready as soon as it serves itself.
    slot.worker = cluster.fork({
      [WORKER_INDEX_VARIABLE]: String(slot.index),
      ...(everyoneServed ? { [SET_SERVED_VARIABLE]: '1' } : {}),
    });
    slot.worker.on('message', (message: { type?: string; url?: string }) => {
      if (message?.type !== WORKER_SERVING) return;
      slot.serving = true;
      if (slot.reloadAsked) {
        slot.reloadAsked = false;
        slot.worker?.process.kill('SIGHUP');
      }
      if (everyoneServed) {
        log.info(`worker ${slot.index} (pid ${slot.worker?.process.pid}) serving again`);
        return;
      }
      // Every worker serving is told how many do: each reports ready only once all do.
      const serving = slots.filter((s) => s.serving);
      const standing: SetServing = { type: SET_SERVING, serving: serving.length, workers: config.workers };
      for (const s of serving) if (s.worker?.isConnected()) s.worker.send(standing);
      if (serving.length < slots.length) return;
      everyoneServed = true;
      removePidFile = writePidFile(config.dataDir);
      const pids = slots.map((s) => s.worker?.process.pid).join(', ');
      log.info(
        `model gateway: ${config.workers} workers serving on ${message.url} (pids ${pids}; primary pid ${process.pid} ` +
          `in ${config.dataDir}/gateway.pid${simulated ? `; simulated host on ${simulated.url}` : ''})`,
      );
    });
  };

  const finish = async () => {
    if (slots.some((s) => s.worker !== null)) return;
    await simulated?.close();
    removePidFile?.();
    claim.release();
    log.info(exitCode === 0 ? 'model gateway stopped (every worker drained)' : 'model gateway stopped');
    process.exit(exitCode);
  };

  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    for (const slot of slots) {
      if (slot.restart) clearTimeout(slot.restart);
      slot.restart = null;
    }
    const live = slots.filter((s) => s.worker !== null);
    log.info(`model gateway stopping (${signal}): draining ${live.length} workers`);
    for (const slot of live) slot.worker!.process.kill('SIGTERM');
    // A worker cuts what is still open at its grace period's end; one that still has not exited long after is killed.
    setTimeout(
      () => {
        for (const slot of slots.filter((s) => s.worker !== null)) {
          log.error(`worker ${slot.index} (pid ${slot.worker!.process.pid}) did not stop: killing it`);
          slot.worker!.process.kill('SIGKILL');
        }
      },
      config.shutdownDrainMs + config.shutdownGraceMs + CLOSE_MARGIN_MS,
    ).unref();
    void finish();
  };

  cluster.on('exit', (worker, code, signal) => {
    const slot = slots.find((s) => s.worker === worker);
    if (!slot) return;
    slot.worker = null;
    const how = signal ? `killed by ${signal}` : `exit code ${code}`;
    if (stopping) {
      // A worker still starting has no drain to do: SIGTERM ends it as it is.
      if (code !== 0 && !(signal === 'SIGTERM' && !slot.serving)) exitCode = 1;
      log.info(`worker ${slot.index} (pid ${worker.process.pid}) stopped (${how})`);
      void finish();
      return;
    }
    if (!everyoneServed && !slot.serving) {
      // A worker that cannot start (the port taken, Redis unreachable…) says why on its own stderr: the set does not start.
      log.error(`worker ${slot.index} (pid ${worker.process.pid}) failed to start (${how}): stopping`);
      exitCode = 1;
      stop('a worker failed to start');
      return;
    }
    slot.deathsInARow = Date.now() - slot.startedAt >= HEALTHY_LIFETIME_MS ? 1 : slot.deathsInARow + 1;
    const delay = restartDelayMs(slot.deathsInARow);
    log.error(
      `worker ${slot.index} (pid ${worker.process.pid}) died (${how}): restarting it` +
        (delay > 0 ? ` in ${delay} ms (${slot.deathsInARow} deaths in a row)` : ''),
    );
    slot.restart = setTimeout(() => fork(slot), delay);
  });

  // A reload reaches every worker; each logs whether it took the file.
  process.on('SIGHUP', () => {
    const live = slots.filter((s) => s.worker !== null);
    log.info(`catalogue reload (SIGHUP): passed to ${live.length} workers`);
    for (const slot of live) {
      if (slot.serving) slot.worker!.process.kill('SIGHUP');
      else slot.reloadAsked = true;
    }
  });
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  for (const slot of slots) fork(slot);
}
