import { join } from 'node:path';
import type { RecordedEvent } from '../../src/eventstore/event-store';
import { SqliteEventStore } from '../../src/eventstore/sqlite-event-store';
import { MemoryProjectionStore } from '../../src/projections/memory-projection-store';
import { Projector } from '../../src/projections/projector';
import type { ReadModel } from '../../src/projections/read-model';
import { tempDir } from '../support/temp';

/**
 * Read models that find themselves lost (Redis emptied) and rebuild while events keep coming: the
 * projector applies no batch under its own rebuild, which would be overwritten by the fold it loads.
 */
class RebuildingStore extends MemoryProjectionStore {
  lost = false;
  loading = false;
  appliedWhileLoading = false;
  loadStarted: () => void = () => {};
  letLoadEnd: Promise<void> = Promise.resolve();

  async present(): Promise<boolean> {
    return !this.lost;
  }

  async load(model: ReadModel): Promise<void> {
    this.loading = true;
    this.loadStarted();
    await this.letLoadEnd;
    await super.load(model);
    this.loading = false;
    this.lost = false;
  }

  async apply(events: RecordedEvent[]): Promise<number> {
    if (this.loading) this.appliedWhileLoading = true;
    return super.apply(events);
  }
}

it('applies no batch while it rebuilds the read models; what arrived meanwhile is applied after', async () => {
  const dir = tempDir('projector');
  const events = new SqliteEventStore(join(dir.path, 'events.sqlite'));
  // The log as the projector follows it, telling the test when a batch has been handed to the projector.
  let handedOver: (position: number) => void = () => {};
  const followed = Object.assign(Object.create(events) as SqliteEventStore, {
    async *subscribe(after: number, signal: AbortSignal) {
      for await (const batch of events.subscribe(after, signal)) {
        handedOver(batch[batch.length - 1].position);
        yield batch;
      }
    },
  });
  const store = new RebuildingStore(10);
  const projector = new Projector(followed, store, 10);
  try {
    const created = (orgId: string) => [{ type: 'OrganizationCreated', data: { orgId, name: orgId, createdAt: 1 } }];
    await events.append('org-a', created('a'), 'no_stream');
    await projector.start();
    await projector.catchUp();

    // The read models are lost: the presence probe rebuilds them, and the load waits.
    let letLoadEnd: () => void = () => {};
    store.letLoadEnd = new Promise<void>((resolve) => (letLoadEnd = resolve));
    const loading = new Promise<void>((resolve) => (store.loadStarted = resolve));
    store.lost = true;
    await loading;
    // An event arrives while the fold is being loaded: the projector has it, and waits for the load.
    const received = new Promise<number>((resolve) => (handedOver = resolve));
    const { position } = await events.append('org-b', created('b'), 'no_stream');
    expect(await received).toBe(position);
    const applied = projector.waitFor(position);
    await new Promise((resolve) => setImmediate(resolve));
    expect(store.appliedWhileLoading).toBe(false);
    letLoadEnd();
    await applied;
    expect(store.appliedWhileLoading).toBe(false);
    expect(await store.organization('b')).toMatchObject({ name: 'b' });
  } finally {
    await projector.stop();
    await events.close();
    dir.cleanup();
  }
});

it('refuses to start, naming the mismatch, when read models of another log cannot be rebuilt', async () => {
  const dir = tempDir('projector-refuses');
  const events = new SqliteEventStore(join(dir.path, 'events.sqlite'));
  const store = Object.assign(new MemoryProjectionStore(10), {
    origin: async () => ({ logId: 'another-log', position: 3, ofThisVersion: true }),
    load: async () => {
      throw new Error('ENOSPC: no space left on device');
    },
  });
  const projector = new Projector(events, store, 10);
  try {
    await events.append('org-a', [{ type: 'OrganizationCreated', data: { orgId: 'a', name: 'a', createdAt: 1 } }], 'no_stream');
    await expect(projector.start()).rejects.toThrow(
      `the read models are of another log (another-log; this log is ${await events.logId()}), and they could not be rebuilt from the log: ENOSPC: no space left on device`,
    );
  } finally {
    await projector.stop();
    await events.close();
    dir.cleanup();
  }
});

/** In-process read models that note every position they are given, however it reaches them. */
class CountingStore extends MemoryProjectionStore {
  readonly given: number[] = [];

  applyNow(events: RecordedEvent[]): void {
    for (const event of events) this.given.push(event.position);
    super.applyNow(events);
  }
}

describe('read models in this process', () => {
  const created = (orgId: string) => [{ type: 'OrganizationCreated', data: { orgId, name: orgId, createdAt: 1 } }];

  it('show what this process appends once its append resolves, each event given once', async () => {
    const dir = tempDir('projector');
    const events = new SqliteEventStore(join(dir.path, 'events.sqlite'));
    const store = new CountingStore(10);
    const projector = new Projector(events, store, 10);
    try {
      await events.append('org-a', created('a'), 'no_stream');
      await projector.start();
      const appended = await Promise.all(['b', 'c', 'd'].map((id) => events.append(`org-${id}`, created(id), 'no_stream')));
      const last = Math.max(...appended.map((a) => a.position));
      // No wait: applied as it committed, before the appenders heard.
      expect(projector.position).toBe(last);
      expect(await store.organization('d')).toMatchObject({ name: 'd' });
      // The subscription, woken by the poll, is not handed them again.
      await new Promise((resolve) => setTimeout(resolve, 250));
      // (The first was in the log before the start: folded in at start, not given.)
      expect(store.given).toEqual([2, 3, 4]);
    } finally {
      await projector.stop();
      await events.close();
      dir.cleanup();
    }
  });

  it("apply another process's events between this process's in log order, each once", async () => {
    const dir = tempDir('projector');
    const file = join(dir.path, 'events.sqlite');
    const events = new SqliteEventStore(file, { pollIntervalMs: 60_000 });
    const other = new SqliteEventStore(file);
    const store = new CountingStore(10);
    const projector = new Projector(events, store, 10);
    try {
      await projector.start();
      await events.append('org-a', created('a'), 'no_stream');
      await other.append('org-b', created('b'), 'no_stream');
      // Follows the other's event, which this process has not applied: it is read from the file (no poll needed).
      const { position } = await events.append('org-c', created('c'), 'no_stream');
      await projector.waitFor(position, 5_000);
      expect(store.given).toEqual([1, 2, 3]);
      expect(await store.organization('b')).toMatchObject({ name: 'b' });
      const next = await events.append('org-d', created('d'), 'no_stream');
      expect(projector.position).toBe(next.position);
      expect(store.given).toEqual([1, 2, 3, 4]);
    } finally {
      await projector.stop();
      await other.close();
      await events.close();
      dir.cleanup();
    }
  });
});
