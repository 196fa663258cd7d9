import { copyFileSync, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { operatorTool as cli, operatorToolJson as json } from '../support/operator-tool';
import { fundedOrganization, openTestRuntime } from '../support/runtime';
import { tempDir } from '../support/temp';

describe('model-gateway backup', () => {
  const out = tempDir('backup-out');
  afterAll(() => out.cleanup());

  it('copies every event of a log in use, those only in its write-ahead log too, to an owner-only file that audits clean', async () => {
    const t = await openTestRuntime();
    try {
      // Events just committed by an open connection are in the write-ahead log, not yet in the file.
      for (let i = 0; i < 3; i++) await fundedOrganization(t.runtime, 1_000_000_000);
      const head = await t.runtime.events.headPosition();
      const file = join(out.path, 'events-backup.sqlite');

      const made = await json(t.env, ['backup', '--output', file]);
      expect(made).toEqual({ file, events: head, head });
      expect(statSync(file).mode & 0o777).toBe(0o600);
      // One file: nothing beside it to copy with it.
      expect(existsSync(`${file}-wal`) || existsSync(`${file}-shm`)).toBe(false);

      // Restored into a data directory of its own, it is the same ledger.
      const restored = tempDir('backup-restored');
      try {
        copyFileSync(file, join(restored.path, 'events.sqlite'));
        const env = { DATA_DIR: restored.path, REDIS_URL: '' };
        expect(await json(env, ['ledger', 'audit'])).toMatchObject({ clean: true, differences: [] });
      } finally {
        restored.cleanup();
      }

      const again = await cli(t.env, ['backup', '--output', file]);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/exists: a backup never overwrites a file/);
    } finally {
      await t.cleanup();
    }
  });
});

describe('the operator tool on a data directory with no log', () => {
  it('refuses a command there, making no log (a mistyped DATA_DIR)', async () => {
    const dir = tempDir('no-log');
    try {
      const env = { DATA_DIR: dir.path, REDIS_URL: '' };
      const show = await cli(env, ['credits', 'show', '--org', '8f0b7f56-0c55-4c1e-9a55-3f3c4f7d3f0e']);
      expect(show.code).toBe(1);
      expect(show.stderr).toMatch(/no event log at .*events\.sqlite: is DATA_DIR right\?/);
      const backup = await cli(env, ['backup', '--output', join(dir.path, 'b.sqlite')]);
      expect(backup.code).toBe(1);
      expect(backup.stderr).toMatch(/no event log at/);
      expect(existsSync(join(dir.path, 'events.sqlite'))).toBe(false);
    } finally {
      dir.cleanup();
    }
  });

  it('begins one with the first organization, saying so', async () => {
    const dir = tempDir('new-log');
    try {
      const env = { DATA_DIR: dir.path, REDIS_URL: '' };
      const created = await cli(env, ['org', 'create', '--name', 'First']);
      expect(created.code).toBe(0);
      expect(created.stderr).toMatch(/no event log at .* yet: made a new one/);
      expect(existsSync(join(dir.path, 'events.sqlite'))).toBe(true);
      const shown = await cli(env, ['credits', 'show', '--org', created.stdout.trim()]);
      expect(shown.code).toBe(0);
      expect(shown.stderr).toBe('');
    } finally {
      dir.cleanup();
    }
  });
});
