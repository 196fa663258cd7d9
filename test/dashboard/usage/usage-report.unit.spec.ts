import { spendPerDay, usageFilterOf, usageReport } from '../../../src/dashboard/usage/usage-report';
import { ApiError } from '../../../src/http/api-error';
import type { RequestLogEntry } from '../../../src/projections/read-models';

const at = (iso: string) => Date.parse(iso);
const NOW = at('2025-03-20T15:00:00Z');

/** A logged request; newest first is the log's order, so tests list them that way. */
const entry = (requestId: string, time: string, more: Partial<RequestLogEntry> = {}): RequestLogEntry => ({
  requestId,
  reservationId: `r-${requestId}`,
  time: at(time),
  surface: 'chat-completions',
  model: 'openai/gpt-4o-mini',
  host: 'openai',
  keyId: 'k1',
  inputTokens: 10,
  cacheReadTokens: 200,
  cacheWriteTokens: 30,
  outputTokens: 5,
  cost: 1_500,
  latencyMs: 120,
  status: 'ok',
  ...more,
});

const errorOf = (fn: () => unknown): ApiError | null => {
  try {
    fn();
    return null;
  } catch (error) {
    return error as ApiError;
  }
};

describe('usage filter (the query string)', () => {
  it('defaults to page 1 of 25, over the 14 days up to today', () => {
    expect(usageFilterOf({}, NOW)).toEqual({ page: 1, pageSize: 25, from: '2025-03-07', to: '2025-03-20' });
  });

  it('counts 14 days back from a given end day', () => {
    expect(usageFilterOf({ to: '2025-01-05' }, NOW)).toMatchObject({ from: '2024-12-23', to: '2025-01-05' });
  });

  it('keeps page and page size in bounds; what is not a number is the default', () => {
    expect(usageFilterOf({ page: '0', pageSize: '1000' }, NOW)).toMatchObject({ page: 1, pageSize: 200 });
    expect(usageFilterOf({ page: '-3', pageSize: '-1' }, NOW)).toMatchObject({ page: 1, pageSize: 1 });
    expect(usageFilterOf({ page: 'two', pageSize: 'many' }, NOW)).toMatchObject({ page: 1, pageSize: 25 });
    expect(usageFilterOf({ page: '3', pageSize: '10' }, NOW)).toMatchObject({ page: 3, pageSize: 10 });
  });

  it('passes the key and model filters on', () => {
    expect(usageFilterOf({ keyId: 'k2', model: 'a/b' }, NOW)).toMatchObject({ keyId: 'k2', model: 'a/b' });
  });

  it('refuses days that are not YYYY-MM-DD, a reversed range and more than a year, as 400s', () => {
    const refusals = [
      [{ from: 'yesterday' }, 'from must be a date YYYY-MM-DD'],
      [{ to: '2025-3-1' }, 'to must be a date YYYY-MM-DD'],
      [{ from: '2025-03-02', to: '2025-03-01' }, 'from must not be after to'],
      [{ from: '2024-01-01', to: '2025-01-02' }, 'the date range can span at most a year'],
    ] as const;
    for (const [query, message] of refusals) {
      const error = errorOf(() => usageFilterOf(query, NOW));
      expect(error).toBeInstanceOf(ApiError);
      expect({ status: error?.status, message: error?.message }).toEqual({ status: 400, message });
    }
    // A leap year's 366 days are allowed.
    expect(usageFilterOf({ from: '2024-01-01', to: '2024-12-31' }, NOW)).toMatchObject({ from: '2024-01-01' });
  });
});

describe('spend per day', () => {
  it('lists every day of the range, with 0 for days without a charge', () => {
    const daily = new Map([
      ['2025-02-27', 2_000_000_000],
      ['2025-03-01', 500],
      ['2025-03-05', 7],
    ]);
    expect(spendPerDay(daily, '2025-02-27', '2025-03-02')).toEqual([
      { day: '2025-02-27', cost: 2, costNano: 2_000_000_000 },
      { day: '2025-02-28', cost: 0, costNano: 0 },
      { day: '2025-03-01', cost: 0.0000005, costNano: 500 },
      { day: '2025-03-02', cost: 0, costNano: 0 },
    ]);
  });

  it('is one day when the range is one day', () => {
    expect(spendPerDay(new Map(), '2025-03-20', '2025-03-20')).toEqual([{ day: '2025-03-20', cost: 0, costNano: 0 }]);
  });
});

/** A request that took two host calls: a rate limit, then the next host. */
const TRIED = [
  { host: 'first', credential: 'FIRST_KEY', status: 429, reason: 'rate_limited', durationMs: 4 },
  { host: 'openai', credential: 'OPENAI_KEY', status: null, reason: 'ok', durationMs: 90 },
];

describe('usage report', () => {
  // given a log, newest first: three requests in range (two keys, two models, one from the playground) and one before it
  const log = [
    entry('q4', '2025-03-20T10:00:00Z', { keyId: 'playground', surface: 'playground', cost: 100 }),
    entry('q3', '2025-03-19T10:00:00Z', { keyId: 'k2', model: 'anthropic/claude', cost: 200 }),
    entry('q2', '2025-03-18T23:59:59Z', {
      keyId: 'gone',
      cost: 300,
      omittedTools: ['web_search'],
      hostedToolUses: { fileSearch: 2 },
      attempts: TRIED,
    }),
    entry('q1', '2025-03-01T10:00:00Z', { cost: 400 }),
  ];
  const keys = [
    { keyId: 'k1', name: 'laptop' },
    { keyId: 'k2', name: 'ci' },
  ];
  // The ledger's spend per day: q2, q3, and q4 less the refund of 50 of q3 issued on the 20th.
  const daily = new Map([
    ['2025-03-01', 400],
    ['2025-03-18', 300],
    ['2025-03-19', 200],
    ['2025-03-20', 50],
  ]);
  const filter = { page: 1, pageSize: 25, from: '2025-03-18', to: '2025-03-20' };

  it('shows the requests in range, newest first, named by their key, with totals and the days', () => {
    const report = usageReport(filter, log, keys, daily, new Map([['r-q3', 50]]));
    expect(report.data.map((r) => [r.requestId, r.keyName])).toEqual([
      ['q4', 'Playground'],
      ['q3', 'ci'],
      ['q2', 'deleted key'],
    ]);
    expect(report.data[1]).toEqual({
      requestId: 'q3',
      time: '2025-03-19T10:00:00.000Z',
      surface: 'chat-completions',
      model: 'anthropic/claude',
      host: 'openai',
      keyId: 'k2',
      keyName: 'ci',
      inputTokens: 10,
      cacheReadTokens: 200,
      cacheWriteTokens: 30,
      outputTokens: 5,
      hostedToolUses: {},
      cost: 0.0000002,
      costNano: 200,
      reservationId: 'r-q3',
      // Credit notes refunded 50 of its 200.
      refunded: 0.00000005,
      refundedNano: 50,
      estimated: [],
      latencyMs: 120,
      status: 'ok',
      omittedTools: [],
      attempts: [],
    });
    // The hosted tools left out of a request's call, when some were; the uses billed, when there were any.
    expect(report.data[2].omittedTools).toEqual(['web_search']);
    expect(report.data[2].hostedToolUses).toEqual({ fileSearch: 2 });
    expect(report.data[2].attempts).toEqual(TRIED);
    expect(report.data[2].refundedNano).toBe(0);
    // Spend net of refunds, as the ledger's: the days' sum, the refund on the day it was issued.
    expect(report).toMatchObject({ page: 1, pageSize: 25, total: 3, totals: { requests: 3, costNano: 550, cost: 0.00000055 } });
    expect(report.spendPerDay.map((d) => d.costNano)).toEqual([300, 200, 50]);
  });

  it('filters by key and by model', () => {
    expect(usageReport({ ...filter, keyId: 'k2' }, log, keys, daily).data.map((r) => r.requestId)).toEqual(['q3']);
    expect(usageReport({ ...filter, model: 'openai/gpt-4o-mini' }, log, keys, daily).data.map((r) => r.requestId)).toEqual([
      'q4',
      'q2',
    ]);
  });

  it('filtered by key or model, the spend is the matching requests’ charges less what was refunded of them', () => {
    const refunded = new Map([['r-q3', 50]]);
    expect(usageReport({ ...filter, keyId: 'k2' }, log, keys, daily, refunded).totals).toEqual({
      requests: 1,
      cost: 0.00000015,
      costNano: 150,
    });
    expect(usageReport({ ...filter, model: 'openai/gpt-4o-mini' }, log, keys, daily, refunded).totals.costNano).toBe(400);
    // The days know no key: the same whatever the filter.
    expect(usageReport({ ...filter, keyId: 'k2' }, log, keys, daily, refunded).spendPerDay.map((d) => d.costNano)).toEqual([
      300, 200, 50,
    ]);
  });

  it('a day whose refunds outweigh its charges is negative, and the total with it', () => {
    const report = usageReport({ ...filter, to: '2025-03-18' }, log, keys, new Map([['2025-03-18', -70]]));
    expect(report.spendPerDay).toEqual([{ day: '2025-03-18', cost: -0.00000007, costNano: -70 }]);
    expect(report.totals.costNano).toBe(-70);
  });

  it('pages through the matches, the totals covering all of them', () => {
    const page2 = usageReport({ ...filter, page: 2, pageSize: 2 }, log, keys, daily);
    expect(page2.data.map((r) => r.requestId)).toEqual(['q2']);
    expect(page2).toMatchObject({ page: 2, pageSize: 2, total: 3, totals: { requests: 3, costNano: 550 } });
    expect(usageReport({ ...filter, page: 3, pageSize: 2 }, log, keys, daily).data).toEqual([]);
  });
});
