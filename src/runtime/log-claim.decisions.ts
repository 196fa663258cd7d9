/**
 * The serving claim held in the event log (EventStoreDB, where instances on other machines share
 * nothing else): the rules, no I/O. Instances that admit requests against read models in different
 * stores overdraw together, so each records in the stream CLAIMS_STREAM which store it serves with,
 * renewed as a lease; one starting beside a live claim of another store is refused. See log-claim.ts
 * for the order of the appends that makes this hold when instances start together.
 */

/** The stream of claims: the gateway's own, not `$`-prefixed, kept short by its `$maxAge`. */
export const CLAIMS_STREAM = 'gateway-serving-claims';

/** What the claims stream keeps (its `$maxAge`, seconds): far more than any lease. */
export const CLAIMS_KEPT_SECONDS = 3_600;

/** The longest lease an instance may declare (SERVING_LEASE_MS): how far back a judge reads. */
export const LONGEST_LEASE_MS = 300_000;

/**
 * Added to every lease a judge compares: the nodes of an EventStoreDB cluster stamp events by their
 * own clocks, and a leader change between two events may move the stamps by a little. A claim is
 * taken for live a little longer, never shorter.
 */
export const CLOCK_MARGIN_MS = 1_000;

/** Where an instance's read models are: the store's kind and its id (the same id: one store). */
export type StoreKind = 'redis' | 'in-process';

/** Who holds a claim, as its events say (and the refusal names). */
export interface ClaimHolder {
  /** Random, one per process (or tool run). */
  instanceId: string;
  /** The read models' store (RedisProjectionStore.storeId, or the in-process store's id of its data directory). */
  storeId: string;
  store: StoreKind;
  /** A serving instance, or the operator tool rebuilding the read models of its store. */
  role: 'service' | 'rebuild';
  host: string;
  pid: number;
  /** For a Redis store its REDIS_PREFIX, for in-process read models the data directory: what an operator recognises. */
  where: string;
}

/**
 * The claims stream's events. `ServingClaimAsked` is written before a claim is judged, only to read
 * the log's clock (its recorded time); no judge counts it. `ServingClaimed` is written once the claim
 * was judged free, `ServingClaimRenewed` every third of the lease, `ServingClaimReleased` when the
 * instance stops.
 */
export const CLAIM_ASKED = 'ServingClaimAsked';
export const CLAIMED = 'ServingClaimed';
export const CLAIM_RENEWED = 'ServingClaimRenewed';
export const CLAIM_RELEASED = 'ServingClaimReleased';

export type ClaimEventData = ClaimHolder & { leaseMs?: number };

/** An event of the claims stream as a judge reads it: its type, data and the time the log recorded it. */
export interface ClaimRecord {
  type: string;
  data: unknown;
  revision: number;
  /** The log's time (ms since the epoch), not the writer's. */
  recordedAt: number;
}

/** A claim live at the time judged: its holder, its lease, and how long ago the log recorded its last claim or renewal. */
export interface LiveClaim {
  holder: ClaimHolder;
  leaseMs: number;
  ageMs: number;
}

const holderOf = (record: ClaimRecord): ClaimEventData | null => {
  const data = record.data as Partial<ClaimEventData> | null;
  return data && typeof data.instanceId === 'string' && typeof data.storeId === 'string' ? (data as ClaimEventData) : null;
};

/**
 * The instances whose claims are live at `now` (the log's time): each instance's latest event, if it
 * is a claim or a renewal recorded less than its lease (plus CLOCK_MARGIN_MS) before `now`. A release
 * ends an instance's claim; `ServingClaimAsked` counts for nothing. `records` in stream order.
 */
export function liveClaims(records: ClaimRecord[], now: number): LiveClaim[] {
  const latest = new Map<string, { record: ClaimRecord; data: ClaimEventData }>();
  for (const record of records) {
    if (record.type !== CLAIMED && record.type !== CLAIM_RENEWED && record.type !== CLAIM_RELEASED) continue;
    const data = holderOf(record);
    if (data) latest.set(data.instanceId, { record, data });
  }
  const live: LiveClaim[] = [];
  for (const { record, data } of latest.values()) {
    if (record.type === CLAIM_RELEASED || typeof data.leaseMs !== 'number') continue;
    const ageMs = now - record.recordedAt;
    if (ageMs < data.leaseMs + CLOCK_MARGIN_MS) live.push({ holder: data, leaseMs: data.leaseMs, ageMs: Math.max(0, ageMs) });
  }
  return live;
}

/** A live claim of another store than `mine`'s, the most recently renewed first; null when there is none. */
export function conflictingClaim(live: LiveClaim[], mine: Pick<ClaimHolder, 'instanceId' | 'storeId'>): LiveClaim | null {
  const others = live.filter((claim) => claim.holder.instanceId !== mine.instanceId && claim.holder.storeId !== mine.storeId);
  return others.sort((a, b) => a.ageMs - b.ageMs)[0] ?? null;
}

/**
 * What a renewing instance finds after its own last event that ends its claim: a claim or renewal
 * of another store (another instance judged this one's lease run out, and took over), or a claim of
 * its own in-process read models by another instance (two processes on one data directory's read
 * models: a copy of it serving elsewhere). Null when nothing does. `records` in stream order.
 */
export function supersedingClaim(records: ClaimRecord[], mine: ClaimHolder): ClaimHolder | null {
  for (const record of records) {
    if (record.type !== CLAIMED && record.type !== CLAIM_RENEWED) continue;
    const data = holderOf(record);
    if (!data || data.instanceId === mine.instanceId) continue;
    if (data.storeId !== mine.storeId) return data;
    if (mine.store === 'in-process' && record.type === CLAIMED) return data;
  }
  return null;
}

/**
 * Whether a read backwards of the claims stream has gone far enough: its oldest event is older than
 * any lease could reach from the newest (every claim live at any time after the newest event was
 * recorded is in what was read), or it is the stream's first.
 */
export const readFarEnough = (newest: ClaimRecord, oldest: ClaimRecord): boolean =>
  oldest.revision === 0 || newest.recordedAt - oldest.recordedAt > LONGEST_LEASE_MS + CLOCK_MARGIN_MS;

/** How a store is named to an operator. */
export function storeText(holder: ClaimHolder): string {
  return holder.store === 'redis'
    ? `read models in Redis store ${holder.storeId} (REDIS_PREFIX ${holder.where})`
    : `in-process read models (no REDIS_URL; store ${holder.storeId}, of ${holder.where} on ${holder.host})`;
}

/** Who holds a claim, named to an operator. */
export function holderText(holder: ClaimHolder): string {
  const who = holder.role === 'rebuild' ? 'the operator tool rebuilding read models' : 'a gateway instance';
  return `${who} (pid ${holder.pid} on ${holder.host})`;
}
