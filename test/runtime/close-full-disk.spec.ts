import { readdirSync } from 'node:fs';
import { loadConfig } from '../../src/config/config';
import { openRuntime } from '../../src/runtime/runtime';
import { fundedOrganization } from '../support/runtime';
import { describeWithSmallDisk, mountSmallDisk, SmallDisk } from '../support/small-disk';

describeWithSmallDisk('closing the runtime on a full disk', () => {
  let disk: SmallDisk;

  beforeAll(() => {
    disk = mountSmallDisk('runtime-full-disk', 2);
  });
  afterAll(() => {
    disk?.free();
    disk?.unmount();
  });

  it('says the read models were not saved, closes the log all the same, and the next start replays what the save lacked', async () => {
    const env = { DATA_DIR: disk.path, REDIS_URL: '' };
    const lines: string[] = [];
    // At error: what the save would have kept is lost (the next start replays the log instead).
    const runtime = await openRuntime(loadConfig(env), {
      log: { info: () => undefined, warn: () => undefined, error: (line) => lines.push(line) },
    });
    const orgId = await fundedOrganization(runtime, 5_000_000);
    disk.fill();

    await runtime.close();
    expect(lines).toContainEqual(expect.stringMatching(/^read models not saved \(ENOSPC.*\): the next start replays the log/));
    await expect(runtime.events.append('after-close', [{ type: 'Late', data: {} }], 'no_stream')).rejects.toThrow(
      'event store is closed',
    );
    expect(readdirSync(disk.path).filter((f) => f.endsWith('.partial'))).toEqual([]);

    disk.free();
    const again = await openRuntime(loadConfig(env));
    try {
      await again.projector.catchUp();
      expect((await again.projections.balance(orgId)).granted).toBe(5_000_000);
    } finally {
      await again.close();
    }
  });
});
