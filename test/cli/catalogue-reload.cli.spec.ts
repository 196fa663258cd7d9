import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { processStartTime } from '../../src/runtime/pid-file';
import { operatorTool } from '../support/operator-tool';
import { tempDir } from '../support/temp';

/**
 * `catalogue reload` signals the process gateway.pid names only while it is the gateway that wrote
 * the file: after a SIGKILL the file stays, and its pid may since be another process's (it once
 * killed an unrelated `sleep` with SIGHUP).
 */
describe('catalogue reload and a gateway.pid left behind', () => {
  const dir = tempDir('reload-stale');
  const env = { DATA_DIR: dir.path, REDIS_URL: '' };
  const pidFile = join(dir.path, 'gateway.pid');
  afterAll(() => dir.cleanup());

  it.each([
    ['a start time of another process (a gateway killed, its pid reused)', (pid: number) => `${pid}\n1\n`],
    ['no start time (a file of an earlier version)', (pid: number) => `${pid}\n`],
  ])('refuses a file naming a live process that is not the gateway that wrote it: %s; nothing signalled', async (_, content) => {
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
    const exited = once(sleeper, 'exit');
    try {
      await once(sleeper, 'spawn');
      const pid = sleeper.pid!;
      expect(processStartTime(pid)).not.toBeNull();
      writeFileSync(pidFile, content(pid));
      const run = await operatorTool(env, ['catalogue', 'reload']);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`stale gateway.pid (process ${pid} is not a gateway of ${dir.path})`);
      // SIGHUP would have ended it.
      expect(sleeper.exitCode).toBeNull();
      expect(sleeper.signalCode).toBeNull();
    } finally {
      sleeper.kill('SIGKILL');
      await exited;
    }
  });

  it('says a pid that is no longer running is not running (not "kill ESRCH")', async () => {
    const gone = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
    await once(gone, 'exit');
    writeFileSync(pidFile, `${gone.pid}\n12345\n`);
    const run = await operatorTool(env, ['catalogue', 'reload']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      new RegExp(`no gateway is running: .*gateway\\.pid names process ${gone.pid}, which is not running`),
    );
    expect(run.stderr).not.toContain('ESRCH');
    const asked = await operatorTool(env, ['catalogue', 'reload', '--pid', String(gone.pid)]);
    expect(asked.code).toBe(1);
    expect(asked.stderr).toContain(`process ${gone.pid} is not running`);
    expect(asked.stderr).not.toContain('ESRCH');
  });
});
