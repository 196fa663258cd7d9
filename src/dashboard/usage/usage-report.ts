import { ApiError } from '../../http/api-error';
import { maskSecrets } from '../../key-secret/key-secret';
import { creditsNumber } from '../../ledger/money';
import { dayOf, type KeyRecord, type RequestLogEntry } from '../../projections/read-models';
import { PLAYGROUND_KEY } from '../playground/playground-inference';

/** The usage page's query string, as Fastify hands it over. */
export type UsageQuery = Record<string, string | undefined>;

/** Which requests to show: a page of those in a range of UTC days, optionally of one key and one model. */
export interface UsageFilter {
  page: number;
  pageSize: number;
  /** `YYYY-MM-DD`, inclusive. */
  from: string;
  to: string;
  keyId?: string;
  model?: string;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;

/** A calendar day written `YYYY-MM-DD` (2024-13-45 has the shape, not the day). */
function isDay(text: unknown): text is string {
  if (typeof text !== 'string' || !DAY.test(text)) return false;
  const time = Date.parse(`${text}T00:00:00Z`);
  return Number.isFinite(time) && dayOf(time) === text;
}

/**
 * Reads the query: page from 1, 25 to a page (at most 200), the 14 days up to `to` (today by
 * default), at most a year. A malformed or reversed range is a 400.
 */
export function usageFilterOf(query: UsageQuery, now: number): UsageFilter {
  const page = Math.max(1, Number.parseInt(query.page ?? '1', 10) || 1);
  const pageSize = Math.min(200, Math.max(1, Number.parseInt(query.pageSize ?? '25', 10) || 25));
  for (const field of ['from', 'to'] as const) {
    const day = query[field];
    if (day !== undefined && !isDay(day)) throw new ApiError('invalid_request', `${field} must be a date YYYY-MM-DD`);
  }
  const to = query.to ?? dayOf(now);
  const from = query.from ?? dayOf(Date.parse(`${to}T00:00:00Z`) - 13 * DAY_MS);
  if (from > to) throw new ApiError('invalid_request', 'from must not be after to');
  if ((Date.parse(to) - Date.parse(from)) / DAY_MS > 366)
    throw new ApiError('invalid_request', 'the date range can span at most a year');
  return { page, pageSize, from, to, keyId: query.keyId, model: query.model };
}

/** Every day from `from` to `to`, with its spend: charged less refunded that day (0 for a day without either). */
export function spendPerDay(daily: ReadonlyMap<string, number>, from: string, to: string) {
  const days = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += DAY_MS) {
    const day = dayOf(t);
    days.push({ day, cost: creditsNumber(daily.get(day) ?? 0), costNano: daily.get(day) ?? 0 });
  }
  return days;
}

/** The requests that match the filter (newest first, as the log keeps them), and the page of them shown. */
export function matchingRequests(filter: UsageFilter, log: RequestLogEntry[]) {
  const { page, pageSize, from, to, keyId, model } = filter;
  const inRange = (e: RequestLogEntry) => {
    const day = dayOf(e.time);
    return day >= from && day <= to;
  };
  const matching = log.filter((e) => inRange(e) && (!keyId || e.keyId === keyId) && (!model || e.model === model));
  return { matching, shown: matching.slice((page - 1) * pageSize, page * pageSize) };
}

/** Whether the requests are filtered beyond the days: by key or by model. */
export const narrowed = (filter: UsageFilter): boolean => Boolean(filter.keyId || filter.model);

/**
 * The usage page: the requests that match (newest first, as the log keeps them), one page of
 * them with their key's name, their count and net spend, and the spend per day over the range.
 * Spend is net of refunds, as the ledger's is. Over the days alone it is the days' sum: the ledger's
 * spend in them (a refund on the day it was issued, as `total_usage` and the FOCUS export count it).
 * The spend per day knows no key or model, so filtered by either it is the matching requests'
 * charges less what was refunded of them (`refunded` must then hold every matching request's).
 */
export function usageReport(
  filter: UsageFilter,
  log: RequestLogEntry[],
  keys: Pick<KeyRecord, 'keyId' | 'name'>[],
  daily: ReadonlyMap<string, number>,
  /** What credit notes refunded of the shown requests, by reservation id. */
  refunded: ReadonlyMap<string, number> = new Map(),
) {
  const { page, pageSize, from, to } = filter;
  const keyNames = new Map(keys.map((k) => [k.keyId, k.name]));
  const { matching, shown } = matchingRequests(filter, log);
  const refundOf = (e: RequestLogEntry) => (e.reservationId === null ? 0 : (refunded.get(e.reservationId) ?? 0));
  const days = spendPerDay(daily, from, to);
  const totalNano = narrowed(filter)
    ? matching.reduce((n, e) => n + e.cost - refundOf(e), 0)
    : days.reduce((n, d) => n + d.costNano, 0);
  return {
    data: shown.map((e) => ({
      requestId: e.requestId,
      time: new Date(e.time).toISOString(),
      surface: e.surface,
      // Masked again on the way out, for entries recorded before refusals were masked.
      model: maskSecrets(e.model),
      host: e.host,
      keyId: e.keyId,
      keyName: e.keyId === PLAYGROUND_KEY ? 'Playground' : (keyNames.get(e.keyId) ?? 'deleted key'),
      inputTokens: e.inputTokens,
      cacheReadTokens: e.cacheReadTokens,
      cacheWriteTokens: e.cacheWriteTokens,
      outputTokens: e.outputTokens,
      hostedToolUses: e.hostedToolUses ?? {},
      cost: creditsNumber(e.cost),
      costNano: e.cost,
      reservationId: e.reservationId,
      refunded: creditsNumber(refundOf(e)),
      refundedNano: refundOf(e),
      // The token classes billed by the gateway's estimate, not the host's count: [] when none.
      estimated: e.estimated ?? [],
      latencyMs: e.latencyMs,
      status: e.status,
      omittedTools: e.omittedTools ?? [],
      attempts: e.attempts ?? [],
    })),
    page,
    pageSize,
    total: matching.length,
    totals: { requests: matching.length, cost: creditsNumber(totalNano), costNano: totalNano },
    spendPerDay: days,
  };
}
