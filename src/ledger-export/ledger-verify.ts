import { canonicalJson, chainGenesis, chainLink } from '../eventstore/event-chain';
import { EXPORT_FORMAT, EXPORT_VERSION, type ExportEnd, type ExportHeader, type ExportedEvent } from './ledger-export';
import { type LedgerFigures, LedgerReplay } from './ledger-replay';

/** One thing the file does not bear out: where (its line, and the event's position, stream and type), which field, what was expected and what was found. */
export interface VerifyDifference {
  line: number;
  event: string | null;
  field: string;
  expected: unknown;
  found: unknown;
}

export interface VerifyReport {
  orgId: string | null;
  events: number;
  /** The chain's last link as recomputed from the file. */
  head: string | null;
  /** The figures the file's events add up to. */
  figures: LedgerFigures | null;
  /** In file order; empty: the file is whole and every figure recomputes. */
  differences: VerifyDifference[];
}

/** More than this are not kept: the first is what matters, the count says how far it goes. */
const MAX_DIFFERENCES = 1000;

/**
 * Checks a ledger export on its own, one line at a time (pure: no gateway, no store, no
 * configuration): the header first; each event's chain link recomputed from the one before and the
 * event; each charge recomputed from its tokens and prices; the balance and every key's spend added
 * up and compared with the figures the end line states; the end line's count and head. `expectedHead`:
 * a head published elsewhere (a statement, the dashboard) that the file's chain must end at.
 */
export class ExportVerifier {
  private header: ExportHeader | null = null;
  private replay: LedgerReplay | null = null;
  private link: string | null = null;
  private position = 0;
  private events = 0;
  private ended = false;
  private lineNumber = 0;
  private differenceCount = 0;
  readonly differences: VerifyDifference[] = [];

  constructor(private readonly expectedHead?: string) {}

  private differ(event: string | null, field: string, expected: unknown, found: unknown): void {
    this.differenceCount += 1;
    if (this.differences.length < MAX_DIFFERENCES)
      this.differences.push({ line: this.lineNumber, event, field, expected, found });
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
    // From the genesis on, the chain starts there and the figures at zero; a period's export starts at the
    // link and figures its header states (vouched for by the export of what came before).
    const fromGenesis = header.eventsBefore === 0;
    if (fromGenesis && header.previousLink !== genesis) this.differ(null, 'previousLink', genesis, header.previousLink);
    if (fromGenesis && canonicalJson(header.opening) !== canonicalJson(new LedgerReplay().figures)) {
      this.differ(null, 'opening', 'zero (no events before)', header.opening);
    }
    this.header = header;
    this.link = header.previousLink;
    this.replay = new LedgerReplay(header.opening, fromGenesis);
  }

  private takeEvent(event: ExportedEvent): void {
    const where = `${event.position} ${event.streamId}@${event.revision} ${event.type}`;
    this.events += 1;
    if (!(event.position > this.position)) this.differ(where, 'position', `after ${this.position}`, event.position);
    this.position = event.position;
    const orgId = (event.data as { orgId?: unknown } | null)?.orgId;
    if (orgId !== this.header!.orgId) this.differ(where, 'data.orgId', this.header!.orgId, orgId);
    for (const difference of this.replay!.apply(event))
      this.differ(where, difference.field, difference.expected, difference.found);
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
    for (const field of ['granted', 'charged', 'credited', 'balance', 'reserved'] as const) {
      if (end.closing?.[field] !== figures[field]) this.differ(null, `closing.${field}`, figures[field], end.closing?.[field]);
    }
    const stated = end.closing?.keys ?? {};
    for (const keyId of new Set([...Object.keys(figures.keys), ...Object.keys(stated)])) {
      if (stated[keyId] !== figures.keys[keyId]) this.differ(null, `closing.keys.${keyId}`, figures.keys[keyId], stated[keyId]);
    }
  }

  /** The verdict, once every line has been given. */
  finish(): VerifyReport {
    if (this.header === null) this.differ(null, 'header', 'a header line', 'none');
    else if (!this.ended) this.differ(null, 'end', 'an end line', 'none (the file is cut short)');
    if (this.expectedHead !== undefined && this.link !== this.expectedHead) {
      this.differ(null, 'head', this.expectedHead, this.link);
    }
    return {
      orgId: this.header?.orgId ?? null,
      events: this.events,
      head: this.link,
      figures: this.replay?.figures ?? null,
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
  return `${where}: ${d.field} expected ${JSON.stringify(d.expected)}, found ${JSON.stringify(d.found)}`;
}
