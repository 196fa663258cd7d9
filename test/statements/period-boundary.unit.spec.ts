import type { EventStore, RecordedEvent } from '../../src/eventstore/event-store';
import { type ExportEnd, type ExportHeader, exportLedger } from '../../src/ledger-export/ledger-export';
import { ExportVerifier } from '../../src/ledger-export/ledger-verify';
import { chargeFor, uncachedUsage } from '../../src/ledger/money';
import { statementOf } from '../../src/statements/statement';

/**
 * One rule for which period an event belongs to: the one the log recorded it in, in its chain's order.
 * A settlement stamped 23:59:59.999 on November's last day and committed at 00:00:00.001 on December's
 * first is December's, in the month's statement as in the month's export, and the two agree to the
 * nano-credit and to the chain's link.
 */

const org = 'org-boundary';
const NOV = Date.UTC(2026, 10, 1);
const DEC = Date.UTC(2026, 11, 1);
const JAN = Date.UTC(2027, 0, 1);
const prices = { input: 3_000_000_000, output: 15_000_000_000 };
const usage = uncachedUsage(1_000, 2_000);
const charge = chargeFor(usage, { ...prices, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 });
const facts = { requestId: 'q-1', keyId: 'k1', surface: 'chat', model: 'm', reservationId: 'r1', orgId: org };

let position = 0;
const at = (recordedAt: number, streamId: string, revision: number, type: string, data: object): RecordedEvent => ({
  streamId,
  revision,
  type,
  data,
  position: ++position,
  recordedAt,
});

const events: RecordedEvent[] = [
  at(NOV + 1_000, `credits-${org}`, 0, 'CreditsGranted', {
    orgId: org,
    grantId: 'g1',
    amount: 1_000_000_000,
    reason: 'r',
    grantedAt: NOV + 1_000,
  }),
  at(DEC - 2_000, 'reservation-r1', 0, 'CreditsReserved', {
    ...facts,
    amount: 50_000_000,
    reservedAt: DEC - 2_000,
    expiresAt: DEC + 60_000,
  }),
  // Another organization's event between: a chain is its own organization's events.
  at(DEC - 1_500, 'credits-other', 0, 'CreditsGranted', {
    orgId: 'other',
    grantId: 'g',
    amount: 5,
    reason: 'r',
    grantedAt: DEC - 1_500,
  }),
  // The boundary event: settled (its own time) at 23:59:59.999, committed by the log at 00:00:00.001.
  at(DEC + 1, 'reservation-r1', 1, 'ReservationSettled', {
    ...facts,
    host: 'h',
    hostModel: 'hm',
    status: 'ok',
    latencyMs: 1_998,
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    prices,
    amount: charge,
    held: 50_000_000,
    settledAt: DEC - 1,
  }),
  at(DEC + 5_000, `credits-${org}`, 1, 'CreditsGranted', {
    orgId: org,
    grantId: 'g2',
    amount: 7,
    reason: 'r',
    grantedAt: DEC + 5_000,
  }),
];

/** The log holding `events`, as the export reads it (no chain index: the whole log, filtered). */
const log = {
  headPosition: async () => events.length,
  readAll: async (after: number, limit: number) => events.filter((e) => e.position > after).slice(0, limit),
} as unknown as EventStore;

async function exportOf(from: number, to: number): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of exportLedger(log, org, { from, to })) lines.push(line);
  return lines;
}

describe('the period an event belongs to: the month the log recorded it in', () => {
  let november: string[];
  let december: string[];
  beforeAll(async () => {
    november = await exportOf(NOV, DEC);
    december = await exportOf(DEC, JAN);
  });
  const parts = (lines: string[]) => ({
    header: JSON.parse(lines[0]) as ExportHeader,
    events: lines.slice(1, -1).map((line) => JSON.parse(line) as { type: string; data: { settledAt?: number } }),
    end: JSON.parse(lines[lines.length - 1]) as ExportEnd,
  });

  it('puts the settlement stamped 23:59:59.999 and recorded 00:00:00.001 in the next month, in the export and the statement', () => {
    const nov = statementOf(events, org, '2026-11');
    const dec = statementOf(events, org, '2026-12');
    expect(parts(november).events.map((e) => e.type)).toEqual(['CreditsGranted', 'CreditsReserved']);
    expect(parts(december).events.map((e) => e.type)).toEqual(['ReservationSettled', 'CreditsGranted']);
    expect(parts(december).events[0].data.settledAt).toBe(DEC - 1);
    expect(nov.charges).toMatchObject({ requests: 0, amount: 0 });
    expect(dec.charges).toMatchObject({ requests: 1, amount: charge });
    expect(dec.charges.byKey).toEqual([{ keyId: 'k1', requests: 1, amount: charge }]);
  });

  it('agrees with the export month by month: opening, closing, charges, grants and the chain head', () => {
    for (const [month, lines] of [
      ['2026-11', november],
      ['2026-12', december],
    ] as const) {
      const statement = statementOf(events, org, month);
      const { header, end } = parts(lines);
      expect([month, statement.openingBalance]).toEqual([month, header.opening.balance]);
      expect([month, statement.closingBalance]).toEqual([month, end.closing.balance]);
      expect(BigInt(end.closing.charged) - BigInt(header.opening.charged)).toBe(BigInt(statement.charges.amount));
      expect(BigInt(end.closing.granted) - BigInt(header.opening.granted)).toBe(BigInt(statement.grants.amount));
      expect(statement.chain.head).toBe(end.head);
      expect(statement.chain.events).toBe(header.eventsBefore + end.events);
    }
  });

  it('each export verifies, December opening where November closed', () => {
    const verify = (lines: string[], previous?: ReturnType<ExportVerifier['finish']>) => {
      const verifier = new ExportVerifier({ previous });
      for (const line of lines) verifier.line(line);
      return verifier.finish();
    };
    const nov = verify(november);
    expect(nov.differences).toEqual([]);
    const dec = verify(december, nov);
    expect(dec.differences).toEqual([]);
    expect(dec.openingVouchedBy).toBe('previous export');
  });

  it('cuts the chain once: an event after the boundary recorded a little earlier (another clock) stays past it', () => {
    // The grant after the settlement carries a recording time 2 ms before midnight: still December's.
    const skewed = events.map((e) => (e.position === 5 ? { ...e, recordedAt: DEC - 2 } : e));
    const nov = statementOf(skewed, org, '2026-11');
    const dec = statementOf(skewed, org, '2026-12');
    expect(nov.grants.count).toBe(1);
    expect(dec.grants.count).toBe(1);
    expect(dec.openingBalance).toBe(nov.closingBalance);
    expect(nov.chain.events).toBe(2);
  });
});
