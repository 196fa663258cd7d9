import type { RecordedEvent } from '../eventstore/event-store';
import type { Admission, ProjectionStore } from './projection-store';
import { asProjected, availableOf, Balance, KeyRecord, OpenReservation, OrgRecord, ReadModel, RequestLogEntry } from './read-model';

interface PendingHold {
  orgId: string;
  amount: number;
  until: number;
}

/**
 * Read models in this process's memory. Admission is atomic because the check and the hold
 * happen in one synchronous step. Suits one instance; several instances need Redis.
 */
export class MemoryProjectionStore implements ProjectionStore {
  readonly kind = 'memory' as const;
  private model: ReadModel;
  private readonly pending = new Map<string, PendingHold>();
  private readonly pendingByOrg = new Map<string, number>();

  constructor(private readonly requestLogRetention: number) {
    this.model = new ReadModel(requestLogRetention);
  }

  private pendingOf(orgId: string): number {
    return this.pendingByOrg.get(orgId) ?? 0;
  }

  private addPending(orgId: string, delta: number): void {
    this.pendingByOrg.set(orgId, this.pendingOf(orgId) + delta);
  }

  private balanceNow(orgId: string): Balance {
    const ledger = this.model.orgs.get(orgId);
    return {
      granted: ledger?.granted ?? 0,
      spent: ledger?.spent ?? 0,
      reserved: ledger?.reserved ?? 0,
      pending: this.pendingOf(orgId),
    };
  }

  async hold(orgId: string, reservationId: string, amount: number, pendingUntil: number): Promise<Admission> {
    const available = availableOf(this.balanceNow(orgId));
    if (available < amount) return { admitted: false, available };
    if (this.pending.has(reservationId)) return { admitted: true };
    this.pending.set(reservationId, { orgId, amount, until: pendingUntil });
    this.addPending(orgId, amount);
    return { admitted: true };
  }

  async dropHold(_orgId: string, reservationId: string): Promise<void> {
    this.settlePending(reservationId);
  }

  private settlePending(reservationId: string): void {
    const hold = this.pending.get(reservationId);
    if (!hold) return;
    this.pending.delete(reservationId);
    this.addPending(hold.orgId, -hold.amount);
  }

  async sweepPendingHolds(now: number): Promise<number> {
    let swept = 0;
    for (const [reservationId, hold] of this.pending) {
      if (hold.until <= now) {
        this.settlePending(reservationId);
        swept += 1;
      }
    }
    return swept;
  }

  async apply(events: RecordedEvent[]): Promise<void> {
    for (const event of events) {
      const projected = asProjected(event);
      // The reservation's event has landed: its pending hold becomes a recorded one.
      if (projected.type === 'CreditsReserved') this.settlePending(projected.data.reservationId);
      this.model.apply(event);
    }
  }

  async checkpoint(): Promise<number> {
    return this.model.position;
  }

  async balance(orgId: string): Promise<Balance> {
    return this.balanceNow(orgId);
  }

  async keyByHash(hash: string): Promise<KeyRecord | null> {
    return this.model.keysByHash.get(hash) ?? null;
  }

  async keysOf(orgId: string): Promise<KeyRecord[]> {
    return [...this.model.keysById.values()].filter((k) => k.orgId === orgId);
  }

  async organization(orgId: string): Promise<OrgRecord | null> {
    return this.model.orgRecords.get(orgId) ?? null;
  }

  async recentRequests(orgId: string, limit: number): Promise<RequestLogEntry[]> {
    return this.model.recentRequests(orgId, limit);
  }

  async expiredReservations(now: number, limit: number): Promise<OpenReservation[]> {
    const expired: OpenReservation[] = [];
    for (const open of this.model.open.values()) {
      if (open.expiresAt <= now) expired.push(open);
      if (expired.length >= limit) break;
    }
    return expired;
  }

  async ledgers() {
    return new Map([...this.model.orgs].map(([orgId, l]) => [orgId, { ...l }]));
  }

  async lockRebuild(): Promise<() => Promise<void>> {
    return async () => {};
  }

  async reset(): Promise<void> {
    this.model = new ReadModel(this.requestLogRetention);
    this.pending.clear();
    this.pendingByOrg.clear();
  }

  async load(model: ReadModel): Promise<void> {
    this.model = model;
  }

  async close(): Promise<void> {}
}
