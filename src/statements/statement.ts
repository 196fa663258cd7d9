import type { RecordedEvent } from '../eventstore/event-store';
import { HOSTED_TOOL_CLASSES } from '../canonical/canonical';
import { type CreditsGranted, type ReservationSettled, settledPrices, settledUsage } from '../ledger/ledger.events';

/**
 * A monthly statement of an organization's credits: what it opened with, what was granted, charged
 * and credited back, and what it closed with, all in nano-credits, folded from the organization's
 * events alone. The same events always give the same statement, so an auditor can recompute it
 * from an export.
 */

/** A calendar month, UTC: `2026-11`. */
export type StatementMonth = string;

const MONTH = /^(\d{4})-(0[1-9]|1[0-2])$/;

export class StatementPeriodError extends Error {
  constructor(text: string) {
    super(`"${text}" is not a month: use YYYY-MM (a calendar month, UTC)`);
    this.name = 'StatementPeriodError';
  }
}

/** The month's first and the next month's first millisecond, UTC. */
export function monthBounds(month: StatementMonth): { from: number; to: number } {
  const match = MONTH.exec(month);
  if (!match) throw new StatementPeriodError(month);
  const year = Number(match[1]);
  const index = Number(match[2]) - 1;
  return { from: Date.UTC(year, index, 1), to: Date.UTC(year, index + 1, 1) };
}

/** The month an instant falls in, UTC. */
export const monthOf = (time: number): StatementMonth => new Date(time).toISOString().slice(0, 7);

/** A credit note as the statement reads it (the ledger's CreditNoteIssued). */
interface CreditNote {
  type: 'CreditNoteIssued';
  data: {
    orgId: string;
    creditNoteId: string;
    kind: 'refund' | 'adjustment';
    reservationId: string | null;
    keyId: string | null;
    amount: number;
    reason: string;
    memo?: string;
    issuedAt: number;
  };
}

type StatementEvent = CreditsGranted | ReservationSettled | CreditNote;

/** The token classes and hosted tools a charge is made of, as a statement lists them. */
export const TOKEN_CLASSES = ['input', 'cacheRead', 'cacheWrite', 'cacheWrite1h', 'output'] as const;
export type ChargeClass = (typeof TOKEN_CLASSES)[number] | `hostedTool:${(typeof HOSTED_TOOL_CLASSES)[number]}`;

export interface ChargeGroup {
  requests: number;
  /** Nano-credits charged: the sum of the settlements' amounts. */
  amount: number;
}

export interface ClassLine {
  class: ChargeClass;
  /** Tokens of the class (uses, for a hosted tool). */
  quantity: number;
  /**
   * Quantity × price before the one rounding each charge gets, in millionths of a nano-credit
   * (exact: a decimal string of an integer, it may exceed 2^53).
   */
  costMicroNano: string;
}

export interface StatementNote {
  creditNoteId: string;
  kind: 'refund' | 'adjustment';
  reservationId: string | null;
  keyId: string | null;
  amount: number;
  reason: string;
  memo?: string;
  issuedAt: string;
}

export interface Statement {
  orgId: string;
  month: StatementMonth;
  from: string;
  to: string;
  /** The balance before the month: grants − charges + credit notes, all before `from`. */
  openingBalance: number;
  grants: { count: number; amount: number; items: { grantId: string; amount: number; reason: string; grantedAt: string }[] };
  charges: ChargeGroup & {
    byModel: (ChargeGroup & { model: string })[];
    byKey: (ChargeGroup & { keyId: string })[];
    byClass: ClassLine[];
    /**
     * The charges less the sum of their classes' unrounded costs, in millionths of a nano-credit:
     * each charge rounds up once (less than one nano-credit each), and a stream a crash cut is
     * never charged above its hold.
     */
    roundingMicroNano: string;
  };
  creditNotes: { refunds: number; adjustments: number; items: StatementNote[] };
  /** openingBalance + grants − charges + refunds + adjustments. */
  closingBalance: number;
  /** The organization's events the statement read (in its period and before). */
  eventsRead: number;
}

const iso = (time: number) => new Date(time).toISOString();

/** When an event moved the balance, or null for one that moves none (a reservation, a refusal). */
function movedAt(event: RecordedEvent): number | null {
  const e = event as unknown as StatementEvent;
  switch (e.type) {
    case 'CreditsGranted':
      return e.data.grantedAt;
    case 'ReservationSettled':
      return e.data.settledAt;
    case 'CreditNoteIssued':
      return e.data.issuedAt;
    default:
      return null;
  }
}

/** What a settlement's classes cost before its rounding, in millionths of a nano-credit. */
function classCosts(settled: ReservationSettled['data']): { class: ChargeClass; quantity: number; cost: bigint }[] {
  const usage = settledUsage(settled);
  const prices = settledPrices(settled);
  const tokens = {
    input: usage.inputTokens,
    cacheRead: usage.cacheReadTokens,
    cacheWrite: usage.cacheWriteTokens,
    cacheWrite1h: usage.cacheWrite1hTokens,
    output: usage.outputTokens,
  };
  const lines: { class: ChargeClass; quantity: number; cost: bigint }[] = TOKEN_CLASSES.map((c) => ({
    class: c,
    quantity: tokens[c],
    cost: BigInt(tokens[c]) * BigInt(prices[c]),
  }));
  for (const tool of HOSTED_TOOL_CLASSES) {
    const uses = usage.hostedToolUses?.[tool] ?? 0;
    if (uses === 0) continue;
    // Per 1,000 uses: × 1,000 to reach the unit of tokens × price per million.
    lines.push({
      class: `hostedTool:${tool}`,
      quantity: uses,
      cost: BigInt(uses) * BigInt(prices.hostedToolUses?.[tool] ?? 0) * 1000n,
    });
  }
  return lines;
}

const byAmount = <T extends ChargeGroup>(a: T, b: T) => b.amount - a.amount;

/**
 * The statement of `orgId` for `month`, from its events (in log order; others' are skipped).
 * Each event counts in the month of its own time (granted, settled, issued): a settlement made
 * at 23:59:59.999 on the last day belongs to that month, whatever time the log recorded it.
 */
export function statementOf(events: Iterable<RecordedEvent>, orgId: string, month: StatementMonth): Statement {
  const { from, to } = monthBounds(month);
  let opening = 0;
  let eventsRead = 0;
  const grants: Statement['grants'] = { count: 0, amount: 0, items: [] };
  const models = new Map<string, ChargeGroup>();
  const keys = new Map<string, ChargeGroup>();
  const classes = new Map<ChargeClass, { quantity: number; cost: bigint }>();
  const charges = { requests: 0, amount: 0 };
  let classCost = 0n;
  const notes: Statement['creditNotes'] = { refunds: 0, adjustments: 0, items: [] };

  for (const recorded of events) {
    const at = movedAt(recorded);
    const event = recorded as unknown as StatementEvent;
    if (at === null || event.data.orgId !== orgId || at >= to) continue;
    eventsRead += 1;
    if (at < from) {
      if (event.type === 'CreditsGranted') opening += event.data.amount;
      else if (event.type === 'ReservationSettled') opening -= event.data.amount;
      else opening += event.data.amount;
      continue;
    }
    switch (event.type) {
      case 'CreditsGranted':
        grants.count += 1;
        grants.amount += event.data.amount;
        grants.items.push({
          grantId: event.data.grantId,
          amount: event.data.amount,
          reason: event.data.reason,
          grantedAt: iso(at),
        });
        break;
      case 'ReservationSettled': {
        const d = event.data;
        charges.requests += 1;
        charges.amount += d.amount;
        for (const [map, name] of [
          [models, d.model],
          [keys, d.keyId],
        ] as const) {
          const group = map.get(name) ?? { requests: 0, amount: 0 };
          group.requests += 1;
          group.amount += d.amount;
          map.set(name, group);
        }
        for (const line of classCosts(d)) {
          if (line.quantity === 0) continue;
          const total = classes.get(line.class) ?? { quantity: 0, cost: 0n };
          total.quantity += line.quantity;
          total.cost += line.cost;
          classes.set(line.class, total);
          classCost += line.cost;
        }
        break;
      }
      case 'CreditNoteIssued': {
        const d = event.data;
        if (d.kind === 'refund') notes.refunds += d.amount;
        else notes.adjustments += d.amount;
        notes.items.push({
          creditNoteId: d.creditNoteId,
          kind: d.kind,
          reservationId: d.reservationId,
          keyId: d.keyId,
          amount: d.amount,
          reason: d.reason,
          ...(d.memo === undefined ? {} : { memo: d.memo }),
          issuedAt: iso(at),
        });
        break;
      }
    }
  }

  return {
    orgId,
    month,
    from: iso(from),
    to: iso(to),
    openingBalance: opening,
    grants,
    charges: {
      ...charges,
      byModel: [...models].map(([model, g]) => ({ model, ...g })).sort(byAmount),
      byKey: [...keys].map(([keyId, g]) => ({ keyId, ...g })).sort(byAmount),
      byClass: [...TOKEN_CLASSES, ...HOSTED_TOOL_CLASSES.map((t) => `hostedTool:${t}` as const)]
        .filter((c) => classes.has(c))
        .map((c) => ({ class: c, quantity: classes.get(c)!.quantity, costMicroNano: classes.get(c)!.cost.toString() })),
      roundingMicroNano: (BigInt(charges.amount) * 1_000_000n - classCost).toString(),
    },
    creditNotes: notes,
    closingBalance: opening + grants.amount - charges.amount + notes.refunds + notes.adjustments,
    eventsRead,
  };
}
