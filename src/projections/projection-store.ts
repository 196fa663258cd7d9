import type { RecordedEvent } from '../eventstore/event-store';
import type { KeyLookup } from '../identity/key-lookup';
import type { CreditHolds } from '../ledger/credit-holds';
import type { ReadModel } from './read-model';
import type { ReadModelOrigin } from './read-model-trust';
import type { ReadModels } from './read-models';

/**
 * Where the read models live: in this process, or in Redis shared by every instance. What a store
 * does beyond answering the read side (read-models.ts): follow the log (apply the folds' writes,
 * keep a checkpoint, be rebuilt), and the two ports that cannot wait for the log — admission's
 * atomic holds (`CreditHolds`, stated by the ledger) and the key lookup on every request
 * (`KeyLookup`, stated by identity). Events are applied idempotently (each organization keeps the
 * position it has applied), so several followers of the log may apply the same event safely.
 */
export interface ProjectionStore extends CreditHolds, KeyLookup {
  readonly kind: 'memory' | 'redis';

  /** Releases pending holds older than `now` whose event never arrived; returns how many. */
  sweepPendingHolds(now: number): Promise<number>;

  /**
   * Applies a batch of the log, in order after what is applied. Resolves to the position up to which
   * every event is applied: the batch's last, or further where other followers of the log (another
   * worker, another instance) have applied more; events they had applied already are not applied again.
   */
  apply(events: RecordedEvent[]): Promise<number>;
  /** The same at once, where the read models are in this process (no I/O to wait for). */
  applyNow?(events: RecordedEvent[]): void;
  /** The position up to which every event has been applied. */
  checkpoint(): Promise<number>;
  /** Which log and which position of it the read models say they reflect; null when there are none. */
  origin(): Promise<ReadModelOrigin | null>;
  /**
   * Whether the read models are still there, complete and of this log (Redis can lose them, or come
   * back with others): if not, they must be rebuilt.
   */
  present(): Promise<boolean>;
  /** Whether the store's connection was made again since last asked (what it holds may have changed meanwhile). */
  reconnected(): boolean;

  /** Takes the rebuild lock (one rebuild at a time across instances); null when another holds it. */
  lockRebuild(ttlMs: number): Promise<(() => Promise<void>) | null>;
  /** Drops every read model (pending holds included) and its checkpoint. */
  reset(): Promise<void>;
  /** Writes a complete fold of the log, as computed by a rebuild. */
  load(model: ReadModel): Promise<void>;
  close(): Promise<void>;
}

/** A store as the runtime holds it: it follows the log and answers the read side. */
export type ReadModelStore = ProjectionStore & ReadModels;
