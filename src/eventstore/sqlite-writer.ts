/**
 * The SQLite log's writer, run in a worker thread so that commits and their fsync never block
 * the event loop that serves requests. Appends that arrive together are committed in one
 * transaction (group commit), each with its own expected-revision check.
 *
 * Kept as source text, run with `eval`, so it loads the same way from compiled and from
 * uncompiled code (a worker cannot load TypeScript).
 */
export interface WriterAppend {
  id: number;
  streamId: string;
  /** Event types and their data, already JSON. */
  events: Array<{ type: string; data: string }>;
  expected: number | 'no_stream' | 'any';
}

export type WriterResult =
  | { id: number; ok: { nextExpectedRevision: number; position: number }; recordedAt: number }
  | { id: number; conflict: number | 'no_stream' }
  | { id: number; error: string };

export interface WriterOptions {
  /** Path to better-sqlite3, resolved by the caller. */
  driver: string;
  path: string;
  groupCommit: boolean;
}

export const WRITER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
// Commits are off the response path: on a busy machine the threads answering requests go first.
// On Linux the nice value is per thread, so this lowers the writer alone (elsewhere it would be
// the whole process).
if (process.platform === 'linux') {
  try {
    require('node:os').setPriority(10);
  } catch {
    // not allowed here: the writer keeps its priority
  }
}
const Database = require(workerData.driver);
const db = new Database(workerData.path);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.pragma('busy_timeout = 10000');
const revisionOf = db.prepare('SELECT MAX(revision) AS revision FROM events WHERE stream_id = ?');
const insert = db.prepare('INSERT INTO events (stream_id, revision, type, data, recorded_at) VALUES (?, ?, ?, ?, ?)');
let queue = [];
let scheduled = false;

function tryAppend(append) {
  const current = revisionOf.get(append.streamId).revision;
  const actual = current === null ? 'no_stream' : current;
  if (append.expected !== 'any' && append.expected !== actual) return { id: append.id, conflict: actual };
  let revision = current === null ? -1 : current;
  let position = 0;
  const now = Date.now();
  for (const event of append.events) {
    revision += 1;
    position = Number(insert.run(append.streamId, revision, event.type, event.data, now).lastInsertRowid);
  }
  return { id: append.id, ok: { nextExpectedRevision: revision, position }, recordedAt: now };
}

// Built once: a transaction function made per commit cost the writer about 15 µs each time.
const commit = db.transaction((batch) => batch.map(tryAppend));

function flush() {
  scheduled = false;
  const batch = queue;
  queue = [];
  if (batch.length === 0) return;
  let results;
  try {
    results = commit.immediate(batch);
  } catch (error) {
    parentPort.postMessage(batch.map((append) => ({ id: append.id, error: String(error && error.message) })));
    return;
  }
  parentPort.postMessage(results);
}

parentPort.on('message', (message) => {
  if (message === 'close') {
    flush();
    db.close();
    parentPort.postMessage('closed');
    return;
  }
  // Appends come in batches (one message per turn of the sender's event loop).
  for (const append of message) {
    queue.push(append);
    if (!workerData.groupCommit) flush();
  }
  if (workerData.groupCommit && !scheduled) {
    scheduled = true;
    setImmediate(flush);
  }
});
`;
