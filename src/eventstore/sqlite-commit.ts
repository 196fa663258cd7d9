/**
 * How a batch of appends is committed to the SQLite log, on whichever connection: the writer
 * thread's (sqlite-writer.worker.ts), or the main thread's for an append made alone
 * (sqlite-event-store.ts). One transaction per batch, each append with its own expected-revision
 * check, each chained event stamped with its chain's link. Imports nothing at run time from the
 * project but the pure protocol and chain modules (the writer thread loads it as compiled).
 */
import Database from 'better-sqlite3';
import { type ChainRule, chainGenesis, chainLinkOf } from './event-chain';
import {
  APPEND_HEAD,
  CONFLICT,
  DISK,
  DURABILITY_AT,
  EVENT_FIELDS,
  FAILED,
  OK,
  type WriterBatch,
  type WriterResults,
} from './sqlite-writer.protocol';

/**
 * Commits the appends of `batch` from `from` to `to` in one write transaction and answers each;
 * throws what the database throws (nothing of the batch committed).
 */
export type LogCommitter = (batch: WriterBatch, from: number, to: number) => WriterResults;

/**
 * A connection that commits to the log's file: WAL, an fsync per commit of an append that must
 * reach the disk (see logCommitter), and no busy timeout (SQLite's own handler sleeps 1, 2, 5, 10…
 * ms between tries, far longer than a commit here holds the lock, 0.2 to 0.7 ms): the writer
 * thread tries again sooner itself, the main thread hands a busy append to the writer thread.
 */
export function committingConnection(path: string): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 0');
  return db;
}

/** Whether an append of `batch` from `from` to `to` must reach the disk. */
function needsDisk(batch: WriterBatch, from: number, to: number): boolean {
  for (let at = from; at < to; at += APPEND_HEAD + (batch[at + 3] as number) * EVENT_FIELDS)
    if (batch[at + DURABILITY_AT] === DISK) return true;
  return false;
}

/** A committer on `db`, opened by committingConnection. */
export function logCommitter(db: Database.Database, chainRule: ChainRule | undefined): LogCommitter {
  const revisionOf = db.prepare<[string], { revision: number | null }>(
    'SELECT MAX(revision) AS revision FROM events WHERE stream_id = ?',
  );
  const insert = db.prepare<[string, number, string, string, number, string | null, string | null]>(
    'INSERT INTO events (stream_id, revision, type, data, recorded_at, chain_id, chain_link) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const chainHead = db.prepare<[string], { chain_link: string }>(
    'SELECT chain_link FROM events WHERE chain_id = ? ORDER BY position DESC LIMIT 1',
  );
  const logHead = db.prepare<[], { position: number | null }>('SELECT MAX(position) AS position FROM events');
  /**
   * Each chain's last link, as this connection last committed it. Valid while the log's head is where
   * its last commit left it: another connection (the other thread, another process) may have
   * appended since, so each commit checks the head first (under the write lock) and starts afresh if
   * it moved.
   */
  const heads = new Map<string, string>();
  let committedHead = -1;

  /** The link an event of chain `chainId` follows: the chain's last, read once per chain while the cache holds. */
  const lastLink = (chainId: string): string => heads.get(chainId) ?? chainHead.get(chainId)?.chain_link ?? chainGenesis(chainId);

  /** Appends the append at `at` in `batch` (see WriterBatch) if its stream is where it expects, onto `results`; where the next append starts. */
  function tryAppend(batch: WriterBatch, at: number, results: WriterResults): number {
    const id = batch[at] as number;
    const streamId = batch[at + 1] as string;
    const expected = batch[at + 2];
    const count = batch[at + 3] as number;
    const next = at + APPEND_HEAD + count * EVENT_FIELDS;
    // MAX() always yields one row (revision null when the stream has no event).
    const current = revisionOf.get(streamId)!.revision;
    const actual = current === null ? 'no_stream' : current;
    if (expected !== 'any' && expected !== actual) {
      results.push(id, CONFLICT, actual, 0, 0);
      return next;
    }
    let revision = current === null ? -1 : current;
    let position = 0;
    const now = Date.now();
    for (let e = at + APPEND_HEAD; e < next; e += EVENT_FIELDS) {
      const type = batch[e] as string;
      const data = batch[e + 1] as string;
      const chainId = batch[e + 2] as string | null;
      revision += 1;
      let link: string | null = null;
      if (chainRule !== undefined && chainId !== null) {
        link = chainLinkOf(lastLink(chainId), streamId, revision, type, data, now);
        heads.set(chainId, link);
      }
      position = Number(insert.run(streamId, revision, type, data, now, chainId, link).lastInsertRowid);
    }
    results.push(id, OK, revision, position, now);
    return next;
  }

  // Built once: a transaction function made per commit cost about 15 µs each time.
  const transaction = db.transaction((batch: WriterBatch, from: number, to: number) => {
    if (chainRule !== undefined) {
      const head = logHead.get()!.position ?? 0;
      if (head !== committedHead) heads.clear();
    }
    const results: WriterResults = [];
    for (let at = from; at < to;) at = tryAppend(batch, at, results);
    if (chainRule !== undefined) committedHead = logHead.get()!.position ?? 0;
    return results;
  });

  // A commit in WAL mode fsyncs the log under `synchronous = FULL`, not under NORMAL, where it is in
  // the log (the OS's) for every reader and survives this process's crash; the next FULL commit's
  // fsync takes it to the disk with itself. Set between transactions, when it changes; never as a
  // prepared statement, since SQLite applies this pragma as it compiles it. `exec`, not `pragma`:
  // no statement object or result rows, half the cost on a reply's path (two switches a request).
  let fsyncs = true;

  return (batch, from, to) => {
    const disk = needsDisk(batch, from, to);
    if (disk !== fsyncs) {
      db.exec(disk ? 'PRAGMA synchronous = FULL' : 'PRAGMA synchronous = NORMAL');
      fsyncs = disk;
    }
    try {
      return transaction.immediate(batch, from, to);
    } catch (error) {
      // Rolled back (or never begun): the links cached on its way were never committed.
      heads.clear();
      committedHead = -1;
      throw error;
    }
  };
}

/** Every append of `batch` from `from` to `to` answered FAILED with the database's message. */
export function failedResults(batch: WriterBatch, from: number, to: number, error: unknown): WriterResults {
  // Read off the error rather than by `instanceof`: the driver's errors need not share this realm's Error (under jest, they don't).
  const message = (error as { message?: unknown } | null)?.message;
  const reason = typeof message === 'string' ? message : String(error);
  const results: WriterResults = [];
  for (let at = from; at < to; at += APPEND_HEAD + (batch[at + 3] as number) * EVENT_FIELDS)
    results.push(batch[at] as number, FAILED, reason, 0, 0);
  return results;
}

/** Another connection (another thread or process) holds the file's write lock. */
export const isBusy = (error: unknown): boolean => (error as { code?: unknown }).code === 'SQLITE_BUSY';
