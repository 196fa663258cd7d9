import type { RecordedEvent } from '../../src/eventstore/event-store';
import { ChainFollower } from '../../src/ledger/ledger-chain';
import { chargeFor, type NanoSum } from '../../src/ledger/money';
import { formatMicroNano, statementCsv, statementHtml } from '../../src/statements/statement-format';
import { checkStatementMonth, monthBounds, StatementPeriodError, statementOf } from '../../src/statements/statement';

let position = 0;
/** An event as the log recorded it: at its own time (granted, settled, issued, reserved), unless told. */
const recorded = (type: string, data: Record<string, unknown>, recordedAt?: number): RecordedEvent => ({
  type,
  data,
  streamId: 's',
  revision: 0,
  position: ++position,
  recordedAt: recordedAt ?? ((data.grantedAt ?? data.settledAt ?? data.issuedAt ?? data.reservedAt) as number),
});

const NOV = Date.UTC(2026, 10, 1);
const DEC = Date.UTC(2026, 11, 1);
const prices = {
  input: 3_000_000_000,
  cacheRead: 300_000_000,
  cacheWrite: 3_750_000_000,
  cacheWrite1h: 6_000_000_000,
  output: 15_000_000_000,
};

const grant = (orgId: string, amount: number, at: number) =>
  recorded('CreditsGranted', { orgId, grantId: `g${position}`, amount, reason: 'top-up', grantedAt: at });

function settled(
  orgId: string,
  at: number,
  keyId: string,
  model: string,
  tokens: { input: number; cacheRead?: number; output: number },
) {
  const usage = {
    inputTokens: tokens.input,
    cacheReadTokens: tokens.cacheRead ?? 0,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    outputTokens: tokens.output,
  };
  const amount = chargeFor(usage, prices);
  return recorded('ReservationSettled', {
    requestId: `r${position}`,
    keyId,
    surface: 'chat-completions',
    model,
    reservationId: `res${position}`,
    orgId,
    host: 'h',
    hostModel: model,
    ...usage,
    prices,
    amount,
    held: amount + 10,
    settledAt: at,
    status: 'ok',
    latencyMs: 1,
  });
}

const note = (orgId: string, kind: 'refund' | 'adjustment', amount: number, at: number, reason = 'goodwill') =>
  recorded('CreditNoteIssued', {
    orgId,
    creditNoteId: `cn${position}`,
    idempotencyKey: `k${position}`,
    kind,
    reservationId: kind === 'refund' ? 'res1' : null,
    keyId: kind === 'refund' ? 'key-a' : null,
    amount,
    reason,
    issuedBy: 'cli',
    issuedAt: at,
  });

describe('a monthly statement', () => {
  const events = [
    grant('org', 10_000_000_000, NOV - 10_000),
    settled('org', NOV - 5_000, 'key-a', 'm1', { input: 1000, output: 100 }),
    note('org', 'adjustment', 7, NOV - 1),
    recorded('CreditsReserved', { orgId: 'org', reservationId: 'x', amount: 99, reservedAt: NOV + 1 }),
    grant('org', 5_000_000_000, NOV),
    settled('org', NOV + 1, 'key-a', 'm1', { input: 333, cacheRead: 7, output: 17 }),
    settled('org', NOV + 2, 'key-b', 'm2', { input: 1, output: 1 }),
    settled('other', NOV + 3, 'key-c', 'm1', { input: 100_000, output: 100_000 }),
    note('org', 'refund', 1_000, NOV + 4, 'dispute'),
    note('org', 'adjustment', -500, NOV + 5, 'correction'),
    settled('org', DEC - 1, 'key-a', 'm2', { input: 5, output: 5 }),
    settled('org', DEC, 'key-a', 'm1', { input: 10_000, output: 10_000 }),
  ];
  const charge = (i: number) => (events[i].data as { amount: number }).amount;
  const s = statementOf(events, 'org', '2026-11');

  it('opens with what moved before the month and closes with what moved in it', () => {
    expect(s.openingBalance).toBe(10_000_000_000 - charge(1) + 7);
    expect(s.grants).toMatchObject({ count: 1, amount: 5_000_000_000 });
    expect(s.charges.requests).toBe(3);
    expect(s.charges.amount).toBe(charge(5) + charge(6) + charge(10));
    expect(s.creditNotes).toMatchObject({ refunds: 1_000, adjustments: -500 });
    expect(s.closingBalance).toBe(Number(s.openingBalance) + 5_000_000_000 - Number(s.charges.amount) + 1_000 - 500);
  });

  it('leaves out other organizations and what moves no credit', () => {
    expect(s.charges.byKey.map((k) => k.keyId).sort()).toEqual(['key-a', 'key-b']);
    expect(s.eventsRead).toBe(9);
  });

  it('groups charges by model and key, summing to the total', () => {
    const sum = (groups: { amount: NanoSum }[]) => groups.reduce((a, g) => a + Number(g.amount), 0);
    expect(sum(s.charges.byModel)).toBe(s.charges.amount);
    expect(sum(s.charges.byKey)).toBe(s.charges.amount);
    expect(s.charges.byModel.find((m) => m.model === 'm2')).toEqual({ model: 'm2', requests: 2, amount: charge(6) + charge(10) });
  });

  it('lists each class at its exact cost, the rounding making up the difference to the charges', () => {
    const input = s.charges.byClass.find((c) => c.class === 'input')!;
    expect(input.quantity).toBe(333 + 1 + 5);
    expect(BigInt(input.costMicroNano)).toBe(339n * 3_000_000_000n);
    const classes = s.charges.byClass.reduce((a, c) => a + BigInt(c.costMicroNano), 0n);
    expect(classes + BigInt(s.charges.roundingMicroNano)).toBe(BigInt(s.charges.amount) * 1_000_000n);
    expect(BigInt(s.charges.roundingMicroNano)).toBeGreaterThanOrEqual(0n);
    expect(BigInt(s.charges.roundingMicroNano)).toBeLessThan(3n * 1_000_000n);
  });

  it('chains month to month: one closing balance is the next opening balance', () => {
    const dec = statementOf(events, 'org', '2026-12');
    expect(dec.openingBalance).toBe(s.closingBalance);
    expect(dec.charges.requests).toBe(1);
  });

  it("names the organization's ledger chain head as the month closed", () => {
    const follower = new ChainFollower();
    // Its events recorded before December: all but the last (recorded at December's first instant).
    for (const e of events) if ((e.data as { orgId: string }).orgId === 'org' && e.recordedAt < DEC) follower.follow(e, false);
    expect(s.chain).toMatchObject({ head: follower.head('org').head, events: 10 });
    const early = statementOf(
      events.map((e, i) => ({ ...e, recordedAt: i < 3 ? NOV - 1 : DEC })),
      'org',
      '2026-11',
    );
    expect(early.chain.events).toBe(3);
  });

  it('refuses what is not a month', () => {
    for (const bad of ['2026-13', '2026-1', 'November', '2026-11-01'])
      expect(() => monthBounds(bad)).toThrow(StatementPeriodError);
    expect(monthBounds('2026-12')).toEqual({ from: DEC, to: Date.UTC(2027, 0, 1) });
    // Years below 100 are themselves, not the 1900s.
    const { from, to } = monthBounds('0099-12');
    expect([new Date(from).toISOString(), new Date(to).toISOString()]).toEqual([
      '0099-12-01T00:00:00.000Z',
      '0100-01-01T00:00:00.000Z',
    ]);
  });

  it('refuses a month that has not begun; the current one is its statement so far', () => {
    expect(() => checkStatementMonth('2026-12', DEC - 1)).toThrow(
      '2026-12 has not begun: statements are of months that have (the current one so far)',
    );
    expect(() => checkStatementMonth('2026-12', DEC)).not.toThrow();
    expect(() => checkStatementMonth('2026-11', DEC - 1)).not.toThrow();
    expect(() => checkStatementMonth('2026-13', DEC)).toThrow(StatementPeriodError);
  });
});

describe('a statement of sums past 2^53 nano-credits', () => {
  // 9,007,199.254740991 granted, 9,000,000 debited, 3 and 1 nano granted: the grants pass 2^53, the balance does not.
  const events = [
    grant('big', Number.MAX_SAFE_INTEGER, NOV + 1),
    note('big', 'adjustment', -9_000_000_000_000_000, NOV + 2),
    grant('big', 3, NOV + 3),
    grant('big', 1, NOV + 4),
  ];

  it('adds them up exactly, a sum past 2^53 carried as its decimal digits', () => {
    const s = statementOf(events, 'big', '2026-11');
    expect(s.grants.amount).toBe((BigInt(Number.MAX_SAFE_INTEGER) + 4n).toString());
    expect(s.closingBalance).toBe(7_199_254_740_995);
    expect(statementOf(events, 'big', '2026-12').openingBalance).toBe(7_199_254_740_995);
    expect(statementCsv(s)).toContain('closing_balance,,,7199.254740995');
  });
});

describe('a statement printed', () => {
  const s = statementOf(
    [grant('o"rg', 1_500_000_000, NOV), settled('o"rg', NOV + 1, 'k,1', '<b>m</b>', { input: 1, output: 1 })],
    'o"rg',
    '2026-11',
  );

  it('as CSV, quoting what needs quoting, amounts exact', () => {
    const csv = statementCsv(s);
    expect(csv.split('\r\n')[0]).toBe('organization,month,section,item,quantity,credits');
    expect(csv).toContain('"o""rg",2026-11,charges_by_key,"k,1",1,-0.000018');
    expect(csv).toContain('"o""rg",2026-11,closing_balance,,,1.499982');
  });

  it('as CSV, a name a spreadsheet would run as a formula made text', () => {
    const formula = statementOf(
      [grant('org', 1_500_000_000, NOV), settled('org', NOV + 1, '=HYPERLINK("x")', 'm', { input: 1, output: 1 })],
      'org',
      '2026-11',
    );
    expect(statementCsv(formula)).toContain(`org,2026-11,charges_by_key,"'=HYPERLINK(""x"")",1,-0.000018`);
  });

  it('as HTML, escaping every name', () => {
    const html = statementHtml(s);
    expect(html).toContain('&lt;b&gt;m&lt;/b&gt;');
    expect(html).not.toContain('<b>m</b>');
    expect(html).toContain(`<td>${s.chain.head}</td><td class="n">2</td>`);
  });

  it('formats millionths of a nano-credit exactly', () => {
    expect(formatMicroNano(1n)).toBe('0.000000000000001');
    expect(formatMicroNano(-(10n ** 15n) * 3n)).toBe('-3');
    expect(formatMicroNano(123_456_789_000_000_000_000n)).toBe('123456.789');
  });
});
