import { setTimeout as sleep } from 'node:timers/promises';
import type { EventStore, RecordedEvent } from '../eventstore/event-store';
import { type RuntimeLog, SILENT_LOG } from '../runtime-log/runtime-log';
import type { ProjectionStore } from './projection-store';
import { ReadModel } from './read-model';
import { judgeLogContinuity } from './log-continuity';
import { judgeAgainstLog, type Verdict } from './read-model-trust';
import { ReadModelsLostError } from './redis-projection-store';
import { failureText } from './store-errors';

const FOLD_BATCH = 5000;
const REBUILD_LOCK_MS = 10 * 60_000;
/** How long start-up may take to catch up with the log (a replay from a snapshot's position). */
const START_CATCH_UP_MS = 10 * 60_000;
/** After the log or the read models failed, how long to wait before following again. */
const RETRY_MS = 500;
/** While another instance rebuilds the read models, how often to try applying again. */
const REBUILD_WAIT_MS = 100;

export interface RebuildProgress {
  position: number;
  head: number;
  events: number;
}

/** Folds the whole log (up to its head when called) into a fresh read model. */
export async function foldLog(
  events: EventStore,
  requestLogRetention: number,
  onProgress?: (progress: RebuildProgress) => void,
): Promise<ReadModel> {
  const head = await events.headPosition();
  const model = new ReadModel(requestLogRetention);
  let count = 0;
  while (model.position < head) {
    const batch = await events.readAll(model.position, FOLD_BATCH);
    if (batch.length === 0) break;
    for (const event of batch) {
      if (event.position > head) break;
      model.apply(event);
      count += 1;
    }
    onProgress?.({ position: model.position, head, events: count });
    if (batch[batch.length - 1].position >= head) break;
  }
  return model;
}

/** Another instance (or the operator tool) holds the rebuild lock. */
export class RebuildRunningError extends Error {
  constructor() {
    super('another rebuild is running');
    this.name = 'RebuildRunningError';
  }
}

/**
 * Drops every read model and rebuilds it from the log, holding the rebuild lock so that
 * instances following the log wait instead of applying events to half-written models.
 */
export async function rebuildProjections(
  events: EventStore,
  store: ProjectionStore,
  requestLogRetention: number,
  onProgress?: (progress: RebuildProgress) => void,
): Promise<{ events: number; position: number }> {
  const unlock = await store.lockRebuild(REBUILD_LOCK_MS);
  if (!unlock) throw new RebuildRunningError();
  try {
    await store.reset();
    let count = 0;
    const model = await foldLog(events, requestLogRetention, (p) => {
      count = p.events;
      onProgress?.(p);
    });
    await store.load(model);
    return { events: count, position: model.position };
  } finally {
    await unlock();
  }
}

/**
 * Follows the log from the store's checkpoint and applies every event to the read models,
 * one batch after the other. If Redis lost the read models it rebuilds them (or waits for
 * the instance that is rebuilding) and goes on.
 */
/** How often waiters are checked for their deadline while any wait. */
const WAITER_SWEEP_MS = 100;

interface Waiter {
  position: number;
  deadline: number;
  resolve: () => void;
  reject: (error: Error) => void;
}

/** How long a request waits for the log to be checked after the subscription failed. */
const LOG_CHECK_WAIT_MS = 2_000;

/** How often the read models' presence is checked (Redis can be emptied or restart without its data). */
const PRESENCE_PROBE_MS = 1_000;

/** The read models did not reach a position in the time given: what waited for them tries again later. */
export class NotCaughtUpError extends Error {
  override name = 'NotCaughtUpError';
}

export class Projector {
  private readonly abort = new AbortController();
  private running: Promise<void> | null = null;
  private applied = 0;
  private failure: unknown = null;
  private probe: NodeJS.Timeout | null = null;
  private waiters: Waiter[] = [];
  private sweeper: NodeJS.Timeout | null = null;
  private probing = false;
  /** Applying a batch and rebuilding take turns: a rebuild never runs under a batch, nor a batch under a rebuild. */
  private turn: Promise<unknown> = Promise.resolve();
  /** Turns begun and not ended: while any is, this process's commits are left to the subscription. */
  private turns = 0;
  /** The identity of the log the read models were made whole for at start. */
  private logId: string | null = null;
  /** Why the log answering is not that log, once seen; nothing is followed or rebuilt from then on. */
  private replaced: string | null = null;
  /** The log check in flight, shared by whoever asks meanwhile. */
  private checking: Promise<boolean> | null = null;
  /** The subscription failed and the log answering since has not been checked yet (counted, so that only a later check clears it). */
  private doubted = 0;
  private checkedAt = 0;

  constructor(
    private readonly events: EventStore,
    private readonly store: ProjectionStore,
    private readonly requestLogRetention: number,
    private readonly log: RuntimeLog = SILENT_LOG,
  ) {}

  get position(): number {
    return this.applied;
  }

  /**
   * Why the log is not the one the read models describe (emptied, replaced or restored under the
   * running gateway), or null. Once set it stays: the gateway admits nothing until an operator
   * rebuilds the read models from the log as it is, or restores the log, and restarts it.
   */
  get logReplaced(): string | null {
    return this.replaced;
  }

  /**
   * Where the log stands for a request about to be served: `replaced` (see logReplaced), `same`, or
   * `unchecked` when the subscription failed and the log cannot be checked yet (it does not answer).
   * In doubt, the check is made (shared) before answering: a node restarted empty must not take a
   * request on the old balances in the moment before the projector looks.
   */
  logStanding(): 'same' | 'replaced' | Promise<'same' | 'replaced' | 'unchecked'> {
    if (this.replaced !== null) return 'replaced';
    if (this.checkedAt >= this.doubted) return 'same';
    // A log that takes its time (reads have no deadline) leaves the request unchecked, not waiting.
    const timeout = sleep(LOG_CHECK_WAIT_MS, 'unchecked' as const, { ref: false });
    return Promise.race([this.sameLog().then((same) => (same ? ('same' as const) : ('replaced' as const))), timeout]).catch(
      () => 'unchecked' as const,
    );
  }

  /**
   * Whether the log answering is still the one followed (log-continuity.ts); says so once, in the
   * log, when it is not. Rejects when the log does not answer (the caller asks again later).
   */
  sameLog(): Promise<boolean> {
    if (this.replaced !== null || this.logId === null) return Promise.resolve(this.replaced === null);
    this.checking ??= this.checkLog(this.logId).finally(() => (this.checking = null));
    return this.checking;
  }

  private async checkLog(logId: string): Promise<boolean> {
    const doubted = this.doubted;
    const applied = this.applied;
    const continuity = judgeLogContinuity(
      { logId, applied },
      { logId: await this.events.readLogId(), head: await this.events.headPosition() },
    );
    if (continuity.same) {
      this.checkedAt = Math.max(this.checkedAt, doubted);
      return true;
    }
    if (this.replaced === null) {
      this.replaced = continuity.reason;
      this.log.error(
        `projector: the event log is not the log the read models describe: ${continuity.reason}. Admitting nothing until an operator rebuilds the read models from the log as it is now (model-gateway projections rebuild) or restores the log, then restarts the gateway`,
      );
    }
    return false;
  }

  /**
   * Makes the read models whole before anything reads them: rebuilt from the log unless they are of
   * this log and no further on than it (read-model-trust.ts), then caught up with the log as it is
   * now, so that no key or balance of the log is missing once the service answers.
   */
  async start(): Promise<void> {
    await this.trustOrRebuild();
    this.logId = await this.events.logId();
    this.applied = await this.store.checkpoint();
    if (this.store.applyNow !== undefined) this.events.onCommitted?.((batch) => this.applyCommitted(batch));
    this.running = this.follow();
    // Redis may lose the read models while no event arrives to reveal it: look now and then.
    this.probe = setInterval(() => void this.rebuildIfLost(), PRESENCE_PROBE_MS);
    this.probe.unref();
    await this.catchUp(START_CATCH_UP_MS);
  }

  /** What the read models say they reflect, judged against the log as it is now. */
  private async verdict(): Promise<Verdict> {
    return judgeAgainstLog(this.events, await this.store.origin(), this.applied);
  }

  /**
   * Rebuilds the read models from the log unless they may be trusted, or waits for the instance
   * rebuilding them; says why. If they cannot be rebuilt, fails naming the mismatch.
   */
  private async trustOrRebuild(): Promise<void> {
    let said = '';
    for (;;) {
      const verdict = await this.verdict();
      if (verdict.trust) return;
      if (verdict.reason !== said) this.log.warn(`projector: ${verdict.reason}: rebuilding`);
      said = verdict.reason;
      try {
        const rebuilt = await rebuildProjections(this.events, this.store, this.requestLogRetention);
        this.log.info(`projector: rebuilt from ${rebuilt.events} events`);
        return;
      } catch (error) {
        if (!(error instanceof RebuildRunningError)) {
          throw new Error(`${verdict.reason}, and they could not be rebuilt from the log: ${(error as Error).message}`, {
            cause: error,
          });
        }
        // Another instance (or the operator tool) is rebuilding them: look again once it has.
        await sleep(REBUILD_WAIT_MS, undefined, { signal: this.abort.signal });
      }
    }
  }

  /**
   * Rebuilds the read models from the log when they are gone, or when their store came back and
   * what it holds is not to be trusted (one probe at a time; a failed one is retried by the next).
   */
  private async rebuildIfLost(): Promise<void> {
    // Read models are rebuilt from another log only by the operator.
    if (this.probing || this.replaced !== null) return;
    this.probing = true;
    try {
      await this.inTurn(async () => {
        if (!this.store.reconnected() && (await this.store.present())) return;
        await this.trustOrRebuild();
      });
    } catch {
      // Redis still away: the next probe looks again.
    } finally {
      this.probing = false;
    }
  }

  private async follow(): Promise<void> {
    let resumed = false;
    while (!this.abort.signal.aborted) {
      try {
        // The log may have been emptied or replaced while the subscription was away: look before following it again.
        if (resumed && !(await this.sameLog())) return;
        for await (const read of this.events.subscribe(this.applied, this.abort.signal, () => this.applied)) {
          // Some may have been applied as they committed (applyCommitted) since the subscription read them.
          const batch = read[0].position > this.applied ? read : read.filter((event) => event.position > this.applied);
          if (batch.length === 0) continue;
          await this.inTurn(async () => {
            // Further than the batch when other followers applied more: the subscription goes on from there.
            this.applied = Math.max(batch[batch.length - 1].position, await this.applyWithRecovery(batch));
          });
          if (this.waiters.length > 0) this.settleWaiters(Date.now());
        }
      } catch (error) {
        if (this.abort.signal.aborted) return;
        this.doubted += 1;
        this.failure = error;
        this.log.warn(`projector: ${failureText(error)}; retrying`);
        // A back-off: neither the log nor Redis says when it works again, so try again after a
        // while. stop() ends the wait at once (the timer rejects on abort).
        try {
          await sleep(RETRY_MS, undefined, { signal: this.abort.signal });
        } catch {
          return;
        }
      }
      resumed = true;
    }
  }

  /** Runs `work` once the applying or rebuilding before it has ended. */
  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    this.turns += 1;
    const run = this.turn.then(work, work);
    this.turn = run.catch(() => undefined).finally(() => (this.turns -= 1));
    return run;
  }

  /**
   * Applies this process's events as they commit, read models being in this process, when they
   * follow on from what is applied and nothing else is being applied or rebuilt: visible before
   * their appenders hear, with no read back, and every waiter they satisfy answered at once.
   * Otherwise (another process's events between, a turn under way, the log in doubt) it leaves
   * them to the subscription, which reads them as before.
   */
  private applyCommitted(batch: RecordedEvent[]): void {
    if (
      this.store.applyNow === undefined ||
      this.turns > 0 ||
      this.abort.signal.aborted ||
      this.replaced !== null ||
      this.checkedAt < this.doubted ||
      batch[0].position !== this.applied + 1
    )
      return;
    try {
      this.store.applyNow(batch);
    } catch {
      // The subscription applies them again and says why it could not.
      return;
    }
    this.failure = null;
    this.applied = batch[batch.length - 1].position;
    if (this.waiters.length > 0) this.settleWaiters(Date.now());
  }

  /** Applies a batch (see ProjectionStore.apply); resolves to the position every event up to is applied. */
  private async applyWithRecovery(batch: Parameters<ProjectionStore['apply']>[0]): Promise<number> {
    for (;;) {
      try {
        const applied = await this.store.apply(batch);
        this.failure = null;
        return applied;
      } catch (error) {
        if (!(error instanceof ReadModelsLostError) || this.abort.signal.aborted) throw error;
        this.log.warn('projector: read models missing in Redis; rebuilding from the log');
        try {
          const rebuilt = await rebuildProjections(this.events, this.store, this.requestLogRetention);
          this.log.info(`projector: rebuilt from ${rebuilt.events} events`);
        } catch {
          // Another instance is rebuilding, under a lock in Redis that announces nothing when
          // released: apply again shortly, which succeeds once the rebuilt read models are loaded.
          // stop() ends the wait at once: the abort error leaves this batch, and follow() returns.
          await sleep(REBUILD_WAIT_MS, undefined, { signal: this.abort.signal });
        }
      }
    }
  }

  /**
   * Resolves once every event up to `position` has been applied; rejects after `timeoutMs`. Every
   * reply waits on this: waiters are kept in one list, settled as batches apply and swept for
   * their deadline by one timer, so a request costs no timer, signal or listener of its own.
   */
  waitFor(position: number, timeoutMs = 10_000): Promise<void> {
    if (this.applied >= position) return Promise.resolve();
    if (this.abort.signal.aborted) return Promise.reject(this.stoppedShortOf(position));
    return new Promise((resolve, reject) => {
      this.waiters.push({ position, deadline: Date.now() + timeoutMs, resolve, reject });
      this.sweeper ??= setInterval(() => this.settleWaiters(Date.now()), WAITER_SWEEP_MS);
    });
  }

  /** Resolves the waiters whose position is applied, rejects those past their deadline. */
  private settleWaiters(now: number): void {
    const waiting: Waiter[] = [];
    for (const waiter of this.waiters) {
      if (this.applied >= waiter.position) waiter.resolve();
      else if (now >= waiter.deadline) {
        const failure = this.failure ? `: ${(this.failure as Error).message}` : '';
        waiter.reject(
          new NotCaughtUpError(`read models did not reach position ${waiter.position} in time (at ${this.applied})${failure}`),
        );
      } else waiting.push(waiter);
    }
    this.waiters = waiting;
    if (waiting.length === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }

  /** Waits until the read models include everything in the log now. */
  async catchUp(timeoutMs?: number): Promise<void> {
    await this.waitFor(await this.events.headPosition(), timeoutMs);
  }

  /**
   * catchUp, the log read for other processes' events at once rather than at the subscription's
   * next look: for a request that cannot be answered until then. Not for timed work (a worker
   * looking at once may apply another worker's events before that worker does: twice for the set).
   */
  async catchUpNow(timeoutMs?: number): Promise<void> {
    const head = await this.events.headPosition();
    if (this.applied < head) this.events.lookNow?.();
    await this.waitFor(head, timeoutMs);
  }

  /**
   * Undoes the pending holds due by `now` whose reservation never reached the log. In the read
   * models, a hold whose event is in the log but not applied yet looks the same as one whose event
   * never came; undoing it would let its credit be admitted twice until the event is applied. So
   * holds are swept only once everything in the log after `now` is applied: an event appended by
   * then has turned its hold into a reservation. Rejects, undoing nothing, when the read models do
   * not get there within `timeoutMs` (the next sweep tries again).
   */
  async sweepPendingHolds(now: number, timeoutMs: number): Promise<number> {
    await this.catchUp(timeoutMs);
    return this.store.sweepPendingHolds(now);
  }

  private stoppedShortOf(position: number): Error {
    return new Error(`read models did not reach position ${position} (at ${this.applied}): the projector stopped`);
  }

  async stop(): Promise<void> {
    if (this.probe) clearInterval(this.probe);
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    this.abort.abort();
    // Nothing more is applied: whoever waits would wait for ever (a sweep awaited at close among them).
    for (const waiter of this.waiters.splice(0)) waiter.reject(this.stoppedShortOf(waiter.position));
    await this.running;
  }
}
