import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { STALE_SIDE_FILE_MS } from '../../src/projections/snapshot-file';
import { ROOT } from '../support/processes';
import { tempDir } from '../support/temp';

/**
 * What the service says before its logger exists (the read models opened, the log replayed) is
 * shaped as every later line: JSON on standard output, at its level — nothing on standard error.
 */
describe('the lines of a start, before the logger exists', () => {
  it('are JSON lines on standard output at their level, as every later line', async () => {
    const dir = tempDir('start-lines');
    try {
      // A save a killed process never finished: the start removes it and says so, before the application exists.
      const stale = join(dir.path, 'read-models.snapshot.json.dead.partial');
      writeFileSync(stale, '{"version":6,"posi');
      const killedAt = (Date.now() - STALE_SIDE_FILE_MS - 60_000) / 1000;
      utimesSync(stale, killedAt, killedAt);
      const child = spawn(process.execPath, [join(ROOT, 'dist/src/main.js')], {
        cwd: ROOT,
        env: { ...process.env, EVENTSTORE_URL: '', DATA_DIR: dir.path, REDIS_URL: '', PORT: '0', SIMULATED_HOST_PORT: 'off' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = once(child, 'exit');
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          if (stdout.includes('model gateway listening on')) resolve();
        });
        void exited.then(() => reject(new Error(`exited before listening:\n${stdout}${stderr}`)));
      });
      child.kill('SIGTERM');
      expect((await exited)[0]).toBe(0);
      const lines = stdout
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as { level: number; msg: string; pid: number; time: number });
      expect(lines).toContainEqual(
        expect.objectContaining({
          level: 40,
          pid: child.pid,
          time: expect.any(Number),
          msg: expect.stringMatching(/read-models\.snapshot\.json: removed 1 side file\(s\) of saves never finished/),
        }),
      );
      expect(stderr).toBe('');
    } finally {
      dir.cleanup();
    }
  });
});
