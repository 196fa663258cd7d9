import { setTimeout as sleep } from 'node:timers/promises';
import {
  AppendOutcomeUnknownError,
  type AppendResult,
  type ExpectedRevision,
  type NewEvent,
  type RecordedEvent,
  WrongExpectedRevisionError,
} from '../../src/eventstore/event-store';
import { loadConfig } from '../../src/config/config';
import {
  CLAIM_ASKED,
  CLAIM_RELEASED,
  CLAIM_RENEWED,
  CLAIMED,
  CLAIMS_KEPT_SECONDS,
  CLAIMS_STREAM,
  type ClaimHolder,
  type ClaimRecord,
  CLOCK_MARGIN_MS,
  conflictingClaim,
  liveClaims,
  LONGEST_LEASE_MS,
  supersedingClaim,
} from '../../src/runtime/log-claim.decisions';
import { type ClaimLog, LogClaim, LogClaimError } from '../../src/runtime/log-claim';
import { LeveledLines } from '../support/leveled-lines';

/**
 * The serving claim held in the event log (runtime/log-claim.ts): its rules, then the claim over a
 * log in memory whose clock the test moves (the log's recorded times are the only ones compared).
 */

const holder = (instanceId: string, storeId: string, store: ClaimHolder['store'] = 'redis'): ClaimHolder => ({
  instanceId,
  storeId,
  store,
  role: 'service',
  host: `host-${instanceId}`,
  pid: 100,
  where: store === 'redis' ? 'mg:' : `/data/${instanceId}`,
});

let revision = 0;
const record = (type: string, data: ClaimHolder & { leaseMs?: number }, recordedAt: number): ClaimRecord => ({
  type,
  data,
  revision: revision++,
  recordedAt,
});

describe('the serving claim in the log: its rules', () => {
  const [a, b, c] = [holder('a', 'store-1'), holder('b', 'store-1'), holder('c', 'store-2')];
  const lease = 30_000;

  it("takes each instance's latest event: a claim or renewal within its lease is live, a release or an older one is not; an ask counts for nothing", () => {
    const records = [
      record(CLAIMED, { ...a, leaseMs: lease }, 1_000),
      record(CLAIMED, { ...b, leaseMs: lease }, 2_000),
      record(CLAIM_ASKED, c, 3_000),
      record(CLAIM_RENEWED, { ...a, leaseMs: lease }, 11_000),
      record(CLAIM_RELEASED, b, 12_000),
    ];
    expect(liveClaims(records, 20_000)).toEqual([{ holder: { ...a, leaseMs: lease }, leaseMs: lease, ageMs: 9_000 }]);
    // Live until its lease (and the clock margin) has passed since its last renewal.
    expect(liveClaims(records, 11_000 + lease + CLOCK_MARGIN_MS - 1)).toHaveLength(1);
    expect(liveClaims(records, 11_000 + lease + CLOCK_MARGIN_MS)).toEqual([]);
    // Each instance by the lease it declared.
    const short = [record(CLAIMED, { ...c, leaseMs: 2_000 }, 1_000)];
    expect(liveClaims(short, 3_999)).toHaveLength(1);
    expect(liveClaims(short, 4_000)).toEqual([]);
  });

  it('conflicts only with a live claim of another store, the freshest named', () => {
    const live = liveClaims(
      [
        record(CLAIMED, { ...a, leaseMs: lease }, 1_000),
        record(CLAIMED, { ...holder('d', 'store-2'), leaseMs: lease }, 2_000),
        record(CLAIMED, { ...c, leaseMs: lease }, 3_000),
      ],
      4_000,
    );
    expect(conflictingClaim(live, b)).toMatchObject({ holder: { instanceId: 'c', storeId: 'store-2' }, ageMs: 1_000 });
    expect(conflictingClaim(live, holder('e', 'store-1'))?.holder.storeId).toBe('store-2');
    expect(conflictingClaim(liveClaims([record(CLAIMED, { ...a, leaseMs: lease }, 1_000)], 2_000), b)).toBeNull();
    // Its own past claim (a retake) is no conflict.
    expect(conflictingClaim(liveClaims([record(CLAIMED, { ...c, leaseMs: lease }, 1_000)], 2_000), c)).toBeNull();
  });

  it("is superseded by another store's claim or renewal after its own last event, and by another instance's claim of its own in-process read models", () => {
    expect(supersedingClaim([record(CLAIM_RENEWED, { ...b, leaseMs: lease }, 1)], a)).toBeNull();
    expect(supersedingClaim([record(CLAIMED, { ...b, leaseMs: lease }, 1)], a)).toBeNull();
    expect(supersedingClaim([record(CLAIM_ASKED, c, 1)], a)).toBeNull();
    expect(supersedingClaim([record(CLAIMED, { ...c, leaseMs: lease }, 1)], a)?.instanceId).toBe('c');
    expect(supersedingClaim([record(CLAIM_RENEWED, { ...c, leaseMs: lease }, 1)], a)?.instanceId).toBe('c');
    const mine = holder('p', 'dir-store', 'in-process');
    // The same data directory's store claimed by another process (a copy of it serving elsewhere).
    expect(
      supersedingClaim([record(CLAIMED, { ...holder('q', 'dir-store', 'in-process'), leaseMs: lease }, 1)], mine)?.instanceId,
    ).toBe('q');
    expect(supersedingClaim([record(CLAIMED, { ...mine, leaseMs: lease }, 1)], mine)).toBeNull();
  });

  it('takes no lease longer than a judge reads back (SERVING_LEASE_MS is bounded by LONGEST_LEASE_MS)', () => {
    expect(loadConfig({}).servingLeaseMs).toBe(30_000);
    expect(loadConfig({ SERVING_LEASE_MS: String(LONGEST_LEASE_MS) }).servingLeaseMs).toBe(LONGEST_LEASE_MS);
    expect(() => loadConfig({ SERVING_LEASE_MS: String(LONGEST_LEASE_MS + 1) })).toThrow(/SERVING_LEASE_MS must be between/);
    expect(() => loadConfig({ SERVING_LEASE_MS: '999' })).toThrow(/SERVING_LEASE_MS/);
  });
});

/** The claims stream in memory, appended at expected revisions, recorded at a clock the test moves. */
class MemoryClaimLog implements ClaimLog {
  events: RecordedEvent[] = [];
  now = 1_000_000;
  /** While set, appends fail as to a log that does not answer. */
  unreachable = false;
  keptFor: number | null = null;
  /** Called before each append (the test interleaves others' appends there). */
  beforeAppend: () => Promise<void> = async () => undefined;

  async append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    await this.beforeAppend();
    if (this.unreachable) throw new AppendOutcomeUnknownError(streamId, new Error('unreachable'));
    const current = this.events.length - 1;
    const matches = expected === 'any' || (expected === 'no_stream' ? current === -1 : expected === current);
    if (!matches) throw new WrongExpectedRevisionError(streamId, expected, current === -1 ? 'no_stream' : current);
    for (const event of events)
      this.events.push({
        ...event,
        streamId,
        revision: this.events.length,
        position: this.events.length + 1,
        recordedAt: this.now,
      });
    return { nextExpectedRevision: this.events.length - 1, position: this.events.length };
  }

  async readStreamFrom(_streamId: string, from: number, limit: number): Promise<RecordedEvent[]> {
    await sleep(0);
    return this.events.slice(from, from + limit);
  }

  async readStreamBackwards(_streamId: string, limit: number, before = this.events.length): Promise<RecordedEvent[]> {
    await sleep(0);
    return this.events.slice(Math.max(0, before - limit), before).reverse();
  }

  async keepStreamFor(_streamId: string, seconds: number): Promise<void> {
    this.keptFor = seconds;
  }

  types(): string[] {
    return this.events.map((e) => e.type);
  }
}

describe('the serving claim in the log: taking, renewing, releasing', () => {
  let log: MemoryClaimLog;
  const claims: LogClaim[] = [];
  const take = async (who: ClaimHolder, leaseMs = 30_000, lines = new LeveledLines()) => {
    const claim = await LogClaim.take(log, who, { leaseMs, log: lines });
    claims.push(claim);
    return claim;
  };
  beforeEach(() => {
    log = new MemoryClaimLog();
  });
  afterEach(async () => {
    await Promise.all(claims.splice(0).map((claim) => claim.release()));
  });

  it('refuses another store while a claim is live, naming both stores and what to set; instances of one store claim together', async () => {
    await take(holder('a', 'store-1'));
    expect(log.keptFor).toBe(CLAIMS_KEPT_SECONDS);
    await take(holder('b', 'store-1'));
    const refused = take(holder('c', 'store-2'));
    await expect(refused).rejects.toBeInstanceOf(LogClaimError);
    await expect(refused).rejects.toThrow(
      /^this EventStoreDB log is served with read models in another store: a gateway instance \(pid 100 on host-[ab]\) has read models in Redis store store-1 \(REDIS_PREFIX mg:\), its claim renewed 0 s ago \(lease 30 s\); this one has read models in Redis store store-2 .*Give every instance on one EventStoreDB log the same REDIS_URL and REDIS_PREFIX/,
    );
    // A refused instance leaves only its clock reading: nothing a judge counts.
    expect(log.types()).toEqual([CLAIM_ASKED, CLAIMED, CLAIM_ASKED, CLAIMED, CLAIM_ASKED]);
    // In-process read models are a store of their own: refused beside Redis, and Redis beside them.
    await expect(take(holder('d', 'dir-1', 'in-process'))).rejects.toThrow(
      /this one has in-process read models \(no REDIS_URL; store dir-1, of \/data\/d on host-d\)/,
    );
  });

  it('refuses another store until the lease of a claim never renewed (its instance died) has passed on the log clock', async () => {
    // An instance that claimed and died: its claim, never renewed nor released.
    await log.append(
      CLAIMS_STREAM,
      [{ type: CLAIMED, data: { ...holder('dead', 'store-1', 'in-process'), leaseMs: 5_000 } }],
      'no_stream',
    );
    log.now += 5_000 + CLOCK_MARGIN_MS - 1;
    await expect(take(holder('b', 'store-2'))).rejects.toThrow(
      /in-process read models \(no REDIS_URL; store store-1, of \/data\/dead on host-dead\), its claim renewed 6 s ago \(lease 5 s\)/,
    );
    log.now += 1;
    const claim = await take(holder('b', 'store-2'));
    expect(claim.standing()).toBeNull();
  });

  it('reads the stream back page by page as far as a lease can reach: a live claim behind many later events is found', async () => {
    await log.append(CLAIMS_STREAM, [{ type: CLAIMED, data: { ...holder('a', 'store-2'), leaseMs: 30_000 } }], 'no_stream');
    // An instance of another store restarting in a loop, refused each time: its clock readings pile up.
    for (let i = 0; i < 600; i++)
      await log.append(CLAIMS_STREAM, [{ type: CLAIM_ASKED, data: holder(`r${i}`, 'store-1') }], 'any');
    await expect(take(holder('b', 'store-1'))).rejects.toThrow(/Redis store store-2/);
  });

  it('lets another store claim at once after a release', async () => {
    const first = await take(holder('a', 'store-1'));
    await first.release();
    expect(log.types().at(-1)).toBe(CLAIM_RELEASED);
    await take(holder('b', 'store-2'));
  });

  it('of instances of two stores claiming together, only one store serves (the one whose claim the stream orders first)', async () => {
    for (let round = 0; round < 30; round++) {
      log = new MemoryClaimLog();
      // Each append waits a random moment: the instances' reads and appends interleave anyhow.
      log.beforeAppend = () => sleep(Math.random() * 3);
      const who = Array.from({ length: 6 }, (_, i) => holder(`i${i}`, i % 2 === 0 ? 'store-1' : 'store-2'));
      const outcomes = await Promise.allSettled(who.map((h) => LogClaim.take(log, h, { leaseMs: 30_000 })));
      const served = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [who[i].storeId] : []));
      for (const o of outcomes) if (o.status === 'fulfilled') claims.push(o.value);
      for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).toBeInstanceOf(LogClaimError);
      expect(served.length).toBeGreaterThan(0);
      expect(new Set(served).size).toBe(1);
      await Promise.all(claims.splice(0).map((claim) => claim.release()));
    }
  });

  it('renews every third of its lease', async () => {
    await take(holder('a', 'store-1'), 300);
    await sleep(450);
    expect(log.types().filter((t) => t === CLAIM_RENEWED).length).toBeGreaterThanOrEqual(1);
  });

  it('judges again when the stream moves between its clock reading and its claim: a renewal landing there is counted', async () => {
    const back = holder('back', 'store-1');
    await log.append(CLAIMS_STREAM, [{ type: CLAIMED, data: { ...back, leaseMs: 5_000 } }], 'no_stream');
    log.now += 60_000;
    // The other store's start reads the tail (a claim long lapsed) and the clock; before its claim
    // lands, the instance that seemed gone renews (it was paused, not dead).
    let interleaved = false;
    log.beforeAppend = async () => {
      if (!interleaved && log.types().at(-1) === CLAIM_ASKED) {
        interleaved = true;
        await log.append(CLAIMS_STREAM, [{ type: CLAIM_RENEWED, data: { ...back, leaseMs: 5_000 } }], 'any');
      }
    };
    await expect(take(holder('b', 'store-2'))).rejects.toThrow(/store store-1 .*its claim renewed 0 s ago \(lease 5 s\)/);
    expect(interleaved).toBe(true);
    expect(log.types()).toEqual([CLAIMED, CLAIM_ASKED, CLAIM_RENEWED, CLAIM_ASKED]);
  });

  it('admits nothing once no renewal has gone through for a lease (the log away), and again once one does', async () => {
    const lines = new LeveledLines();
    const claim = await take(holder('a', 'store-1'), 300, lines);
    log.unreachable = true;
    await lines.waitFor((l) => l.level === 'warn' && /renewal in the event log failed/.test(l.line));
    await lines.waitFor(
      (l) => l.level === 'error' && /admitting nothing: its claim in the event log .* last renewed/.test(l.line),
    );
    expect(claim.standing()).toMatch(/last renewed [\d.]+ s ago \(lease 0\.3 s\): the log is not taking its renewals/);
    log.unreachable = false;
    await lines.waitFor((l) => l.level === 'info' && /renewed again/.test(l.line));
    expect(claim.standing()).toBeNull();
  });

  it("stops admitting when another store's instance took over while its lease lapsed; takes the claim again once that one's lease has passed", async () => {
    const lines = new LeveledLines();
    const claim = await take(holder('a', 'store-1'), 300, lines);
    // Another store's instance judged this one gone (its lease passed on the log's clock) and claimed.
    log.now += 10_000;
    await log.append(CLAIMS_STREAM, [{ type: CLAIMED, data: { ...holder('c', 'store-2'), leaseMs: 2_000 } }], 'any');
    await lines.waitFor((l) => l.level === 'error' && /serving claim lost/.test(l.line));
    expect(claim.standing()).toMatch(/took the claim in the event log over while this instance's lapsed/);
    // Its retakes are refused while that claim is live…
    await sleep(250);
    expect(claim.standing()).toMatch(/this EventStoreDB log is served with read models in another store/);
    // …and succeed once it has lapsed (that instance died).
    log.now += 2_000 + CLOCK_MARGIN_MS;
    await lines.waitFor((l) => l.level === 'info' && /taken again/.test(l.line));
    expect(claim.standing()).toBeNull();
  });

  it('stops admitting for good when another process claims its own in-process read models (a copy of its data directory)', async () => {
    const lines = new LeveledLines();
    const claim = await take(holder('p', 'dir-store', 'in-process'), 300, lines);
    await log.append(
      CLAIMS_STREAM,
      [{ type: CLAIMED, data: { ...holder('q', 'dir-store', 'in-process'), leaseMs: 300 } }],
      'any',
    );
    await lines.waitFor((l) => l.level === 'error' && /serving claim lost/.test(l.line));
    const written = log.events.length;
    await sleep(300);
    expect(claim.standing()).toMatch(/two processes serve one data directory's read models/);
    // Never taken again (the two would take it in turns).
    expect(log.events.length).toBe(written);
  });
});
