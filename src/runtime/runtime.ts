import { Logger } from '@nestjs/common';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { Config } from '../config/config';
import type { EventStore } from '../eventstore/event-store';
import { ChainSealer, isSealableLog } from '../eventstore/eventstoredb-chain-sealer';
import { SqliteEventStore } from '../eventstore/sqlite-event-store';
import { TimedEventStore } from '../eventstore/timed-event-store';
import { IdentityService } from '../identity/identity.service';
import { LEDGER_CHAIN } from '../ledger/ledger-chain';
import { LedgerService } from '../ledger/ledger.service';
import { MemoryProjectionStore } from '../projections/memory-projection-store';
import type { ReadModelStore } from '../projections/projection-store';
import { appendLandedBehind } from '../projections/log-continuity';
import { NotCaughtUpError, Projector } from '../projections/projector';
import { RedisProjectionStore } from '../projections/redis-projection-store';
import { sharedCatchUp } from '../projections/shared-catch-up';
import { removeStaleSideFiles } from '../projections/snapshot-file';
import { MemoryRateLimitStore, RateLimitStore } from '../rate-limits/rate-limit-store';
import { type AttemptStore, MemoryAttemptStore } from '../attempt-limits/attempt-store';
import { RedisAttemptStore } from '../attempt-limits/redis-attempt-store';
import { RedisRateLimitStore } from '../rate-limits/redis-rate-limits';
import { MemoryBreakerStore, RedisBreakerStore } from '../routing/breaker-store';
import { HostHealth } from '../routing/health';
import { RequestsAnswered } from '../http/requests-answered';
import { HostRouting } from '../routing/routing';
import type { RedisClient } from '../projections/redis-client';
import { claimServing, claimStore, heldTogether, type ServingClaim } from './serving-claim';
import { claimHolder, inProcessStoreId, isClaimLog, LogClaim } from './log-claim';
import { type RuntimeLog, SILENT_LOG } from '../runtime-log/runtime-log';
import { failureText } from '../projections/store-errors';
import { SweepFailures } from './sweep-failures';

/** How long a sweep of pending holds waits for the read models to catch up with the log before it leaves them for the next. */
const SWEEP_CATCH_UP_MS = 1_000;
/** How long a look-up of a key the read models do not know waits for them to reach the log's head. */
const KEY_CATCH_UP_MS = 1_000;
/** How long a request the balance does not cover waits for the read models to reach the log's head before it is refused. */
const BALANCE_CATCH_UP_MS = 1_000;

/** Where circuit changes are told: the service's log (Nest's logger is the service's once it runs). */
const routingLog = new Logger('Routing');

/**
 * Everything the service and the operator tool share: the event log, the read models, the
 * projector that keeps them following the log, and the command handlers.
 */
export interface Runtime {
  config: Config;
  /** The event log, its appends timed for the metrics. */
  events: TimedEventStore;
  /** The read models: followed by the projector, read through their read side (`ReadModels`). */
  projections: ReadModelStore;
  projector: Projector;
  ledger: LedgerService;
  identity: IdentityService;
  /** Keys' requests and tokens of the last minute: in Redis when the read models are, else in this process. */
  rateLimits: RateLimitStore;
  /** The dashboard's attempt limits (sign-in, sign-up, adding members): in Redis when the read models are, else in this process. */
  attempts: AttemptStore;
  /** Hosts' circuit breakers (in Redis when the read models are, else in this process) and their measured health. */
  routing: HostRouting;
  /**
   * The service's one Redis connection (the read models' store's), for anything else kept in Redis;
   * null with read models in this process. On a cluster it routes each command by its key's slot:
   * the keys of one script or MULTI must share a hash tag.
   */
  redis: RedisClient | null;
  /** The HTTP requests this process is answering (counted once the application is built on the runtime). */
  requests: RequestsAnswered;
  /** Reservations this process's sweeper has expired since it started. */
  readonly reservationsExpired: number;
  /** Sweeps of this process's sweeper that failed (due expiries or pending holds not swept: a store away) since it started. */
  readonly sweepsFailed: number;
  /**
   * Why this instance may admit no request now: on EventStoreDB, its claim in the log on its read
   * models' store lapsed (not renewed for a lease) or was lost (log-claim.ts). Null while it holds
   * it, and always without one (the embedded log, a tool). Known without I/O.
   */
  servingRefusal(): string | null;
  close(): Promise<void>;
}

/** Where the embedded log (no EVENTSTORE_URL) is kept. */
export const eventLogPath = (config: Pick<Config, 'dataDir'>): string => join(config.dataDir, 'events.sqlite');

/**
 * The log the configuration names. `commitAloneHere` (the SQLite log): whether an append made alone
 * may be committed on the calling thread now (see SqliteEventStoreOptions).
 */
export async function openEventStore(config: Config, commitAloneHere?: () => boolean): Promise<EventStore> {
  if (config.eventStoreUrl) {
    // Loaded only when asked for, so the embedded path never loads the gRPC client.
    const { EventStoreDbEventStore } = await import('../eventstore/eventstoredb-event-store');
    return EventStoreDbEventStore.connect(config.eventStoreUrl, { chain: LEDGER_CHAIN });
  }
  return new SqliteEventStore(eventLogPath(config), {
    pollIntervalMs: config.logPollMs,
    chain: LEDGER_CHAIN,
    commitAloneHere,
  });
}

/** The read models' store, told which log they follow (whether what it holds is of that log is the projector's to check). */
/** How often the in-process read models and the alerts' state are saved while the log moves. */
export const SNAPSHOT_EVERY_MS = 30_000;

export async function openProjectionStore(config: Config, events: EventStore, log: RuntimeLog): Promise<ReadModelStore> {
  const logId = await events.logId();
  if (config.redisUrl) {
    const target = { url: config.redisUrl, cluster: config.redisCluster };
    return RedisProjectionStore.connect(target, config.redisPrefix, config.requestLogRetention, logId, {
      timeoutMs: config.redisConnectTimeoutMs,
      log: log.warn,
    });
  }
  mkdirSync(config.dataDir, { recursive: true });
  const file = join(config.dataDir, 'read-models.snapshot.json');
  await removeStaleSideFiles(file, log.warn);
  const store = new MemoryProjectionStore(config.requestLogRetention, { file, everyMs: SNAPSHOT_EVERY_MS, logId });
  store.loadSnapshot();
  return store;
}

export interface RuntimeOptions {
  /** Expire reservations and sweep holds in the background (the service does; one-shot tools don't). */
  sweep?: boolean;
  /**
   * The service (not a one-shot tool): with in-process read models, it must be the only one on its
   * data (see claimServing); with read models in Redis, every one on its data must use that store (claimStore).
   */
  serving?: boolean;
  /**
   * The operator tool's `projections rebuild` of read models in Redis: on EventStoreDB, a claim in the
   * log on their store for the runtime's length (see log-claim.ts; a serving runtime takes one as a
   * service), refused while instances serve the log with read models in another store.
   */
  rebuilding?: boolean;
  /** Where the runtime's lines go, each at its level (the service's: its logger). */
  log?: RuntimeLog;
  /** The clock that spaces the sweeper's lines while its sweeps fail (see SweepFailures); tests give their own. */
  sweepFailureClock?: () => number;
}

export async function openRuntime(config: Config, options: RuntimeOptions = {}): Promise<Runtime> {
  const log = options.log ?? SILENT_LOG;
  let claim: ServingClaim | null = options.serving ? claimServing(config) : null;
  const requests = new RequestsAnswered();
  let events: TimedEventStore;
  let store: EventStore;
  try {
    // A request being answered alone commits its reservation and settlement on the main thread.
    store = await openEventStore(config, () => requests.now <= 1);
    events = new TimedEventStore(store);
  } catch (error) {
    claim?.release();
    throw error;
  }
  let projections: ReadModelStore;
  try {
    projections = await openProjectionStore(config, events, log);
  } catch (error) {
    await events.close();
    claim?.release();
    throw error;
  }
  if (claim !== null && projections instanceof RedisProjectionStore) {
    // Before the read models are trusted or rebuilt: an instance refused here writes nothing to its store.
    try {
      claim = heldTogether(claim, claimStore(config.dataDir, await projections.storeId()));
    } catch (error) {
      await projections.close().catch(() => undefined);
      await events.close();
      claim.release();
      throw error;
    }
  }
  // On EventStoreDB, instances on other machines share only the log: the claim on the read models'
  // store is held in it, taken before the read models are trusted or rebuilt, as above.
  let logClaim: LogClaim | null = null;
  const role = options.serving ? 'service' : options.rebuilding && projections instanceof RedisProjectionStore ? 'rebuild' : null;
  if (role !== null && isClaimLog(store)) {
    try {
      const readModels =
        projections instanceof RedisProjectionStore
          ? { storeId: await projections.storeId(), store: 'redis' as const, where: config.redisPrefix }
          : { storeId: inProcessStoreId(config.dataDir), store: 'in-process' as const, where: config.dataDir };
      logClaim = await LogClaim.take(store, claimHolder(readModels, role), { leaseMs: config.servingLeaseMs, log });
    } catch (error) {
      await projections.close().catch(() => undefined);
      await events.close();
      claim?.release();
      throw error;
    }
  }
  const projector = new Projector(events, projections, config.requestLogRetention, log);
  // A stream behind what this process wrote to it, or an append landing behind what was applied:
  // the log may be another; the projector looks. Such an append fails (an admission is refused).
  events.onRevisionWentBack(() => void projector.sameLog().catch(() => undefined));
  events.guardAppends(() => {
    // Applied before the append is sent: its events (even a repeat the server recognised) land after.
    const applied = projector.position;
    return ({ position }) => {
      if (!appendLandedBehind(position, applied)) return null;
      void projector.sameLog().catch(() => undefined);
      return new Error(
        `an append landed at ${position}, behind the ${applied} applied before it was sent: the log is not the one followed`,
      );
    };
  });
  try {
    await projector.start();
  } catch (error) {
    // Read models that may not be served from and could not be rebuilt: nothing starts.
    await projector.stop();
    await projections.close().catch(() => undefined);
    await logClaim?.release();
    await events.close();
    claim?.release();
    throw error;
  }
  const ledger = new LedgerService(events, projections, {
    reservationTtlMs: config.reservationTtlMs,
    pendingHoldMs: config.pendingHoldMs,
    // A request the balance the read models show does not cover is asked again once they hold the
    // log as it is (within 1 s, twice that when it queued behind one under way): credits granted a
    // moment ago by the operator tool or another worker are spent on the next request, not after
    // the next look at the log. Refusals meanwhile share one catch-up: a flood of them reads the
    // log once at a time, and admitted requests never wait for it.
    caughtUp: sharedCatchUp((timeoutMs) => projector.catchUpNow(timeoutMs), BALANCE_CATCH_UP_MS),
  });
  // A key unknown to the read models is looked up again once they hold the whole log (within 1 s,
  // the log's head read included). Misses meanwhile share the catch-up under way: a flood of made-up
  // keys costs one read of the log at a time, not one each.
  let keyCatchUp: Promise<void> | null = null;
  const identity = new IdentityService(
    events,
    projections,
    Date.now,
    () =>
      (keyCatchUp ??= Promise.race([
        projector.catchUpNow(KEY_CATCH_UP_MS).catch(() => undefined),
        delay(KEY_CATCH_UP_MS, undefined, { ref: false }),
      ]).finally(() => (keyCatchUp = null))),
  );
  const rateLimits =
    projections instanceof RedisProjectionStore
      ? new RedisRateLimitStore(projections)
      : new MemoryRateLimitStore(async (orgId) => (await projections.organization(orgId))?.rateLimits);
  const attempts = projections instanceof RedisProjectionStore ? new RedisAttemptStore(projections) : new MemoryAttemptStore();
  const breakerSettings = { failures: config.hostBreakerFailures, cooldownMs: config.hostBreakerCooldownMs };
  const routing = new HostRouting(
    projections instanceof RedisProjectionStore
      ? // A circuit nobody has called for ten cool-downs (at least an hour) is forgotten: closed.
        new RedisBreakerStore(projections, Math.max(10 * breakerSettings.cooldownMs, 3_600_000))
      : new MemoryBreakerStore(),
    breakerSettings,
    new HostHealth(),
    (message) => routingLog.warn(message),
  );

  let sweeping: Promise<unknown> | null = null;
  let reservationsExpired = 0;
  const sweepFailures = new SweepFailures(log, options.sweepFailureClock);
  const sweeper = options.sweep
    ? setInterval(() => {
        // One sweep at a time: one waiting for the read models to catch up may outlast the interval.
        if (sweeping) return;
        const failure = (error: Error) => error;
        sweeping = Promise.all([
          projector.sweepPendingHolds(Date.now(), SWEEP_CATCH_UP_MS).then(() => null, failure),
          ledger.expireDue().then((expired) => {
            reservationsExpired += expired;
            return null;
          }, failure),
        ])
          .then((failures) => {
            // Read models behind (the next sweep waits again) is a delay, said each time; anything
            // else, due expiries not made (funds stay held): said once, then a line a minute at most.
            const behind = failures.filter((error) => error instanceof NotCaughtUpError);
            for (const error of behind) log.warn(`sweeper: ${failureText(error)}`);
            const failed = failures.find((error) => error !== null && !(error instanceof NotCaughtUpError));
            if (failed) sweepFailures.failed(failureText(failed));
            else sweepFailures.succeeded();
          })
          .finally(() => (sweeping = null));
      }, config.sweepIntervalMs)
    : null;
  sweeper?.unref();
  // On EventStoreDB, the service seals the ledger's chains in the background (see eventstoredb-chain-sealer.ts).
  const sealer = options.sweep && isSealableLog(store) ? new ChainSealer(store, LEDGER_CHAIN, { warn: log.warn }) : null;
  sealer?.start();

  return {
    config,
    events,
    projections,
    projector,
    ledger,
    identity,
    rateLimits,
    attempts,
    routing,
    redis: projections instanceof RedisProjectionStore ? projections.client : null,
    requests,
    get reservationsExpired() {
      return reservationsExpired;
    },
    get sweepsFailed() {
      return sweepFailures.total;
    },
    servingRefusal: () => logClaim?.standing() ?? null,
    async close() {
      if (sweeper) clearInterval(sweeper);
      await sweeping;
      await sealer?.stop();
      await projector.stop();
      // A save that fails (a full disk) costs time at the next start, nothing else: the log closes all the same.
      await projections.close().catch((error: Error) => log.error(error.message));
      await logClaim?.release();
      await events.close();
      claim?.release();
    },
  };
}
