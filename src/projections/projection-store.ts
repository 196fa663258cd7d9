import type { RecordedEvent } from '../eventstore/event-store';
import type { KeyLookup } from '../identity/key-lookup';
import type { CreditHolds } from '../ledger/credit-holds';
import type { Balance, KeyRecord, MemberRecord, OpenReservation, OrgRecord, ReadModel, RequestLogEntry } from './read-model';

/**
 * Where the read models live: in this process, or in Redis shared by every instance.
 * Events are applied idempotently (each organization and the store keep the position they
 * have applied), so several followers of the log may apply the same event safely.
 */
export interface ProjectionStore extends CreditHolds, KeyLookup {
  readonly kind: 'memory' | 'redis';

  /** Releases pending holds older than `now` whose event never arrived; returns how many. */
  sweepPendingHolds(now: number): Promise<number>;

  apply(events: RecordedEvent[]): Promise<void>;
  /** The position up to which every event has been applied. */
  checkpoint(): Promise<number>;
  /** Whether the read models are still there (Redis can lose them): if not, they must be rebuilt. */
  present(): Promise<boolean>;

  balance(orgId: string): Promise<Balance>;
  keysOf(orgId: string): Promise<KeyRecord[]>;
  organization(orgId: string): Promise<OrgRecord | null>;
  /** Newest first, at most `limit` (and never more than the retention). */
  recentRequests(orgId: string, limit: number): Promise<RequestLogEntry[]>;
  /** The organizations a user belongs to. */
  organizationsOf(userId: string): Promise<OrgRecord[]>;
  /** An organization's members, oldest first. */
  membersOf(orgId: string): Promise<MemberRecord[]>;
  /** A user's membership of an organization, or null. */
  membership(orgId: string, userId: string): Promise<MemberRecord | null>;
  /** Nano-credits charged per UTC day (`YYYY-MM-DD`), for every day with a charge. */
  dailySpend(orgId: string): Promise<Map<string, number>>;
  /** What a key's limit counts now: its charges in `period` and its open and pending holds. */
  keyUsage(orgId: string, keyId: string, period: string): Promise<number>;
  /** How many reservations are open (recorded and not yet resolved), in every organization. */
  openReservationCount(): Promise<number>;
  /** Open reservations whose expiry is at or before `now`, with their organization and amount. */
  expiredReservations(now: number, limit: number): Promise<OpenReservation[]>;
  /** Every organization's ledger totals and position, for the audit. */
  ledgers(): Promise<Map<string, { granted: number; spent: number; reserved: number; position: number }>>;

  /** Takes the rebuild lock (one rebuild at a time across instances); null when another holds it. */
  lockRebuild(ttlMs: number): Promise<(() => Promise<void>) | null>;
  /** Drops every read model (pending holds included) and its checkpoint. */
  reset(): Promise<void>;
  /** Writes a complete fold of the log, as computed by a rebuild. */
  load(model: ReadModel): Promise<void>;
  close(): Promise<void>;
}
