import { ApiError } from '../http/api-error';
import { csvText } from '../http/csv';
import { type CreditNoteIssued, type ReservationSettled, settledCharge, settledUsage } from '../ledger/ledger.events';
import { formatCredits } from '../ledger/money';
import { dayOf } from '../projections/read-models';

/**
 * The usage export in the FinOps FOCUS columns: an organization's charges as a CSV a FinOps tool
 * ingests beside its cloud bills. Pure: the ledger's events in, rows out; the shell reads the log.
 *
 * Columns: FOCUS 1.2's mandatory ones (ServiceProviderName and HostProviderName, 1.3's successors of
 * ProviderName and PublisherName, beside them), the conditional ones a token bill has (ChargeFrequency,
 * ConsumedQuantity, ConsumedUnit), then ours, `x_`-prefixed as FOCUS asks of custom columns.
 */

/** A credit note, as the ledger records it. */
export type CreditNote = CreditNoteIssued['data'];

/** One line of the bill: a settled request, or a credit note. Amounts in nano-credits; cost is what the balance paid (a credit negative). */
interface Line {
  time: number;
  /** When the request began (a settlement's time less its latency); a credit note's own time. */
  start: number;
  category: 'Usage' | 'Credit' | 'Adjustment';
  model: string;
  host: string;
  keyId: string;
  requestId: string;
  reservationId: string;
  surface: string;
  cost: number;
  tokens: { input: number; cacheRead: number; cacheWrite: number; cacheWrite1h: number; output: number };
  hostedToolUses: Record<string, number>;
  creditNoteId: string;
  reason: string;
}

export type FocusGrouping = 'request' | 'day';

/** What the export is asked for: which lines, in which UTC days (inclusive), grouped how. */
export interface FocusAsk {
  grouping: FocusGrouping;
  from: string | null;
  to: string | null;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
/** A calendar day written `YYYY-MM-DD` (2026-13-01 has the shape, not the day). */
function isDay(text: string): boolean {
  const time = Date.parse(`${text}T00:00:00Z`);
  return DAY.test(text) && Number.isFinite(time) && dayOf(time) === text;
}

/** The query string's `group` (`request`, the default, or `day`: one row per day × model × key), `from` and `to` (`YYYY-MM-DD`, UTC). */
export function focusAskOf(query: Record<string, unknown>): FocusAsk {
  const { group = 'request', from, to } = query;
  if (group !== 'request' && group !== 'day')
    throw new ApiError('invalid_request', 'group must be request (a row per request) or day (a row per day × model × key)', {
      param: 'group',
    });
  for (const [name, value] of [
    ['from', from],
    ['to', to],
  ] as const) {
    if (value !== undefined && (typeof value !== 'string' || !isDay(value)))
      throw new ApiError('invalid_request', `${name} must be a date YYYY-MM-DD (UTC)`, { param: name });
  }
  if (typeof from === 'string' && typeof to === 'string' && from > to)
    throw new ApiError('invalid_request', 'from must not be after to', { param: 'from' });
  return { grouping: group, from: (from as string | undefined) ?? null, to: (to as string | undefined) ?? null };
}

export const FOCUS_COLUMNS = [
  'BilledCost',
  'BillingAccountId',
  'BillingAccountName',
  'BillingCurrency',
  'BillingPeriodEnd',
  'BillingPeriodStart',
  'ChargeCategory',
  'ChargeClass',
  'ChargeDescription',
  'ChargeFrequency',
  'ChargePeriodEnd',
  'ChargePeriodStart',
  'ConsumedQuantity',
  'ConsumedUnit',
  'ContractedCost',
  'EffectiveCost',
  'HostProviderName',
  'InvoiceIssuerName',
  'ListCost',
  'PricingQuantity',
  'PricingUnit',
  'ProviderName',
  'PublisherName',
  'ServiceCategory',
  'ServiceName',
  'ServiceProviderName',
  'x_BilledCostNano',
  'x_Model',
  'x_KeyId',
  'x_KeyName',
  'x_Requests',
  'x_RequestId',
  'x_ReservationId',
  'x_Surface',
  'x_InputTokens',
  'x_CacheReadTokens',
  'x_CacheWriteTokens',
  'x_CacheWrite1hTokens',
  'x_OutputTokens',
  'x_HostedToolUses',
  'x_CreditNoteId',
  'x_CreditNoteReason',
] as const;

type Column = (typeof FOCUS_COLUMNS)[number];
type Row = Partial<Record<Column, string | number>>;

const PRODUCT = 'Model Gateway';
const NO_TOKENS = { input: 0, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0, output: 0 };

/** A settled request as a line of the bill. */
export function settlementLine(d: ReservationSettled['data']): Line {
  const u = settledUsage(d);
  return {
    time: d.settledAt,
    start: d.settledAt - d.latencyMs,
    category: 'Usage',
    model: d.model,
    host: d.host,
    keyId: d.keyId,
    requestId: d.requestId,
    reservationId: d.reservationId,
    surface: d.surface,
    // Recomputed from the event, as the audit does: the export says what the tokens cost.
    cost: settledCharge(d),
    tokens: {
      input: u.inputTokens,
      cacheRead: u.cacheReadTokens,
      cacheWrite: u.cacheWriteTokens,
      cacheWrite1h: u.cacheWrite1hTokens,
      output: u.outputTokens,
    },
    hostedToolUses: { ...u.hostedToolUses },
    creditNoteId: '',
    reason: '',
  };
}

/** A credit note as a line: money back to the balance is a negative cost. A refund names its request's model and host (`refunded`). */
export function creditNoteLine(note: CreditNote, refunded: Line | undefined): Line {
  return {
    time: note.issuedAt,
    start: note.issuedAt,
    category: note.kind === 'refund' ? 'Credit' : 'Adjustment',
    model: refunded?.model ?? '',
    host: refunded?.host ?? '',
    keyId: note.keyId ?? refunded?.keyId ?? '',
    requestId: refunded?.requestId ?? '',
    reservationId: note.reservationId ?? '',
    surface: refunded?.surface ?? '',
    cost: -note.amount,
    tokens: NO_TOKENS,
    hostedToolUses: {},
    creditNoteId: note.creditNoteId,
    reason: note.reason,
  };
}

const SECOND = 1000;
const DAY_MS = 86_400_000;
const iso = (time: number) => new Date(time).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The UTC calendar month holding `time`: the billing period. */
function monthOf(time: number): [string, string] {
  const d = new Date(time);
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return [iso(start), iso(end)];
}

/** Whether a line falls in the asked days. */
export const inRange = (line: Pick<Line, 'time'>, ask: FocusAsk): boolean => {
  const day = dayOf(line.time);
  return (ask.from === null || day >= ask.from) && (ask.to === null || day <= ask.to);
};

const totalTokens = (t: Line['tokens']) => t.input + t.cacheRead + t.cacheWrite + t.cacheWrite1h + t.output;

/** The organization, and its keys' names, as the rows name them. */
export interface Account {
  orgId: string;
  name: string;
  keyNames: ReadonlyMap<string, string>;
}

/** A line (or a day's sum of lines, `requests` of them) as a FOCUS row. */
function rowOf(line: Line, account: Account, period: { start: number; end: number }, requests: number, perRequest: boolean): Row {
  const amount = formatCredits(line.cost);
  const usage = line.category === 'Usage';
  const [billingStart, billingEnd] = monthOf(period.start);
  const tokens = totalTokens(line.tokens);
  const description = usage
    ? `${line.model}: ${tokens} tokens (${line.tokens.input} input, ${line.tokens.cacheRead} cache read, ${line.tokens.cacheWrite + line.tokens.cacheWrite1h} cache write, ${line.tokens.output} output)`
    : `Credit note ${perRequest ? line.creditNoteId : ''}`.trim() + `: ${line.category === 'Credit' ? 'refund' : 'adjustment'}`;
  return {
    BilledCost: amount,
    BillingAccountId: account.orgId,
    BillingAccountName: account.name,
    // 1 credit is 1 US dollar at the hosts' list prices.
    BillingCurrency: 'USD',
    BillingPeriodEnd: billingEnd,
    BillingPeriodStart: billingStart,
    ChargeCategory: line.category,
    ChargeDescription: description,
    ChargeFrequency: usage ? 'Usage-Based' : 'One-Time',
    ChargePeriodEnd: iso(period.end),
    ChargePeriodStart: iso(period.start),
    ConsumedQuantity: usage ? tokens : '',
    ConsumedUnit: usage ? 'Tokens' : '',
    // Billed at list price, nothing negotiated nor discounted: every cost is the same amount.
    ContractedCost: amount,
    EffectiveCost: amount,
    HostProviderName: line.host,
    InvoiceIssuerName: PRODUCT,
    ListCost: amount,
    PricingQuantity: usage ? requests : '',
    PricingUnit: usage ? 'Requests' : '',
    ProviderName: PRODUCT,
    PublisherName: line.host,
    ServiceCategory: 'AI and Machine Learning',
    ServiceName: PRODUCT,
    ServiceProviderName: PRODUCT,
    x_BilledCostNano: line.cost,
    x_Model: line.model,
    x_KeyId: line.keyId,
    x_KeyName: account.keyNames.get(line.keyId) ?? '',
    x_Requests: usage ? requests : '',
    x_RequestId: perRequest ? line.requestId : '',
    x_ReservationId: perRequest ? line.reservationId : '',
    x_Surface: perRequest ? line.surface : '',
    x_InputTokens: line.tokens.input,
    x_CacheReadTokens: line.tokens.cacheRead,
    x_CacheWriteTokens: line.tokens.cacheWrite,
    x_CacheWrite1hTokens: line.tokens.cacheWrite1h,
    x_OutputTokens: line.tokens.output,
    x_HostedToolUses: Object.keys(line.hostedToolUses).length > 0 ? JSON.stringify(line.hostedToolUses) : '',
    x_CreditNoteId: perRequest ? line.creditNoteId : '',
    x_CreditNoteReason: perRequest ? line.reason : '',
  };
}

/** One row per line: its charge period from the request's start to its settlement, in whole seconds (at least one). */
function perRequestRows(lines: Line[], account: Account): Row[] {
  return lines.map((line) => {
    const start = Math.floor(line.start / SECOND) * SECOND;
    const end = Math.max(Math.ceil(line.time / SECOND) * SECOND, start + SECOND);
    return rowOf(line, account, { start, end }, 1, true);
  });
}

/** One row per UTC day × category × model × key (and host), its amounts and counts summed. */
function perDayRows(lines: Line[], account: Account): Row[] {
  const groups = new Map<string, { line: Line; requests: number; day: number }>();
  for (const line of lines) {
    const day = Math.floor(line.time / DAY_MS) * DAY_MS;
    const key = JSON.stringify([day, line.category, line.model, line.keyId, line.host]);
    const group = groups.get(key);
    if (!group) {
      groups.set(key, {
        line: { ...line, tokens: { ...line.tokens }, hostedToolUses: { ...line.hostedToolUses } },
        requests: 1,
        day,
      });
      continue;
    }
    const sum = group.line;
    group.requests += 1;
    sum.cost += line.cost;
    for (const k of Object.keys(sum.tokens) as (keyof Line['tokens'])[]) sum.tokens[k] += line.tokens[k];
    for (const [tool, uses] of Object.entries(line.hostedToolUses))
      sum.hostedToolUses[tool] = (sum.hostedToolUses[tool] ?? 0) + uses;
  }
  return [...groups.values()].map(({ line, requests, day }) =>
    rowOf(line, account, { start: day, end: day + DAY_MS }, requests, false),
  );
}

/** The export's rows, in the order of the lines (the log's) or of their days. */
export function focusRows(lines: Line[], account: Account, grouping: FocusGrouping): Row[] {
  return grouping === 'request' ? perRequestRows(lines, account) : perDayRows(lines, account);
}

/** The CSV text: the header, then every row. */
export function focusCsv(rows: Row[]): string {
  return csvText([FOCUS_COLUMNS, ...rows.map((row) => FOCUS_COLUMNS.map((c) => row[c] ?? ''))]);
}

export type { Line as FocusLine };
