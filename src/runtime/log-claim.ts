import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type AppendResult,
  type ExpectedRevision,
  type NewEvent,
  type RecordedEvent,
  WrongExpectedRevisionError,
} from '../eventstore/event-store';
import { ownerOnly } from '../eventstore/owner-only';
import { type RuntimeLog, SILENT_LOG } from '../runtime-log/runtime-log';
import {
  CLAIM_ASKED,
  CLAIM_RELEASED,
  CLAIM_RENEWED,
  CLAIMED,
  CLAIMS_KEPT_SECONDS,
  CLAIMS_STREAM,
  type ClaimHolder,
  conflictingClaim,
  holderText,
  type LiveClaim,
  liveClaims,
  readFarEnough,
  storeText,
  supersedingClaim,
} from './log-claim.decisions';

/** What the claim needs of the log: appends at a revision, reads of one stream both ways, and its metadata (EventStoreDB's adapter). */
export interface ClaimLog {
  append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult>;
  readStreamFrom(streamId: string, from: number, limit: number): Promise<RecordedEvent[]>;
  readStreamBackwards(streamId: string, limit: number, before?: number): Promise<RecordedEvent[]>;
  keepStreamFor(streamId: string, maxAgeSeconds: number): Promise<void>;
}

/** A log the claim can be held in: EventStoreDB's (the embedded log's instances share a data directory, and its file locks). */
export const isClaimLog = (log: object): log is ClaimLog => 'readStreamBackwards' in log && 'keepStreamFor' in log;

/** Events read back at a time. */
const PAGE = 256;
/** Times a claim is tried again when the stream moved under it (others renewing), before the start gives up. */
const CLAIM_ATTEMPTS = 20;
/** Times a renewal is tried again when the stream moved under it, before it waits for its next turn. */
const RENEW_ATTEMPTS = 5;
/** How long a release on close may take (a log away must not hold the stop). */
const RELEASE_WAIT_MS = 2_000;

/** The file in the data directory holding the id of its in-process read models' store. */
export const IN_PROCESS_STORE_FILE = 'read-models.store-id';

/**
 * The id of the in-process read models of `dataDir`, made once and kept in it: one instance at a time
 * serves them (the data directory's serving.lock), so an instance restarted on it (after a crash, too)
 * serves the same store as its predecessor, and instances of other data directories serve others.
 */
export function inProcessStoreId(dataDir: string): string {
  const file = join(dataDir, IN_PROCESS_STORE_FILE);
  try {
    const kept = readFileSync(file, 'utf8').trim();
    if (/^[0-9a-f]{32}$/.test(kept)) return kept;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dataDir, { recursive: true });
  ownerOnly(file);
  const made = randomBytes(16).toString('hex');
  writeFileSync(file, `${made}\n`);
  return made;
}

/** The holder of a claim made now in this process. */
export function claimHolder(store: Pick<ClaimHolder, 'storeId' | 'store' | 'where'>, role: ClaimHolder['role']): ClaimHolder {
  return { instanceId: randomUUID(), ...store, role, host: hostname(), pid: process.pid };
}

/** A duration as an operator reads it: seconds, to a tenth. */
const seconds = (ms: number): string => `${Math.round(ms / 100) / 10} s`;

/** Why an instance (or the operator tool's rebuild) is refused: a live claim in the log names another store. */
export class LogClaimError extends Error {
  constructor(
    readonly mine: ClaimHolder,
    readonly theirs: LiveClaim,
  ) {
    const served =
      `this EventStoreDB log is served with read models in another store: ${holderText(theirs.holder)} has ${storeText(theirs.holder)}, ` +
      `its claim renewed ${seconds(theirs.ageMs)} ago (lease ${seconds(theirs.leaseMs)})`;
    super(
      mine.role === 'rebuild'
        ? `not rebuilt: ${served}; this tool has ${storeText(mine)}, so this rebuild would not be of the read models it reads. ` +
            'Run the tool with the REDIS_URL and REDIS_PREFIX of the service'
        : `${served}; this one has ${storeText(mine)}. Each would admit requests against its own copy of the balances, ` +
            'and together they overdraw. Give every instance on one EventStoreDB log the same REDIS_URL and REDIS_PREFIX ' +
            '(an instance with in-process read models serves alone), or stop the other first (the claim of an instance that ' +
            'died without stopping lapses once its lease has passed since its last renewal: SERVING_LEASE_MS)',
    );
    this.name = 'LogClaimError';
  }
}

export interface LogClaimOptions {
  /** How long a claim holds without renewal (SERVING_LEASE_MS); renewed every third of it. */
  leaseMs: number;
  log?: RuntimeLog;
  /** A monotonic clock (ms): how long since the last renewal is measured on it. */
  clock?: () => number;
}

/**
 * A claim in the event log on the read models' store this process serves with (see
 * log-claim.decisions.ts for the rules), held from `take` until `release`, renewed every third of its
 * lease in the background (never on a request's path).
 *
 * Taking it: the tail of the claims stream is read (every event a live lease could reach), then a
 * `ServingClaimAsked` event appended at the revision read: its recorded time is the log's clock
 * now, later than all that was read. The leases read are judged on that clock (the log's times
 * only: the machines' clocks are never compared), and, if none of another store is live, the
 * `ServingClaimed` event appended at the next revision. An append finding the stream moved (another
 * instance claiming or renewing in between) starts over. So of two instances claiming together,
 * the one whose claim lands second read the first's: claims are ordered by the stream, and one is
 * written only if what came before it leaves it free. A refused instance writes no claim.
 *
 * Renewing: the events after this instance's last one are read; a claim or renewal of another store
 * among them means another instance judged this one's lease run out and took over (this one stops
 * admitting: `standing`); otherwise a `ServingClaimRenewed` event is appended at the revision read,
 * so that a claim landing after it has read it. While no renewal has gone through for a whole lease
 * (measured from when the last one that did was sent, on this process's monotonic clock: the log
 * recorded it later, so this instance gives up no later than others judge it gone), the instance
 * admits nothing either: another may take over at any moment. A renewal that fails (the log away)
 * is tried again at the next turn; it never throws.
 */
export class LogClaim {
  private lastRevision: number;
  /** When the last claim or renewal that went through was sent (clock). */
  private renewedAt: number;
  /** Why the claim was lost (another store's instance took over, or a retake was refused); null while held. */
  private lost: string | null = null;
  /** Lost to a copy of this instance's own in-process read models: never taken again (the two would take turns). */
  private lostForGood = false;
  private timer: NodeJS.Timeout | null = null;
  private turn: Promise<void> | null = null;
  private failing = false;
  private lapseSaid = false;
  private released = false;
  private readonly clock: () => number;
  private readonly log: RuntimeLog;

  private constructor(
    private readonly events: ClaimLog,
    readonly holder: ClaimHolder,
    private readonly leaseMs: number,
    taken: { revision: number; sentAt: number },
    options: LogClaimOptions,
  ) {
    this.lastRevision = taken.revision;
    this.renewedAt = taken.sentAt;
    this.clock = options.clock ?? (() => performance.now());
    this.log = options.log ?? SILENT_LOG;
  }

  /** Takes the claim (LogClaimError when a live claim names another store) and renews it until released. */
  static async take(events: ClaimLog, holder: ClaimHolder, options: LogClaimOptions): Promise<LogClaim> {
    const clock = options.clock ?? (() => performance.now());
    try {
      await events.keepStreamFor(CLAIMS_STREAM, CLAIMS_KEPT_SECONDS);
    } catch (error) {
      // The stream only grows longer: said, and the claim taken all the same.
      (options.log ?? SILENT_LOG).warn(
        `serving claim: could not give ${CLAIMS_STREAM} its $maxAge (${(error as Error).message}): it keeps every claim until then`,
      );
    }
    const taken = await claimOnce(events, holder, options.leaseMs, clock);
    const claim = new LogClaim(events, holder, options.leaseMs, taken, options);
    claim.schedule();
    return claim;
  }

  /** Why this instance may not admit requests now (its claim lapsed, or was lost), or null while it holds the claim. */
  standing(): string | null {
    if (this.released) return null;
    if (this.lost !== null) return this.lost;
    const since = this.clock() - this.renewedAt;
    if (since < this.leaseMs) return null;
    return (
      `its claim in the event log on its read models' store was last renewed ${seconds(since)} ago ` +
      `(lease ${seconds(this.leaseMs)}): the log is not taking its renewals, and an instance of another store may have taken over`
    );
  }

  private schedule(): void {
    if (this.released) return;
    this.timer = setTimeout(() => {
      this.turn = this.renewOrRetake().finally(() => {
        this.turn = null;
        this.schedule();
      });
    }, this.leaseMs / 3);
    this.timer.unref();
  }

  private async renewOrRetake(): Promise<void> {
    if (this.lostForGood) return;
    try {
      if (this.lost !== null) await this.retake();
      else await this.renew();
      if (this.failing) this.log.info('serving claim: renewed again in the event log');
      this.failing = false;
      this.lapseSaid = false;
    } catch (error) {
      if (!this.failing)
        this.log.warn(
          `serving claim: its renewal in the event log failed (${(error as Error).message}): tried again every ` +
            `${seconds(this.leaseMs / 3)}; past the lease (${seconds(this.leaseMs)}) this instance admits nothing until one goes through`,
        );
      this.failing = true;
      const lapsed = this.standing();
      if (lapsed !== null && !this.lapseSaid) {
        this.lapseSaid = true;
        this.log.error(`serving claim: admitting nothing: ${lapsed}`);
      }
    }
  }

  private async renew(): Promise<void> {
    for (let attempt = 0; attempt < RENEW_ATTEMPTS && !this.released; attempt++) {
      const after = await readAfter(this.events, this.lastRevision);
      const superseding = supersedingClaim(after, this.holder);
      if (superseding !== null) {
        this.lostForGood = superseding.storeId === this.holder.storeId;
        this.lost = this.lostForGood
          ? `${holderText(superseding)} claimed this instance's own ${storeText(this.holder)}: two processes serve one data directory's read models ` +
            '(a copy of DATA_DIR serving elsewhere?). Stop one of them; delete read-models.store-id in a copy'
          : `${holderText(superseding)} with ${storeText(superseding)} took the claim in the event log over while this instance's lapsed ` +
            `(this one has ${storeText(this.holder)}): two stores must not admit together`;
        this.log.error(`serving claim lost: admitting nothing: ${this.lost}`);
        return;
      }
      const sentAt = this.clock();
      const expected = after.at(-1)?.revision ?? this.lastRevision;
      try {
        const renewed = await this.events.append(
          CLAIMS_STREAM,
          [{ type: CLAIM_RENEWED, data: { ...this.holder, leaseMs: this.leaseMs } }],
          expected,
        );
        this.lastRevision = renewed.nextExpectedRevision;
        this.renewedAt = sentAt;
        return;
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError)) throw error;
        // Another instance wrote in between: read what it wrote, then try again.
      }
    }
    if (!this.released) throw new Error(`${CLAIMS_STREAM} moved under each of ${RENEW_ATTEMPTS} renewals`);
  }

  /** After the claim was lost: taken again once nothing of another store is live (a refusal keeps it lost, saying why). */
  private async retake(): Promise<void> {
    try {
      const taken = await claimOnce(this.events, this.holder, this.leaseMs, this.clock);
      this.lastRevision = taken.revision;
      this.renewedAt = taken.sentAt;
      this.lost = null;
      this.log.info('serving claim: taken again in the event log: admitting again');
    } catch (error) {
      if (!(error instanceof LogClaimError)) throw error;
      this.lost = error.message;
    }
  }

  /** Stops renewing and records the release (bounded: a log away does not hold the stop; the lease then runs out by itself). */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    if (this.timer) clearTimeout(this.timer);
    await Promise.race([this.turn, sleep(RELEASE_WAIT_MS, undefined, { ref: false })]);
    if (this.lost !== null) return;
    const recorded = this.events
      .append(CLAIMS_STREAM, [{ type: CLAIM_RELEASED, data: { ...this.holder } }], 'any')
      .then(() => undefined)
      .catch((error: Error) =>
        this.log.warn(`serving claim: its release was not recorded (${error.message}): it lapses with its lease`),
      );
    await Promise.race([recorded, sleep(RELEASE_WAIT_MS, undefined, { ref: false })]);
  }
}

/** The claims stream's tail: every event a live lease could reach (read back page by page), in stream order, and its last revision. */
async function readTail(events: ClaimLog): Promise<{ records: RecordedEvent[]; revision: number | null }> {
  const read: RecordedEvent[] = [];
  let before: number | undefined;
  for (;;) {
    const page = await events.readStreamBackwards(CLAIMS_STREAM, PAGE, before);
    read.push(...page);
    if (page.length < PAGE || readFarEnough(read[0], read[read.length - 1])) break;
    before = read[read.length - 1].revision;
  }
  read.reverse();
  return { records: read, revision: read.at(-1)?.revision ?? null };
}

/** The claims stream's events after `revision`, in order. */
async function readAfter(events: ClaimLog, revision: number): Promise<RecordedEvent[]> {
  const read: RecordedEvent[] = [];
  for (;;) {
    const page = await events.readStreamFrom(CLAIMS_STREAM, revision + 1 + read.length, PAGE);
    read.push(...page);
    if (page.length < PAGE) return read;
  }
}

/** One claim (see LogClaim): its revision and when its append was sent, or LogClaimError. */
async function claimOnce(
  events: ClaimLog,
  holder: ClaimHolder,
  leaseMs: number,
  clock: () => number,
): Promise<{ revision: number; sentAt: number }> {
  // A stream whose events its $maxAge no longer keeps reads empty but has a revision: the refusal says which.
  let knownRevision: number | null = null;
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    if (attempt > 0) await sleep(Math.random() * 20 * Math.min(attempt, 5));
    const tail = await readTail(events);
    const revision = tail.revision ?? knownRevision;
    let asked: AppendResult;
    try {
      asked = await events.append(CLAIMS_STREAM, [{ type: CLAIM_ASKED, data: holder }], revision ?? 'no_stream');
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
      if (typeof error.actual === 'number' && tail.revision === null) knownRevision = error.actual;
      continue;
    }
    const [clockReading] = await events.readStreamFrom(CLAIMS_STREAM, asked.nextExpectedRevision, 1);
    if (clockReading === undefined) throw new Error(`${CLAIMS_STREAM}: the event just written could not be read back`);
    const conflict = conflictingClaim(liveClaims(tail.records, clockReading.recordedAt), holder);
    if (conflict !== null) throw new LogClaimError(holder, conflict);
    const sentAt = clock();
    try {
      const claimed = await events.append(
        CLAIMS_STREAM,
        [{ type: CLAIMED, data: { ...holder, leaseMs } }],
        asked.nextExpectedRevision,
      );
      return { revision: claimed.nextExpectedRevision, sentAt };
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
      // Another instance wrote between the clock reading and the claim: judged again on what it wrote.
    }
  }
  throw new Error(
    `the serving claim could not be taken in the event log: ${CLAIMS_STREAM} moved under each of ${CLAIM_ATTEMPTS} attempts ` +
      '(instances claiming and renewing without pause): start this one again',
  );
}
