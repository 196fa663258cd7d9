import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { canonicalJson, type ChainRule, chainGenesis, chainIdOf, chainLink } from './event-chain';
import {
  AppendResult,
  type Durability,
  EventStore,
  ExpectedRevision,
  NewEvent,
  RecordedEvent,
  WrongExpectedRevisionError,
} from './event-store';
import { ownerOnly, tighten } from './owner-only';
import { committingConnection, failedResults, isBusy, type LogCommitter, logCommitter } from './sqlite-commit';
import { startWriter, WriterThread } from './sqlite-writer';
import {
  CONFLICT,
  DISK,
  type FromWriter,
  LOG_ONLY,
  OK,
  RESULT_FIELDS,
  type WriterBatch,
  type WriterResults,
} from './sqlite-writer.protocol';

/** position, stream_id, revision, type, data, recorded_at, chain_link: read as arrays, which is faster in a replay. */
type EventRow = [number, string, number, string, string, number, string | null];
const COLUMNS = 'position, stream_id, revision, type, data, recorded_at, chain_link';
/** Events this process appended, kept for its own subscribers (beyond this, they read the file). */
const RECENT_LIMIT = 8192;
const READ_BATCH = 1000;

/** A subscription's place: the last position it yielded, and the consumer's own (see EventStore.onCommitted). */
interface Cursor {
  position: number;
  reached?: () => number;
  waking: Waking;
}

const placeOf = (cursor: Cursor): number =>
  cursor.reached === undefined ? cursor.position : Math.max(cursor.position, cursor.reached());

interface PendingAppend {
  streamId: string;
  expected: ExpectedRevision;
  events: NewEvent[];
  resolve: (result: AppendResult) => void;
  reject: (error: unknown) => void;
}

export interface SqliteEventStoreOptions {
  /** How often to look for events appended by other processes while following the log. */
  pollIntervalMs?: number;
  /** Commit appends that arrive together in one transaction (default). Off: one commit per append. */
  groupCommit?: boolean;
  /**
   * How long an append opening a stream, made while the writer is idle, waits for others to share
   * its commit (default 0: the next loop turn, with whatever was appended in the same turn). A
   * request waits for its reservation before calling its host, so a window would be on its path;
   * appends made while a commit is under way travel together in the next one whatever the window.
   */
  commitWindowMs?: number;
  /**
   * Whether this thread may now commit an append made alone, while the writer is idle, itself (see
   * `send`): the runtime says yes while no other request is being answered, so that one request at a
   * time waits for its commits without the hops to the writer thread and back. Default: never.
   */
  commitAloneHere?: () => boolean;
  /**
   * The events the writer stamps with their chain's link at commit (the ledger's, by organization).
   * Every process writing the file must be given the same rule: the runtime gives the ledger's.
   */
  chain?: ChainRule;
}

const toRecorded = (row: EventRow): RecordedEvent => {
  const event: RecordedEvent = {
    streamId: row[1],
    revision: row[2],
    position: row[0],
    type: row[3],
    data: JSON.parse(row[4]),
    recordedAt: row[5],
  };
  if (row[6] !== null) event.chainLink = row[6];
  return event;
};

/**
 * Gives a log written before chains their columns, and, the first time it is opened with a chain rule,
 * stamps the chained events it already holds, in log order, each chain from its genesis: the chain then
 * covers them from this first opening on (it cannot vouch for what they were before). In one write
 * transaction, so two processes opening it at once do it once.
 */
function addChains(db: Database.Database, rule: ChainRule | undefined): void {
  const done = () =>
    db
      .prepare<[], { name: string }>("SELECT name FROM pragma_table_info('events')")
      .all()
      .some((c) => c.name === 'chain_link') &&
    (rule === undefined || db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'chain_stamped'").get() !== undefined);
  if (done()) return;
  db.transaction(() => {
    if (done()) return;
    if (
      !db
        .prepare<[], { name: string }>("SELECT name FROM pragma_table_info('events')")
        .all()
        .some((c) => c.name === 'chain_link')
    ) {
      db.exec(`
        ALTER TABLE events ADD COLUMN chain_id TEXT;
        ALTER TABLE events ADD COLUMN chain_link TEXT;
        CREATE INDEX events_by_chain ON events (chain_id, position) WHERE chain_id IS NOT NULL;
      `);
    }
    if (rule === undefined) return;
    db.exec('CREATE TABLE chain_stamped (id INTEGER PRIMARY KEY CHECK (id = 1), stamped_at INTEGER NOT NULL)');
    db.prepare('INSERT INTO chain_stamped (id, stamped_at) VALUES (1, ?)').run(Date.now());
    const stamp = db.prepare<[string, string, number]>('UPDATE events SET chain_id = ?, chain_link = ? WHERE position = ?');
    const heads = new Map<string, string>();
    const rows = db
      .prepare<[number], EventRow>(`SELECT ${COLUMNS} FROM events WHERE position > ? ORDER BY position LIMIT 5000`)
      .raw(true);
    // In batches: the connection runs no update while a read is being iterated.
    for (let batch = rows.all(0); batch.length > 0; batch = rows.all(batch[batch.length - 1][0])) {
      for (const row of batch) {
        const event = toRecorded(row);
        const chainId = chainIdOf(rule, event.type, event.data);
        if (chainId === null) continue;
        // A link already there (stamped by a writer with the rule) is the chain's: go on from it.
        const link = event.chainLink ?? chainLink(heads.get(chainId) ?? chainGenesis(chainId), event);
        heads.set(chainId, link);
        if (event.chainLink === undefined) stamp.run(chainId, link, event.position);
      }
    }
  }).immediate();
}

/**
 * A subscription's waits: for an append by this process that it has not reached, or the poll
 * interval (other processes' appends), or the end. One timer and one listener for the whole
 * subscription, armed again for each wait: a timer and listeners made and dropped on every append
 * cost more than the wait itself.
 */
class Waking {
  private waiting: ((why: 'append' | 'poll') => void) | null = null;
  private readonly onPoll = () => this.wake('poll');
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly signal: AbortSignal,
    pollIntervalMs: number,
  ) {
    this.timer = setTimeout(this.onPoll, pollIntervalMs);
    signal.addEventListener('abort', this.onPoll);
  }

  /** This process appended what the subscription has not reached (or the log closed). */
  appended(): void {
    this.wake('append');
  }

  /** Someone asks the subscription to read the file now (see EventStore.lookNow). */
  look(): void {
    this.wake('poll');
  }

  /** The next wake: an append, or the poll interval from now (or the end, as a poll). */
  next(): Promise<'append' | 'poll'> {
    return new Promise((resolve) => {
      this.waiting = resolve;
      this.timer.refresh();
    });
  }

  private wake(why: 'append' | 'poll'): void {
    const waiting = this.waiting;
    // Between waits the subscription reads what there is before it waits again: nothing is missed.
    if (waiting === null) return;
    this.waiting = null;
    waiting(why);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.signal.removeEventListener('abort', this.onPoll);
  }
}

/**
 * The embedded event log: one SQLite file in WAL mode with full fsync on commit, so an append
 * is durable when its promise resolves and a killed process never leaves a torn event.
 * Writes go through a writer thread (see sqlite-writer.worker.ts) that commits appends arriving
 * together in one transaction, but for an append made alone, which this thread may commit itself
 * (see `send`); reads use this thread's own connection (WAL readers do not wait for the writer).
 * Several processes may share the file: SQLite serialises their writers. The writer thread lives
 * until `close()`, which every owner calls.
 */
export class SqliteEventStore implements EventStore {
  private readonly db: Database.Database;
  private readonly writer: WriterThread;
  /** This thread's own connection for the appends it commits itself, its committer and when it may; null when never. */
  private readonly here: { db: Database.Database; commit: LogCommitter; allowed: () => boolean } | null = null;
  private readonly pending = new Map<number, PendingAppend>();
  private nextId = 1;
  /**
   * Appends waiting for the writer, sent in one message once it has answered the last one:
   * while it commits, new appends gather here (group commit), and each message, a clone and a
   * wake-up on both threads, carries as many as there are.
   */
  private outgoing: WriterBatch = [];
  /** How many appends `outgoing` holds. */
  private outgoingAppends = 0;
  /** Appends sent to the writer and not yet answered. */
  private unanswered = 0;
  /** A send is due (after the commit window, or at the next turn). */
  private sendScheduled = false;
  /** How many appends the last batch sent held. */
  private lastBatch = 0;
  /**
   * This process's committed appends, in log order: subscribers take them from here instead
   * of reading back and parsing what was just written, whenever no other process's event lies
   * between (SQLite commits one writer at a time, so positions in one append are consecutive).
   */
  private recent: RecordedEvent[] = [];
  /**
   * Where each live subscription is (and what its consumer has reached by other means): what all of
   * them have taken is dropped (it would only age into old-space garbage).
   */
  private readonly cursors = new Set<Cursor>();
  /** Who takes this process's events as they commit (the projector, with read models in this process). */
  private taker: ((events: RecordedEvent[]) => void) | null = null;
  private readonly pollIntervalMs: number;
  private readonly commitWindowMs: number;
  /** The log's identity (the one row of `log_identity`): it never changes for a file. */
  private readonly identity: string;
  private closed = false;
  /** Why the last append the writer answered failed (not a conflict), until an append or a probe succeeds. */
  private failure: Error | null = null;
  /** Why the writer thread stopped, once it has: nothing sent to it will be answered. */
  private writerStopped: Error | null = null;
  /** The probe in flight, shared by whoever asks meanwhile, and where its answer goes. */
  private probing: Promise<Error | null> | null = null;
  private probeAnswered: ((reason: string | null) => void) | null = null;
  private readonly chain: ChainRule | undefined;
  /** Present when the writer stamps links (opened with a chain rule). */
  readonly chainHead?: EventStore['chainHead'];
  /** Present when the writer stamps links: a chain's events through the chain index. */
  readonly readChain?: EventStore['readChain'];
  private readonly statements: {
    readStream: Database.Statement<[string], EventRow>;
    readAll: Database.Statement<[number, number], EventRow>;
    readChain: Database.Statement<[string, number, number], EventRow>;
    head: Database.Statement<[], { position: number | null }>;
    chainHead: Database.Statement<[string], { head: string; position: number }>;
    chainCount: Database.Statement<[string], { events: number }>;
  };

  constructor(path: string, options: SqliteEventStoreOptions = {}) {
    if (path !== ':memory:') {
      mkdirSync(dirname(path), { recursive: true });
      // Owner-only (it holds password and key hashes): made so before SQLite opens it, whose -wal and
      // -shm files then take its mode; those of an earlier version's log are tightened.
      ownerOnly(path);
      for (const side of ['-wal', '-shm']) tighten(`${path}${side}`);
    }
    this.pollIntervalMs = options.pollIntervalMs ?? 100;
    this.commitWindowMs = options.commitWindowMs ?? 0;
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 10000');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS events (
        position    INTEGER PRIMARY KEY AUTOINCREMENT,
        stream_id   TEXT    NOT NULL,
        revision    INTEGER NOT NULL,
        type        TEXT    NOT NULL,
        data        TEXT    NOT NULL,
        recorded_at INTEGER NOT NULL,
        UNIQUE (stream_id, revision)
      );
      CREATE TABLE IF NOT EXISTS log_identity (
        id         INTEGER PRIMARY KEY CHECK (id = 1),
        log_id     TEXT    NOT NULL,
        created_at INTEGER NOT NULL
      );
    `);
    // The log's identity, made with the log (or on the first open of a log older than it). Two
    // processes opening a new log at once both insert; the one row kept is the one both read.
    const identity = this.db.prepare<[], { log_id: string }>('SELECT log_id FROM log_identity WHERE id = 1');
    if (identity.get() === undefined) {
      this.db
        .prepare('INSERT OR IGNORE INTO log_identity (id, log_id, created_at) VALUES (1, ?, ?)')
        .run(randomUUID(), Date.now());
    }
    this.identity = identity.get()!.log_id;
    addChains(this.db, options.chain);
    this.statements = {
      readStream: this.db
        .prepare<[string], EventRow>(`SELECT ${COLUMNS} FROM events WHERE stream_id = ? ORDER BY revision`)
        .raw(true),
      readAll: this.db
        .prepare<[number, number], EventRow>(`SELECT ${COLUMNS} FROM events WHERE position > ? ORDER BY position LIMIT ?`)
        .raw(true),
      readChain: this.db
        .prepare<[string, number, number], EventRow>(
          `SELECT ${COLUMNS} FROM events WHERE chain_id = ? AND position > ? ORDER BY position LIMIT ?`,
        )
        .raw(true),
      head: this.db.prepare('SELECT MAX(position) AS position FROM events'),
      chainHead: this.db.prepare(
        'SELECT chain_link AS head, position FROM events WHERE chain_id = ? ORDER BY position DESC LIMIT 1',
      ),
      chainCount: this.db.prepare('SELECT COUNT(*) AS events FROM events WHERE chain_id = ?'),
    };
    this.chain = options.chain;
    if (options.chain) {
      this.chainHead = (chainId) => this.readChainHead(chainId);
      this.readChain = async (chainId, after, limit) => this.statements.readChain.all(chainId, after, limit).map(toRecorded);
    }
    this.writer = startWriter({ path, groupCommit: options.groupCommit ?? true, chain: options.chain });
    this.writer.on('message', (results: FromWriter) => {
      if (results === 'closed') return;
      if (!Array.isArray(results)) return this.probeAnswered?.(results.probe);
      this.answered(results);
    });
    if (options.commitAloneHere !== undefined && path !== ':memory:') {
      // Never waits for the lock: another process's writer holding it sends the append to the writer thread, which does.
      const db = committingConnection(path);
      this.here = { db, commit: logCommitter(db, options.chain), allowed: options.commitAloneHere };
    }
    const failAll = (error: Error) => {
      this.writerStopped = error;
      this.failure = error;
      this.probeAnswered?.(error.message);
      for (const [id, pending] of this.pending) {
        this.pending.delete(id);
        pending.reject(error);
      }
    };
    this.writer.on('error', failAll);
    this.writer.on('exit', () => failAll(new Error('the event log writer stopped')));
  }

  append(
    streamId: string,
    events: NewEvent[],
    expected: ExpectedRevision,
    durability: Durability = 'disk',
  ): Promise<AppendResult> {
    if (this.closed) return Promise.reject(new Error('event store is closed'));
    if (this.writerStopped) return Promise.reject(this.writerStopped);
    if (events.length === 0) return Promise.reject(new Error('append needs at least one event'));
    // Encoded before anything is queued: data JSON cannot encode (a non-finite number in a chained
    // event) refuses the append alone.
    const encoded: WriterBatch = [];
    try {
      for (const event of events) {
        const chainId = this.chain === undefined ? null : chainIdOf(this.chain, event.type, event.data);
        // An event of a chain goes in canonical JSON, which the writer links as it is.
        encoded.push(event.type, chainId === null ? JSON.stringify(event.data) : canonicalJson(event.data), chainId);
      }
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      this.pending.set(id, { streamId, expected, events, resolve, reject });
      this.outgoing.push(id, streamId, expected, events.length, durability === 'disk' ? DISK : LOG_ONLY, ...encoded);
      this.outgoingAppends += 1;
      // A stream's first event (a reservation) waits the window for company, if one is set; one
      // that continues a stream (a settlement, which a reply's end awaits) goes at once.
      if (this.unanswered === 0) this.scheduleSend(expected === 'no_stream' ? this.commitWindowMs : 0);
    });
  }

  private scheduleSend(delayMs: number): void {
    if (this.sendScheduled) return;
    this.sendScheduled = true;
    const send = () => {
      this.sendScheduled = false;
      this.send();
    };
    if (delayMs > 0) setTimeout(send, delayMs);
    // Appends arriving together (the last batch held several: many requests at once): at the end of
    // this loop turn, so that those of the turn's other callbacks share the commit. One at a time
    // (one connection's requests): once the code running now is done, as a turn would add to its wait.
    else if (this.lastBatch > 1) setImmediate(send);
    else queueMicrotask(send);
  }

  /**
   * Sends the appends gathered to the writer thread. An append made alone while the writer is idle
   * (the last batch held one append too), when the owner allows (no other request being answered),
   * this thread commits itself: its caller waits for the commit either way, and the hop to the
   * writer and back, with a wake on each side, cost about as much as the commit. Appends made
   * together, or while a commit is under way, or while other requests are being answered, go to the
   * writer: a commit here blocks this thread for its fsync, and commits made here one by one would
   * never gather into one (group commit).
   */
  private send(): void {
    if (this.outgoingAppends === 0) return;
    const batch = this.outgoing;
    const appends = this.outgoingAppends;
    this.outgoing = [];
    this.outgoingAppends = 0;
    this.unanswered += appends;
    const alone = appends === 1 && this.lastBatch <= 1 && this.unanswered === 1 && this.probing === null;
    this.lastBatch = appends;
    if (alone && this.here !== null && !this.closed && this.here.allowed()) {
      const results = this.commitHere(batch);
      if (results !== null) return this.answered(results);
    }
    this.writer.postMessage(batch);
  }

  /** Commits `batch` on this thread's connection; null when another process holds the write lock (the writer thread waits for it). */
  private commitHere(batch: WriterBatch): WriterResults | null {
    try {
      return this.here!.commit(batch, 0, batch.length);
    } catch (error) {
      return isBusy(error) ? null : failedResults(batch, 0, batch.length, error);
    }
  }

  /** The results of appends committed (by the writer thread or this one). */
  private answered(results: WriterResults): void {
    this.unanswered -= results.length / RESULT_FIELDS;
    this.resolveAppends(results);
    if (this.unanswered > 0) return;
    if (this.outgoingAppends > 0) this.send();
    // What the answered appends' callers append next (their continuations run after this
    // handler) goes at the next turn: a caller waiting on its last append waits for no window.
    else this.scheduleSend(0);
  }

  /**
   * Resolves (or rejects) the appends the writer answered. What they committed is handed first to
   * the taker, so that an appender finds it applied as soon as it hears; then subscribers that have
   * not reached it are woken.
   */
  private resolveAppends(results: WriterResults): void {
    const committed: RecordedEvent[] = [];
    for (let at = 0; at < results.length; at += RESULT_FIELDS) {
      const pending = results[at + 1] === OK ? this.pending.get(results[at] as number) : undefined;
      if (pending)
        this.record(pending, results[at + 2] as number, results[at + 3] as number, results[at + 4] as number, committed);
    }
    if (committed.length > 0) {
      this.taker?.(committed);
      const last = committed[committed.length - 1].position;
      let behind = false;
      for (const cursor of this.cursors) behind ||= placeOf(cursor) < last;
      if (behind) {
        for (const event of committed) this.recent.push(event);
        if (this.recent.length > RECENT_LIMIT) this.recent = this.recent.slice(this.recent.length - RECENT_LIMIT / 2);
        // Only those behind: a projector that applied the batch as it committed is not woken for it.
        for (const cursor of this.cursors) if (placeOf(cursor) < last) cursor.waking.appended();
      }
    }
    for (let at = 0; at < results.length; at += RESULT_FIELDS) {
      const id = results[at] as number;
      const pending = this.pending.get(id);
      if (!pending) continue;
      this.pending.delete(id);
      const outcome = results[at + 1];
      if (outcome === OK) {
        this.failure = null;
        pending.resolve({ nextExpectedRevision: results[at + 2] as number, position: results[at + 3] as number });
      } else if (outcome === CONFLICT) {
        // The writer's transaction went through: a conflict says nothing against the store.
        this.failure = null;
        const actual = results[at + 2] as number | 'no_stream';
        pending.reject(new WrongExpectedRevisionError(pending.streamId, pending.expected, actual));
      } else {
        const reason = results[at + 2] as string;
        this.failure = new Error(reason);
        pending.reject(new Error(`append to ${pending.streamId} failed: ${reason}`));
      }
    }
  }

  /** The events of a committed append as recorded (positions in one commit are consecutive), onto `into`. */
  private record(append: PendingAppend, revision: number, position: number, recordedAt: number, into: RecordedEvent[]): void {
    const count = append.events.length;
    for (let i = 0; i < count; i++) {
      const event = append.events[i];
      const back = count - 1 - i;
      into.push({
        streamId: append.streamId,
        revision: revision - back,
        position: position - back,
        type: event.type,
        data: event.data,
        recordedAt,
      });
    }
  }

  onCommitted(taker: (events: RecordedEvent[]) => void): void {
    this.taker = taker;
  }

  /** Drops the events every subscription has taken. */
  private forgetTaken(): void {
    let taken = Infinity;
    for (const cursor of this.cursors) taken = Math.min(taken, placeOf(cursor));
    const recent = this.recent;
    let keep = 0;
    while (keep < recent.length && recent[keep].position <= taken) keep += 1;
    if (keep === recent.length) this.recent = [];
    else if (keep > 0) this.recent = recent.slice(keep);
  }

  /**
   * The events right after `after` from this process's own appends: a batch when they follow
   * on, 'gap' when some other process's events come first (read the file), null when none.
   */
  private fromRecent(after: number): RecordedEvent[] | 'gap' | null {
    const recent = this.recent;
    let low = 0;
    let high = recent.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (recent[mid].position <= after) low = mid + 1;
      else high = mid;
    }
    if (low === recent.length) return null;
    if (recent[low].position !== after + 1) return 'gap';
    let end = low + 1;
    while (end < recent.length && end - low < READ_BATCH && recent[end].position === recent[end - 1].position + 1) end += 1;
    return recent.slice(low, end);
  }

  async readStream(streamId: string): Promise<RecordedEvent[]> {
    return this.statements.readStream.all(streamId).map(toRecorded);
  }

  async readAll(after: number, limit: number): Promise<RecordedEvent[]> {
    return this.statements.readAll.all(after, limit).map(toRecorded);
  }

  async headPosition(): Promise<number> {
    return this.statements.head.get()?.position ?? 0;
  }

  lookNow(): void {
    for (const cursor of this.cursors) cursor.waking.look();
  }

  async *subscribe(after: number, signal: AbortSignal, reached?: () => number): AsyncIterable<RecordedEvent[]> {
    const waking = new Waking(signal, this.pollIntervalMs);
    const cursor: Cursor = { position: after, reached, waking };
    this.cursors.add(cursor);
    let readFile = true;
    try {
      while (!signal.aborted && !this.closed) {
        cursor.position = placeOf(cursor);
        const local = this.fromRecent(cursor.position);
        let batch: RecordedEvent[] = [];
        if (Array.isArray(local)) batch = local;
        else if (readFile || local === 'gap') batch = this.statements.readAll.all(cursor.position, READ_BATCH).map(toRecorded);
        if (batch.length > 0) {
          cursor.position = batch[batch.length - 1].position;
          this.forgetTaken();
          yield batch;
          continue;
        }
        // Woken by this process's own append, the file has nothing else worth reading yet.
        readFile = (await waking.next()) === 'poll';
      }
    } finally {
      waking.stop();
      this.cursors.delete(cursor);
      this.forgetTaken();
    }
  }

  /**
   * Null while appends succeed. After an append failed for a reason of the store (SQLITE_FULL on a
   * full disk, an I/O error, the writer stopped), the writer tries a small write of its own on each
   * call (one at a time, shared by concurrent callers), so that the answer turns null again as soon
   * as there is room, without an append having to succeed first.
   */
  async appendFailure(): Promise<Error | null> {
    if (this.failure === null || this.closed || this.writerStopped) return this.failure;
    this.probing ??= new Promise<Error | null>((resolve) => {
      this.probeAnswered = (reason) => {
        this.probeAnswered = null;
        this.probing = null;
        this.failure = reason === null ? null : new Error(reason);
        resolve(this.failure);
      };
      this.writer.postMessage('probe');
    });
    return this.probing;
  }

  private async readChainHead(chainId: string): Promise<{ head: string; position: number; events: number } | null> {
    const last = this.statements.chainHead.get(chainId);
    if (last === undefined) return null;
    return { ...last, events: this.statements.chainCount.get(chainId)!.events };
  }

  async logId(): Promise<string> {
    return this.identity;
  }

  async readLogId(): Promise<string | null> {
    return this.identity;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // The writer commits what it was given, then closes its connection (unless it has stopped already).
    this.send();
    if (this.writerStopped === null)
      await new Promise<void>((resolve) => {
        this.writer.on('message', (message: FromWriter) => message === 'closed' && resolve());
        this.writer.on('exit', () => resolve());
        this.writer.postMessage('close');
        // Do not wait forever for a writer that is stuck or gone.
        setTimeout(resolve, 10_000).unref();
      });
    await this.writer.terminate();
    for (const cursor of this.cursors) cursor.waking.appended();
    this.here?.db.close();
    this.db.close();
  }
}
