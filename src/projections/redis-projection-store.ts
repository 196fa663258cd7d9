import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { RecordedEvent } from '../eventstore/event-store';
import type { KeyLimit, RateLimits } from '../identity/identity.events';
import type { HoldResult } from '../ledger/credit-holds';
import type { KeyHold } from '../ledger/key-limit';
import { foldEvent } from './folds';
import type { ReadModelStore } from './projection-store';
import type { ReadModel } from './read-model';
import type { ReadModelOrigin } from './read-model-trust';
import type { Balance, KeyRecord, MemberRecord, OpenReservation, OrgLedger, OrgRecord, RequestLogEntry } from './read-models';
import {
  connectRedis,
  type ConnectOptions,
  isCluster,
  masters,
  scanKeys,
  setMembers,
  type RedisClient,
  type RedisTarget,
} from './redis-client';
import * as lua from './redis-scripts';
import {
  keyRecordOf,
  keySpendField,
  type CounterTable,
  type CounterTables,
  type OrgProfile,
  type ReadModelWrites,
  type RecordTable,
  type RecordTables,
  type SharedRecords,
  type SharedSet,
  type StoredKey,
  type StoredMember,
} from './writes';

/** The read models were lost (Redis emptied or dropped): they must be rebuilt from the log. */
export class ReadModelsLostError extends Error {
  constructor() {
    super('the read models in Redis are missing: rebuilding them from the log');
    this.name = 'ReadModelsLostError';
  }
}

const SEP = '|';

/** Scripts by their SHA-1, as EVALSHA names them. */
const SHAS = new Map<string, string>();
const shaOf = (script: string): string => {
  let sha = SHAS.get(script);
  if (sha === undefined) SHAS.set(script, (sha = createHash('sha1').update(script).digest('hex')));
  return sha;
};

/**
 * How long a write waits on a cluster for a replica of its master to have it (WAIT): a master lost
 * after that loses none of it. A master with no replica left (its replica promoted, the old master
 * not back) costs each write this long, and its writes are then on that master alone.
 */
const REPLICA_WAIT_MS = 100;

/** WAIT refused on a replica, or ended when its master turned replica while it waited. */
const demoted = (error: unknown): boolean =>
  /^(ERR WAIT cannot be used with replica|UNBLOCKED .*master -> replica)/.test(String((error as Error)?.message));

/** The server does not have the script (first use, a restart, a failover to a replica that never ran it). */
const noScript = (error: unknown): boolean => String((error as Error)?.message).startsWith('NOSCRIPT');

/**
 * What the read models in Redis hold, as a number raised when a change alters what is stored
 * (2: members; 3: the request log indexed by request id, organizations' rate limits beside their
 * record, every write through one script per organization; 4: spend per day net of refunds). Read
 * models of another number are rebuilt from the log, as lost ones are.
 */
const READ_MODEL_SCHEMA = '4';

/** Each table of an organization: its key after the organization's hash tag. */
const TABLE_KEYS: { [T in CounterTable | RecordTable]: string } = {
  ledger: 'ledger',
  daily: 'daily',
  keySpend: 'key-spend',
  keyPeriodSpend: 'key-period-spend',
  keyOpen: 'key-open',
  keyLastUsed: 'key-last-used',
  refunded: 'refunded',
  organization: 'org',
  members: 'members',
  keyManagers: 'key-managers',
  keys: 'keys',
  open: 'open',
};

/** A value as a hash field holds it: text as it is, the rest as JSON. */
const encoded = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));

/** A request log element (`n entry`, see redis-scripts.ts) back to its entry. */
const entryOf = (element: string): RequestLogEntry => JSON.parse(element.slice(element.indexOf(' ') + 1)) as RequestLogEntry;

/** One organization's writes in a batch: one script, the keys it names and its arguments. */
interface OrganizationScript {
  keys: string[];
  /** Key → its index in `keys`, from 1 as Lua counts. */
  indexes: Map<string, number>;
  args: Array<string | number>;
  /** Where the open event's argument count goes, filled in when the next event of the organization starts or the batch ends. */
  countAt: number;
}

/**
 * A batch of events as Redis writes: per organization, one script's arguments (applied atomically
 * under the position guard by `lua.APPLY`); the shared writes as single idempotent commands, in the
 * log's order.
 */
class RedisBatch implements ReadModelWrites {
  readonly scripts = new Map<string, OrganizationScript>();
  readonly shared: Array<() => Promise<unknown>> = [];
  private orgId = '';
  private script!: OrganizationScript;

  constructor(
    private readonly store: RedisProjectionStore,
    private readonly requestLogRetention: number,
  ) {}

  begin(orgId: string, position: number, creates: boolean): boolean {
    let script = this.scripts.get(orgId);
    if (script === undefined) {
      const ledger = this.store.tableKey(orgId, 'ledger');
      script = { keys: [ledger], indexes: new Map([[ledger, 1]]), args: [], countAt: -1 };
      this.scripts.set(orgId, script);
    } else RedisBatch.close(script);
    script.countAt = script.args.length + 2;
    script.args.push(position, creates ? 1 : 0, 0);
    this.orgId = orgId;
    this.script = script;
    return true;
  }

  /** The script's arguments, complete. */
  static close(script: OrganizationScript): Array<string | number> {
    script.args[script.countAt] = script.args.length - script.countAt - 1;
    return script.args;
  }

  private index(key: string): number {
    let index = this.script.indexes.get(key);
    if (index === undefined) {
      index = this.script.keys.push(key);
      this.script.indexes.set(key, index);
    }
    return index;
  }

  private table(table: CounterTable | RecordTable): number {
    return this.index(this.store.tableKey(this.orgId, table));
  }

  add<T extends CounterTable>(table: T, field: CounterTables[T], by: number): void {
    this.script.args.push('add', this.table(table), field, by);
  }

  release<T extends CounterTable>(table: T, field: CounterTables[T], held: 'open', reservationId: string): void {
    this.script.args.push('release', this.table(table), field, this.table(held), reservationId);
  }

  raise<T extends CounterTable>(table: T, field: CounterTables[T], value: number): void {
    this.script.args.push('max', this.table(table), field, value);
  }

  set<T extends RecordTable, F extends keyof RecordTables[T] & string>(
    table: T,
    field: F,
    value: RecordTables[T][F] | undefined,
  ): void {
    if (value === undefined) this.script.args.push('del', this.table(table), field);
    else this.script.args.push('set', this.table(table), field, encoded(value));
  }

  push(entry: RequestLogEntry): void {
    const k = this.store.org(this.orgId);
    this.script.args.push(
      'push',
      this.index(k.requests),
      this.index(k.requestIndex),
      this.requestLogRetention,
      entry.requestId,
      entry.upstreamId ?? '',
      JSON.stringify(entry),
    );
  }

  clearPendingHold(reservationId: string): void {
    const k = this.store.org(this.orgId);
    this.script.args.push(
      'hold',
      this.index(k.holds),
      this.index(k.holdDeadlines),
      this.index(k.keyPending),
      this.index(k.holdKey),
      reservationId,
    );
  }

  update<T extends keyof SharedRecords>(
    _table: T,
    id: string,
    fields: Partial<SharedRecords[T]>,
    cleared: ReadonlyArray<keyof SharedRecords[T]>,
  ): void {
    const values: Record<string, string> = {};
    for (const [field, value] of Object.entries(fields))
      if (value !== undefined && value !== null) values[field] = encoded(value);
    const key = this.store.keyRecordKey(id);
    const client = this.store.client;
    if (Object.keys(values).length > 0) this.shared.push(() => client.hSet(key, values));
    if (cleared.length > 0) this.shared.push(() => client.hDel(key, cleared as string[]));
  }

  include(_table: SharedSet, id: string, member: string): void {
    this.shared.push(() => this.store.client.sAdd(this.store.userOrgsKey(id), member));
  }

  exclude(_table: SharedSet, id: string, member: string): void {
    this.shared.push(() => this.store.client.sRem(this.store.userOrgsKey(id), member));
  }

  schedule(orgId: string, reservationId: string, at: number): void {
    this.shared.push(() => this.store.client.zAdd(this.store.expiryKey, { score: at, value: orgId + SEP + reservationId }));
  }

  unschedule(orgId: string, reservationId: string): void {
    this.shared.push(() => this.store.client.zRem(this.store.expiryKey, orgId + SEP + reservationId));
  }
}

/**
 * Keys (after the prefix) of what is kept here but never read from the log, so a rebuild of the read
 * models leaves them: the dashboard's attempt counts (a rebuild would give every throttled sign-in
 * its allowance back), the keys' rate-limit windows, the hosts' circuits and the conversations'
 * sticky routes (see attemptsTag, rateLimitKeys, breakerKey, routing/sticky.ts).
 */
const liveState = (key: string): boolean =>
  key.startsWith('{attempts:') || key.startsWith('{host:') || /^\{org:[^}]*\}:(rate|sticky):/.test(key);

/**
 * Read models in Redis, shared by every gateway instance and the operator tool. Every key
 * starts with `prefix`; one organization's keys share the hash tag `{org:ID}`.
 */
export class RedisProjectionStore implements ReadModelStore {
  readonly kind = 'redis' as const;
  /** Whether this instance has seen the read models built (a checkpoint): if it vanishes after that, Redis was emptied. */
  private built = false;
  /** Set when the client connects again after losing Redis: what Redis holds may have changed meanwhile. */
  private connectedAgain = false;
  /** This store's identity as this instance took it (see storeId). */
  private id: string | null = null;

  private constructor(
    readonly client: RedisClient,
    private readonly prefix: string,
    private readonly requestLogRetention: number,
    /** The identity of the log this instance follows: read models of another are not present. */
    private readonly logId: string,
  ) {}

  /**
   * `target`: a single Redis (a URL) or a cluster; `logId`: the identity of the log the read models
   * follow, recorded with them.
   */
  static async connect(
    target: RedisTarget | string,
    prefix: string,
    requestLogRetention: number,
    logId: string,
    connecting: Pick<ConnectOptions, 'timeoutMs' | 'log'> = {},
  ): Promise<RedisProjectionStore> {
    const client = await connectRedis(typeof target === 'string' ? { url: target, cluster: false } : target, {
      ...connecting,
      // Heard only once connected, so after `store` is made.
      onReconnect: () => (store.connectedAgain = true),
    });
    const store = new RedisProjectionStore(client, prefix, requestLogRetention, logId);
    return store;
  }

  /** An organization's table: its key. */
  tableKey(orgId: string, table: CounterTable | RecordTable): string {
    return `${this.prefix}{org:${orgId}}:${TABLE_KEYS[table]}`;
  }

  /** An organization's keys by what they hold. */
  org(orgId: string) {
    const tag = `${this.prefix}{org:${orgId}}`;
    return {
      tag,
      ledger: `${tag}:ledger`,
      holds: `${tag}:holds`,
      holdDeadlines: `${tag}:hold-deadlines`,
      keyPending: `${tag}:key-pending`,
      holdKey: `${tag}:hold-key`,
      keyOpen: `${tag}:key-open`,
      keyPeriod: `${tag}:key-period-spend`,
      requests: `${tag}:requests`,
      requestIndex: `${tag}:request-index`,
    };
  }

  /** A key's rate-limit counters, beside its organization's record (one hash tag: one script may use them all). */
  rateLimitKeys(orgId: string, keyId: string) {
    const tag = this.org(orgId).tag;
    return {
      requests: `${tag}:rate:${keyId}:requests`,
      tokens: `${tag}:rate:${keyId}:tokens`,
      organization: this.tableKey(orgId, 'organization'),
    };
  }

  /** The hash tag of a group of dashboard attempt counts (attempt-limits/redis-attempt-store.ts), taken together by one script. */
  attemptsTag(group: string): string {
    return `${this.prefix}{attempts:${group}}`;
  }

  /** A host's circuit breaker for one model (routing/breaker-store.ts): one key, tagged by its host. */
  breakerKey(hostId: string, model: string): string {
    return `${this.prefix}{host:${hostId}}:breaker:${model}`;
  }

  get(key: string): Promise<string | null> {
    return this.client.get(key);
  }

  private get orgsKey() {
    return `${this.prefix}orgs`;
  }
  get expiryKey() {
    return `${this.prefix}reservations:expiry`;
  }
  private get checkpointKey() {
    return `${this.prefix}checkpoint`;
  }
  private get schemaKey() {
    return `${this.prefix}schema`;
  }
  /** The identity of the log the read models were folded from (see EventStore.logId). */
  private get logIdKey() {
    return `${this.prefix}log`;
  }
  private get storeIdKey() {
    return `${this.prefix}store-id`;
  }

  /**
   * This store's identity (the server and the prefix, however its URL is spelled), kept in it: set
   * once by the first instance to ask, kept by a reset, and written again by a rebuild after Redis
   * was emptied. Instances of one data directory must share it (runtime/serving-claim.ts, claimStore).
   */
  async storeId(): Promise<string> {
    const fresh = randomBytes(16).toString('hex');
    if ((await this.client.set(this.storeIdKey, fresh, { NX: true })) === 'OK') return (this.id = fresh);
    const kept = await this.client.get(this.storeIdKey);
    // Emptied since the SET: set one again.
    if (kept === null) return this.storeId();
    // It names a file beside the log.
    if (!/^[0-9a-f]{32}$/.test(kept))
      throw new Error(`${this.storeIdKey} in Redis holds "${kept}", not a store id: delete that key`);
    return (this.id = kept);
  }

  /** Marks the read models as of this version and this log (and the store with the id this instance serves under). */
  private async stamp(): Promise<void> {
    await Promise.all([
      this.client.set(this.schemaKey, READ_MODEL_SCHEMA),
      this.client.set(this.logIdKey, this.logId),
      ...(this.id === null ? [] : [this.client.set(this.storeIdKey, this.id)]),
    ]);
  }
  keyRecordKey(hash: string) {
    return `${this.prefix}key:${hash}`;
  }
  userOrgsKey(userId: string) {
    return `${this.prefix}user:${userId}:orgs`;
  }

  /**
   * EVAL, for scripts whose order matters: commands issued together are pipelined in order,
   * and EVAL never fails with NOSCRIPT (a retry after NOSCRIPT would reorder events).
   */
  private async runInOrder(script: string, keys: string[], args: Array<string | number>): Promise<unknown> {
    return this.client.eval(script, { keys, arguments: args.map(String) });
  }

  /**
   * EVALSHA, or EVAL where the server lacks the script (for order-free scripts). EVAL caches the
   * script on the very server that holds the keys: on a cluster, SCRIPT LOAD would go to any node.
   */
  async run(script: string, keys: string[], args: Array<string | number>): Promise<unknown> {
    const options = { keys, arguments: args.map(String) };
    try {
      return await this.client.evalSha(shaOf(script), options);
    } catch (error) {
      if (!noScript(error)) throw error;
    }
    return this.client.eval(script, options);
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
    if (reply[0] === 1) {
      await this.replicated(k.ledger);
      return { admitted: true };
    }
    // The organization's ledger is not there: an organization unknown to the log holds nothing.
    if (reply[0] === -1) return this.nothingFound({ admitted: false, available: 0 });
    return reply.length > 2
      ? { admitted: false, available: Number(reply[1]), keyRemaining: Number(reply[2]) }
      : { admitted: false, available: Number(reply[1]) };
  }

  /** The keys of the scripts that end pending holds. */
  private holdKeys(orgId: string): string[] {
    const k = this.org(orgId);
    return [k.ledger, k.holds, k.holdDeadlines, k.keyPending, k.holdKey];
  }

  async dropHold(orgId: string, reservationId: string): Promise<void> {
    await this.run(lua.DROP_HOLD, this.holdKeys(orgId), [reservationId]);
  }

  async sweepPendingHolds(now: number): Promise<number> {
    let swept = 0;
    for await (const orgIds of setMembers(this.client, this.orgsKey)) {
      const counts = await Promise.all(orgIds.map((orgId) => this.run(lua.SWEEP_HOLDS, this.holdKeys(orgId), [now])));
      swept += counts.reduce<number>((sum, n) => sum + Number(n), 0);
    }
    return swept;
  }

  /**
   * Applies a batch: each organization's writes in one script, then the shared writes, all
   * pipelined; throws ReadModelsLostError if Redis lost the read models. Resolves to the shared
   * checkpoint. What the checkpoint already covers is skipped: another follower of the log (a worker
   * of the same set, another instance) applied it, and advanced the checkpoint only after all of it
   * was written, so it is neither folded nor sent again.
   */
  async apply(events: RecordedEvent[]): Promise<number> {
    const last = events.length === 0 ? 0 : events[events.length - 1].position;
    const stored = await this.client.get(this.checkpointKey);
    if (stored === null && this.built) throw new ReadModelsLostError();
    const checkpoint = stored === null ? 0 : Number(stored);
    if (checkpoint >= last) return checkpoint;
    const batch = new RedisBatch(this, this.requestLogRetention);
    for (const event of events) if (event.position > checkpoint) foldEvent(event, batch);
    try {
      await this.write(batch, 'sha');
    } catch (error) {
      if (!noScript(error)) throw error;
      // A server lacks the script (first use, a restart that kept the data, a failover): the whole
      // batch again, in order, by EVAL. What was applied is skipped by the guard, and the shared
      // writes are idempotent.
      await this.write(batch, 'eval');
    }
    await this.replicated();
    // Read models started here from nothing are of this schema and this log (before the checkpoint says they exist).
    if (!this.built) await this.stamp();
    const advanced = Number(await this.runInOrder(lua.ADVANCE_CHECKPOINT, [this.checkpointKey], [last]));
    await this.replicated(this.checkpointKey);
    this.built = true;
    return advanced;
  }

  /**
   * On a cluster, the writes sent so far to the master of `key` (to every master, without one) reach
   * a replica before they count (Redis replicates asynchronously): an admission, or the read models
   * said to be at a checkpoint, survive the master's loss. Waits at most REPLICA_WAIT_MS.
   */
  private async replicated(key?: string): Promise<void> {
    if (!isCluster(this.client)) return;
    const wait = ['WAIT', '1', String(REPLICA_WAIT_MS)];
    const sent =
      key !== undefined
        ? [this.client.sendCommand(key, false, wait)]
        : (await masters(this.client)).map((node) => node.sendCommand(wait));
    // A master turned replica meanwhile (a planned failover, before this client heard of it) hands
    // over only once its replica has every write it took: nothing is left to wait for.
    await Promise.all(
      sent.map((reply) =>
        reply.catch((error: unknown) => {
          if (!demoted(error)) throw error;
        }),
      ),
    );
  }

  /** The APPLY script is sent by SHA: it is the longest script, run per organization and batch. */
  private async write(batch: RedisBatch, send: 'sha' | 'eval'): Promise<void> {
    const applied = [...batch.scripts.values()].map((script) => {
      const options = { keys: script.keys, arguments: RedisBatch.close(script).map(String) };
      return send === 'sha' ? this.client.evalSha(shaOf(lua.APPLY), options) : this.client.eval(lua.APPLY, options);
    });
    // Every organization with events: the sweeper and the audit go through them.
    const written: Array<Promise<unknown>> =
      batch.scripts.size > 0 ? [this.client.sAdd(this.orgsKey, [...batch.scripts.keys()])] : [];
    for (const write of batch.shared) written.push(write());
    const [results] = await Promise.all([Promise.all(applied), Promise.all(written)]);
    if (results.includes(-1)) throw new ReadModelsLostError();
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

  async origin(): Promise<ReadModelOrigin | null> {
    const [position, schema, logId] = await Promise.all([
      this.client.get(this.checkpointKey),
      this.client.get(this.schemaKey),
      this.client.get(this.logIdKey),
    ]);
    if (position === null) return null;
    this.built = true;
    return { logId, position: Number(position), ofThisVersion: schema === READ_MODEL_SCHEMA };
  }

  reconnected(): boolean {
    const again = this.connectedAgain;
    this.connectedAgain = false;
    return again;
  }

  async checkpoint(): Promise<number> {
    const position = await this.client.get(this.checkpointKey);
    // Read models seen: if the checkpoint vanishes later, Redis lost them.
    if (position !== null) this.built = true;
    return Number(position ?? 0);
  }

  /**
   * What a read found nothing of is unknown to the log only while the read models are here: emptied
   * (Redis restarted without its data) or being rebuilt, they do not know, and the caller hears so
   * (a 503) rather than "no such key" or "no credit".
   */
  private async nothingFound<T>(answer: T): Promise<T> {
    if (!(await this.present())) throw new ReadModelsLostError();
    return answer;
  }

  async balance(orgId: string): Promise<Balance> {
    const [granted, spent, reserved, pending, position] = await this.client.hmGet(this.org(orgId).ledger, [
      'granted',
      'spent',
      'reserved',
      'pending',
      'position',
    ]);
    if (position === null) await this.nothingFound(null);
    return {
      granted: Number(granted ?? 0),
      spent: Number(spent ?? 0),
      reserved: Number(reserved ?? 0),
      pending: Number(pending ?? 0),
    };
  }

  /** A key's record as its hash holds it (see `encoded`). */
  private static storedKey(fields: Record<string, string>): Partial<StoredKey> | null {
    if (!fields.keyId) return null;
    return {
      keyId: fields.keyId,
      orgId: fields.orgId,
      name: fields.name,
      prefix: fields.prefix,
      hash: fields.hash,
      createdAt: Number(fields.createdAt),
      ...(fields.revokedAt ? { revokedAt: Number(fields.revokedAt) } : {}),
      ...(fields.rateLimits ? { rateLimits: JSON.parse(fields.rateLimits) as RateLimits } : {}),
      ...(fields.expiresAt ? { expiresAt: Number(fields.expiresAt) } : {}),
      ...(fields.disabled === 'true' ? { disabled: true as const } : {}),
      ...(fields.kind === 'management' ? { kind: 'management' as const } : {}),
      ...(fields.billingRights === 'true' ? { billingRights: true as const } : {}),
      ...(fields.limit ? { limit: JSON.parse(fields.limit) as KeyLimit } : {}),
    };
  }

  /**
   * A key unknown here is unknown to the log, unless Redis lost the read models (emptied, or
   * restarted without its data): then it is not the key that is missing, and the caller hears so.
   */
  async keyByHash(hash: string): Promise<KeyRecord | null> {
    const stored = RedisProjectionStore.storedKey(await this.client.hGetAll(this.keyRecordKey(hash)));
    return stored === null ? this.nothingFound(null) : keyRecordOf(stored);
  }

  /**
   * Whether the read models are here and complete: their checkpoint is written last when they are
   * built and dropped first when they are reset, so it is missing while Redis is empty or a rebuild
   * runs; and they must be of this version's schema and of this log.
   */
  async present(): Promise<boolean> {
    const [checkpoint, schema, logId, storeId] = await Promise.all([
      this.client.exists(this.checkpointKey),
      this.client.get(this.schemaKey),
      this.client.get(this.logIdKey),
      this.client.get(this.storeIdKey),
    ]);
    const here = checkpoint === 1 && schema === READ_MODEL_SCHEMA && logId === this.logId;
    // The store's id lost alone (a failover before it was replicated, a key deleted by hand) is put
    // back while this instance serves under it: else the next instance to start would set another
    // and be refused, and every one after it, for as long as this one serves. Only a refused
    // instance can have set another meanwhile (this one's lock file is held).
    if (here && this.id !== null && storeId !== this.id) await this.client.set(this.storeIdKey, this.id);
    return here;
  }

  async key(orgId: string, keyId: string): Promise<KeyRecord | null> {
    const hash = await this.client.hGet(this.tableKey(orgId, 'keys'), keyId);
    if (hash === null) return this.nothingFound(null);
    const [fields, lastUsed, spent] = await Promise.all([
      this.client.hGetAll(this.keyRecordKey(hash)),
      this.client.hGet(this.tableKey(orgId, 'keyLastUsed'), keyId),
      this.client.hGet(this.tableKey(orgId, 'keySpend'), keyId),
    ]);
    const stored = RedisProjectionStore.storedKey(fields);
    return stored === null ? null : keyRecordOf(stored, lastUsed === null ? null : Number(lastUsed), Number(spent ?? 0));
  }

  async keysOf(orgId: string): Promise<KeyRecord[]> {
    const [hashes, lastUsed, spent] = await Promise.all([
      this.client.hGetAll(this.tableKey(orgId, 'keys')),
      this.client.hGetAll(this.tableKey(orgId, 'keyLastUsed')),
      this.client.hGetAll(this.tableKey(orgId, 'keySpend')),
    ]);
    const stored = await Promise.all(
      Object.values(hashes).map(async (hash) =>
        RedisProjectionStore.storedKey(await this.client.hGetAll(this.keyRecordKey(hash))),
      ),
    );
    return stored
      .filter((s): s is Partial<StoredKey> => s !== null)
      .map((s) => keyRecordOf(s, lastUsed[s.keyId!] ? Number(lastUsed[s.keyId!]) : null, Number(spent[s.keyId!] ?? 0)));
  }

  async organizationsOf(userId: string): Promise<OrgRecord[]> {
    const orgIds = await this.client.sMembers(this.userOrgsKey(userId));
    const records = await Promise.all(orgIds.map((orgId) => this.organization(orgId)));
    return records.filter((r): r is OrgRecord => r !== null);
  }

  async membersOf(orgId: string): Promise<MemberRecord[]> {
    const [members, managers] = await Promise.all([
      this.client.hGetAll(this.tableKey(orgId, 'members')),
      this.client.hGetAll(this.tableKey(orgId, 'keyManagers')),
    ]);
    return Object.entries(members)
      .map(([userId, json]) => ({ ...(JSON.parse(json) as StoredMember), manageKeys: managers[userId] !== undefined }))
      .sort((a, b) => a.addedAt - b.addedAt);
  }

  async membership(orgId: string, userId: string): Promise<MemberRecord | null> {
    const [json, manager] = await Promise.all([
      this.client.hGet(this.tableKey(orgId, 'members'), userId),
      this.client.hGet(this.tableKey(orgId, 'keyManagers'), userId),
    ]);
    return json === null ? this.nothingFound(null) : { ...(JSON.parse(json) as StoredMember), manageKeys: manager !== null };
  }

  async refunded(orgId: string, reservationIds: readonly string[]): Promise<Map<string, number>> {
    if (reservationIds.length === 0) return new Map();
    const amounts = await this.client.hmGet(this.tableKey(orgId, 'refunded'), [...reservationIds]);
    const found = new Map<string, number>();
    amounts.forEach((amount, i) => amount !== null && found.set(reservationIds[i], Number(amount)));
    return found;
  }

  async dailySpend(orgId: string): Promise<Map<string, number>> {
    const days = await this.client.hGetAll(this.tableKey(orgId, 'daily'));
    return new Map(Object.entries(days).map(([day, nano]) => [day, Number(nano)]));
  }

  async organization(orgId: string): Promise<OrgRecord | null> {
    const [profile, rateLimits] = await this.client.hmGet(this.tableKey(orgId, 'organization'), ['profile', 'rateLimits']);
    if (profile === null) return this.nothingFound(null);
    const record = JSON.parse(profile) as OrgProfile;
    return rateLimits === null ? record : { ...record, rateLimits: JSON.parse(rateLimits) as RateLimits };
  }

  async recentRequests(orgId: string, limit: number): Promise<RequestLogEntry[]> {
    return (await this.client.lRange(this.org(orgId).requests, 0, limit - 1)).map(entryOf);
  }

  async request(orgId: string, requestId: string): Promise<RequestLogEntry | null> {
    const k = this.org(orgId);
    const element = (await this.run(lua.FIND_REQUEST, [k.ledger, k.requests, k.requestIndex], [requestId])) as string | null;
    return element === null ? this.nothingFound(null) : entryOf(element);
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
        const amount = await this.client.hGet(this.tableKey(orgId, 'open'), reservationId);
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

  async ledgers(): Promise<Map<string, OrgLedger>> {
    const result = new Map<string, OrgLedger>();
    for await (const orgIds of setMembers(this.client, this.orgsKey)) {
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
    this.built = false;
    // The checkpoint first: from now on every instance knows the read models are not complete.
    await this.client.del(this.checkpointKey);
    // Kept: the lock, the store's identity (instances serving under it may be joined by others
    // meanwhile), and the live counts no log holds (liveState).
    const kept = [`${this.prefix}rebuild-lock`, this.storeIdKey];
    for await (const keys of scanKeys(this.client, `${this.prefix}*`)) {
      const dropped = keys.filter((key) => !kept.includes(key) && !liveState(key.slice(this.prefix.length)));
      // One UNLINK per key: on a cluster, the keys of one command must share a slot.
      await Promise.all(dropped.map((key) => this.client.unlink(key)));
    }
  }

  /**
   * Writes a fold of the log, table by table. The organizations' tables go first and the key records
   * last: other instances keep admitting while this loads, and a key that authenticates must find its
   * limit's usage already there.
   */
  async load(model: ReadModel): Promise<void> {
    const writes: Array<Promise<unknown>> = [];
    const flush = async () => {
      await Promise.all(writes.splice(0));
    };
    const fields = (entries: Iterable<[string, unknown]>) => {
      const values: Record<string, string> = {};
      for (const [field, value] of entries) values[field] = encoded(value);
      return values;
    };
    for (const [orgId, tables] of model.tables()) {
      for (const table of Object.keys(tables.counters) as Array<keyof typeof tables.counters>) {
        if (tables.counters[table].size > 0)
          writes.push(this.client.hSet(this.tableKey(orgId, table), fields(tables.counters[table])));
      }
      for (const table of Object.keys(tables.records) as RecordTable[]) {
        const records = tables.records[table] as Map<string, unknown>;
        if (records.size > 0) writes.push(this.client.hSet(this.tableKey(orgId, table), fields(records)));
      }
      const k = this.org(orgId);
      // The log as the script writes it (see redis-scripts.ts), its elements counted from 1, oldest first.
      const entries = tables.requests.oldestFirst();
      if (entries.length > 0) {
        const index: Record<string, string> = {};
        entries.forEach((entry, i) => {
          index[entry.requestId] = String(i + 1);
          if (entry.upstreamId !== undefined) index[entry.upstreamId] = String(i + 1);
        });
        writes.push(
          this.client
            .multi()
            .del([k.requests, k.requestIndex])
            .lPush(
              k.requests,
              entries.map((entry, i) => `${i + 1} ${JSON.stringify(entry)}`),
            )
            .hSet(k.requestIndex, index)
            .exec(),
        );
      }
      const { granted, spent, reserved, position } = tables.ledger;
      writes.push(this.runInOrder(lua.LOAD_LEDGER, [k.ledger], [granted, spent, reserved, position, entries.length]));
      writes.push(this.client.sAdd(this.orgsKey, orgId));
      if (writes.length > 2000) await flush();
    }
    await flush();
    for (const [userId, orgIds] of model.userOrganizations) {
      if (orgIds.size > 0) writes.push(this.client.sAdd(this.userOrgsKey(userId), [...orgIds]));
      if (writes.length > 2000) await flush();
    }
    for (const [reservationId, { orgId, at }] of model.expiry) {
      writes.push(this.client.zAdd(this.expiryKey, { score: at, value: orgId + SEP + reservationId }));
      if (writes.length > 2000) await flush();
    }
    await flush();
    for (const [hash, stored] of model.keyRecords) {
      writes.push(this.client.hSet(this.keyRecordKey(hash), fields(Object.entries(stored).filter(([, v]) => v !== undefined))));
      if (writes.length > 2000) await flush();
    }
    await flush();
    await this.stamp();
    await this.replicated();
    await this.runInOrder(lua.ADVANCE_CHECKPOINT, [this.checkpointKey], [model.position]);
    await this.replicated(this.checkpointKey);
    this.built = true;
  }

  /** Forgets every script on every server (tests: what a restart that kept the data leaves). */
  async flushScripts(): Promise<void> {
    await Promise.all((await masters(this.client)).map((node) => node.scriptFlush()));
  }

  async close(): Promise<void> {
    if (this.client.isOpen) await this.client.close();
  }
}
