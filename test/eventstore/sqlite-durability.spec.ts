import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../support/processes';
import { tempDir } from '../support/temp';

/**
 * Whether an append waits for the disk, seen from outside: the system calls that take a file to
 * the disk (fsync, fdatasync), counted with strace in a process appending as the ledger does. The
 * tests skip without strace, except under CI=true (the CI script installs it).
 */
const STRACE = spawnSync('strace', ['-V']).status === 0;
if (!STRACE) {
  if (process.env.CI === 'true')
    throw new Error('CI=true but strace is not installed: the durability tests cannot be skipped in CI');
  process.stdout.write("\n!!! DURABILITY TESTS SKIPPED: install Debian's strace package to run them. !!!\n\n");
}

const dir = tempDir('sqlite-durability');
afterAll(() => dir.cleanup());

const WORKER = join(ROOT, 'test/support/workers/durability-worker.js');
let run = 0;

/** The fsyncs of a process making `count` appends of `durability` to a new log (committed on its main thread with `here`). */
function syncsOf(count: number, durability: 'disk' | 'log', here: boolean): number {
  run += 1;
  const trace = join(dir.path, `trace-${run}.txt`);
  const args = [WORKER, join(dir.path, `log-${run}.sqlite`), String(count), durability, ...(here ? ['here'] : [])];
  execFileSync('strace', ['-f', '-qq', '-e', 'trace=fsync,fdatasync', '-o', trace, process.execPath, ...args], {
    cwd: ROOT,
    stdio: 'pipe',
  });
  return readFileSync(trace, 'utf8')
    .split('\n')
    .filter((line) => /\b(fsync|fdatasync)\(/.test(line)).length;
}

const APPENDS = 40;

(STRACE ? describe : describe.skip).each([
  ['the writer thread', false],
  ['the main thread (an append made alone)', true],
])('SQLite appends committed on %s', (_where, here) => {
  it('wait for the disk by default, one fsync each; an append to the log alone (a reservation) waits for none', () => {
    // Opening, making and closing the log (its checkpoint) take fsyncs of their own, the same in each run.
    const none = syncsOf(0, 'disk', here);
    expect(syncsOf(APPENDS, 'disk', here) - none).toBeGreaterThanOrEqual(APPENDS);
    expect(syncsOf(APPENDS, 'log', here) - none).toBeLessThanOrEqual(2);
  });
});
