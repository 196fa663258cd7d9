import { readFileSync, rmSync } from 'node:fs';
import type { RecordedEvent } from '../eventstore/event-store';
import type { HoldResult } from '../ledger/credit-holds';
import type { KeyHold } from '../ledger/key-limit';
import type { ReadModelStore } from './projection-store';
import { ReadModel, ReadModelSnapshot, snapshotPieces } from './read-model';
import type { ReadModelOrigin } from './read-model-trust';
import { writeAside } from './snapshot-file';
import {
  availableOf,
  type Balance,
  type KeyRecord,
  type MemberRecord,
  type OpenReservation,
  type OrgRecord,
  type RequestLogEntry,
} from './read-models';

interface PendingHold {
  orgId: string;
  amount: number;
  until: number;
  keyId: string;
}

export interface SnapshotOptions {
  /** Where the read models are saved, with the position they include (their checkpoint). */
  file: string;
  /** Save at most this often while events are applied (and always on close). */
  everyMs: number;
  /** The identity of the log the read models follow, saved with them. */
  logId: string;
}

/**
 * Read models in this process's memory. Admission is atomic because the check and the hold
 * happen in one synchronous step. Suits one instance; several instances need Redis.
 * With a snapshot file, start-up loads the saved models and replays only the newer events.
 */
export class MemoryProjectionStore implements ReadModelStore {
  readonly kind = 'memory' as const;
  private model: ReadModel;
  private readonly pending = new Map<string, PendingHold>();
  private readonly pendingByOrg = new Map<string, number>();
  /** Key → nano-credits its pending holds hold. */
  private readonly pendingByKey = new Map<string, number>();

  private savedAt = 0;
  /** What the saved copy loaded at start says it reflects, until the model moves on from it. */
  private loaded: ReadModelOrigin | null = null;
  private savedTime = Date.now();
  /** The save writing its file: one at a time. */
  private saving: Promise<void> | null = null;

  constructor(
    private readonly requestLogRetention: number,
    private readonly snapshot: SnapshotOptions | null = null,
  ) {
    this.model = this.withHolds(new ReadModel(requestLogRetention));
  }

  /** The model, telling this store when a reservation's event makes its pending hold a recorded one. */
  private withHolds(model: ReadModel): ReadModel {
    model.onPendingHoldCleared = (reservationId) => this.removePendingHold(reservationId);
    return model;
  }

  /**
   * Loads the saved read models, saying which log and position they reflect (`origin`): whether
   * they may be served from is the projector's to decide at start (read-model-trust.ts). A damaged
   * file, or one of another version, is ignored.
   */
  loadSnapshot(): boolean {
    if (!this.snapshot) return false;
    let saved: ReadModelSnapshot;
    try {
      saved = JSON.parse(readFileSync(this.snapshot.file, 'utf8')) as ReadModelSnapshot;
    } catch {
      return false;
    }
    if (saved.version !== 7 || !saved.last || saved.position <= 0) return false;
    this.model = this.withHolds(ReadModel.fromSnapshot(saved, this.requestLogRetention));
    this.savedAt = saved.position;
    this.loaded = { logId: saved.logId ?? null, position: saved.position, ofThisVersion: true, last: saved.last };
    return true;
  }

  /**
   * Writes the model with its checkpoint: a consistent view taken at once and serialized in
   * slices between requests, the file written off the event loop, aside and then renamed, so a
   * reader (or a crash) never sees half a file. A write that fails (a full disk) removes what it
   * wrote: the last save stays, and start-up replays the log from it.
   */
  private async write(): Promise<void> {
    if (!this.snapshot || this.model.position === this.savedAt) return;
    const position = this.model.position;
    this.savedTime = Date.now();
    // Written piece by piece: no string of the whole snapshot is built.
    await writeAside(this.snapshot.file, await snapshotPieces({ ...this.model.toSnapshot(), logId: this.snapshot.logId }));
    this.savedAt = position;
  }

  /** Saves after any save in flight (on close, after a rebuild); failures reach the caller. */
  private async saveNow(): Promise<void> {
    while (this.saving) await this.saving.catch(() => undefined);
    this.saving = this.write().finally(() => (this.saving = null));
    await this.saving;
  }

  /** The periodic save while requests are served: skipped while one is writing; a failed one is tried next period. */
  private saveInBackground(): void {
    if (this.saving) return;
    this.saving = this.write()
      .catch(() => undefined)
      .finally(() => (this.saving = null));
  }

  private pendingOf(orgId: string): number {
    return this.pendingByOrg.get(orgId) ?? 0;
  }

  private addPending(orgId: string, delta: number): void {
    this.pendingByOrg.set(orgId, this.pendingOf(orgId) + delta);
  }

  private balanceNow(orgId: string): Balance {
    const ledger = this.model.ledger(orgId);
    return {
      granted: ledger?.granted ?? 0,
      spent: ledger?.spent ?? 0,
      reserved: ledger?.reserved ?? 0,
      pending: this.pendingOf(orgId),
    };
  }

  async hold(orgId: string, reservationId: string, amount: number, pendingUntil: number, key: KeyHold): Promise<HoldResult> {
    const available = availableOf(this.balanceNow(orgId));
    if (available < amount) return { admitted: false, available };
    if (key.limit) {
      const used = this.usedByKey(orgId, key.keyId, key.limit.period);
      if (used + amount > key.limit.amount)
        return { admitted: false, available, keyRemaining: Math.max(0, key.limit.amount - used) };
    }
    if (this.pending.has(reservationId)) return { admitted: true };
    this.pending.set(reservationId, { orgId, amount, until: pendingUntil, keyId: key.keyId });
    this.addPending(orgId, amount);
    this.pendingByKey.set(key.keyId, (this.pendingByKey.get(key.keyId) ?? 0) + amount);
    return { admitted: true };
  }

  async dropHold(_orgId: string, reservationId: string): Promise<void> {
    this.removePendingHold(reservationId);
  }

  /**
   * Ends a reservation's pending hold: its event was recorded (the amount now counts as reserved),
   * could not be appended, or never arrived in time.
   */
  private removePendingHold(reservationId: string): void {
    const hold = this.pending.get(reservationId);
    if (!hold) return;
    this.pending.delete(reservationId);
    this.addPending(hold.orgId, -hold.amount);
    const keyPending = (this.pendingByKey.get(hold.keyId) ?? 0) - hold.amount;
    if (keyPending === 0) this.pendingByKey.delete(hold.keyId);
    else this.pendingByKey.set(hold.keyId, keyPending);
  }

  async sweepPendingHolds(now: number): Promise<number> {
    let swept = 0;
    for (const [reservationId, hold] of this.pending) {
      if (hold.until <= now) {
        this.removePendingHold(reservationId);
        swept += 1;
      }
    }
    return swept;
  }

  async apply(events: RecordedEvent[]): Promise<number> {
    this.applyNow(events);
    return this.model.position;
  }

  applyNow(events: RecordedEvent[]): void {
    if (events.length > 0) this.loaded = null;
    for (const event of events) this.model.apply(event);
    if (this.snapshot && Date.now() - this.savedTime >= this.snapshot.everyMs) this.saveInBackground();
  }

  async checkpoint(): Promise<number> {
    return this.model.position;
  }

  /** The saved copy loaded at start, as it was saved; else what this process folded, of the log it follows. */
  async origin(): Promise<ReadModelOrigin | null> {
    if (this.loaded !== null) return this.loaded;
    if (this.model.position === 0) return null;
    return {
      logId: this.snapshot?.logId ?? null,
      position: this.model.position,
      ofThisVersion: true,
      last: this.model.last ?? undefined,
    };
  }

  /** In this process, nothing can take them away. */
  async present(): Promise<boolean> {
    return true;
  }

  reconnected(): boolean {
    return false;
  }

  async balance(orgId: string): Promise<Balance> {
    return this.balanceNow(orgId);
  }

  async keyByHash(hash: string): Promise<KeyRecord | null> {
    return this.model.keyByHash(hash);
  }

  async key(orgId: string, keyId: string): Promise<KeyRecord | null> {
    return this.model.key(orgId, keyId);
  }

  async keysOf(orgId: string): Promise<KeyRecord[]> {
    return this.model.keysOf(orgId);
  }

  async organization(orgId: string): Promise<OrgRecord | null> {
    return this.model.organization(orgId);
  }

  async recentRequests(orgId: string, limit: number): Promise<RequestLogEntry[]> {
    return this.model.recentRequests(orgId, limit);
  }

  async request(orgId: string, requestId: string): Promise<RequestLogEntry | null> {
    return this.model.request(orgId, requestId);
  }

  async organizationsOf(userId: string): Promise<OrgRecord[]> {
    return this.model.organizationsOf(userId);
  }

  async membersOf(orgId: string): Promise<MemberRecord[]> {
    return this.model.membersOf(orgId);
  }

  async membership(orgId: string, userId: string): Promise<MemberRecord | null> {
    return this.model.membership(orgId, userId);
  }

  async refunded(orgId: string, reservationIds: readonly string[]): Promise<Map<string, number>> {
    return this.model.refunded(orgId, reservationIds);
  }

  async dailySpend(orgId: string): Promise<Map<string, number>> {
    return this.model.dailySpend(orgId);
  }

  async keyUsage(orgId: string, keyId: string, period: string): Promise<number> {
    return this.usedByKey(orgId, keyId, period);
  }

  /** What a key's limit counts: its charges in `period`, its recorded holds and its pending ones. */
  private usedByKey(orgId: string, keyId: string, period: string): number {
    return this.model.keyUsage(orgId, keyId, period) + (this.pendingByKey.get(keyId) ?? 0);
  }

  async openReservationCount(): Promise<number> {
    return this.model.openReservationCount();
  }

  async expiredReservations(now: number, limit: number): Promise<OpenReservation[]> {
    return this.model.expiredReservations(now, limit);
  }

  async ledgers() {
    return new Map([...this.model.orgs].map(([orgId, l]) => [orgId, { ...l }]));
  }

  async lockRebuild(): Promise<() => Promise<void>> {
    return async () => {};
  }

  async reset(): Promise<void> {
    while (this.saving) await this.saving.catch(() => undefined);
    if (this.snapshot) rmSync(this.snapshot.file, { force: true });
    this.savedAt = 0;
    this.loaded = null;
    this.model = this.withHolds(new ReadModel(this.requestLogRetention));
    this.pending.clear();
    this.pendingByOrg.clear();
    this.pendingByKey.clear();
  }

  async load(model: ReadModel): Promise<void> {
    this.loaded = null;
    this.model = this.withHolds(model);
    await this.saveNow();
  }

  /** Saves the read models for the next start; a save that fails is an error saying what it costs (nothing is lost). */
  async close(): Promise<void> {
    try {
      await this.saveNow();
    } catch (error) {
      throw new Error(
        `read models not saved (${(error as Error).message}): the next start replays the log from their last save`,
        { cause: error },
      );
    }
  }
}
