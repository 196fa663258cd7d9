/**
 * The SQLite log's writer, run in a worker thread (started by sqlite-writer.ts) so that commits
 * and their fsync never block the event loop that serves requests. Appends that arrive together
 * are committed in one transaction (group commit), each with its own expected-revision check.
 * What it is told and answers: sqlite-writer.protocol.ts.
 */
import Database from 'better-sqlite3';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { chainGenesis, chainLinkOf } from './event-chain';
import {
  APPEND_HEAD,
  CONFLICT,
  EVENT_FIELDS,
  FAILED,
  OK,
  type FromWriter,
  type ToWriter,
  type WriterBatch,
  type WriterOptions,
  type WriterResults,
} from './sqlite-writer.protocol';

if (!parentPort) throw new Error('sqlite-writer.worker runs as a worker thread (see sqlite-writer.ts)');
const port = parentPort;
const options = workerData as WriterOptions;
const reply = (message: FromWriter): void => port.postMessage(message);

// Commits are off the response path: on a busy machine the threads answering requests go first.
// On Linux the nice value is per thread, so this lowers the writer alone (elsewhere it would be
// the whole process).
if (process.platform === 'linux') {
  try {
    setPriority(10);
  } catch {
    // not allowed here: the writer keeps its priority
  }
}

const db = new Database(options.path);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
// No busy timeout: SQLite's own handler sleeps 1, 2, 5, 10… ms between tries, far longer than a commit
// here holds the lock (0.2 to 0.7 ms), so writers of several processes (a WORKERS set) waited
// milliseconds on each other. whenFree() tries again sooner.
db.pragma('busy_timeout = 0');
const revisionOf = db.prepare<[string], { revision: number | null }>(
  'SELECT MAX(revision) AS revision FROM events WHERE stream_id = ?',
);
const insert = db.prepare<[string, number, string, string, number, string | null, string | null]>(
  'INSERT INTO events (stream_id, revision, type, data, recorded_at, chain_id, chain_link) VALUES (?, ?, ?, ?, ?, ?, ?)',
);
const chainRule = options.chain;
const chainHead = db.prepare<[string], { chain_link: string }>(
  'SELECT chain_link FROM events WHERE chain_id = ? ORDER BY position DESC LIMIT 1',
);
const logHead = db.prepare<[], { position: number | null }>('SELECT MAX(position) AS position FROM events');
/**
 * Each chain's last link, as this writer last committed it. Valid while the log's head is where this
 * writer's last commit left it: another process sharing the file may have appended since, so each
 * commit checks the head first (under the write lock) and starts afresh if it moved.
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

// Built once: a transaction function made per commit cost the writer about 15 µs each time.
const commit = db.transaction((batch: WriterBatch, from: number, to: number) => {
  if (chainRule !== undefined) {
    const head = logHead.get()!.position ?? 0;
    if (head !== committedHead) heads.clear();
  }
  const results: WriterResults = [];
  for (let at = from; at < to;) at = tryAppend(batch, at, results);
  if (chainRule !== undefined) committedHead = logHead.get()!.position ?? 0;
  return results;
});

/** How long a write waits in all for other processes' writers (what busy_timeout was). */
const BUSY_LIMIT_MS = 10_000;
const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Runs a write transaction once no other process's writer holds the file's write lock: on
 * SQLITE_BUSY it tries again after 50 µs, doubling up to 1 ms, for BUSY_LIMIT_MS in all. This thread
 * only writes, so it may block while it waits.
 */
function whenFree<T>(write: () => T): T {
  let waited = 0;
  for (let delay = 0.05; ; delay = Math.min(delay * 2, 1)) {
    try {
      return write();
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'SQLITE_BUSY' || waited >= BUSY_LIMIT_MS) throw error;
      // Nothing of it was committed: the chain heads cached on its way are another process's to move.
      heads.clear();
      committedHead = -1;
      Atomics.wait(pause, 0, 0, delay);
      waited += delay;
    }
  }
}

/** Commits the appends of `batch` from `from` to `to` in one transaction and answers for each. */
function flush(batch: WriterBatch, from: number, to: number): void {
  if (from >= to) return;
  let results: WriterResults;
  try {
    results = whenFree(() => commit.immediate(batch, from, to));
  } catch (error) {
    // Rolled back: the links cached for it were never committed.
    heads.clear();
    committedHead = -1;
    const reason = error instanceof Error ? error.message : String(error);
    results = [];
    for (let at = from; at < to; at += APPEND_HEAD + (batch[at + 3] as number) * EVENT_FIELDS)
      results.push(batch[at] as number, FAILED, reason, 0, 0);
  }
  reply(results);
}

/**
 * A write transaction on a table of the writer's own, made only to learn whether the log takes
 * writes now: on a full disk it fails as an append would (SQLITE_FULL), once there is room again it
 * succeeds. It never touches the events.
 */
function probe(): string | null {
  try {
    whenFree(() =>
      db
        .transaction(() => {
          db.exec('CREATE TABLE IF NOT EXISTS write_probe (id INTEGER PRIMARY KEY, probed_at INTEGER NOT NULL)');
          db.prepare('INSERT OR REPLACE INTO write_probe (id, probed_at) VALUES (1, ?)').run(Date.now());
        })
        .immediate(),
    );
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

port.on('message', (message: ToWriter) => {
  if (message === 'probe') {
    reply({ probe: probe() });
    return;
  }
  if (message === 'close') {
    db.close();
    reply('closed');
    return;
  }
  // Appends come in batches: the sender gathers them while the writer commits and sends the next
  // batch only once the last is answered, so a batch is all there is to commit now: at once, with
  // no turn of this loop to wait for company that cannot come.
  if (options.groupCommit) flush(message, 0, message.length);
  else
    for (let at = 0; at < message.length;) {
      const next = at + APPEND_HEAD + (message[at + 3] as number) * EVENT_FIELDS;
      flush(message, at, next);
      at = next;
    }
});
