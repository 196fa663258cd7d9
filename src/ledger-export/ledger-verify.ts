import { canonicalJson, chainGenesis, chainLink } from '../eventstore/event-chain';
import { EXPORT_FORMAT, EXPORT_VERSION, type ExportEnd, type ExportHeader, type ExportedEvent } from './ledger-export';
import { readNanoSum } from '../ledger/money';
import { type LedgerFigures, LedgerReplay, SUM_FIELDS } from './ledger-replay';

/** One thing the file does not bear out: where (its line, and the event's position, stream and type), which field, what was expected and what was found. */
export interface VerifyDifference {
  line: number;
  event: string | null;
  field: string;
  expected: unknown;
  found: unknown;
  /** The ledger rule the event breaks, when the difference is one (ledger-rules.ts, the audit's too). */
  rule?: string;
}

/**
 * What vouches for the figures and link an export opens with: its genesis (nothing before it), the
 * export before it (checked here, itself vouched for back to the genesis), or nothing but its own header.
 */
export type OpeningVouchedBy = 'genesis' | 'previous export' | null;

export interface VerifyReport {
  orgId: string | null;
  /** Chain events before the file's first, as its header states them. */
  eventsBefore: number | null;
  events: number;
  /** The chain's last link as recomputed from the file. */
  head: string | null;
  /** The figures the file's events add up to. */
  figures: LedgerFigures | null;
  /** null: the opening is only the header's word (a period's export checked alone). */
  openingVouchedBy: OpeningVouchedBy;
  /** In file order; empty: the file is whole and every figure recomputes. */
  differences: VerifyDifference[];
}

/** What the file's chain must bear out, published or exported elsewhere. */
export interface VerifyExpectations {
  /** The chain's head as published (a statement, the dashboard, /ledger/chain): the file must end at it. */
  head?: string;
  /** The chain's event count published beside that head: events before the file's first plus the file's own. */
  events?: number;
  /** The verified report of the export of the period just before: the file must open where it closed. */
  previous?: VerifyReport;
}

/** More than this are not kept: the first is what matters, the count says how far it goes. */
const MAX_DIFFERENCES = 1000;

/**
 * Checks a ledger export on its own, one line at a time (pure: no gateway, no store, no
 * configuration): the header first; each event's chain link recomputed from the one before and the
 * event; each charge recomputed from its tokens and prices; the balance and every key's spend added
 * up and compared with the figures the end line states; the end line's count and head; and what
 * `expected` says was published or exported elsewhere.
 */
export class ExportVerifier {
  private header: ExportHeader | null = null;
  private replay: LedgerReplay | null = null;
  private link: string | null = null;
  private position = 0;
  private events = 0;
  private ended = false;
  private lineNumber = 0;
  private openingVouchedBy: OpeningVouchedBy = null;
  private differenceCount = 0;
  readonly differences: VerifyDifference[] = [];

  constructor(private readonly expected: VerifyExpectations = {}) {}

  private differ(event: string | null, field: string, expected: unknown, found: unknown, rule?: string): void {
    this.differenceCount += 1;
    if (this.differences.length < MAX_DIFFERENCES)
      this.differences.push({ line: this.lineNumber, event, field, expected, found, ...(rule === undefined ? {} : { rule }) });
  }

  /** Takes the file's next line (an empty one is skipped). */
  line(text: string): void {
    this.lineNumber += 1;
    if (text.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      this.differ(null, 'line', 'a JSON text', (error as Error).message);
      return;
    }
    const kind = (value as { kind?: unknown } | null)?.kind;
    if (this.ended) return this.differ(null, 'kind', 'nothing after the end line', kind);
    if (this.header === null) {
      if (kind !== 'header') return this.differ(null, 'kind', 'header', kind);
      return this.takeHeader(value as ExportHeader);
    }
    if (kind === 'event') return this.takeEvent(value as ExportedEvent);
    if (kind === 'end') return this.takeEnd(value as ExportEnd);
    this.differ(null, 'kind', 'event or end', kind);
  }

  private takeHeader(header: ExportHeader): void {
    if (header.format !== EXPORT_FORMAT) this.differ(null, 'format', EXPORT_FORMAT, header.format);
    if (header.version !== EXPORT_VERSION) this.differ(null, 'version', EXPORT_VERSION, header.version);
    if (typeof header.orgId !== 'string') return this.differ(null, 'orgId', 'an organization id', header.orgId);
    const genesis = chainGenesis(header.orgId);
    if (header.genesis !== genesis) this.differ(null, 'genesis', genesis, header.genesis);
    if (!Number.isSafeInteger(header.eventsBefore) || header.eventsBefore < 0) {
      this.differ(null, 'eventsBefore', 'a count of events', header.eventsBefore);
    }
    // The genesis link is what the chain's first event follows, and nothing else: a header claiming events
    // (and so figures) before it, while following the genesis, states an opening no link vouches for.
    const fromGenesis = header.eventsBefore === 0 || header.previousLink === genesis;
    if (fromGenesis) {
      if (header.previousLink !== genesis) this.differ(null, 'previousLink', genesis, header.previousLink);
      if (header.eventsBefore !== 0)
        this.differ(null, 'eventsBefore', '0 (the first event follows the genesis)', header.eventsBefore);
      if (canonicalJson(header.opening) !== canonicalJson(new LedgerReplay().figures)) {
        this.differ(null, 'opening', 'zero (no events before the genesis)', header.opening);
      }
    }
    this.checkOpening(header.opening);
    const previous = this.expected.previous;
    if (previous !== undefined) this.followPrevious(header, previous);
    this.openingVouchedBy = fromGenesis
      ? 'genesis'
      : previous !== undefined && previous.openingVouchedBy !== null
        ? 'previous export'
        : null;
    this.header = header;
    this.link = header.previousLink;
    this.replay = new LedgerReplay(header.opening, fromGenesis);
  }

  /** An opening's figures are sums that add up among themselves, whoever vouches for them. */
  private checkOpening(opening: LedgerFigures | undefined): void {
    const sums = SUM_FIELDS.map((field) => {
      const sum = readNanoSum(opening?.[field]);
      if (sum === null) this.differ(null, `opening.${field}`, 'a sum of nano-credits', opening?.[field]);
      return sum ?? 0n;
    });
    const [granted, charged, credited, balance, reserved] = sums;
    if (balance !== granted - charged + credited) {
      this.differ(null, 'opening.balance', `${granted - charged + credited} (granted − charged + credited)`, opening?.balance);
    }
    let held = 0n;
    for (const [reservationId, open] of Object.entries(opening?.openReservations ?? {})) {
      if (Number.isSafeInteger(open?.amount)) held += BigInt(open.amount);
      else this.differ(null, `opening.openReservations.${reservationId}.amount`, 'an integer of nano-credits', open?.amount);
    }
    if (reserved !== held) this.differ(null, 'opening.reserved', `${held} (held by its open reservations)`, opening?.reserved);
  }

  /** A period's export opens where the one before it closed: its head, its count, its figures. */
  private followPrevious(header: ExportHeader, previous: VerifyReport): void {
    if (previous.differences.length > 0) {
      this.differ(null, 'previous export', 'verified', `${previous.differences.length} difference(s)`);
    }
    if (previous.orgId !== header.orgId) this.differ(null, 'orgId', `${previous.orgId} (the previous export's)`, header.orgId);
    if (previous.head !== header.previousLink) {
      this.differ(null, 'previousLink', `${previous.head} (the previous export's head)`, header.previousLink);
    }
    const through = (previous.eventsBefore ?? 0) + previous.events;
    if (through !== header.eventsBefore) {
      this.differ(null, 'eventsBefore', `${through} (through the previous export)`, header.eventsBefore);
    }
    if (previous.figures === null || canonicalJson(previous.figures) !== canonicalJson(header.opening)) {
      this.differ(null, 'opening', previous.figures, header.opening);
    }
  }

  private takeEvent(event: ExportedEvent): void {
    const where = `${event.position} ${event.streamId}@${event.revision} ${event.type}`;
    this.events += 1;
    if (!(event.position > this.position)) this.differ(where, 'position', `after ${this.position}`, event.position);
    this.position = event.position;
    const orgId = (event.data as { orgId?: unknown } | null)?.orgId;
    if (orgId !== this.header!.orgId) this.differ(where, 'data.orgId', this.header!.orgId, orgId);
    for (const difference of this.replay!.apply(event))
      this.differ(where, difference.field, difference.expected, difference.found, difference.rule);
    let recomputed: string;
    try {
      recomputed = chainLink(this.link!, event);
    } catch (error) {
      recomputed = `none: ${(error as Error).message}`;
    }
    if (recomputed !== event.link) this.differ(where, 'link', recomputed, event.link);
    // The chain goes on from the link the file carries: one altered event is one difference.
    this.link = typeof event.link === 'string' ? event.link : recomputed;
  }

  private takeEnd(end: ExportEnd): void {
    this.ended = true;
    if (end.events !== this.events) this.differ(null, 'end.events', this.events, end.events);
    if (end.head !== this.link) this.differ(null, 'end.head', this.link, end.head);
    const figures = this.replay!.figures;
    // Compared as exact sums: a number (every file before sums could pass 2^53) or decimal digits.
    const same = (a: unknown, b: unknown) => readNanoSum(a) !== null && readNanoSum(a) === readNanoSum(b);
    for (const field of SUM_FIELDS) {
      if (!same(end.closing?.[field], figures[field]))
        this.differ(null, `closing.${field}`, figures[field], end.closing?.[field]);
    }
    const stated = end.closing?.keys ?? {};
    for (const keyId of new Set([...Object.keys(figures.keys), ...Object.keys(stated)])) {
      if (!same(stated[keyId], figures.keys[keyId]))
        this.differ(null, `closing.keys.${keyId}`, figures.keys[keyId], stated[keyId]);
    }
  }

  /** The verdict, once every line has been given. */
  finish(): VerifyReport {
    if (this.header === null) this.differ(null, 'header', 'a header line', 'none');
    else if (!this.ended) this.differ(null, 'end', 'an end line', 'none (the file is cut short)');
    const { head, events } = this.expected;
    if (head !== undefined && this.link !== head) this.differ(null, 'head', head, this.link);
    const through = (this.header?.eventsBefore ?? 0) + this.events;
    if (events !== undefined && through !== events) {
      this.differ(null, 'events', events, `${through} (${this.header?.eventsBefore ?? 0} before the file, ${this.events} in it)`);
    }
    return {
      orgId: this.header?.orgId ?? null,
      eventsBefore: this.header?.eventsBefore ?? null,
      events: this.events,
      head: this.link,
      figures: this.replay?.figures ?? null,
      openingVouchedBy: this.openingVouchedBy,
      differences: this.differences,
    };
  }

  /** Differences found, including those past the ones kept. */
  get differencesFound(): number {
    return this.differenceCount;
  }
}

/** Says a difference in one line: where, which field, expected vs found. */
export function describeDifference(d: VerifyDifference): string {
  const where = d.event === null ? `line ${d.line}` : `line ${d.line}, event ${d.event}`;
  const rule = d.rule === undefined ? '' : `breaks the rule "${d.rule}": `;
  return `${where}: ${rule}${d.field} expected ${JSON.stringify(d.expected)}, found ${JSON.stringify(d.found)}`;
}
