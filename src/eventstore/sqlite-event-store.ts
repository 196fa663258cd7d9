import Database from 'better-sqlite3';
import { EventEmitter, once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  AppendResult,
  EventStore,
  ExpectedRevision,
  NewEvent,
  RecordedEvent,
  WrongExpectedRevisionError,
} from './event-store';

/** position, stream_id, revision, type, data, recorded_at: read as arrays, which is faster in a replay. */
type EventRow = [number, string, number, string, string, number];
const COLUMNS = 'position, stream_id, revision, type, data, recorded_at';

interface PendingAppend {
  streamId: string;
  events: NewEvent[];
  expected: ExpectedRevision;
  resolve: (result: AppendResult) => void;
  reject: (error: unknown) => void;
}

export interface SqliteEventStoreOptions {
  /** How often to look for events appended by other processes while following the log. */
  pollIntervalMs?: number;
  /** Commit appends of one event-loop turn together (default). Off: one commit per append. */
  groupCommit?: boolean;
}

const toRecorded = (row: EventRow): RecordedEvent => ({
  streamId: row[1],
  revision: row[2],
  position: row[0],
  type: row[3],
  data: JSON.parse(row[4]),
  recordedAt: row[5],
});

/**
 * The embedded event log: one SQLite file in WAL mode with full fsync on commit, so an append
 * is durable when its promise resolves and a killed process never leaves a torn event.
 * Appends issued in the same turn of the event loop are committed together in one
 * transaction (group commit); each keeps its own optimistic-concurrency check.
 * Several processes may share the file: SQLite serialises their writers.
 */
export class SqliteEventStore implements EventStore {
  private readonly db: Database.Database;
  private readonly appended = new EventEmitter();
  private readonly pollIntervalMs: number;
  private readonly groupCommit: boolean;
  private queue: PendingAppend[] = [];
  private flushScheduled = false;
  private closed = false;
  private readonly statements: {
    streamRevision: Database.Statement<[string], { revision: number | null }>;
    insert: Database.Statement<[string, number, string, string, number]>;
    readStream: Database.Statement<[string], EventRow>;
    readAll: Database.Statement<[number, number], EventRow>;
    head: Database.Statement<[], { position: number | null }>;
  };

  constructor(path: string, options: SqliteEventStoreOptions = {}) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.pollIntervalMs = options.pollIntervalMs ?? 100;
    this.groupCommit = options.groupCommit ?? true;
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
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
    `);
    this.appended.setMaxListeners(0);
    this.statements = {
      streamRevision: this.db.prepare('SELECT MAX(revision) AS revision FROM events WHERE stream_id = ?'),
      insert: this.db.prepare(
        'INSERT INTO events (stream_id, revision, type, data, recorded_at) VALUES (?, ?, ?, ?, ?)',
      ),
      readStream: this.db.prepare<[string], EventRow>(`SELECT ${COLUMNS} FROM events WHERE stream_id = ? ORDER BY revision`).raw(true),
      readAll: this.db.prepare<[number, number], EventRow>(`SELECT ${COLUMNS} FROM events WHERE position > ? ORDER BY position LIMIT ?`).raw(true),
      head: this.db.prepare('SELECT MAX(position) AS position FROM events'),
    };
  }

  append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (this.closed) return Promise.reject(new Error('event store is closed'));
    if (events.length === 0) return Promise.reject(new Error('append needs at least one event'));
    return new Promise((resolve, reject) => {
      this.queue.push({ streamId, events, expected, resolve, reject });
      if (!this.groupCommit) this.flush();
      else if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0 || this.closed) return;
    const outcomes: Array<{ ok: AppendResult } | { error: unknown }> = [];
    try {
      this.db.transaction(() => {
        for (const pending of batch) outcomes.push(this.tryAppend(pending));
      }).immediate();
    } catch (error) {
      for (const pending of batch) pending.reject(error);
      return;
    }
    batch.forEach((pending, i) => {
      const outcome = outcomes[i];
      if ('ok' in outcome) pending.resolve(outcome.ok);
      else pending.reject(outcome.error);
    });
    this.appended.emit('append');
  }

  /** Runs inside the batch's transaction; a conflict fails this append only. */
  private tryAppend({ streamId, events, expected }: PendingAppend): { ok: AppendResult } | { error: unknown } {
    const current = this.statements.streamRevision.get(streamId)?.revision ?? null;
    const actual = current === null ? 'no_stream' : current;
    if (expected !== 'any' && expected !== actual) {
      return { error: new WrongExpectedRevisionError(streamId, expected, actual) };
    }
    let revision = current ?? -1;
    let position = 0;
    const now = Date.now();
    for (const event of events) {
      revision += 1;
      const info = this.statements.insert.run(streamId, revision, event.type, JSON.stringify(event.data), now);
      position = Number(info.lastInsertRowid);
    }
    return { ok: { nextExpectedRevision: revision, position } };
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

  async *subscribe(after: number, signal: AbortSignal): AsyncIterable<RecordedEvent[]> {
    let position = after;
    while (!signal.aborted && !this.closed) {
      const batch = this.statements.readAll.all(position, 1000).map(toRecorded);
      if (batch.length > 0) {
        position = batch[batch.length - 1].position;
        yield batch;
        continue;
      }
      await this.nextAppendOrPoll(signal);
    }
  }

  /** Wakes on an append by this process, or after the poll interval for other processes. */
  private async nextAppendOrPoll(signal: AbortSignal): Promise<void> {
    const timeout = AbortSignal.timeout(this.pollIntervalMs);
    try {
      await once(this.appended, 'append', { signal: AbortSignal.any([signal, timeout]) });
    } catch {
      // aborted or poll interval elapsed: either way, look again
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.queue.length > 0) this.flush();
    this.closed = true;
    this.appended.emit('append');
    this.db.close();
  }
}
