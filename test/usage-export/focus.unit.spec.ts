import { ApiError } from '../../src/http/api-error';
import { focusAskOf, focusCsv, focusRows, settlementLine } from '../../src/usage-export/focus';
import type { ReservationSettled } from '../../src/ledger/ledger.events';

describe('the export asked', () => {
  it('defaults to a row per request, every day', () => {
    expect(focusAskOf({})).toEqual({ grouping: 'request', from: null, to: null });
    expect(focusAskOf({ group: 'day', from: '2026-01-31', to: '2026-02-01' })).toEqual({
      grouping: 'day',
      from: '2026-01-31',
      to: '2026-02-01',
    });
  });

  it.each([
    { group: 'hour' },
    { from: '2026-02-30' },
    { to: '26-01-01' },
    { from: ['2026-01-01'] },
    { from: '2026-02-02', to: '2026-02-01' },
  ])('%j is a 400', (query) => {
    expect(() => focusAskOf(query)).toThrow(ApiError);
  });
});

describe('rows', () => {
  const settled = (over: Partial<ReservationSettled['data']>): ReservationSettled['data'] => ({
    reservationId: 'r1',
    orgId: 'o',
    requestId: 'q1',
    keyId: 'k1',
    surface: 'messages',
    model: 'v/m',
    host: 'h',
    hostModel: 'hm',
    status: 'ok',
    latencyMs: 1500,
    inputTokens: 1_000_000,
    outputTokens: 1,
    prices: { input: 3_000_000_000, output: 15_000_000_000 },
    amount: 3_000_015_000,
    held: 4_000_000_000,
    settledAt: Date.UTC(2026, 10, 26, 12, 0, 0, 250),
    ...over,
  });
  const account = { orgId: 'o', name: 'Acme', keyNames: new Map([['k1', 'prod']]) };

  it('writes amounts exactly from nano-credits, and the charge recomputed from its event', () => {
    const [row] = focusRows([settlementLine(settled({ amount: 1 }))], account, 'request');
    // 1M × $3/M + 1 × $15/M = $3.000015, whatever the event's own amount says.
    expect(row).toMatchObject({ BilledCost: '3.000015', x_BilledCostNano: 3_000_015_000, x_KeyName: 'prod' });
    expect(row).toMatchObject({ ChargePeriodStart: '2026-11-26T11:59:58Z', ChargePeriodEnd: '2026-11-26T12:00:01Z' });
    expect(row).toMatchObject({ BillingPeriodStart: '2026-11-01T00:00:00Z', BillingPeriodEnd: '2026-12-01T00:00:00Z' });
  });

  it('sums a day × model × key into one row', () => {
    const lines = [
      settled({}),
      settled({ requestId: 'q2', reservationId: 'r2', settledAt: Date.UTC(2026, 10, 26, 23, 59) }),
      settled({ requestId: 'q3', reservationId: 'r3', settledAt: Date.UTC(2026, 10, 27, 0, 1) }),
    ].map(settlementLine);
    const rows = focusRows(lines, account, 'day');
    expect(rows.map((r) => [r.ChargePeriodStart, r.PricingQuantity, r.BilledCost, r.x_InputTokens])).toEqual([
      ['2026-11-26T00:00:00Z', 2, '6.00003', 2_000_000],
      ['2026-11-27T00:00:00Z', 1, '3.000015', 1_000_000],
    ]);
    expect(focusCsv(rows).split('\r\n')).toHaveLength(4); // header, two rows, the last CRLF
  });
});
