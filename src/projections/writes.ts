import type { KeyLimit, RateLimits } from '../identity/identity.events';
import type { KeyRecord } from '../identity/key-lookup';
import type { MemberRecord, OrgRecord, RequestLogEntry } from './read-models';

/**
 * The writes the read models are made of: all the folds (folds.ts) ask of a store, and all a store
 * does to follow the log. The in-process model (read-model.ts) applies them to maps as they come;
 * the Redis store gathers an organization's writes into one script that applies them atomically
 * (redis-projection-store.ts).
 *
 * Each event's writes belong to its organization and pass one guard first (`begin`): an event
 * at or before the organization's position is skipped, so a store may be handed an event twice.
 * Writes to shared tables (outside any organization: the key records found by hash, a user's
 * organizations, the expiry index) are idempotent, so a store may apply them even to an event the
 * guard skips.
 */
export interface ReadModelWrites {
  /**
   * Starts the writes of an event of `orgId` at log position `position` (`creates`: the event that
   * creates the organization). False when the organization's read models have it already: the
   * event then writes nothing more.
   */
  begin(orgId: string, position: number, creates: boolean): boolean;

  // The event's organization's tables.
  /** Adds `by` (possibly negative) to a counter. */
  add<T extends CounterTable>(table: T, field: CounterTables[T], by: number): void;
  /** Subtracts from a counter what an open reservation holds (nothing once it is gone). */
  release<T extends CounterTable>(table: T, field: CounterTables[T], held: 'open', reservationId: string): void;
  /** Raises a counter to `value` if it is below it (a last-used time). */
  raise<T extends CounterTable>(table: T, field: CounterTables[T], value: number): void;
  /** Sets a record's field; `undefined` deletes it. */
  set<T extends RecordTable, F extends keyof RecordTables[T] & string>(
    table: T,
    field: F,
    value: RecordTables[T][F] | undefined,
  ): void;
  /** Adds an entry to the request log: newest first, kept to the retention, and found by its request id while kept. */
  push(entry: RequestLogEntry): void;
  /** The reservation's event is recorded: the hold admission took for it is no longer pending (the reservation holds it now). */
  clearPendingHold(reservationId: string): void;

  // Shared tables.
  /** Sets fields of a shared record and deletes others (a key's record, found by its hash). */
  update<T extends SharedRecord>(
    table: T,
    id: string,
    fields: Partial<SharedRecords[T]>,
    cleared: ReadonlyArray<keyof SharedRecords[T]>,
  ): void;
  /** Adds a member to a shared set (the organizations of a user). */
  include(table: SharedSet, id: string, member: string): void;
  /** Removes a member from a shared set. */
  exclude(table: SharedSet, id: string, member: string): void;
  /** Puts an open reservation in the expiry index, due at `at`. */
  schedule(orgId: string, reservationId: string, at: number): void;
  /** Takes a resolved reservation out of the expiry index. */
  unschedule(orgId: string, reservationId: string): void;
}

/** An organization's counters, and the fields each has. */
export interface CounterTables {
  /** The balance as the log has it: admission's pending holds are kept beside it. */
  ledger: 'granted' | 'spent' | 'reserved';
  /** Nano-credits charged per UTC day (`YYYY-MM-DD`). */
  daily: string;
  /** Nano-credits charged to a key, all time (by key id). */
  keySpend: string;
  /** Nano-credits charged to a key in a period (by `keySpendField`). */
  keyPeriodSpend: string;
  /** Nano-credits a key's recorded, unresolved reservations hold (by key id). */
  keyOpen: string;
  /** When a request made with a key last ended (by key id). */
  keyLastUsed: string;
  /** Nano-credits refunded of a generation (by reservation id). */
  refunded: string;
}
export type CounterTable = keyof CounterTables;
export type LedgerField = CounterTables['ledger'];

/** An organization's records: each table's fields and what they hold. */
export interface RecordTables {
  organization: { profile: OrgProfile; rateLimits: RateLimits };
  /** By user id. */
  members: Record<string, StoredMember>;
  /** By user id: the members (not owners) who may manage keys. */
  keyManagers: Record<string, true>;
  /** Key id → the hash its record is found by. */
  keys: Record<string, string>;
  /** Open reservation id → the amount it holds. */
  open: Record<string, number>;
}
export type RecordTable = keyof RecordTables;

/** The organization's own record; its default rate limits are kept beside it (`rateLimits`). */
export type OrgProfile = Pick<OrgRecord, 'orgId' | 'name' | 'createdAt'>;
/** A member as stored: whether they may manage keys is kept apart (`keyManagers`), set by its own events. */
export type StoredMember = Omit<MemberRecord, 'manageKeys'>;

/** A key's record as stored by its hash: its use and spend are counters of its organization. */
export interface StoredKey {
  keyId: string;
  orgId: string;
  name: string;
  prefix: string;
  hash: string;
  createdAt: number;
  revokedAt: number;
  rateLimits: RateLimits;
  expiresAt: number;
  disabled: true;
  kind: 'management';
  /**
   * Billing rights that count: given by the operator (hasBillingRights). Records written by earlier
   * versions may hold a `billing` field instead, copied from any key made with billing rights
   * (an owner's in the dashboard too): it is not read, so they count for nothing without a rebuild.
   */
  billingRights: true;
  limit: KeyLimit;
}

export interface SharedRecords {
  keyRecords: StoredKey;
}
export type SharedRecord = keyof SharedRecords;
/** User id → the organizations they belong to. */
export type SharedSet = 'userOrganizations';

/**
 * A key as the read side shows it, from its stored record and, where a list or the key itself is
 * read, its organization's counters (authentication reads the record alone).
 */
export function keyRecordOf(stored: Partial<StoredKey>, lastUsedAt: number | null = null, spent?: number): KeyRecord {
  // Field by field, in one order: authentication reads these records on every request, and an object
  // of one shape is read fast (a spread of a record whose fields were deleted is not).
  const key = stored as StoredKey;
  const record: KeyRecord = {
    keyId: key.keyId,
    orgId: key.orgId,
    name: key.name,
    prefix: key.prefix,
    hash: key.hash,
    createdAt: key.createdAt,
    revokedAt: stored.revokedAt ?? null,
    lastUsedAt,
  };
  if (stored.rateLimits !== undefined) record.rateLimits = stored.rateLimits;
  if (stored.expiresAt !== undefined) record.expiresAt = stored.expiresAt;
  if (stored.disabled !== undefined) record.disabled = stored.disabled;
  if (stored.kind !== undefined) record.kind = stored.kind;
  if (stored.billingRights !== undefined) record.billing = true;
  if (stored.limit !== undefined) record.limit = stored.limit;
  if (spent !== undefined) record.spent = spent;
  return record;
}

/** Where a key's charges in a period are kept (the same name in both stores). */
export const keySpendField = (keyId: string, period: string): string => `${keyId}|${period}`;
