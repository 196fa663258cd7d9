import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import Database from 'better-sqlite3';
import { ownerOnly } from './owner-only';

/** Why a backup was not made: said to the operator as it is. */
export class BackupError extends Error {}

/** What a backup holds: the events copied and the position of the last. */
export interface BackupMade {
  file: string;
  events: number;
  head: number;
}

/**
 * A consistent copy of the embedded log, made while the service runs: SQLite's online backup,
 * which copies every committed event, those still only in the write-ahead log too (a copy of
 * the database file alone leaves them out). Written to a new file, readable by its owner alone
 * (the log holds password hashes); an existing file is never overwritten.
 */
export async function backupLog(logPath: string, output: string): Promise<BackupMade> {
  if (!existsSync(logPath)) throw new BackupError(`no event log at ${logPath}: is DATA_DIR right?`);
  if (resolve(output) === resolve(logPath)) throw new BackupError('the backup must be another file than the log itself');
  if (existsSync(output)) throw new BackupError(`${output} exists: a backup never overwrites a file`);
  // Made owner-only before a byte is copied (an empty file is an empty database to copy into).
  ownerOnly(output);
  const log = new Database(logPath, { readonly: true, fileMustExist: true });
  try {
    await log.backup(output);
  } catch (error) {
    throw new BackupError(`backup to ${output} failed: ${(error as Error).message}`);
  } finally {
    log.close();
  }
  const copy = new Database(output, { fileMustExist: true });
  try {
    // One file, no write-ahead log beside it to keep with it (the service puts a restored log in WAL mode again).
    copy.pragma('journal_mode = DELETE');
    const { events, head } = copy
      .prepare<[], { events: number; head: number | null }>('SELECT COUNT(*) AS events, MAX(position) AS head FROM events')
      .get()!;
    return { file: output, events, head: head ?? 0 };
  } finally {
    copy.close();
  }
}
