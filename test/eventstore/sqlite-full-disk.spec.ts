import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { SqliteEventStore } from '../../src/eventstore/sqlite-event-store';
import { describeWithSmallDisk, mountSmallDisk, SmallDisk } from '../support/small-disk';

const ev = (n: number) => ({ type: 'Happened', data: { n } });
const FULL = 'database or disk is full';

describeWithSmallDisk('the SQLite log on a full disk', () => {
  let disk: SmallDisk;
  let store: SqliteEventStore | null = null;
  const open = () => (store = new SqliteEventStore(join(disk.path, 'events.sqlite')));

  beforeAll(() => {
    disk = mountSmallDisk('sqlite-full-disk', 2);
  });
  afterEach(async () => {
    await store?.close();
    store = null;
    disk.free();
  });
  afterAll(() => disk?.unmount());

  it('refuses appends (SQLITE_FULL) and says it takes none; its write probe finds room again with no append; nothing lost', async () => {
    const log = open();
    await log.append('full-1', [ev(1)], 'no_stream');
    expect(await log.appendFailure()).toBeNull();
    disk.fill();

    await expect(log.append('full-1', [ev(2)], 0)).rejects.toThrow(FULL);
    // Still full: the probe's own write fails as the append did (asked twice at once, both hear it).
    const [first, second] = await Promise.all([log.appendFailure(), log.appendFailure()]);
    expect([first?.message, second?.message]).toEqual([FULL, FULL]);

    disk.free();
    expect(await log.appendFailure()).toBeNull();
    await log.append('full-1', [ev(2)], 0);
    expect((await log.readStream('full-1')).map((e) => e.data)).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it('closes on a full disk, and opens again with every event it took', async () => {
    const log = open();
    await log.append('full-2', [ev(1), ev(2)], 'no_stream');
    disk.fill();
    await expect(log.append('full-2', [ev(3)], 1)).rejects.toThrow(FULL);
    await log.close();

    disk.free();
    const again = open();
    expect((await again.readStream('full-2')).map((e) => e.data)).toEqual([{ n: 1 }, { n: 2 }]);
    expect(await again.appendFailure()).toBeNull();
  });

  it('refuses appends at once, never leaving them waiting, once its writer thread has stopped (as a crash of it would)', async () => {
    const log = open();
    await log.append('full-3', [ev(1)], 'no_stream');
    await (log as unknown as { writer: Worker }).writer.terminate();
    await expect(log.append('full-3', [ev(2)], 0)).rejects.toThrow('the event log writer stopped');
    expect((await log.appendFailure())?.message).toBe('the event log writer stopped');
  });
});
