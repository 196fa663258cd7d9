import Database from 'better-sqlite3';
import { copyFileSync, readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { join } from 'node:path';
import { type ChainRule, chainGenesis, chainLink } from '../../src/eventstore/event-chain';
import { SqliteEventStore } from '../../src/eventstore/sqlite-event-store';
import { ROOT, startNode } from '../support/processes';
import { tempDir } from '../support/temp';
import { describeEventStoreContract } from './event-store.contract';

const dir = tempDir('sqlite-contract');
afterAll(() => dir.cleanup());

describeEventStoreContract('SQLite', async () => new SqliteEventStore(join(dir.path, 'contract.sqlite'), { pollIntervalMs: 20 }));
describeEventStoreContract(
  'SQLite, an append made alone committed on the calling thread',
  async () => new SqliteEventStore(join(dir.path, 'contract-here.sqlite'), { pollIntervalMs: 20, commitAloneHere: () => true }),
);

const WORKER = join(ROOT, 'test/support/workers/append-worker.js');

/** The nice value of each of this process's threads (Linux /proc). */
function threadNiceValues(): number[] {
  return readdirSync('/proc/self/task').map((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  });
}

(process.platform === 'linux' ? it : it.skip)(
  'runs its writer thread, and only it, at a lower CPU priority (Linux)',
  async () => {
    const before = threadNiceValues().filter((nice) => nice === 10).length;
    const ownBefore = getPriority();
    const store = new SqliteEventStore(join(dir.path, 'priority.sqlite'));
    await store.append('priority-1', [{ type: 'Tick', data: {} }], 'no_stream');
    expect(threadNiceValues().filter((nice) => nice === 10).length).toBe(before + 1);
    expect(getPriority()).toBe(ownBefore);
    await store.close();
  },
);

describe('SQLite log identity', () => {
  it('is made with the log: the same for every process on the file and for a copy of it (a backup), another for another file', async () => {
    const file = join(dir.path, 'identity.sqlite');
    const [one, two] = [new SqliteEventStore(file), new SqliteEventStore(file)];
    const id = await one.logId();
    expect(await two.logId()).toBe(id);
    await one.append('identity-1', [{ type: 'Tick', data: {} }], 'no_stream');
    await Promise.all([one.close(), two.close()]);
    copyFileSync(file, join(dir.path, 'identity-backup.sqlite'));
    const [reopened, restored, other] = [
      file,
      join(dir.path, 'identity-backup.sqlite'),
      join(dir.path, 'identity-other.sqlite'),
    ].map((path) => new SqliteEventStore(path));
    try {
      expect(await reopened.logId()).toBe(id);
      expect(await restored.logId()).toBe(id);
      expect(await other.logId()).not.toBe(id);
    } finally {
      await Promise.all([reopened.close(), restored.close(), other.close()]);
    }
  });
});

describe('SQLite: one chain read through its index', () => {
  const chain = { types: ['Charged'], by: 'orgId' };

  it('reads the events of one chain after a position, in log order, with their links, and no other', async () => {
    const store = new SqliteEventStore(join(dir.path, 'read-chain.sqlite'), { chain });
    try {
      // Three organizations' charges interleaved, and events outside every chain between them.
      for (let i = 0; i < 30; i++) {
        const orgId = ['a', 'b', 'c'][i % 3];
        await store.append(`charge-${i}`, [{ type: 'Charged', data: { orgId, amount: i } }], 'no_stream');
        if (i % 4 === 0) await store.append(`note-${i}`, [{ type: 'Noted', data: { orgId } }], 'no_stream');
      }
      const all = await store.readAll(0, 1_000);
      const ofB = all.filter((e) => e.type === 'Charged' && (e.data as { orgId: string }).orgId === 'b');
      expect(ofB).toHaveLength(10);
      expect(await store.readChain!('b', 0, 1_000)).toEqual(ofB);
      expect((await store.readChain!('b', 0, 1_000)).every((e) => typeof e.chainLink === 'string')).toBe(true);
      // After a position that is not one of the chain's, and at most `limit`.
      expect(await store.readChain!('b', ofB[3].position - 1, 4)).toEqual(ofB.slice(3, 7));
      expect(await store.readChain!('b', ofB[9].position, 10)).toEqual([]);
      expect(await store.readChain!('nobody', 0, 10)).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('is not offered by a log without a chain rule (it indexes no chain)', async () => {
    const store = new SqliteEventStore(join(dir.path, 'no-chain.sqlite'));
    try {
      expect(store.readChain).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});

it('refuses an append whose event cannot be encoded, alone: the appends around it go in', async () => {
  const chain = { types: ['Charged'], by: 'orgId' };
  const store = new SqliteEventStore(join(dir.path, 'unencodable.sqlite'), { chain });
  try {
    const before = store.append('encode-a', [{ type: 'Charged', data: { orgId: 'o', amount: 1 } }], 'no_stream');
    // A chained event is encoded in canonical JSON, which has no form for a non-finite number.
    const refused = store.append('encode-b', [{ type: 'Charged', data: { orgId: 'o', amount: Infinity } }], 'no_stream');
    const after = store.append('encode-c', [{ type: 'Charged', data: { orgId: 'o', amount: 2 } }], 'no_stream');
    await expect(refused).rejects.toThrow(TypeError);
    const [a, c] = await Promise.all([before, after]);
    expect(c.position).toBe(a.position + 1);
    expect((await store.readAll(0, 10)).map((e) => e.streamId)).toEqual(['encode-a', 'encode-c']);
    expect(await store.appendFailure()).toBeNull();
  } finally {
    await store.close();
  }
});

describe('SQLite: an append made alone, committed on the calling thread', () => {
  /** A store whose calling thread may commit while `allowed.now`; `posts` counts the batches sent to its writer thread. */
  function storeWithPosts(name: string, chain?: ChainRule) {
    const allowed = { now: true };
    const store = new SqliteEventStore(join(dir.path, name), { chain, commitAloneHere: () => allowed.now });
    const writer = (store as unknown as { writer: { postMessage(message: unknown): void } }).writer;
    const posts = jest.spyOn(writer, 'postMessage');
    return { store, allowed, batchesSent: () => posts.mock.calls.filter(([message]) => Array.isArray(message)).length };
  }

  it('commits there only when alone and allowed: appends made together, or not allowed, go to the writer thread', async () => {
    const { store, allowed, batchesSent } = storeWithPosts('alone.sqlite');
    try {
      // One at a time, allowed: no batch reaches the writer.
      for (let i = 0; i < 3; i++) await store.append('alone-a', [{ type: 'Tick', data: { i } }], i === 0 ? 'no_stream' : i - 1);
      expect(batchesSent()).toBe(0);
      // Not allowed (another request being answered): the writer commits it.
      allowed.now = false;
      await store.append('alone-a', [{ type: 'Tick', data: { i: 3 } }], 2);
      expect(batchesSent()).toBe(1);
      // Allowed, but made together: one batch to the writer, one commit for all.
      allowed.now = true;
      await Promise.all(['b', 'c', 'd'].map((s) => store.append(`alone-${s}`, [{ type: 'Tick', data: {} }], 'no_stream')));
      expect(batchesSent()).toBe(2);
      // Alone again after a batch of several: the first goes to the writer (the load may go on), the next is committed here.
      await store.append('alone-e', [{ type: 'Tick', data: {} }], 'no_stream');
      await store.append('alone-f', [{ type: 'Tick', data: {} }], 'no_stream');
      expect(batchesSent()).toBe(3);
      const all = await store.readAll(0, 100);
      expect(all.map((e) => e.position)).toEqual(all.map((_, i) => i + 1));
      expect((await store.readStream('alone-a')).map((e) => (e.data as { i: number }).i)).toEqual([0, 1, 2, 3]);
    } finally {
      await store.close();
    }
  });

  it("keeps every chain's links exact when its commits alternate between the two threads", async () => {
    const chain = { types: ['Charged'], by: 'orgId' };
    const { store, allowed, batchesSent } = storeWithPosts('alternate.sqlite', chain);
    try {
      for (let i = 0; i < 40; i++) {
        allowed.now = i % 3 !== 0;
        await store.append(`charge-${i}`, [{ type: 'Charged', data: { orgId: `org-${i % 2}`, amount: i } }], 'no_stream');
      }
      expect(batchesSent()).toBe(14);
      const events = await store.readAll(0, 100);
      const heads = new Map<string, string>();
      for (const event of events) {
        const orgId = (event.data as { orgId: string }).orgId;
        const link = chainLink(heads.get(orgId) ?? chainGenesis(orgId), event);
        expect(event.chainLink).toBe(link);
        heads.set(orgId, link);
      }
      expect(events).toHaveLength(40);
    } finally {
      await store.close();
    }
  });

  it("answers a failed commit there as the writer would: the append is refused with the database's message", async () => {
    const { store } = storeWithPosts('failing.sqlite');
    const other = new Database(join(dir.path, 'failing.sqlite'));
    try {
      await store.append('failing', [{ type: 'Tick', data: {} }], 'no_stream');
      // A trigger of another connection's making refuses the next insert inside the transaction.
      other.exec(
        "CREATE TRIGGER refuse BEFORE INSERT ON events WHEN NEW.stream_id = 'refused' BEGIN SELECT RAISE(ABORT, 'refused here'); END",
      );
      await expect(store.append('refused', [{ type: 'Tick', data: {} }], 'no_stream')).rejects.toThrow(
        'append to refused failed: refused here',
      );
      expect(await store.append('failing', [{ type: 'Tick', data: {} }], 0)).toMatchObject({ nextExpectedRevision: 1 });
    } finally {
      other.close();
      await store.close();
    }
  });
});

describe('SQLite commit window', () => {
  // The window runs on Jest's clock: it ends when the test moves the clock, however fast the
  // machine commits. The writer's answers and the event loop's turns stay real.
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] }));
  afterEach(() => {
    // A window still open (a test that failed) ends, so that its store can close.
    jest.runOnlyPendingTimers();
    jest.useRealTimers();
  });
  const tick = [{ type: 'Tick', data: {} }];

  it('holds an append made while the writer is idle for the window, and commits what came meanwhile with it', async () => {
    const file = join(dir.path, 'window.sqlite');
    const store = new SqliteEventStore(file, { commitWindowMs: 200 });
    const other = new SqliteEventStore(file, { commitWindowMs: 0 });
    try {
      const answered: string[] = [];
      const first = store.append('window-a', tick, 'no_stream').then((result) => {
        answered.push('a');
        setImmediate(() => answered.push('next turn'));
        return result;
      });
      jest.advanceTimersByTime(150);
      // Another writer commits to the same file while the window is open: the first append, made before it, is still held.
      const between = await other.append('window-other', tick, 'no_stream');
      expect(answered).toEqual([]);
      const second = store.append('window-b', tick, 'no_stream').then((result) => {
        answered.push('b');
        return result;
      });
      jest.advanceTimersByTime(50);
      const [a, b] = await Promise.all([first, second]);
      expect(between.position).toBeLessThan(a.position);
      expect(b.position).toBe(a.position + 1);
      // One commit: the writer answered both in one message, before the event loop turned.
      await new Promise((done) => setImmediate(done));
      expect(answered).toEqual(['a', 'b', 'next turn']);
    } finally {
      await Promise.all([store.close(), other.close()]);
    }
  });

  it('does not hold what a caller appends as soon as its previous append is committed', async () => {
    const store = new SqliteEventStore(join(dir.path, 'window-chain.sqlite'), { commitWindowMs: 300 });
    try {
      const opened = store.append('chain', [{ type: 'Reserved', data: {} }], 'no_stream');
      jest.advanceTimersByTime(300);
      await opened;
      // The clock stands still from here on: the append commits without any window ending.
      await store.append('chain', [{ type: 'Settled', data: {} }], 0);
      expect((await store.readStream('chain')).map((e) => e.type)).toEqual(['Reserved', 'Settled']);
    } finally {
      await store.close();
    }
  });
});

describe('SQLite event store across processes', () => {
  const tmp = tempDir('sqlite-procs');
  afterAll(() => tmp.cleanup());

  it('sees events appended by another process, live, within a second', async () => {
    const file = join(tmp.path, 'live.sqlite');
    const store = new SqliteEventStore(file, { pollIntervalMs: 50 });
    const abort = new AbortController();
    const seen: string[] = [];
    const following = (async () => {
      for await (const batch of store.subscribe(0, abort.signal)) {
        for (const e of batch) seen.push(`${(e.data as { tag: string }).tag}:${(e.data as { i: number }).i}`);
        if (seen.length >= 20) abort.abort();
      }
    })();
    const child = startNode(WORKER, [file, '20', 'other']);
    await child.waitForLine('done');
    const start = Date.now();
    await following;
    expect(Date.now() - start).toBeLessThan(1000);
    expect(seen).toHaveLength(20);
    await store.close();
  });

  it("hands its own appends to its subscribers, in log order with another writer's events in between", async () => {
    const file = join(tmp.path, 'interleaved.sqlite');
    const ours = new SqliteEventStore(file, { pollIntervalMs: 20 });
    const theirs = new SqliteEventStore(file, { pollIntervalMs: 20 });
    const abort = new AbortController();
    const seen: Array<{ position: number; revision: number; streamId: string; i: number }> = [];
    const following = (async () => {
      for await (const batch of ours.subscribe(0, abort.signal)) {
        for (const e of batch)
          seen.push({ position: e.position, revision: e.revision, streamId: e.streamId, i: (e.data as { i: number }).i });
        if (seen.length >= 30) abort.abort();
      }
    })();
    for (let i = 0; i < 30; i += 3) {
      await ours.append(
        'ours',
        [
          { type: 'Tick', data: { i } },
          { type: 'Tick', data: { i: i + 1 } },
        ],
        'any',
      );
      await theirs.append('theirs', [{ type: 'Tick', data: { i: i + 2 } }], 'any');
    }
    await following;
    expect(seen.map((e) => e.position)).toEqual(Array.from({ length: 30 }, (_, k) => k + 1));
    expect(seen.map((e) => e.i)).toEqual(Array.from({ length: 30 }, (_, k) => k));
    // What the subscriber was handed is what the file holds.
    const stored = (await ours.readAll(0, 100)).map((e) => ({
      position: e.position,
      revision: e.revision,
      streamId: e.streamId,
      i: (e.data as { i: number }).i,
    }));
    expect(seen).toEqual(stored);
    await Promise.all([ours.close(), theirs.close()]);
  });

  it.each([
    ['on the writer thread', false],
    ['made alone, allowed on the calling thread: the writer thread waits', true],
  ])("waits for another writer's transaction to end, then commits (no busy error): %s", async (_, here) => {
    const file = join(tmp.path, `locked-${here}.sqlite`);
    const store = new SqliteEventStore(file, { commitAloneHere: here ? () => true : undefined });
    try {
      await store.append('locked', [{ type: 'Tick', data: { i: 0 } }], 'no_stream');
      // Another process's writer, holding the write lock.
      const other = new Database(file);
      other.exec('BEGIN IMMEDIATE');
      let committed = false;
      const appending = store.append('locked', [{ type: 'Tick', data: { i: 1 } }], 0).then((result) => {
        committed = true;
        return result;
      });
      // The writer has tried and is waiting: what is read now is still one event.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(committed).toBe(false);
      expect(await store.readStream('locked')).toHaveLength(1);
      other.exec('COMMIT');
      other.close();
      expect((await appending).nextExpectedRevision).toBe(1);
      expect((await store.readStream('locked')).map((e) => (e.data as { i: number }).i)).toEqual([0, 1]);
      expect(await store.appendFailure()).toBeNull();
    } finally {
      await store.close();
    }
  });

  it('keeps revisions exact with three processes racing for the same streams', async () => {
    const file = join(tmp.path, 'race.sqlite');
    await new SqliteEventStore(file).close();
    // Two of them commit on their main threads, one on its writer thread.
    const children = ['a', 'b', 'c'].map((tag) => startNode(WORKER, [file, '150', tag, tag === 'b' ? 'writer' : 'here']));
    await Promise.all(children.map((c) => c.waitForLine('done', 60_000)));
    const store = new SqliteEventStore(file);
    let total = 0;
    for (let s = 0; s < 5; s++) {
      const events = await store.readStream(`shared-${s}`);
      expect(events.map((e) => e.revision)).toEqual(events.map((_, i) => i));
      total += events.length;
    }
    expect(total).toBe(450);
    await store.close();
  });

  it.each([
    ['writer', 'writer'],
    ['main', 'here'],
  ])('leaves no torn event when a writer is killed mid-burst (committing on its %s thread)', async (_, where) => {
    const file = join(tmp.path, `crash-${where}.sqlite`);
    const child = startNode(WORKER, [file, '100000', 'doomed', where]);
    await child.waitForLine('appending');
    child.process.kill('SIGKILL');
    await child.exited();

    // Every row intact: valid JSON and contiguous revisions per stream; the log still accepts appends.
    const raw = new Database(file, { readonly: true });
    const rows = raw.prepare('SELECT stream_id, revision, data FROM events ORDER BY position').all() as Array<{
      stream_id: string;
      revision: number;
      data: string;
    }>;
    raw.close();
    expect(rows.length).toBeGreaterThan(10);
    const next = new Map<string, number>();
    for (const row of rows) {
      expect(JSON.parse(row.data)).toMatchObject({ tag: 'doomed' });
      expect(row.revision).toBe(next.get(row.stream_id) ?? 0);
      next.set(row.stream_id, row.revision + 1);
    }
    const store = new SqliteEventStore(file);
    const after = await store.append('shared-0', [{ type: 'After', data: {} }], (next.get('shared-0') ?? 0) - 1);
    expect(after.nextExpectedRevision).toBe(next.get('shared-0'));
    await store.close();
  });
});
