import { randomUUID } from 'node:crypto';
import { createClient } from 'redis';
import type { RecordedEvent } from '../eventstore/event-store';
import type { HoldResult } from '../ledger/credit-holds';
import type { ProjectionStore } from './projection-store';
import {
  asProjected,
  Balance,
  dayOf,
  KeyRecord,
  MemberRecord,
  memberRecordOf,
  OpenReservation,
  OrgRecord,
  ReadModel,
  requestLogEntryOf,
  RequestLogEntry,
  withRateLimits,
  keyFieldsChanged,
  keySpendField,
} from './read-model';
import type { KeyHold } from '../ledger/key-limit';
import { periodsOf } from '../ledger/key-limit';
import type { KeyLimit, RateLimits } from '../identity/identity.events';
import * as lua from './redis-scripts';

export type RedisClient = ReturnType<typeof createClient>;

/** The read models were lost (Redis emptied or dropped): they must be rebuilt from the log. */
export class ReadModelsLostError extends Error {
  constructor() {
    super('the read models in Redis are missing: rebuilding them from the log');
    this.name = 'ReadModelsLostError';
  }
}

const SEP = '|';

/** The fields of a key's record kept in its Redis hash (its use and spend are kept per organization). */
const KEY_HASH_FIELDS = [
  'keyId',
  'orgId',
  'name',
  'prefix',
  'hash',
  'createdAt',
  'revokedAt',
  'rateLimits',
  'expiresAt',
  'disabled',
  'kind',
  'limit',
] as const;

/** A key's record (or the part of it an event sets) as hash fields: text as it is, the rest as JSON; absent, null and false left out. */
function keyHashFields(key: Partial<Pick<KeyRecord, (typeof KEY_HASH_FIELDS)[number]>>): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const name of KEY_HASH_FIELDS) {
    const value = key[name];
    if (value !== undefined && value !== null && value !== false)
      fields[name] = typeof value === 'string' ? value : JSON.stringify(value);
  }
  return fields;
}

/**
 * What the read models in Redis hold, as a number raised when a change needs events they were
 * built without (2: members). Read models of another number are rebuilt from the log, as lost ones are.
 */
const READ_MODEL_SCHEMA = '2';

/**
 * Read models in Redis, shared by every gateway instance and the operator tool. Every key
 * starts with `prefix`; one organization's keys share the hash tag `{org:ID}`.
 */
export class RedisProjectionStore implements ProjectionStore {
  readonly kind = 'redis' as const;
  private readonly shas = new Map<string, string>();
  /** Position this instance last applied: if the checkpoint vanishes after that, Redis was emptied. */
  private appliedUpTo = 0;

  private constructor(
    readonly client: RedisClient,
    private readonly prefix: string,
    private readonly requestLogRetention: number,
  ) {}

  static async connect(url: string, prefix: string, requestLogRetention: number): Promise<RedisProjectionStore> {
    const client = createClient({
      url,
      // While Redis is away, commands fail at once (a 503 for the request) instead of waiting in
      // a queue with no limit; reconnection goes on in the background.
      disableOfflineQueue: true,
      socket: { connectTimeout: 2_000, reconnectStrategy: (retries) => Math.min(retries * 100, 2000) },
    });
    client.on('error', () => {
      // Reconnection is automatic; commands issued meanwhile fail and callers report that.
    });
    await client.connect();
    return new RedisProjectionStore(client, prefix, requestLogRetention);
  }

  private org(orgId: string) {
    const tag = `${this.prefix}{org:${orgId}}`;
    return {
      tag,
      ledger: `${tag}:ledger`,
      holds: `${tag}:holds`,
      holdDeadlines: `${tag}:hold-deadlines`,
      open: `${tag}:open`,
      requests: `${tag}:requests`,
      keys: `${tag}:keys`,
      keyLastUsed: `${tag}:key-last-used`,
      keySpend: `${tag}:key-spend`,
      keyPending: `${tag}:key-pending`,
      holdKey: `${tag}:hold-key`,
      keyOpen: `${tag}:key-open`,
      keyPeriod: `${tag}:key-period-spend`,
      daily: `${tag}:daily`,
      record: `${tag}:org`,
      members: `${tag}:members`,
      keyManagers: `${tag}:key-managers`,
    };
  }

  /** A key's rate-limit counters, beside its organization's record (one hash tag: one script may use them all). */
  rateLimitKeys(orgId: string, keyId: string) {
    const k = this.org(orgId);
    return { requests: `${k.tag}:rate:${keyId}:requests`, tokens: `${k.tag}:rate:${keyId}:tokens`, organization: k.record };
  }

  private get orgsKey() {
    return `${this.prefix}orgs`;
  }
  private get expiryKey() {
    return `${this.prefix}reservations:expiry`;
  }
  private get checkpointKey() {
    return `${this.prefix}checkpoint`;
  }
  private get schemaKey() {
    return `${this.prefix}schema`;
  }
  private keyRecordKey(hash: string) {
    return `${this.prefix}key:${hash}`;
  }
  private userOrgsKey(userId: string) {
    return `${this.prefix}user:${userId}:orgs`;
  }

  /**
   * EVAL, for scripts whose order matters: commands issued together are pipelined in order,
   * and EVAL never fails with NOSCRIPT (a retry after NOSCRIPT would reorder events).
   */
  private async runInOrder(script: string, keys: string[], args: Array<string | number>): Promise<unknown> {
    return this.client.eval(script, { keys, arguments: args.map(String) });
  }

  /** EVALSHA, loading the script on first use or after Redis lost it (for order-free scripts). */
  async run(script: string, keys: string[], args: Array<string | number>): Promise<unknown> {
    const options = { keys, arguments: args.map(String) };
    let sha = this.shas.get(script);
    if (sha) {
      try {
        return await this.client.evalSha(sha, options);
      } catch (error) {
        if (!String((error as Error).message).includes('NOSCRIPT')) throw error;
      }
    }
    sha = await this.client.scriptLoad(script);
    this.shas.set(script, sha);
    return this.client.evalSha(sha, options);
  }

  async hold(orgId: string, reservationId: string, amount: number, pendingUntil: number, key: KeyHold): Promise<HoldResult> {
    const k = this.org(orgId);
    const reply = (await this.run(
      lua.HOLD,
      [k.ledger, k.holds, k.holdDeadlines, k.keyPending, k.holdKey, k.keyOpen, k.keyPeriod],
      [
        reservationId,
        amount,
        pendingUntil,
        key.keyId,
        key.limit?.amount ?? '',
        key.limit ? keySpendField(key.keyId, key.limit.period) : '',
      ],
    )) as number[];
    if (reply[0] === 1) return { admitted: true };
    return reply.length > 2
      ? { admitted: false, available: Number(reply[1]), keyRemaining: Number(reply[2]) }
      : { admitted: false, available: Number(reply[1]) };
  }

  /** The keys of the scripts that end pending holds (the fourth is unused, there to keep one hash tag). */
  private holdKeys(orgId: string): string[] {
    const k = this.org(orgId);
    return [k.ledger, k.holds, k.holdDeadlines, k.keyOpen, k.keyPending, k.holdKey];
  }

  async dropHold(orgId: string, reservationId: string): Promise<void> {
    await this.run(lua.DROP_HOLD, this.holdKeys(orgId), [reservationId]);
  }

  async sweepPendingHolds(now: number): Promise<number> {
    let swept = 0;
    for await (const orgIds of this.client.sScanIterator(this.orgsKey, { COUNT: 500 })) {
      const counts = await Promise.all(orgIds.map((orgId) => this.run(lua.SWEEP_HOLDS, this.holdKeys(orgId), [now])));
      swept += counts.reduce<number>((sum, n) => sum + Number(n), 0);
    }
    return swept;
  }

  /** Applies a batch (pipelined); throws ReadModelsLostError if Redis lost the read models. */
  async apply(events: RecordedEvent[]): Promise<void> {
    if (events.length === 0) return;
    if (this.appliedUpTo > 0 && !(await this.client.exists(this.checkpointKey))) throw new ReadModelsLostError();
    const results = await Promise.all(events.map((event) => this.applyOne(event)));
    if (results.includes(-1)) throw new ReadModelsLostError();
    const last = events[events.length - 1].position;
    // Read models started here from nothing are of this schema (before the checkpoint says they exist).
    if (this.appliedUpTo === 0) await this.client.set(this.schemaKey, READ_MODEL_SCHEMA);
    await this.runInOrder(lua.ADVANCE_CHECKPOINT, [this.checkpointKey], [last]);
    this.appliedUpTo = last;
  }

  async lockRebuild(ttlMs: number): Promise<(() => Promise<void>) | null> {
    const token = randomUUID();
    const key = `${this.prefix}rebuild-lock`;
    const taken = await this.client.set(key, token, { NX: true, PX: ttlMs });
    if (taken !== 'OK') return null;
    return async () => {
      await this.run(lua.RELEASE_LOCK, [key], [token]);
    };
  }

  private async applyOne(recorded: RecordedEvent): Promise<number> {
    const event = asProjected(recorded);
    const position = recorded.position;
    switch (event.type) {
      case 'OrganizationCreated': {
        const k = this.org(event.data.orgId);
        const record: OrgRecord = { ...event.data };
        const [applied] = await Promise.all([
          this.runInOrder(lua.APPLY_ORG_CREATED, [k.ledger, k.record], [position, JSON.stringify(record)]),
          this.client.sAdd(this.orgsKey, event.data.orgId),
        ]);
        return Number(applied);
      }
      case 'ApiKeyCreated': {
        const { keyId, orgId, hash } = event.data;
        await Promise.all([
          this.client.hSet(this.keyRecordKey(hash), keyHashFields(event.data)),
          this.client.hSet(this.org(orgId).keys, keyId, hash),
        ]);
        return 1;
      }
      case 'OrganizationRateLimitsSet': {
        // The record is rewritten whole: applying the event twice writes the same.
        const k = this.org(event.data.orgId);
        const json = await this.client.get(k.record);
        if (json === null) return 1;
        const record = JSON.parse(json) as OrgRecord;
        await this.client.set(k.record, JSON.stringify(withRateLimits(record, event.data.rateLimits)));
        return 1;
      }
      // Single commands, each setting a value: issued in the log's order, they apply in it, and twice is harmless.
      case 'MemberAdded': {
        const { orgId, userId } = event.data;
        const { manageKeys, ...member } = memberRecordOf(event);
        const k = this.org(orgId);
        await Promise.all([
          this.client.sAdd(this.userOrgsKey(userId), orgId),
          this.client.hSet(k.members, userId, JSON.stringify(member)),
          manageKeys ? this.client.hSet(k.keyManagers, userId, '1') : this.client.hDel(k.keyManagers, userId),
        ]);
        return 1;
      }
      case 'MemberRemoved': {
        const { orgId, userId } = event.data;
        const k = this.org(orgId);
        await Promise.all([
          this.client.sRem(this.userOrgsKey(userId), orgId),
          this.client.hDel(k.members, userId),
          this.client.hDel(k.keyManagers, userId),
        ]);
        return 1;
      }
      case 'MemberKeyAccessSet': {
        const k = this.org(event.data.orgId);
        await (event.data.manageKeys
          ? this.client.hSet(k.keyManagers, event.data.userId, '1')
          : this.client.hDel(k.keyManagers, event.data.userId));
        return 1;
      }
      case 'ApiKeyUpdated': {
        const changed = keyFieldsChanged(event.data.changes);
        const set = keyHashFields(changed);
        const cleared = Object.keys(changed).filter((field) => !(field in set));
        const key = this.keyRecordKey(event.data.hash);
        await Promise.all([
          Object.keys(set).length > 0 ? this.client.hSet(key, set) : null,
          cleared.length > 0 ? this.client.hDel(key, cleared) : null,
        ]);
        return 1;
      }
      case 'ApiKeyRevoked':
        await this.client.hSet(this.keyRecordKey(event.data.hash), 'revokedAt', String(event.data.revokedAt));
        return 1;
      case 'CreditsGranted': {
        const k = this.org(event.data.orgId);
        return Number(await this.runInOrder(lua.APPLY_GRANT, [k.ledger], [position, event.data.amount]));
      }
      case 'CreditsReserved': {
        const { orgId, reservationId, amount, expiresAt } = event.data;
        const k = this.org(orgId);
        // The expiry index is written on every delivery, not only the first: a process that died
        // between the two writes leaves it to the next delivery (the checkpoint had not moved).
        const [applied] = await Promise.all([
          this.runInOrder(
            lua.APPLY_RESERVED,
            [k.ledger, k.holds, k.holdDeadlines, k.open, k.keyPending, k.holdKey, k.keyOpen],
            [position, reservationId, amount, event.data.keyId],
          ),
          this.client.zAdd(this.expiryKey, { score: expiresAt, value: orgId + SEP + reservationId }),
        ]);
        return Number(applied);
      }
      case 'ReservationSettled':
      case 'ReservationReleased':
      case 'ReservationExpired':
      case 'RequestRefused': {
        // A refusal is logged as a resolution of no reservation that frees and charges nothing.
        const { orgId } = event.data;
        const k = this.org(orgId);
        const charge = event.type === 'ReservationSettled' ? event.data.amount : 0;
        const entry = requestLogEntryOf(event);
        const reservationId = entry.reservationId ?? '';
        const [applied] = await Promise.all([
          this.runInOrder(
            lua.APPLY_RESOLVED,
            [k.ledger, k.open, k.requests, k.keyLastUsed, k.daily, k.keySpend, k.keyOpen, k.keyPeriod],
            [
              position,
              reservationId,
              charge,
              JSON.stringify(entry),
              this.requestLogRetention,
              entry.keyId,
              entry.time,
              dayOf(entry.time),
              ...(charge > 0 ? periodsOf(entry.time).map((period) => keySpendField(entry.keyId, period)) : []),
            ],
          ),
          entry.reservationId === null ? null : this.client.zRem(this.expiryKey, orgId + SEP + reservationId),
        ]);
        return Number(applied);
      }
      default:
        return 1;
    }
  }

  async checkpoint(): Promise<number> {
    const position = Number((await this.client.get(this.checkpointKey)) ?? 0);
    // Read models seen up to here: if the checkpoint vanishes later, Redis lost them.
    if (position > this.appliedUpTo) this.appliedUpTo = position;
    return position;
  }

  async balance(orgId: string): Promise<Balance> {
    const [granted, spent, reserved, pending] = await this.client.hmGet(this.org(orgId).ledger, [
      'granted',
      'spent',
      'reserved',
      'pending',
    ]);
    return {
      granted: Number(granted ?? 0),
      spent: Number(spent ?? 0),
      reserved: Number(reserved ?? 0),
      pending: Number(pending ?? 0),
    };
  }

  private static toKeyRecord(fields: Record<string, string>): KeyRecord | null {
    if (!fields.keyId) return null;
    return {
      keyId: fields.keyId,
      orgId: fields.orgId,
      name: fields.name,
      prefix: fields.prefix,
      hash: fields.hash,
      createdAt: Number(fields.createdAt),
      revokedAt: fields.revokedAt ? Number(fields.revokedAt) : null,
      ...(fields.rateLimits ? { rateLimits: JSON.parse(fields.rateLimits) as RateLimits } : {}),
      ...(fields.expiresAt ? { expiresAt: Number(fields.expiresAt) } : {}),
      ...(fields.disabled === 'true' ? { disabled: true } : {}),
      ...(fields.kind === 'management' ? { kind: 'management' as const } : {}),
      ...(fields.limit ? { limit: JSON.parse(fields.limit) as KeyLimit } : {}),
      // Kept per organization (see keysOf): authentication does not need it.
      lastUsedAt: null,
    };
  }

  /**
   * A key unknown here is unknown to the log, unless Redis lost the read models (emptied, or
   * restarted without its data): then it is not the key that is missing, and the caller hears so.
   */
  async keyByHash(hash: string): Promise<KeyRecord | null> {
    const record = RedisProjectionStore.toKeyRecord(await this.client.hGetAll(this.keyRecordKey(hash)));
    if (record === null && !(await this.present())) throw new ReadModelsLostError();
    return record;
  }

  /**
   * Whether the read models are here: false once this instance had applied some (or found some) and
   * the checkpoint is gone, or when they were built by a version of the service with another schema.
   */
  async present(): Promise<boolean> {
    if (this.appliedUpTo === 0) return true;
    const [checkpoint, schema] = await Promise.all([this.client.exists(this.checkpointKey), this.client.get(this.schemaKey)]);
    return checkpoint === 1 && schema === READ_MODEL_SCHEMA;
  }

  async keysOf(orgId: string): Promise<KeyRecord[]> {
    const k = this.org(orgId);
    const [hashes, lastUsed, spent] = await Promise.all([
      this.client.hGetAll(k.keys),
      this.client.hGetAll(k.keyLastUsed),
      this.client.hGetAll(k.keySpend),
    ]);
    const records = await Promise.all(Object.values(hashes).map((hash) => this.keyByHash(hash)));
    return records
      .filter((r): r is KeyRecord => r !== null)
      .map((r) => ({
        ...r,
        lastUsedAt: lastUsed[r.keyId] ? Number(lastUsed[r.keyId]) : null,
        spent: spent[r.keyId] ? Number(spent[r.keyId]) : 0,
      }));
  }

  async organizationsOf(userId: string): Promise<OrgRecord[]> {
    const orgIds = await this.client.sMembers(this.userOrgsKey(userId));
    const records = await Promise.all(orgIds.map((orgId) => this.organization(orgId)));
    return records.filter((r): r is OrgRecord => r !== null);
  }

  async membersOf(orgId: string): Promise<MemberRecord[]> {
    const k = this.org(orgId);
    const [members, managers] = await Promise.all([this.client.hGetAll(k.members), this.client.hGetAll(k.keyManagers)]);
    return Object.entries(members)
      .map(([userId, json]) => ({ ...(JSON.parse(json) as MemberRecord), manageKeys: managers[userId] === '1' }))
      .sort((a, b) => a.addedAt - b.addedAt);
  }

  async membership(orgId: string, userId: string): Promise<MemberRecord | null> {
    const k = this.org(orgId);
    const [json, manager] = await Promise.all([this.client.hGet(k.members, userId), this.client.hGet(k.keyManagers, userId)]);
    return json === null ? null : { ...(JSON.parse(json) as MemberRecord), manageKeys: manager === '1' };
  }

  async dailySpend(orgId: string): Promise<Map<string, number>> {
    const days = await this.client.hGetAll(this.org(orgId).daily);
    return new Map(Object.entries(days).map(([day, nano]) => [day, Number(nano)]));
  }

  async organization(orgId: string): Promise<OrgRecord | null> {
    const json = await this.client.get(this.org(orgId).record);
    return json ? (JSON.parse(json) as OrgRecord) : null;
  }

  async recentRequests(orgId: string, limit: number): Promise<RequestLogEntry[]> {
    const entries = await this.client.lRange(this.org(orgId).requests, 0, limit - 1);
    // Entries logged before the cache's classes lack their counts: none.
    return entries.map(
      (json) =>
        ({ cacheReadTokens: 0, cacheWriteTokens: 0, ...(JSON.parse(json) as Partial<RequestLogEntry>) }) as RequestLogEntry,
    );
  }

  async keyUsage(orgId: string, keyId: string, period: string): Promise<number> {
    const k = this.org(orgId);
    const [spent, open, pending] = await Promise.all([
      this.client.hGet(k.keyPeriod, keySpendField(keyId, period)),
      this.client.hGet(k.keyOpen, keyId),
      this.client.hGet(k.keyPending, keyId),
    ]);
    return Number(spent ?? 0) + Number(open ?? 0) + Number(pending ?? 0);
  }

  async openReservationCount(): Promise<number> {
    return this.client.zCard(this.expiryKey);
  }

  async expiredReservations(now: number, limit: number): Promise<OpenReservation[]> {
    const due = await this.client.zRangeWithScores(this.expiryKey, 0, now, {
      BY: 'SCORE',
      LIMIT: { offset: 0, count: limit },
    });
    const found = await Promise.all(
      due.map(async ({ value, score }) => {
        const [orgId, reservationId] = value.split(SEP);
        const amount = await this.client.hGet(this.org(orgId).open, reservationId);
        if (amount === null) {
          // Already resolved; the entry outlived it (a follower applied out of turn).
          await this.client.zRem(this.expiryKey, value);
          return null;
        }
        return { reservationId, orgId, amount: Number(amount), expiresAt: score };
      }),
    );
    return found.filter((r): r is OpenReservation => r !== null);
  }

  async ledgers() {
    const result = new Map<string, { granted: number; spent: number; reserved: number; position: number }>();
    for await (const orgIds of this.client.sScanIterator(this.orgsKey, { COUNT: 500 })) {
      const rows = await Promise.all(
        orgIds.map((orgId) => this.client.hmGet(this.org(orgId).ledger, ['granted', 'spent', 'reserved', 'position'])),
      );
      orgIds.forEach((orgId, i) => {
        const [granted, spent, reserved, position] = rows[i].map((v) => Number(v ?? 0));
        result.set(orgId, { granted, spent, reserved, position });
      });
    }
    return result;
  }

  async reset(): Promise<void> {
    this.appliedUpTo = 0;
    for await (const keys of this.client.scanIterator({ MATCH: `${this.prefix}*`, COUNT: 1000 })) {
      const lock = `${this.prefix}rebuild-lock`;
      const doomed = keys.filter((key) => key !== lock);
      if (doomed.length > 0) await this.client.unlink(doomed);
    }
  }

  async load(model: ReadModel): Promise<void> {
    const writes: Array<Promise<unknown>> = [];
    const flush = async () => {
      await Promise.all(writes.splice(0));
    };
    // What keys have spent and hold goes first: other instances keep admitting while this loads, and
    // a key that authenticates (its record, written last) must find its limit's usage already there.
    for (const key of model.keysById.values()) {
      if (key.spent) writes.push(this.client.hSet(this.org(key.orgId).keySpend, key.keyId, String(key.spent)));
      const held = model.keyOpen.get(key.keyId);
      if (held) writes.push(this.client.hSet(this.org(key.orgId).keyOpen, key.keyId, String(held)));
      if (writes.length > 2000) await flush();
    }
    for (const [field, nano] of model.keySpend) {
      const key = model.keysById.get(field.slice(0, field.indexOf('|')));
      if (key) writes.push(this.client.hSet(this.org(key.orgId).keyPeriod, field, String(nano)));
      if (writes.length > 2000) await flush();
    }
    await flush();
    const openByOrg = new Map<string, OpenReservation[]>();
    for (const r of model.open.values()) openByOrg.set(r.orgId, [...(openByOrg.get(r.orgId) ?? []), r]);
    for (const [orgId, ledger] of model.orgs) {
      const k = this.org(orgId);
      const open = openByOrg.get(orgId) ?? [];
      writes.push(
        this.runInOrder(
          lua.LOAD_LEDGER,
          [k.ledger, k.open],
          [ledger.granted, ledger.spent, ledger.reserved, ledger.position, ...open.flatMap((r) => [r.reservationId, r.amount])],
        ),
        this.client.sAdd(this.orgsKey, orgId),
      );
      for (const r of open)
        writes.push(this.client.zAdd(this.expiryKey, { score: r.expiresAt, value: orgId + SEP + r.reservationId }));
      const record = model.orgRecords.get(orgId);
      if (record) writes.push(this.client.set(k.record, JSON.stringify(record)));
      const log = model.requests.get(orgId) ?? [];
      const kept = log.slice(Math.max(0, log.length - this.requestLogRetention));
      if (kept.length > 0) {
        writes.push(
          this.client
            .multi()
            .del(k.requests)
            .lPush(
              k.requests,
              kept.map((e) => JSON.stringify(e)),
            )
            .exec(),
        );
      }
      const days = model.dailySpend.get(orgId);
      if (days && days.size > 0)
        writes.push(this.client.hSet(k.daily, Object.fromEntries([...days].map(([d, n]) => [d, String(n)]))));
      if (writes.length > 2000) await flush();
    }
    for (const [userId, orgIds] of model.memberships) {
      if (orgIds.size > 0) writes.push(this.client.sAdd(this.userOrgsKey(userId), [...orgIds]));
    }
    for (const [orgId, members] of model.members) {
      const k = this.org(orgId);
      for (const { manageKeys, ...member } of members.values()) {
        writes.push(this.client.hSet(k.members, member.userId, JSON.stringify(member)));
        if (manageKeys) writes.push(this.client.hSet(k.keyManagers, member.userId, '1'));
      }
      if (writes.length > 2000) await flush();
    }
    for (const key of model.keysById.values()) {
      writes.push(
        this.client.hSet(this.keyRecordKey(key.hash), keyHashFields(key)),
        this.client.hSet(this.org(key.orgId).keys, key.keyId, key.hash),
      );
      if (key.lastUsedAt !== null)
        writes.push(this.client.hSet(this.org(key.orgId).keyLastUsed, key.keyId, String(key.lastUsedAt)));
      if (writes.length > 2000) await flush();
    }
    await flush();
    await this.client.set(this.schemaKey, READ_MODEL_SCHEMA);
    await this.runInOrder(lua.ADVANCE_CHECKPOINT, [this.checkpointKey], [model.position]);
    this.appliedUpTo = Math.max(this.appliedUpTo, model.position);
  }

  async close(): Promise<void> {
    if (this.client.isOpen) await this.client.close();
  }
}
