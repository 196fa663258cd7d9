import { setTimeout as sleep } from 'node:timers/promises';
import type { EventStore, RecordedEvent } from '../eventstore/event-store';
import { ChainFollower, type ChainHead } from '../ledger/ledger-chain';
import { CatalogueLoaded, CataloguePrice, pricesNotOfVersion } from '../ledger/catalogue-loaded';
import {
  adjustmentNamesGeneration,
  creditNoteReasonUnknown,
  describeBreach,
  grantIdReused,
  grantNotPositive,
  idempotencyKeyReused,
  type RuleBreach,
} from '../ledger/ledger-rules';
import { CreditNoteIssued, CreditsGranted, ReservationEvent, ReservationSettled, settledCharge } from '../ledger/ledger.events';
import { isNanoAmount, MAX_NANO, type NanoSum, nanoSum } from '../ledger/money';
import { ReadModel } from '../projections/read-model';
import type { ReadModels } from '../projections/read-models';

/** Across organizations: added up as bigint, since their sum passes 2^53 long before any one balance does. */
export interface AuditTotals {
  granted: NanoSum;
  spent: NanoSum;
  reserved: NanoSum;
}

export interface AuditReport {
  events: number;
  position: number;
  organizations: number;
  reservations: number;
  settlements: number;
  /** Settlements whose host's usage was not billed as reported (see `usageFlag`): counted, not differences. */
  flaggedSettlements: number;
  /** Settlements of streams a crash cut, billed at their expiry from their last recorded progress (see `interrupted`). */
  interruptedSettlements: number;
  releases: number;
  expiries: number;
  /** Refunds and adjustments (CreditNoteIssued), each checked against its generation's charge. */
  creditNotes: number;
  totals: AuditTotals;
  /**
   * Each organization's hash chain as replayed (head link and event count). `stamped`: the log records
   * links, so each was compared (SQLite stamps them at commit; on EventStoreDB a sealer records them
   * after the fact, within `sealedWithinMs`, and `pending` counts events younger than that still
   * without theirs, not differences); false: recomputed only. See docs/architecture.md.
   */
  chains: { stamped: boolean; sealedWithinMs?: number; pending: number; heads: ChainHead[] };
  /** Every disagreement found; empty means the ledger is clean. */
  differences: string[];
}

const emptyCounts = () => ({
  events: 0,
  reservations: 0,
  settlements: 0,
  flaggedSettlements: 0,
  interruptedSettlements: 0,
  releases: 0,
  expiries: 0,
  creditNotes: 0,
});

interface Tracked {
  orgId: string;
  keyId: string;
  amount: number;
  resolution: string | null;
  catalogueVersion?: string;
  /** What its settlement charged (0 until settled), and what refunds have returned of it. */
  charged: number;
  refunded: number;
}

/**
 * Checks what the log says on its own: every charge recomputed from its settlement event,
 * every resolution pointing at an open reservation of the same organization, each resolved once.
 */
export class LogAuditor {
  readonly model: ReadModel;
  readonly differences: string[] = [];
  private readonly reservations = new Map<string, Tracked>();
  /** Each catalogue version's prices, as its CatalogueLoaded put them in the log. */
  private readonly catalogues = new Map<string, CataloguePrice[]>();
  /** Per organization, its charges each counted up to its hold: what its grants must cover. */
  private readonly chargedWithinHolds = new Map<string, number>();
  /** Every organization's hash chain, followed event by event. */
  readonly chains = new ChainFollower();
  /** Per organization, what its debit adjustments took: checked against the balance when issued, not against spending. */
  private readonly debited = new Map<string, number>();
  /** Per organization, the idempotency keys its credit notes were issued under: each issues once. */
  private readonly creditNoteKeys = new Map<string, Set<string>>();
  /** Per organization, the grant ids its grants were made under: each grants once. */
  private readonly grantIds = new Map<string, Set<string>>();
  /** The events counted: every one, or with `countedOrg` that organization's. */
  readonly counts = emptyCounts();
  /** Where the events of other organizations than `countedOrg` are counted, and forgotten. */
  private readonly others = emptyCounts();

  /**
   * `links`: how the log records chain links, and when an event of a chain without one is a
   * difference (see ChainFollower.follow). `countedOrg`: count only this organization's events (all
   * are checked, as each may be a difference of the log's).
   */
  constructor(
    requestLogRetention = 1,
    private readonly links: boolean | { sealedBefore: number } = false,
    private readonly countedOrg?: string,
  ) {
    this.model = new ReadModel(requestLogRetention);
  }

  check(recorded: RecordedEvent): void {
    const counts =
      this.countedOrg === undefined || (recorded.data as { orgId?: unknown } | null)?.orgId === this.countedOrg
        ? this.counts
        : this.others;
    counts.events += 1;
    const event = recorded as unknown as ReservationEvent | CreditNoteIssued | CreditsGranted;
    const where = `event ${recorded.position} (${recorded.type})`;
    const chained = this.chains.follow(recorded, this.links);
    if (chained?.difference) this.differences.push(`${where}: ${chained.difference}`);
    if (recorded.type === 'CatalogueLoaded') {
      const { version, prices } = (recorded as unknown as CatalogueLoaded).data;
      this.catalogues.set(version, prices);
    }
    const breached = (breach: RuleBreach | null) => {
      if (breach !== null) this.differences.push(`${where}: ${describeBreach(breach)}`);
    };
    switch (event.type) {
      case 'CreditsGranted': {
        const ids = this.grantIds.get(event.data.orgId) ?? new Set<string>();
        this.grantIds.set(event.data.orgId, ids);
        breached(grantNotPositive(event.data));
        breached(grantIdReused(event.data, ids));
        ids.add(event.data.grantId);
        break;
      }
      case 'CreditsReserved':
        counts.reservations += 1;
        if (this.reservations.has(event.data.reservationId)) {
          this.differences.push(`${where}: reservation ${event.data.reservationId} recorded twice`);
        }
        this.reservations.set(event.data.reservationId, {
          orgId: event.data.orgId,
          keyId: event.data.keyId,
          amount: event.data.amount,
          resolution: null,
          catalogueVersion: event.data.catalogueVersion,
          charged: 0,
          refunded: 0,
        });
        break;
      case 'CreditNoteIssued':
        counts.creditNotes += 1;
        this.checkCreditNote(event.data, where);
        break;
      case 'ReservationProgress': {
        const tracked = this.reservations.get(event.data.reservationId);
        if (!tracked) this.differences.push(`${where}: progress of unknown reservation ${event.data.reservationId}`);
        else if (tracked.resolution) {
          this.differences.push(`${where}: progress of reservation ${event.data.reservationId}, already ${tracked.resolution}`);
        } else if (tracked.orgId !== event.data.orgId)
          this.differences.push(`${where}: organization differs from its reservation`);
        break;
      }
      case 'ReservationSettled':
      case 'ReservationReleased':
      case 'ReservationExpired': {
        if (event.type === 'ReservationSettled') {
          counts.settlements += 1;
          const d = event.data;
          if (d.usageFlag !== undefined) counts.flaggedSettlements += 1;
          if (d.interrupted !== undefined) counts.interruptedSettlements += 1;
          let recomputed: number | string;
          try {
            recomputed = settledCharge(d);
          } catch (error) {
            // A use without its price (an event not written by this ledger's rules): not recomputable.
            recomputed = (error as Error).message;
          }
          if (recomputed !== d.amount) {
            this.differences.push(`${where}: charge ${d.amount} but tokens × prices give ${recomputed}`);
          }
          this.checkCatalogueVersion(where, d);
          this.chargedWithinHolds.set(d.orgId, (this.chargedWithinHolds.get(d.orgId) ?? 0) + Math.min(d.amount, d.held));
        } else if (event.type === 'ReservationReleased') counts.releases += 1;
        else counts.expiries += 1;
        const tracked = this.reservations.get(event.data.reservationId);
        if (!tracked) {
          this.differences.push(`${where}: resolves unknown reservation ${event.data.reservationId}`);
        } else {
          if (tracked.resolution) {
            this.differences.push(`${where}: reservation ${event.data.reservationId} already ${tracked.resolution}`);
          }
          if (tracked.orgId !== event.data.orgId) this.differences.push(`${where}: organization differs from its reservation`);
          if (tracked.amount !== event.data.held)
            this.differences.push(`${where}: held ${event.data.held}, reserved ${tracked.amount}`);
          tracked.resolution = event.type;
          if (event.type === 'ReservationSettled') tracked.charged = event.data.amount;
        }
        break;
      }
    }
    this.model.apply(recorded);
  }

  /**
   * A settlement names the catalogue version its reservation was priced with (settlements written
   * before versions were recorded name none, and are not checked), and its prices are that version's.
   */
  private checkCatalogueVersion(where: string, d: ReservationSettled['data']): void {
    const reserved = this.reservations.get(d.reservationId);
    if (reserved !== undefined && reserved.catalogueVersion !== d.catalogueVersion)
      this.differences.push(
        `${where}: catalogue version ${d.catalogueVersion ?? 'none'}, its reservation's ${reserved.catalogueVersion ?? 'none'}`,
      );
    if (d.catalogueVersion === undefined) return;
    const listed = this.catalogues.get(d.catalogueVersion);
    const wrong =
      listed === undefined ? `catalogue version ${d.catalogueVersion} is not in the log` : pricesNotOfVersion(listed, d);
    if (wrong !== null) this.differences.push(`${where}: ${wrong}`);
  }

  /**
   * A credit note as its rules allow it: a known reason, its idempotency key used once; a refund of
   * a settled generation of its organization and key, never more (with the refunds before it) than
   * it was charged, and returned to what may be spent again; an adjustment of a non-zero amount.
   */
  private checkCreditNote(note: CreditNoteIssued['data'], where: string): void {
    const keys = this.creditNoteKeys.get(note.orgId) ?? new Set<string>();
    this.creditNoteKeys.set(note.orgId, keys);
    for (const breach of [idempotencyKeyReused(note, keys), creditNoteReasonUnknown(note), adjustmentNamesGeneration(note)])
      if (breach !== null) this.differences.push(`${where}: ${describeBreach(breach)}`);
    keys.add(note.idempotencyKey);
    if (note.kind === 'adjustment') {
      if (!Number.isSafeInteger(note.amount) || note.amount === 0 || Math.abs(note.amount) > MAX_NANO)
        this.differences.push(`${where}: adjustment of ${note.amount}, not a non-zero amount`);
      if (note.amount < 0) this.debited.set(note.orgId, (this.debited.get(note.orgId) ?? 0) - note.amount);
      return;
    }
    if (!isNanoAmount(note.amount) || note.amount === 0)
      this.differences.push(`${where}: refund of ${note.amount}, not a positive amount`);
    const tracked = note.reservationId === null ? undefined : this.reservations.get(note.reservationId);
    if (tracked === undefined || tracked.orgId !== note.orgId) {
      this.differences.push(`${where}: refunds unknown generation ${note.reservationId} of organization ${note.orgId}`);
      return;
    }
    if (tracked.keyId !== note.keyId)
      this.differences.push(`${where}: refund names key ${note.keyId}, its generation's is ${tracked.keyId}`);
    tracked.refunded += note.amount;
    if (tracked.refunded > tracked.charged) {
      this.differences.push(
        `${where}: generation ${note.reservationId} refunded ${tracked.refunded} in all, above its charge ${tracked.charged}`,
      );
    }
    this.chargedWithinHolds.set(note.orgId, (this.chargedWithinHolds.get(note.orgId) ?? 0) - note.amount);
  }

  /**
   * Organizations whose log shows more spent than granted, beyond what settlements above their
   * holds explain (a reply that used more than estimated: the only overdraw the ledger allows).
   * Admission holds a reservation only within the balance, so charges counted up to their holds
   * never exceed the grants of a log that is whole: more means spending on credit the log never
   * granted (a log emptied or replaced under a running gateway whose read models still held the balances).
   */
  spendingAboveGrants(orgId?: string): string[] {
    const found: string[] = [];
    for (const [org, charged] of this.chargedWithinHolds) {
      if (orgId !== undefined && org !== orgId) continue;
      const granted = (this.model.ledger(org)?.granted ?? 0) + (this.debited.get(org) ?? 0);
      if (charged > granted) {
        found.push(
          `organization ${org}: spending above grants (charged ${charged} within its holds, granted ${granted} in the log)`,
        );
      }
    }
    return found;
  }
}

export interface AuditOptions {
  orgId?: string;
  onProgress?: (position: number, head: number) => void;
  /**
   * How long to wait for read models that have not yet applied an organization's latest events
   * (requests keep appending during an audit); default 2 s.
   */
  projectionWaitMs?: number;
}

/**
 * Each key's spend (its settled charges, all time) replayed against the read models', at one point
 * of the log: read while the organization's ledger stays put (requests may keep settling), replayed
 * further when it moved.
 */
async function keySpendDifferences(
  orgId: string,
  auditor: LogAuditor,
  projections: ReadModels,
  replayTo: (target: number) => Promise<void>,
): Promise<string[]> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const before = (await projections.ledgers()).get(orgId)?.position ?? 0;
    const keys = await projections.keysOf(orgId);
    const after = (await projections.ledgers()).get(orgId)?.position ?? 0;
    if (before !== after) continue;
    await replayTo(after);
    const differences: string[] = [];
    const replayed = auditor.model.keysOf(orgId);
    const seen = new Map(keys.map((k) => [k.keyId, k.spent ?? 0]));
    for (const key of replayed) {
      const projected = seen.get(key.keyId);
      if (projected === undefined) differences.push(`key ${key.keyId}: in the log, not in the read models`);
      else if (projected !== (key.spent ?? 0)) {
        differences.push(`key ${key.keyId}: spent replayed ${key.spent ?? 0}, projected ${projected}`);
      }
    }
    return differences;
  }
  return [`organization ${orgId}: its keys' spend kept moving during the audit; audit again`];
}

/**
 * On a sealed log, chains whose stream seals more events than the replay found up to the sealed head's
 * position: events removed after sealing (the last ones of a chain leave no successor to break).
 */
async function sealedBeyondLog(events: EventStore, auditor: LogAuditor, orgId?: string): Promise<string[]> {
  const found: string[] = [];
  for (const chain of auditor.chains.all()) {
    if (orgId !== undefined && chain.orgId !== orgId) continue;
    const sealed = await events.chainHead?.(chain.orgId);
    // A head sealed past the replay holds events appended during the audit: not comparable.
    if (!sealed || sealed.position > auditor.model.position || sealed.events <= chain.events) continue;
    found.push(
      `chain of organization ${chain.orgId}: its stream seals ${sealed.events} events through position ${sealed.position}, the log holds ${chain.events} (removed after sealing)`,
    );
  }
  return found;
}

/**
 * Replays the log, recomputes every balance and every charge, and compares the balances with
 * the read models, each organization at the same point of the log: read models behind the
 * replay are waited for, and organizations moved by requests during the audit are replayed further.
 */
export async function auditLedger(events: EventStore, projections: ReadModels, options: AuditOptions = {}): Promise<AuditReport> {
  const sealedWithinMs = events.chainSealedWithinMs;
  const links =
    events.chainHead === undefined ? false : sealedWithinMs === undefined ? true : { sealedBefore: Date.now() - sealedWithinMs };
  const auditor = new LogAuditor(1, links, options.orgId);
  /** Replays the log up to `target` (or its end, if that comes first). */
  const replayTo = async (target: number, onProgress?: AuditOptions['onProgress']) => {
    while (auditor.model.position < target) {
      const batch = await events.readAll(auditor.model.position, 5000, { chainLinks: true });
      if (batch.length === 0) break;
      for (const event of batch) auditor.check(event);
      onProgress?.(auditor.model.position, target);
    }
  };
  await replayTo(await events.headPosition(), options.onProgress);

  const replayed = auditor.model.orgs;
  let projected = await projections.ledgers();
  // Requests keep appending: give the read models time to apply what the replay holds.
  const behind = () =>
    [...replayed].some(
      ([orgId, truth]) => (!options.orgId || orgId === options.orgId) && (projected.get(orgId)?.position ?? 0) < truth.position,
    );
  const waitUntil = Date.now() + (options.projectionWaitMs ?? 2_000);
  while (behind() && Date.now() < waitUntil) {
    await sleep(20);
    projected = await projections.ledgers();
  }
  const orgIds = new Set([...replayed.keys(), ...projected.keys()]);
  const totals = { granted: 0n, spent: 0n, reserved: 0n };
  let organizations = 0;
  for (const orgId of orgIds) {
    if (options.orgId && orgId !== options.orgId) continue;
    organizations += 1;
    let truth = replayed.get(orgId) ?? { granted: 0, spent: 0, reserved: 0, position: 0 };
    let seen = projected.get(orgId) ?? { granted: 0, spent: 0, reserved: 0, position: 0 };
    if (seen.position < truth.position) {
      auditor.differences.push(
        `organization ${orgId}: read models behind the log (applied to position ${seen.position}, its events reach ${truth.position})`,
      );
      continue;
    }
    if (seen.position > auditor.model.position) {
      // A request moved this organization during the audit: replay to where the projection is.
      await replayTo(seen.position);
      truth = auditor.model.ledger(orgId) ?? truth;
      seen = (await projections.ledgers()).get(orgId) ?? seen;
    }
    for (const field of ['granted', 'spent', 'reserved'] as const) {
      // Past 2^53 a replayed sum is rounded, and so are the read models': equal or not, neither is the figure.
      if (!Number.isSafeInteger(truth[field])) {
        auditor.differences.push(
          `organization ${orgId}: ${field} ${truth[field]} is past 2^53 nano-credits, where the replay and the read models are not exact`,
        );
        continue;
      }
      totals[field] += BigInt(truth[field]);
      if (truth[field] !== seen[field]) {
        auditor.differences.push(`organization ${orgId}: ${field} replayed ${truth[field]}, projected ${seen[field]}`);
      }
    }
    auditor.differences.push(...(await keySpendDifferences(orgId, auditor, projections, replayTo)));
  }
  auditor.differences.push(...auditor.spendingAboveGrants(options.orgId));
  if (sealedWithinMs !== undefined) auditor.differences.push(...(await sealedBeyondLog(events, auditor, options.orgId)));
  if (options.orgId && !orgIds.has(options.orgId)) {
    auditor.differences.push(`organization ${options.orgId} has no ledger in the log`);
  }
  return {
    ...auditor.counts,
    position: auditor.model.position,
    organizations,
    totals: { granted: nanoSum(totals.granted), spent: nanoSum(totals.spent), reserved: nanoSum(totals.reserved) },
    chains: {
      stamped: events.chainHead !== undefined,
      sealedWithinMs,
      pending: auditor.chains.pending,
      heads: auditor.chains.all().filter((chain) => !options.orgId || chain.orgId === options.orgId),
    },
    differences: auditor.differences,
  };
}
