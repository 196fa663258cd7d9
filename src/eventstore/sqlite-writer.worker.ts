/**
 * The SQLite log's writer, run in a worker thread (started by sqlite-writer.ts) so that commits
 * and their fsync never block the event loop that serves requests. Appends that arrive together
 * are committed in one transaction (group commit, see sqlite-commit.ts).
 * What it is told and answers: sqlite-writer.protocol.ts.
 */
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { committingConnection, failedResults, isBusy, logCommitter } from './sqlite-commit';
import {
  APPEND_HEAD,
  EVENT_FIELDS,
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

// Waits for other processes' writers in whenFree(), sooner than SQLite's busy handler would.
const db = committingConnection(options.path);
const commit = logCommitter(db, options.chain);

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
      if (!isBusy(error) || waited >= BUSY_LIMIT_MS) throw error;
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
    results = whenFree(() => commit(batch, from, to));
  } catch (error) {
    results = failedResults(batch, from, to, error);
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
