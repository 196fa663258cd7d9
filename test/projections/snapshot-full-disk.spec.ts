import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RecordedEvent } from '../../src/eventstore/event-store';
import { MemoryProjectionStore } from '../../src/projections/memory-projection-store';
import { describeWithSmallDisk, mountSmallDisk, SmallDisk } from '../support/small-disk';

const grant = (position: number): RecordedEvent => ({
  streamId: 'credits-org-1',
  revision: position - 1,
  position,
  recordedAt: 0,
  type: 'CreditsGranted',
  data: { orgId: 'org-1', grantId: `g${position}`, amount: 1000, reason: 'test', grantedAt: 0 },
});

describeWithSmallDisk('in-process read models saved on a full disk', () => {
  let disk: SmallDisk;
  const file = () => join(disk.path, 'read-models.snapshot.json');
  const partials = () => readdirSync(disk.path).filter((f) => f.endsWith('.partial'));
  const savedPosition = () => (JSON.parse(readFileSync(file(), 'utf8')) as { position: number }).position;

  beforeAll(() => {
    disk = mountSmallDisk('snapshot-full-disk', 1);
  });
  afterEach(() => disk.free());
  afterAll(() => disk?.unmount());

  it('a periodic save that fails removes what it wrote', async () => {
    const store = new MemoryProjectionStore(10, { file: file(), everyMs: 0, logId: 'test-log' });
    disk.fill();
    await store.apply([grant(1)]);
    // Waits for the save in flight (and writes nothing itself).
    await store.reset();
    expect(partials()).toEqual([]);
  });

  it('the save on close fails with what it costs (the next start replays the log), removes what it wrote, and leaves the last save; with room, it saves', async () => {
    const store = new MemoryProjectionStore(10, { file: file(), everyMs: 60_000, logId: 'test-log' });
    await store.apply([grant(1)]);
    await store.close();
    expect(savedPosition()).toBe(1);

    await store.apply([grant(2)]);
    disk.fill();
    await expect(store.close()).rejects.toThrow(
      /^read models not saved \(ENOSPC: no space left on device, write\): the next start replays the log from their last save$/,
    );
    expect(partials()).toEqual([]);
    expect(savedPosition()).toBe(1);

    disk.free();
    await store.close();
    expect(savedPosition()).toBe(2);
  });
});
