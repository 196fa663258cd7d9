import { setImmediate as nextTurn } from 'node:timers/promises';
import type { RecordedEvent } from '../eventstore/event-store';
import type {
  MemberAdded,
  MemberKeyAccessSet,
  MemberRemoved,
  MemberRole,
  OrganizationCreated,
  OrganizationRateLimitsSet,
  RateLimits,
} from '../identity/identity.events';
import type { KeyRecord } from '../identity/key-lookup';
import type { ApiKeyCreated, ApiKeyRevoked, ApiKeyUpdated, KeyChanges } from '../keys/api-key/api-key.events';
import { periodsOf } from '../ledger/key-limit';
import type {
  CreditsGranted,
  CreditsReserved,
  ReservationExpired,
  ReservationReleased,
  ReservationSettled,
  RequestRefused,
} from '../ledger/ledger.events';

/** Amounts in nano-credits. `available = granted - spent - reserved - pending`. */
export interface Balance {
  granted: number;
  spent: number;
  /** Held by reservations recorded in the log and not yet resolved. */
  reserved: number;
  /** Held by admissions whose reservation event has not reached the log yet. */
  pending: number;
}

export const availableOf = (b: Balance): number => b.granted - b.spent - b.reserved - b.pending;

/** What is shown as reserved: holds recorded in the log and holds still pending, together. */
export const reservedOf = (b: Balance): number => b.reserved + b.pending;

export interface OrgLedger {
  granted: number;
  spent: number;
  reserved: number;
  /** Position of the last event applied to this organization: applying is idempotent. */
  position: number;
}

export interface OpenReservation {
  reservationId: string;
  orgId: string;
  amount: number;
  expiresAt: number;
  /** The key it was made with (absent in snapshots written before per-key limits). */
  keyId?: string;
}

export type { KeyRecord };

export interface RequestLogEntry {
  requestId: string;
  /** Null for a request refused before anything was reserved. */
  reservationId: string | null;
  time: number;
  surface: string;
  model: string;
  host: string | null;
  keyId: string;
  /** Uncached input (every input token, in settlements written before the cache's classes). */
  inputTokens: number;
  /** Input read from the cache. */
  cacheReadTokens: number;
  /** Input written to the cache (for 5 minutes or an hour). */
  cacheWriteTokens: number;
  outputTokens: number;
  /** Nano-credits charged (0 when released or expired). */
  cost: number;
  latencyMs: number | null;
  status: string;
}

export interface OrgRecord {
  orgId: string;
  name: string;
  createdAt: number;
  /** Default rate limits of its keys that have none of their own (absent: none). */
  rateLimits?: RateLimits;
}

/** A member of an organization, as the dashboard lists them. */
export interface MemberRecord {
  userId: string;
  /** Null for members added before member events carried the email. */
  email: string | null;
  role: MemberRole;
  /** A member who may manage keys (owners always may). */
  manageKeys: boolean;
  addedAt: number;
}

/** The member record a MemberAdded event makes. */
export const memberRecordOf = (event: MemberAdded): MemberRecord => ({
  userId: event.data.userId,
  email: event.data.email ?? null,
  role: event.data.role,
  manageKeys: event.data.manageKeys === true,
  addedAt: event.data.addedAt,
});

/** The organization's record with its default rate limits set, or cleared (null). */
export function withRateLimits(record: OrgRecord, rateLimits: RateLimits | null): OrgRecord {
  const { rateLimits: _previous, ...rest } = record;
  return rateLimits === null ? rest : { ...rest, rateLimits };
}

type ProjectedEvent =
  | CreditsGranted
  | CreditsReserved
  | ReservationSettled
  | ReservationReleased
  | ReservationExpired
  | RequestRefused
  | OrganizationCreated
  | MemberAdded
  | MemberRemoved
  | MemberKeyAccessSet
  | OrganizationRateLimitsSet
  | ApiKeyCreated
  | ApiKeyUpdated
  | ApiKeyRevoked;

/** A key record's fields as an update leaves them: what it sets, and (as undefined) what it clears. */
export function keyFieldsChanged(
  changes: KeyChanges,
): Partial<Pick<KeyRecord, 'name' | 'rateLimits' | 'expiresAt' | 'disabled' | 'limit'>> {
  const fields: Partial<Pick<KeyRecord, 'name' | 'rateLimits' | 'expiresAt' | 'disabled' | 'limit'>> = {};
  if (changes.limit !== undefined) fields.limit = changes.limit ?? undefined;
  if (changes.name !== undefined) fields.name = changes.name;
  if (changes.rateLimits !== undefined) fields.rateLimits = changes.rateLimits ?? undefined;
  if (changes.expiresAt !== undefined) fields.expiresAt = changes.expiresAt ?? undefined;
  if (changes.disabled !== undefined) fields.disabled = changes.disabled || undefined;
  return fields;
}

/** Where a key's charges in a period are kept (the same name in both stores). */
export const keySpendField = (keyId: string, period: string): string => `${keyId}|${period}`;

/** Narrows a recorded event to the ones the read models use. */
export const asProjected = (event: RecordedEvent): ProjectedEvent => event as unknown as ProjectedEvent;

/** What the request log shows of a resolved reservation or a refusal. Built field by field: this runs per event in a replay. */
export function requestLogEntryOf(
  event: ReservationSettled | ReservationReleased | ReservationExpired | RequestRefused,
): RequestLogEntry {
  const d = event.data;
  const entry: RequestLogEntry = {
    requestId: d.requestId,
    reservationId: null,
    time: 0,
    surface: d.surface,
    model: d.model,
    host: null,
    keyId: d.keyId,
    inputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    outputTokens: 0,
    cost: 0,
    latencyMs: null,
    status: 'expired',
  };
  switch (event.type) {
    case 'ReservationSettled':
      entry.reservationId = event.data.reservationId;
      entry.time = event.data.settledAt;
      entry.host = event.data.host;
      entry.inputTokens = event.data.inputTokens;
      // Absent from settlements written before the cache's classes.
      entry.cacheReadTokens = event.data.cacheReadTokens ?? 0;
      entry.cacheWriteTokens = (event.data.cacheWriteTokens ?? 0) + (event.data.cacheWrite1hTokens ?? 0);
      entry.outputTokens = event.data.outputTokens;
      entry.cost = event.data.amount;
      entry.latencyMs = event.data.latencyMs;
      entry.status = event.data.status;
      break;
    case 'ReservationReleased':
      entry.reservationId = event.data.reservationId;
      entry.time = event.data.releasedAt;
      entry.host = event.data.host;
      entry.latencyMs = event.data.latencyMs;
      entry.status = event.data.status;
      break;
    case 'ReservationExpired':
      entry.reservationId = event.data.reservationId;
      entry.time = event.data.expiredAt;
      break;
    case 'RequestRefused':
      entry.time = event.data.refusedAt;
      entry.latencyMs = event.data.latencyMs;
      entry.status = event.data.status;
      break;
  }
  return entry;
}

/** A read model as saved to disk: plain arrays, plus the last event it includes to tie it to its log. */
export interface ReadModelSnapshot {
  version: 5;
  position: number;
  last: { streamId: string; revision: number } | null;
  orgs: Array<[string, OrgLedger]>;
  orgRecords: OrgRecord[];
  open: OpenReservation[];
  keys: KeyRecord[];
  requests: Array<[string, RequestLogEntry[]]>;
  memberships: Array<[string, string[]]>;
  members: Array<[string, MemberRecord[]]>;
  dailySpend: Array<[string, Array<[string, number]>]>;
  keySpend: Array<[string, number]>;
}

/**
 * A snapshot's JSON text in pieces, its request logs (the bulk: up to the retention per
 * organization) serialized `sliceSize` entries at a time with a turn of the event loop between
 * slices, so a save never holds requests up for its whole serialization (one log of 12,500
 * entries took ~21 ms in one piece), nor builds one string of it all. The snapshot
 * must share nothing mutable with a live model (`ReadModel.toSnapshot` makes it so); the pieces,
 * written one after another, parse back to it.
 */
export async function snapshotPieces(
  snapshot: ReadModelSnapshot,
  sliceSize = 500,
  pause: () => Promise<unknown> = nextTurn,
): Promise<string[]> {
  const { requests, ...rest } = snapshot;
  const pieces = [JSON.stringify(rest).slice(0, -1), ',"requests":['];
  let sinceTurn = 0;
  for (let org = 0; org < requests.length; org++) {
    const [orgId, log] = requests[org];
    pieces.push(`${org > 0 ? ',' : ''}[${JSON.stringify(orgId)},[`);
    for (let start = 0; start < log.length; start += sliceSize) {
      pieces.push(`${start > 0 ? ',' : ''}${JSON.stringify(log.slice(start, start + sliceSize)).slice(1, -1)}`);
      sinceTurn += Math.min(sliceSize, log.length - start);
      if (sinceTurn >= sliceSize) {
        sinceTurn = 0;
        await pause();
      }
    }
    pieces.push(']]');
  }
  pieces.push(']}');
  return pieces;
}

/** The UTC day of a time, as the spend-per-day read model keys it. */
export const dayOf = (time: number): string => new Date(time).toISOString().slice(0, 10);

/**
 * Every read model in one in-memory fold of the log. It is what the in-process store serves,
 * what a rebuild computes before writing to Redis, and what the audit replays. `apply` does no
 * I/O and skips events at or before an organization's position, so applying twice is harmless.
 */
export class ReadModel {
  readonly orgs = new Map<string, OrgLedger>();
  readonly orgRecords = new Map<string, OrgRecord>();
  readonly open = new Map<string, OpenReservation>();
  readonly keysByHash = new Map<string, KeyRecord>();
  readonly keysById = new Map<string, KeyRecord>();
  readonly requests = new Map<string, RequestLogEntry[]>();
  /** User → the organizations they belong to. */
  readonly memberships = new Map<string, Set<string>>();
  /** Organization → user → their membership. */
  readonly members = new Map<string, Map<string, MemberRecord>>();
  /** Organization → UTC day → nano-credits charged that day (not bounded by the request log's retention). */
  readonly dailySpend = new Map<string, Map<string, number>>();
  /** `keyId|period` → nano-credits charged to the key in that period (see ledger/key-limit.ts). */
  readonly keySpend = new Map<string, number>();
  /** Key → nano-credits its recorded, unresolved reservations hold. */
  readonly keyOpen = new Map<string, number>();
  position = 0;
  /** The last event applied, which a snapshot records to check it belongs to the log it is loaded with. */
  last: { streamId: string; revision: number } | null = null;

  constructor(private readonly requestLogRetention: number) {}

  /**
   * The models as they stand now, sharing nothing that `apply` changes later (ledgers and keys
   * are updated in place, request logs trimmed in place; records, open reservations and log
   * entries are never changed once made), so it can be serialized while events keep coming.
   */
  toSnapshot(): ReadModelSnapshot {
    return {
      version: 5,
      position: this.position,
      last: this.last,
      orgs: [...this.orgs].map(([orgId, ledger]) => [orgId, { ...ledger }]),
      orgRecords: [...this.orgRecords.values()],
      open: [...this.open.values()],
      keys: [...this.keysById.values()].map((key) => ({ ...key })),
      requests: [...this.requests].map(([orgId, log]) => [orgId, log.slice()]),
      memberships: [...this.memberships].map(([userId, orgs]) => [userId, [...orgs]]),
      members: [...this.members].map(([orgId, members]) => [orgId, [...members.values()].map((m) => ({ ...m }))]),
      dailySpend: [...this.dailySpend].map(([orgId, days]) => [orgId, [...days]]),
      keySpend: [...this.keySpend],
    };
  }

  static fromSnapshot(snapshot: ReadModelSnapshot, requestLogRetention: number): ReadModel {
    const model = new ReadModel(requestLogRetention);
    model.position = snapshot.position;
    model.last = snapshot.last;
    for (const [orgId, ledger] of snapshot.orgs) model.orgs.set(orgId, ledger);
    for (const record of snapshot.orgRecords) model.orgRecords.set(record.orgId, record);
    for (const open of snapshot.open) {
      model.open.set(open.reservationId, open);
      if (open.keyId !== undefined) model.addKeyOpen(open.keyId, open.amount);
    }
    for (const [field, nano] of snapshot.keySpend) model.keySpend.set(field, nano);
    for (const key of snapshot.keys) {
      model.keysById.set(key.keyId, key);
      model.keysByHash.set(key.hash, key);
    }
    for (const [orgId, log] of snapshot.requests) model.requests.set(orgId, log);
    for (const [userId, orgs] of snapshot.memberships) model.memberships.set(userId, new Set(orgs));
    for (const [orgId, members] of snapshot.members) model.members.set(orgId, new Map(members.map((m) => [m.userId, m])));
    for (const [orgId, days] of snapshot.dailySpend) model.dailySpend.set(orgId, new Map(days));
    return model;
  }

  ledgerOf(orgId: string): OrgLedger {
    let ledger = this.orgs.get(orgId);
    if (!ledger) {
      ledger = { granted: 0, spent: 0, reserved: 0, position: 0 };
      this.orgs.set(orgId, ledger);
    }
    return ledger;
  }

  apply(recorded: RecordedEvent): void {
    if (recorded.position <= this.position) return;
    this.position = recorded.position;
    this.last = { streamId: recorded.streamId, revision: recorded.revision };
    const event = asProjected(recorded);
    switch (event.type) {
      case 'OrganizationCreated':
        this.orgRecords.set(event.data.orgId, { ...event.data });
        this.ledgerOf(event.data.orgId);
        return;
      case 'OrganizationRateLimitsSet': {
        const record = this.orgRecords.get(event.data.orgId);
        if (record) this.orgRecords.set(record.orgId, withRateLimits(record, event.data.rateLimits));
        return;
      }
      case 'MemberAdded': {
        const orgs = this.memberships.get(event.data.userId) ?? new Set<string>();
        orgs.add(event.data.orgId);
        this.memberships.set(event.data.userId, orgs);
        const members = this.members.get(event.data.orgId) ?? new Map<string, MemberRecord>();
        members.set(event.data.userId, memberRecordOf(event));
        this.members.set(event.data.orgId, members);
        return;
      }
      case 'MemberRemoved':
        this.memberships.get(event.data.userId)?.delete(event.data.orgId);
        this.members.get(event.data.orgId)?.delete(event.data.userId);
        return;
      case 'MemberKeyAccessSet': {
        const member = this.members.get(event.data.orgId)?.get(event.data.userId);
        // Replaced, not changed in place: a snapshot being written may share the old record.
        if (member) this.members.get(event.data.orgId)!.set(member.userId, { ...member, manageKeys: event.data.manageKeys });
        return;
      }
      case 'ApiKeyCreated': {
        const record: KeyRecord = { ...event.data, revokedAt: null, lastUsedAt: null };
        this.keysByHash.set(record.hash, record);
        this.keysById.set(record.keyId, record);
        return;
      }
      case 'ApiKeyUpdated': {
        const record = this.keysById.get(event.data.keyId) as unknown as Record<string, unknown> | undefined;
        if (!record) return;
        for (const [field, value] of Object.entries(keyFieldsChanged(event.data.changes))) {
          if (value === undefined) delete record[field];
          else record[field] = value;
        }
        return;
      }
      case 'ApiKeyRevoked': {
        const record = this.keysById.get(event.data.keyId);
        if (record) record.revokedAt = event.data.revokedAt;
        return;
      }
      case 'CreditsGranted': {
        const ledger = this.ledgerOf(event.data.orgId);
        ledger.granted += event.data.amount;
        ledger.position = recorded.position;
        return;
      }
      case 'CreditsReserved': {
        const { reservationId, orgId, amount, expiresAt } = event.data;
        const ledger = this.ledgerOf(orgId);
        ledger.reserved += amount;
        ledger.position = recorded.position;
        this.open.set(reservationId, { reservationId, orgId, amount, expiresAt, keyId: event.data.keyId });
        this.addKeyOpen(event.data.keyId, amount);
        return;
      }
      case 'ReservationSettled':
      case 'ReservationReleased':
      case 'ReservationExpired': {
        const ledger = this.ledgerOf(event.data.orgId);
        ledger.position = recorded.position;
        const open = this.open.get(event.data.reservationId);
        if (open) {
          ledger.reserved -= open.amount;
          this.open.delete(open.reservationId);
          if (open.keyId !== undefined) this.addKeyOpen(open.keyId, -open.amount);
        }
        const entry = requestLogEntryOf(event);
        if (event.type === 'ReservationSettled') {
          ledger.spent += event.data.amount;
          const key = this.keysById.get(event.data.keyId);
          if (key) key.spent = (key.spent ?? 0) + event.data.amount;
          for (const period of periodsOf(event.data.settledAt)) {
            const field = keySpendField(event.data.keyId, period);
            this.keySpend.set(field, (this.keySpend.get(field) ?? 0) + event.data.amount);
          }
          const days = this.dailySpend.get(event.data.orgId) ?? new Map<string, number>();
          const day = dayOf(entry.time);
          days.set(day, (days.get(day) ?? 0) + event.data.amount);
          this.dailySpend.set(event.data.orgId, days);
        }
        this.logRequest(event.data.orgId, entry);
        return;
      }
      case 'RequestRefused':
        this.ledgerOf(event.data.orgId).position = recorded.position;
        this.logRequest(event.data.orgId, requestLogEntryOf(event));
        return;
    }
  }

  addKeyOpen(keyId: string, delta: number): void {
    const held = (this.keyOpen.get(keyId) ?? 0) + delta;
    if (held === 0) this.keyOpen.delete(keyId);
    else this.keyOpen.set(keyId, held);
  }

  private logRequest(orgId: string, entry: RequestLogEntry): void {
    const key = this.keysById.get(entry.keyId);
    if (key && (key.lastUsedAt === null || entry.time > key.lastUsedAt)) key.lastUsedAt = entry.time;
    let log = this.requests.get(orgId);
    if (!log) {
      log = [];
      this.requests.set(orgId, log);
    }
    log.push(entry);
    // Trim in chunks so a long log is not shifted on every request.
    if (log.length > this.requestLogRetention * 1.25) log.splice(0, log.length - this.requestLogRetention);
  }

  /** Newest first. */
  recentRequests(orgId: string, limit: number): RequestLogEntry[] {
    const log = this.requests.get(orgId) ?? [];
    const newest = log.slice(Math.max(0, log.length - Math.min(limit, this.requestLogRetention)));
    return newest.reverse();
  }
}
