import type { EventStore, RecordedEvent } from '../eventstore/event-store';
import { chainGenesis } from '../eventstore/event-chain';
import { ChainFollower, ledgerBatches, PeriodBoundary } from '../ledger/ledger-chain';
import { type LedgerFigures, LedgerReplay } from './ledger-replay';

/**
 * An organization's ledger as NDJSON, for an auditor's verifier (see ledger-verify.ts): a header
 * line, one line per ledger event of the organization in log order, an end line. Everything the
 * verifier needs is in the file: each event whole (settlements with their tokens and prices) with
 * its chain link, and the figures the gateway states for the period.
 */
export const EXPORT_FORMAT = 'model-gateway/ledger-export';
export const EXPORT_VERSION = 1;

export interface ExportHeader {
  kind: 'header';
  format: typeof EXPORT_FORMAT;
  version: number;
  orgId: string;
  /** The period asked for (ms since the epoch, by when the log recorded each event), null: unbounded. */
  from: number | null;
  to: number | null;
  exportedAt: number;
  /** The chain's genesis for this organization, and the link the first exported event follows (the genesis unless `from` cut earlier events off). */
  genesis: string;
  previousLink: string;
  /** Events of the chain before the first one exported. */
  eventsBefore: number;
  /** The figures before the first exported event, as the gateway's replay of the earlier ones gives them. */
  opening: LedgerFigures;
}

export interface ExportedEvent {
  kind: 'event';
  position: number;
  streamId: string;
  revision: number;
  type: string;
  recordedAt: number;
  data: unknown;
  /** The event's chain link, as the log stamped it (or as recomputed, on a log that does not stamp). */
  link: string;
}

export interface ExportEnd {
  kind: 'end';
  /** Events exported, and the chain's last link after them. */
  events: number;
  head: string;
  /** The figures after the last exported event, as the gateway states them. */
  closing: LedgerFigures;
}

export type ExportLine = ExportHeader | ExportedEvent | ExportEnd;

export interface ExportOptions {
  from?: number;
  to?: number;
  /** Called as the log is read, for a progress bar. */
  onProgress?: (position: number, head: number) => void;
}

const exported = (event: RecordedEvent, link: string): ExportedEvent => ({
  kind: 'event',
  position: event.position,
  streamId: event.streamId,
  revision: event.revision,
  type: event.type,
  recordedAt: event.recordedAt,
  data: event.data,
  link,
});

/**
 * The export's lines, each a JSON text without its newline, read from the log as they are asked for.
 * The period is one stretch of the chain: from the first event recorded at `from` or later, up to the
 * first recorded at `to` or later (clocks of several processes may disagree by a little; the chain
 * must not have holes): the rule statements follow too (PeriodBoundary). The log is read to its head as of the start.
 */
export async function* exportLedger(events: EventStore, orgId: string, options: ExportOptions = {}): AsyncGenerator<string> {
  const from = options.from ?? null;
  const to = options.to ?? null;
  const fromBoundary = new PeriodBoundary(from ?? -Infinity);
  const toBoundary = new PeriodBoundary(to ?? Infinity);
  const head = await events.headPosition();
  const chains = new ChainFollower();
  const genesis = chainGenesis(orgId);
  const before = new LedgerReplay();
  let replay: LedgerReplay | null = null;
  let previousLink = genesis;
  let eventsBefore = 0;
  let lastLink = genesis;
  let count = 0;
  const header = (): string => {
    const line: ExportHeader = {
      kind: 'header',
      format: EXPORT_FORMAT,
      version: EXPORT_VERSION,
      orgId,
      from,
      to,
      exportedAt: Date.now(),
      genesis,
      previousLink,
      eventsBefore,
      opening: before.figures,
    };
    return JSON.stringify(line);
  };
  reading: for await (const batch of ledgerBatches(events, orgId, head, 2000, true)) {
    for (const event of batch) {
      const followed = chains.follow(event, false);
      if (followed === null || followed.orgId !== orgId) continue;
      const link = event.chainLink ?? followed.link;
      if (!fromBoundary.past(event)) {
        before.apply(event);
        previousLink = link;
        eventsBefore += 1;
        continue;
      }
      if (toBoundary.past(event)) break reading;
      if (replay === null) {
        yield header();
        replay = new LedgerReplay(before.figures, eventsBefore === 0);
      }
      replay.apply(event);
      count += 1;
      lastLink = link;
      yield JSON.stringify(exported(event, link));
    }
    options.onProgress?.(batch[batch.length - 1].position, head);
  }
  // Read to the head: a chain read alone stops at the organization's last event before it.
  options.onProgress?.(head, head);
  if (replay === null) {
    yield header();
    lastLink = previousLink;
  }
  const end: ExportEnd = { kind: 'end', events: count, head: lastLink, closing: (replay ?? before).figures };
  yield JSON.stringify(end);
}
