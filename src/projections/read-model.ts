import type { RecordedEvent } from '../eventstore/event-store';
import type { KeyRecord } from '../identity/key-lookup';
import { foldEvent } from './folds';
import type { MemberRecord, OpenReservation, OrgLedger, OrgRecord, RequestLogEntry } from './read-models';
import { RequestLog } from './request-log';
import { SlicedJson } from './sliced-json';
import {
  keyRecordOf,
  keySpendField,
  type CounterTable,
  type CounterTables,
  type LedgerField,
  type OrgProfile,
  type ReadModelWrites,
  type RecordTable,
  type RecordTables,
  type SharedRecords,
  type SharedSet,
  type StoredKey,
  type StoredMember,
} from './writes';

type Counters = Exclude<CounterTable, 'ledger'>;
type FieldValue<T extends RecordTable> = RecordTables[T][keyof RecordTables[T]];

/** One organization's tables in this process. */
export class OrganizationTables {
  readonly ledger: OrgLedger = { granted: 0, spent: 0, reserved: 0, position: 0 };
  readonly counters: { [T in Counters]: Map<string, number> } = {
    daily: new Map(),
    keySpend: new Map(),
    keyPeriodSpend: new Map(),
    keyOpen: new Map(),
    keyLastUsed: new Map(),
    refunded: new Map(),
  };
  /** Values are never changed in place (a snapshot being written may hold them): a write replaces them. */
  readonly records: { [T in RecordTable]: Map<string, FieldValue<T>> } = {
    organization: new Map(),
    members: new Map(),
    keyManagers: new Map(),
    keys: new Map(),
    open: new Map(),
  };
  readonly requests: RequestLog;

  constructor(requestLogRetention: number) {
    this.requests = new RequestLog(requestLogRetention);
  }
}

/** An organization's tables as saved: its ledger, then each table's fields. */
interface OrganizationSnapshot extends OrgLedger {
  counters: { [T in Counters]: Array<[string, number]> };
  records: { [T in RecordTable]: Array<[string, FieldValue<T>]> };
}

/** A read model as saved to disk: plain arrays, plus the last event it includes to tie it to its log. */
export interface ReadModelSnapshot {
  /** 7: spend per day net of refunds. */
  version: 7;
  /** The identity of the log it was folded from (absent in copies saved before logs had one). */
  logId?: string;
  position: number;
  last: { streamId: string; revision: number } | null;
  orgs: Array<[string, OrganizationSnapshot]>;
  /** Each organization's request log, oldest first. */
  requests: Array<[string, RequestLogEntry[]]>;
  keyRecords: Array<[string, Partial<StoredKey>]>;
  userOrganizations: Array<[string, string[]]>;
  /** Reservation id, organization, when it expires. */
  expiry: Array<[string, string, number]>;
}

/**
 * A snapshot's JSON text in pieces, its request logs (the bulk: up to the retention per
 * organization) serialized a slice at a time between turns of the event loop (SlicedJson: one log
 * of 12,500 entries took ~21 ms in one piece). The snapshot must share nothing mutable with a live
 * model (`ReadModel.toSnapshot` makes it so); the pieces, written one after another, parse back to it.
 */
export async function snapshotPieces(
  snapshot: ReadModelSnapshot,
  sliceSize = 500,
  pause?: () => Promise<unknown>,
): Promise<string[]> {
  const { requests, ...rest } = snapshot;
  const json = new SlicedJson(sliceSize, pause);
  json.push(JSON.stringify(rest).slice(0, -1) + ',"requests":[');
  for (let org = 0; org < requests.length; org++) {
    const [orgId, log] = requests[org];
    json.push(`${org > 0 ? ',' : ''}[${JSON.stringify(orgId)},[`);
    await json.pushEntries(log);
    json.push(']]');
  }
  json.push(']}');
  return json.pieces;
}

const NO_COUNTS: ReadonlyMap<string, number> = new Map();

/**
 * Every read model in this process: the folds of the log (folds.ts) applied to maps as they come.
 * It is what the in-process store serves, what a rebuild computes before writing to Redis, and what
 * the audit replays. `apply` does no I/O.
 */
export class ReadModel implements ReadModelWrites {
  private readonly organizations = new Map<string, OrganizationTables>();
  /** Key hash → the key's record (replaced, never changed in place). */
  readonly keyRecords = new Map<string, Partial<StoredKey>>();
  /** The records authentication reads, made once per change of a key (every request reads one). */
  private readonly keysForAuthentication = new Map<string, KeyRecord>();
  readonly userOrganizations = new Map<string, Set<string>>();
  /** Open reservation → its organization and when it expires. */
  readonly expiry = new Map<string, { orgId: string; at: number }>();
  position = 0;
  /** The last event applied, which a snapshot records to check it belongs to the log it is loaded with. */
  private lastStreamId: string | null = null;
  private lastRevision = 0;
  /** The organization of the event being applied. */
  private current!: OrganizationTables;
  /** Told when an event makes admission's pending hold a recorded one (the in-process store keeps the holds). */
  onPendingHoldCleared: ((reservationId: string) => void) | null = null;

  constructor(private readonly requestLogRetention: number) {}

  apply(recorded: RecordedEvent): void {
    if (recorded.position > this.position) {
      this.position = recorded.position;
      this.lastStreamId = recorded.streamId;
      this.lastRevision = recorded.revision;
    }
    foldEvent(recorded, this);
  }

  get last(): { streamId: string; revision: number } | null {
    return this.lastStreamId === null ? null : { streamId: this.lastStreamId, revision: this.lastRevision };
  }

  // The writes (see writes.ts), applied in place.

  begin(orgId: string, position: number): boolean {
    let tables = this.organizations.get(orgId);
    if (tables === undefined) {
      tables = new OrganizationTables(this.requestLogRetention);
      this.organizations.set(orgId, tables);
    }
    if (position <= tables.ledger.position) return false;
    tables.ledger.position = position;
    this.current = tables;
    return true;
  }

  add<T extends CounterTable>(table: T, field: CounterTables[T], by: number): void {
    this.addTo(table, field, by);
  }

  private addTo(table: CounterTable, field: string, by: number): void {
    if (table === 'ledger') this.current.ledger[field as LedgerField] += by;
    else {
      const counter = this.current.counters[table];
      counter.set(field, (counter.get(field) ?? 0) + by);
    }
  }

  release<T extends CounterTable>(table: T, field: CounterTables[T], _held: 'open', reservationId: string): void {
    const held = this.current.records.open.get(reservationId);
    if (held !== undefined) this.addTo(table, field, -held);
  }

  raise<T extends CounterTable>(table: T, field: CounterTables[T], value: number): void {
    const name: CounterTable = table;
    if (name === 'ledger') {
      const ledger = this.current.ledger;
      ledger[field as LedgerField] = Math.max(ledger[field as LedgerField], value);
    } else {
      const counter = this.current.counters[name];
      const now = counter.get(field);
      if (now === undefined || value > now) counter.set(field, value);
    }
  }

  set<T extends RecordTable, F extends keyof RecordTables[T] & string>(
    table: T,
    field: F,
    value: RecordTables[T][F] | undefined,
  ): void {
    const records = this.current.records[table] as Map<string, unknown>;
    if (value === undefined) records.delete(field);
    else records.set(field, value);
  }

  push(entry: RequestLogEntry): void {
    this.current.requests.push(entry);
  }

  clearPendingHold(reservationId: string): void {
    this.onPendingHoldCleared?.(reservationId);
  }

  update<T extends keyof SharedRecords>(
    _table: T,
    id: string,
    fields: Partial<SharedRecords[T]>,
    cleared: ReadonlyArray<keyof SharedRecords[T]>,
  ): void {
    const record: Record<string, unknown> = { ...this.keyRecords.get(id) };
    for (const [field, value] of Object.entries(fields)) if (value !== undefined) record[field] = value;
    for (const field of cleared) delete record[field as string];
    this.keyRecords.set(id, record);
    this.keysForAuthentication.delete(id);
  }

  include(_table: SharedSet, id: string, member: string): void {
    let members = this.userOrganizations.get(id);
    if (members === undefined) {
      members = new Set();
      this.userOrganizations.set(id, members);
    }
    members.add(member);
  }

  exclude(_table: SharedSet, id: string, member: string): void {
    this.userOrganizations.get(id)?.delete(member);
  }

  schedule(orgId: string, reservationId: string, at: number): void {
    this.expiry.set(reservationId, { orgId, at });
  }

  unschedule(_orgId: string, reservationId: string): void {
    this.expiry.delete(reservationId);
  }

  // What the read side asks (read-models.ts), from this process's maps.

  /** Every organization's ledger (the live objects). */
  get orgs(): Map<string, OrgLedger> {
    return new Map([...this.organizations].map(([orgId, tables]) => [orgId, tables.ledger]));
  }

  ledger(orgId: string): OrgLedger | undefined {
    return this.organizations.get(orgId)?.ledger;
  }

  counters<T extends Counters>(orgId: string, table: T): ReadonlyMap<string, number> {
    return this.organizations.get(orgId)?.counters[table] ?? NO_COUNTS;
  }

  private records<T extends RecordTable>(orgId: string, table: T): ReadonlyMap<string, FieldValue<T>> | undefined {
    return this.organizations.get(orgId)?.records[table];
  }

  organization(orgId: string): OrgRecord | null {
    const record = this.records(orgId, 'organization');
    const profile = record?.get('profile') as OrgProfile | undefined;
    if (profile === undefined) return null;
    const rateLimits = record!.get('rateLimits') as OrgRecord['rateLimits'];
    return rateLimits === undefined ? { ...profile } : { ...profile, rateLimits };
  }

  organizationsOf(userId: string): OrgRecord[] {
    const orgIds = [...(this.userOrganizations.get(userId) ?? [])];
    return orgIds.map((orgId) => this.organization(orgId)).filter((r): r is OrgRecord => r !== null);
  }

  private memberOf(orgId: string, member: StoredMember): MemberRecord {
    return { ...member, manageKeys: this.records(orgId, 'keyManagers')?.has(member.userId) === true };
  }

  membersOf(orgId: string): MemberRecord[] {
    const members = [...(this.records(orgId, 'members')?.values() ?? [])];
    return members.map((member) => this.memberOf(orgId, member)).sort((a, b) => a.addedAt - b.addedAt);
  }

  membership(orgId: string, userId: string): MemberRecord | null {
    const member = this.records(orgId, 'members')?.get(userId);
    return member === undefined ? null : this.memberOf(orgId, member);
  }

  keyByHash(hash: string): KeyRecord | null {
    let key = this.keysForAuthentication.get(hash);
    if (key === undefined) {
      const stored = this.keyRecords.get(hash);
      if (stored === undefined) return null;
      key = keyRecordOf(stored);
      this.keysForAuthentication.set(hash, key);
    }
    return key;
  }

  key(orgId: string, keyId: string): KeyRecord | null {
    const hash = this.records(orgId, 'keys')?.get(keyId);
    const stored = hash === undefined ? undefined : this.keyRecords.get(hash);
    if (stored === undefined) return null;
    return keyRecordOf(
      stored,
      this.counters(orgId, 'keyLastUsed').get(keyId) ?? null,
      this.counters(orgId, 'keySpend').get(keyId) ?? 0,
    );
  }

  keysOf(orgId: string): KeyRecord[] {
    const keyIds = [...(this.records(orgId, 'keys')?.keys() ?? [])];
    return keyIds.map((keyId) => this.key(orgId, keyId)).filter((k): k is KeyRecord => k !== null);
  }

  /** A key's charges in `period` and its recorded holds (the in-process store adds its pending ones). */
  keyUsage(orgId: string, keyId: string, period: string): number {
    return (
      (this.counters(orgId, 'keyPeriodSpend').get(keySpendField(keyId, period)) ?? 0) +
      (this.counters(orgId, 'keyOpen').get(keyId) ?? 0)
    );
  }

  recentRequests(orgId: string, limit: number): RequestLogEntry[] {
    return this.organizations.get(orgId)?.requests.newest(limit) ?? [];
  }

  request(orgId: string, requestId: string): RequestLogEntry | null {
    return this.organizations.get(orgId)?.requests.find(requestId) ?? null;
  }

  refunded(orgId: string, reservationIds: readonly string[]): Map<string, number> {
    const refunded = this.counters(orgId, 'refunded');
    const found = new Map<string, number>();
    for (const id of reservationIds) {
      const amount = refunded.get(id);
      if (amount !== undefined) found.set(id, amount);
    }
    return found;
  }

  dailySpend(orgId: string): Map<string, number> {
    return new Map(this.counters(orgId, 'daily'));
  }

  openReservationCount(): number {
    return this.expiry.size;
  }

  expiredReservations(now: number, limit: number): OpenReservation[] {
    const expired: OpenReservation[] = [];
    for (const [reservationId, { orgId, at }] of this.expiry) {
      if (expired.length >= limit) break;
      if (at > now) continue;
      const amount = this.records(orgId, 'open')?.get(reservationId) ?? 0;
      expired.push({ reservationId, orgId, amount, expiresAt: at });
    }
    return expired;
  }

  /** Every organization's tables, for a store that writes them elsewhere (a rebuild of Redis). */
  *tables(): Generator<[string, OrganizationTables]> {
    yield* this.organizations;
  }

  /**
   * The models as they stand now, sharing nothing that `apply` changes later (maps and request logs
   * are copied; the records and log entries in them are never changed once made), so it can be
   * serialized while events keep coming.
   */
  toSnapshot(): ReadModelSnapshot {
    const orgs: Array<[string, OrganizationSnapshot]> = [];
    const requests: Array<[string, RequestLogEntry[]]> = [];
    for (const [orgId, tables] of this.organizations) {
      const { counters: c, records: r } = tables;
      orgs.push([
        orgId,
        {
          ...tables.ledger,
          counters: {
            daily: [...c.daily],
            keySpend: [...c.keySpend],
            keyPeriodSpend: [...c.keyPeriodSpend],
            keyOpen: [...c.keyOpen],
            keyLastUsed: [...c.keyLastUsed],
            refunded: [...c.refunded],
          },
          records: {
            organization: [...r.organization],
            members: [...r.members],
            keyManagers: [...r.keyManagers],
            keys: [...r.keys],
            open: [...r.open],
          },
        },
      ]);
      requests.push([orgId, tables.requests.oldestFirst()]);
    }
    return {
      version: 7,
      position: this.position,
      last: this.last,
      orgs,
      requests,
      keyRecords: [...this.keyRecords],
      userOrganizations: [...this.userOrganizations].map(([userId, orgIds]) => [userId, [...orgIds]]),
      expiry: [...this.expiry].map(([reservationId, { orgId, at }]) => [reservationId, orgId, at]),
    };
  }

  static fromSnapshot(snapshot: ReadModelSnapshot, requestLogRetention: number): ReadModel {
    const model = new ReadModel(requestLogRetention);
    model.position = snapshot.position;
    if (snapshot.last) {
      model.lastStreamId = snapshot.last.streamId;
      model.lastRevision = snapshot.last.revision;
    }
    const logs = new Map(snapshot.requests);
    for (const [orgId, saved] of snapshot.orgs) {
      const tables = new OrganizationTables(requestLogRetention);
      Object.assign(tables.ledger, {
        granted: saved.granted,
        spent: saved.spent,
        reserved: saved.reserved,
        position: saved.position,
      });
      for (const table of Object.keys(tables.counters) as Counters[]) {
        // A table added since the snapshot was saved (refunds) was empty then.
        for (const [field, value] of saved.counters[table] ?? []) tables.counters[table].set(field, value);
      }
      for (const table of Object.keys(tables.records) as RecordTable[]) {
        const records = tables.records[table] as Map<string, unknown>;
        for (const [field, value] of saved.records[table]) records.set(field, value);
      }
      for (const entry of (logs.get(orgId) ?? []).slice(-requestLogRetention)) tables.requests.push(entry);
      model.organizations.set(orgId, tables);
    }
    for (const [hash, record] of snapshot.keyRecords) model.keyRecords.set(hash, record);
    for (const [userId, orgIds] of snapshot.userOrganizations) model.userOrganizations.set(userId, new Set(orgIds));
    for (const [reservationId, orgId, at] of snapshot.expiry) model.expiry.set(reservationId, { orgId, at });
    return model;
  }
}
