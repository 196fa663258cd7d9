import type { FastifyReply } from 'fastify';
import { Readable } from 'node:stream';
import type { EventStore } from '../eventstore/event-store';
import { ApiError } from '../http/api-error';
import { isoTime } from '../identity/iso-time';
import { exportLedger } from './ledger-export';

/** The period a route's query asks for: `from` and `to`, each a time in ISO 8601 with its zone, or absent. */
export interface ExportQuery {
  from?: unknown;
  to?: unknown;
}

function timeOf(query: ExportQuery, param: 'from' | 'to'): number | undefined {
  const value = query[param];
  if (value === undefined) return undefined;
  const ms = typeof value === 'string' ? isoTime(value) : null;
  if (ms === null) {
    throw new ApiError('invalid_request', `${param} must be a time in ISO 8601 with its zone, e.g. 2027-01-31T00:00:00Z`, {
      param,
    });
  }
  return ms;
}

/**
 * Sends an organization's ledger export (NDJSON, see ledger-export.ts) as a download, streamed as the
 * log is read. Shared by the management API and the dashboard; each answers bad input in its own format.
 */
export function sendLedgerExport(reply: FastifyReply, events: EventStore, orgId: string, query: ExportQuery): FastifyReply {
  const from = timeOf(query, 'from');
  const to = timeOf(query, 'to');
  const lines = Readable.from(exportLedger(events, orgId, { from, to }), { objectMode: true }).map((line: string) => `${line}\n`);
  return reply
    .header('content-type', 'application/x-ndjson; charset=utf-8')
    .header('content-disposition', `attachment; filename="ledger-${orgId}.ndjson"`)
    .send(lines);
}
