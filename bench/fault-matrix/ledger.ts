/**
 * The fault matrix's view of the ledger: what the event log (the SQLite file in the gateway's
 * DATA_DIR, read-only) says of each request, the operator tool's `ledger audit`, and the bench's
 * keys in Redis removed afterwards.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createClient } from 'redis';
import { ROOT } from '../gateway/processes';

/** One request as the log has it, by its request id. */
export interface Booked {
  reserved: boolean;
  /** The charge of its settlement (nano-credits); null: never settled. */
  charged: number | null;
  /** The output tokens its settlement charged. */
  outputTokens: number;
  released: boolean;
  expired: boolean;
}

const RESERVATION_EVENTS = ['CreditsReserved', 'ReservationSettled', 'ReservationReleased', 'ReservationExpired'];

interface ReservationData {
  requestId: string;
  amount?: number;
  outputTokens?: number;
}

/** Every reservation event of the log in `dataDir`, folded by request id. */
export function readLedger(dataDir: string): Map<string, Booked> {
  const db = new Database(join(dataDir, 'events.sqlite'), { readonly: true, fileMustExist: true });
  try {
    const rows = db
      .prepare<string[], { type: string; data: string }>(
        `SELECT type, data FROM events WHERE type IN (${RESERVATION_EVENTS.map(() => '?').join(', ')}) ORDER BY position`,
      )
      .all(...RESERVATION_EVENTS);
    const booked = new Map<string, Booked>();
    for (const { type, data } of rows) {
      const d = JSON.parse(data) as ReservationData;
      const entry = booked.get(d.requestId) ?? {
        reserved: false,
        charged: null,
        outputTokens: 0,
        released: false,
        expired: false,
      };
      booked.set(d.requestId, entry);
      if (type === 'CreditsReserved') entry.reserved = true;
      else if (type === 'ReservationSettled') {
        entry.charged = d.amount ?? 0;
        entry.outputTokens = d.outputTokens ?? 0;
      } else if (type === 'ReservationReleased') entry.released = true;
      else entry.expired = true;
    }
    return booked;
  } finally {
    db.close();
  }
}

/** Reservations of the log not yet settled, released or expired. */
export function openReservations(dataDir: string): number {
  let open = 0;
  for (const b of readLedger(dataDir).values()) if (b.reserved && b.charged === null && !b.released && !b.expired) open += 1;
  return open;
}

export interface Audit {
  clean: boolean;
  /** The audit's own summary: reservations, settlements, releases, expiries, or why it failed. */
  summary: string;
}

/** `model-gateway --json ledger audit` on the gateway's stores, in a process of its own, as an operator runs it. */
export function auditLedger(env: NodeJS.ProcessEnv): Promise<Audit> {
  return new Promise((done) =>
    execFile(
      process.execPath,
      [join(ROOT, 'bin', 'model-gateway.js'), '--json', 'ledger', 'audit'],
      { cwd: ROOT, env, timeout: 120_000 },
      (error, stdout, stderr) => {
        let report: {
          clean?: boolean;
          reservations?: number;
          settlements?: number;
          releases?: number;
          expiries?: number;
          differences?: string[];
        };
        try {
          report = JSON.parse(stdout.trim().split('\n').pop() ?? '') as typeof report;
        } catch {
          return done({ clean: false, summary: `failed: ${(stderr || error?.message || stdout).trim().slice(0, 200)}` });
        }
        const counts = `${report.reservations} reserved, ${report.settlements} settled, ${report.releases} released, ${report.expiries} expired`;
        const differences = report.differences ?? [];
        done({
          clean: report.clean === true && !error,
          summary:
            report.clean === true
              ? `clean (${counts})`
              : `**${differences.length} difference(s)** (${counts}): ${differences.slice(0, 2).join('; ').slice(0, 300)}`,
        });
      },
    ),
  );
}

/** Whether a Redis answers at `url`. */
export async function redisAnswers(url: string): Promise<boolean> {
  const client = createClient({ url, socket: { reconnectStrategy: false, connectTimeout: 1000 } });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.ping();
    return true;
  } catch {
    return false;
  } finally {
    if (client.isOpen) await client.close();
  }
}

/** Removes every key under `prefix` (the bench's own: never a FLUSHDB of a shared Redis). */
export async function removeKeys(url: string, prefix: string): Promise<number> {
  const client = createClient({ url, socket: { reconnectStrategy: false } });
  client.on('error', () => {});
  let removed = 0;
  try {
    await client.connect();
    for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) {
      if (keys.length === 0) continue;
      removed += await client.unlink(keys);
    }
  } finally {
    if (client.isOpen) await client.close();
  }
  return removed;
}
