import type { RecordedEvent } from '../eventstore/event-store';
import { HOSTED_TOOL_CLASSES } from '../canonical/canonical';
import { ChainFollower, chainOrgOf, PeriodBoundary } from '../ledger/ledger-chain';
import {
  type CreditNoteIssued,
  type CreditsGranted,
  type ReservationSettled,
  settledPrices,
  settledUsage,
} from '../ledger/ledger.events';
import { type NanoSum, nanoSum } from '../ledger/money';

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
  constructor(message: string) {
    super(message);
    this.name = 'StatementPeriodError';
  }
}

/** The month's first and the next month's first millisecond, UTC. */
export function monthBounds(month: StatementMonth): { from: number; to: number } {
  const match = MONTH.exec(month);
  if (!match) throw new StatementPeriodError(`"${month}" is not a month: use YYYY-MM (a calendar month, UTC)`);
  const year = Number(match[1]);
  const index = Number(match[2]) - 1;
  // Date.UTC reads years 0 to 99 as 1900 to 1999: setUTCFullYear takes the year as given.
  const first = (monthIndex: number) => new Date(0).setUTCFullYear(year, monthIndex, 1);
  return { from: first(index), to: first(index + 1) };
}

/** A month a statement may be asked of: one that has begun at `now` (the current one is its statement so far). */
export function checkStatementMonth(month: StatementMonth, now = Date.now()): void {
  if (monthBounds(month).from > now) {
    throw new StatementPeriodError(`${month} has not begun: statements are of months that have (the current one so far)`);
  }
}

/** The month an instant falls in, UTC. */
export const monthOf = (time: number): StatementMonth => new Date(time).toISOString().slice(0, 7);

type StatementEvent = CreditsGranted | ReservationSettled | CreditNoteIssued;

/** The token classes and hosted tools a charge is made of, as a statement lists them. */
export const TOKEN_CLASSES = ['input', 'cacheRead', 'cacheWrite', 'cacheWrite1h', 'output'] as const;
export type ChargeClass = (typeof TOKEN_CLASSES)[number] | `hostedTool:${(typeof HOSTED_TOOL_CLASSES)[number]}`;

export interface ChargeGroup {
  requests: number;
  /** Nano-credits charged: the sum of the settlements' amounts (past 2^53, its decimal digits). */
  amount: NanoSum;
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
  openingBalance: NanoSum;
  grants: { count: number; amount: NanoSum; items: { grantId: string; amount: number; reason: string; grantedAt: string }[] };
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
  creditNotes: { refunds: NanoSum; adjustments: NanoSum; items: StatementNote[] };
  /** openingBalance + grants − charges + refunds + adjustments. */
  closingBalance: NanoSum;
  /** The organization's events the statement read (in its period and before). */
  eventsRead: number;
  /**
   * The organization's ledger chain as the month closed (its events recorded before `to`; as far as
   * the log reached, for a month not over): the last link, to compare with an export's, and how many events it holds.
   */
  chain: { head: string; events: number; position: number };
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

/** A group's sum as it is added up: exact, whatever the month's volume. */
interface GroupSum {
  requests: number;
  amount: bigint;
}

const byAmount = <T extends GroupSum>(a: T, b: T) => (b.amount > a.amount ? 1 : b.amount < a.amount ? -1 : 0);
const groupLine = (g: GroupSum): ChargeGroup => ({ requests: g.requests, amount: nanoSum(g.amount) });

/**
 * The statement of `orgId` for `month`, folded from its events in log order, one at a time (others'
 * are skipped). Each event counts in the month the log recorded it in, in its chain's order
 * (PeriodBoundary), as a ledger export of the month holds it: a settlement stamped 23:59:59.999 on the
 * last day and recorded 00:00:00.001 belongs to the next month, in the statement as in the export, and
 * the statement closes on its chain's link before it. Items still show each event's own time.
 */
export class StatementFold {
  private readonly from: number;
  private readonly to: number;
  private readonly start: PeriodBoundary;
  private readonly end: PeriodBoundary;
  // Sums as bigint: a lifetime's grants and charges pass 2^53 while the balance stays within it.
  private opening = 0n;
  private eventsRead = 0;
  private readonly grants = { count: 0, amount: 0n, items: [] as Statement['grants']['items'] };
  private readonly models = new Map<string, GroupSum>();
  private readonly keys = new Map<string, GroupSum>();
  private readonly classes = new Map<ChargeClass, { quantity: number; cost: bigint }>();
  private readonly charges: GroupSum = { requests: 0, amount: 0n };
  private classCost = 0n;
  private readonly notes = { refunds: 0n, adjustments: 0n, items: [] as StatementNote[] };
  private readonly chain = new ChainFollower();

  constructor(
    readonly orgId: string,
    readonly month: StatementMonth,
  ) {
    ({ from: this.from, to: this.to } = monthBounds(month));
    this.start = new PeriodBoundary(this.from);
    this.end = new PeriodBoundary(this.to);
  }

  /** Whether the month is closed: an event of the organization's chain was recorded after it, so nothing later counts. */
  get closed(): boolean {
    return this.end.reached;
  }

  apply(recorded: RecordedEvent): void {
    // Every event of the organization's chain moves the boundaries, those that move no credit too:
    // the month is the stretch of the chain an export of it holds.
    if (chainOrgOf(recorded) !== this.orgId || this.end.past(recorded)) return;
    this.chain.follow(recorded, false);
    const before = !this.start.past(recorded);
    const at = movedAt(recorded);
    const event = recorded as unknown as StatementEvent;
    if (at === null) return;
    this.eventsRead += 1;
    if (before) {
      this.opening += BigInt(event.type === 'ReservationSettled' ? -event.data.amount : event.data.amount);
      return;
    }
    switch (event.type) {
      case 'CreditsGranted':
        this.grants.count += 1;
        this.grants.amount += BigInt(event.data.amount);
        this.grants.items.push({
          grantId: event.data.grantId,
          amount: event.data.amount,
          reason: event.data.reason,
          grantedAt: iso(at),
        });
        break;
      case 'ReservationSettled':
        this.charge(event.data);
        break;
      case 'CreditNoteIssued': {
        const d = event.data;
        if (d.kind === 'refund') this.notes.refunds += BigInt(d.amount);
        else this.notes.adjustments += BigInt(d.amount);
        this.notes.items.push({
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

  private charge(d: ReservationSettled['data']): void {
    this.charges.requests += 1;
    this.charges.amount += BigInt(d.amount);
    for (const [groups, name] of [
      [this.models, d.model],
      [this.keys, d.keyId],
    ] as const) {
      const group = groups.get(name) ?? { requests: 0, amount: 0n };
      group.requests += 1;
      group.amount += BigInt(d.amount);
      groups.set(name, group);
    }
    for (const line of classCosts(d)) {
      if (line.quantity === 0) continue;
      const total = this.classes.get(line.class) ?? { quantity: 0, cost: 0n };
      total.quantity += line.quantity;
      total.cost += line.cost;
      this.classes.set(line.class, total);
      this.classCost += line.cost;
    }
  }

  statement(): Statement {
    const { grants, charges, notes, classes } = this;
    return {
      orgId: this.orgId,
      month: this.month,
      from: iso(this.from),
      to: iso(this.to),
      openingBalance: nanoSum(this.opening),
      grants: { ...grants, amount: nanoSum(grants.amount) },
      charges: {
        ...groupLine(charges),
        byModel: [...this.models].sort(([, a], [, b]) => byAmount(a, b)).map(([model, g]) => ({ model, ...groupLine(g) })),
        byKey: [...this.keys].sort(([, a], [, b]) => byAmount(a, b)).map(([keyId, g]) => ({ keyId, ...groupLine(g) })),
        byClass: [...TOKEN_CLASSES, ...HOSTED_TOOL_CLASSES.map((t) => `hostedTool:${t}` as const)]
          .filter((c) => classes.has(c))
          .map((c) => ({ class: c, quantity: classes.get(c)!.quantity, costMicroNano: classes.get(c)!.cost.toString() })),
        roundingMicroNano: (charges.amount * 1_000_000n - this.classCost).toString(),
      },
      creditNotes: { ...notes, refunds: nanoSum(notes.refunds), adjustments: nanoSum(notes.adjustments) },
      closingBalance: nanoSum(this.opening + grants.amount - charges.amount + notes.refunds + notes.adjustments),
      eventsRead: this.eventsRead,
      chain: (({ head, events, position }) => ({ head, events, position }))(this.chain.head(this.orgId)),
    };
  }
}

/** The statement of `orgId` for `month` from a list of events (see StatementFold). */
export function statementOf(events: Iterable<RecordedEvent>, orgId: string, month: StatementMonth): Statement {
  const fold = new StatementFold(orgId, month);
  for (const event of events) fold.apply(event);
  return fold.statement();
}
