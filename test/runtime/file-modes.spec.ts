import Database from 'better-sqlite3';
import { chmodSync, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/config';
import { openRuntime } from '../../src/runtime/runtime';
import { fundedOrganization } from '../support/runtime';
import { tempDir } from '../support/temp';

/** The data directory's files hold password hashes (the log) and everything folded from it: owner-only, whatever the umask. */
const mode = (path: string) => statSync(path).mode & 0o777;

describe('the data files are readable by their owner only', () => {
  let umask: number;
  beforeAll(() => (umask = process.umask(0o022)));
  afterAll(() => process.umask(umask));

  it('makes the log, its -wal and -shm, the saved read models and the serving lock 0600', async () => {
    const dir = tempDir('modes');
    try {
      const runtime = await openRuntime(loadConfig({ DATA_DIR: dir.path, REDIS_URL: '' }), { serving: true });
      await fundedOrganization(runtime, 1_000);
      const log = join(dir.path, 'events.sqlite');
      for (const file of [log, `${log}-wal`, `${log}-shm`, join(dir.path, 'serving.lock')]) {
        expect([file, mode(file)]).toEqual([file, 0o600]);
      }
      await runtime.close();
      const snapshot = join(dir.path, 'read-models.snapshot.json');
      expect(existsSync(snapshot)).toBe(true);
      expect(mode(snapshot)).toBe(0o600);
    } finally {
      dir.cleanup();
    }
  });

  it('tightens a log an earlier version made world-readable', async () => {
    const dir = tempDir('modes-earlier');
    try {
      const log = join(dir.path, 'events.sqlite');
      new Database(log).close();
      chmodSync(log, 0o644);
      const runtime = await openRuntime(loadConfig({ DATA_DIR: dir.path, REDIS_URL: '' }));
      try {
        await fundedOrganization(runtime, 1_000);
        expect(mode(log)).toBe(0o600);
        expect(mode(`${log}-wal`)).toBe(0o600);
      } finally {
        await runtime.close();
      }
    } finally {
      dir.cleanup();
    }
  });
});
