import type { ExportHeader, ExportedEvent } from '../ledger-export/ledger-export';
import { describeDifference, ExportVerifier } from '../ledger-export/ledger-verify';
import { monthBounds, type Statement, StatementFold, type StatementMonth } from './statement';

/** Why a statement cannot be computed from an export: said in one line to whoever gave it. */
export class ExportStatementError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExportStatementError';
  }
}

const iso = (time: number) => new Date(time).toISOString();

/**
 * A month's statement computed from a ledger export alone (pure: no gateway, no log, no
 * configuration), for an auditor to compare with the one the gateway issued: the file is verified
 * line by line (ExportVerifier: every link, charge and figure) while its events are folded by the
 * gateway's own StatementFold, so the same events give the same document, byte for byte. Refused
 * (ExportStatementError) unless the file verifies, is the organization's, starts at its chain's
 * genesis (the opening balance is folded from every event before the month) and reaches the
 * month's end (or was exported during it, as the gateway's statement of the current month is so far).
 */
export class ExportStatement {
  private readonly verifier = new ExportVerifier();
  private readonly fold: StatementFold;
  private header: ExportHeader | null = null;

  constructor(
    private readonly file: string,
    private readonly orgId: string,
    private readonly month: StatementMonth,
  ) {
    this.fold = new StatementFold(orgId, month);
  }

  /** Takes the file's next line. */
  line(text: string): void {
    this.verifier.line(text);
    if (text.trim() === '') return;
    let value: { kind?: unknown } | null;
    try {
      value = JSON.parse(text) as { kind?: unknown } | null;
    } catch {
      return; // the verifier names it
    }
    if (value?.kind === 'header' && this.header === null) this.header = value as ExportHeader;
    else if (value?.kind === 'event') {
      const e = value as ExportedEvent;
      this.fold.apply({
        streamId: e.streamId,
        revision: e.revision,
        position: e.position,
        type: e.type,
        data: e.data,
        recordedAt: e.recordedAt,
        chainLink: e.link,
      });
    }
  }

  /** The statement, once every line has been given; or why there is none. */
  finish(): Statement {
    const report = this.verifier.finish();
    const first = report.differences[0];
    if (first !== undefined) {
      throw new ExportStatementError(
        `${this.file} does not verify (${this.verifier.differencesFound} difference(s); ledger verify ${this.file} lists them), so no statement is computed from it: first difference ${describeDifference(first)}`,
      );
    }
    const header = this.header!;
    if (header.orgId !== this.orgId) {
      throw new ExportStatementError(`${this.file} is the export of organization ${header.orgId}, not of ${this.orgId}`);
    }
    if (header.eventsBefore !== 0) {
      throw new ExportStatementError(
        `${this.file} starts after its chain's genesis (${header.eventsBefore} events before it${header.from === null ? '' : `, exported --from ${iso(header.from)}`}): a statement's opening balance is folded from every event before its month; export the organization without --from`,
      );
    }
    const { from, to } = monthBounds(this.month);
    if (header.to !== null && header.to < to) {
      throw new ExportStatementError(
        `${this.file} stops before ${iso(header.to)} (exported --to), before ${this.month} ends (${iso(to)}): export without --to, or with one at or after the month's end`,
      );
    }
    if (header.exportedAt < from) {
      throw new ExportStatementError(
        `${this.file} was exported at ${iso(header.exportedAt)}, before ${this.month} began (${iso(from)}): it holds nothing of that month`,
      );
    }
    return this.fold.statement();
  }
}
