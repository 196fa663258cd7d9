import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The file beside the service's data holding its process id, for `model-gateway catalogue reload` to signal. */
export const PID_FILE = 'gateway.pid';

/**
 * When process `pid` started, as the OS tells it (Linux: its start time in clock ticks since boot,
 * from /proc; elsewhere `ps -o lstart=`); null when no such process runs. With the pid, it names one
 * process: a pid reused by another process has another start time.
 */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 22 (starttime); the name (field 2, in parentheses) may hold spaces, so count from after it.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' && readableProc()) return null;
  }
  const ps = spawnSync('ps', ['-o', 'lstart=', '-p', String(pid)], { encoding: 'utf8' });
  const started = ps.status === 0 ? ps.stdout.trim() : '';
  return started === '' ? null : started;
}

let procReadable: boolean | undefined;
const readableProc = () => {
  if (procReadable === undefined) {
    try {
      readFileSync(`/proc/${process.pid}/stat`);
      procReadable = true;
    } catch {
      procReadable = false;
    }
  }
  return procReadable;
};

/**
 * Writes this process's id beside its data, with its start time (so that a reader can tell this
 * process from another given the same id after it died); the returned function removes the file
 * unless another instance has written its own since.
 */
export function writePidFile(dataDir: string): () => void {
  const file = join(dataDir, PID_FILE);
  writeFileSync(file, `${process.pid}\n${processStartTime(process.pid) ?? ''}\n`);
  return () => {
    try {
      if (readFileSync(file, 'utf8').split('\n')[0].trim() === String(process.pid)) rmSync(file, { force: true });
    } catch {
      // Already gone.
    }
  };
}

/** Whether process `pid` runs (one of another user's counts: it exists). */
export function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Why the pid file cannot be trusted, or the gateway it names. */
export type PidFileCheck = { gateway: number } | { refused: string };

/**
 * The gateway serving `dataDir` by its pid file: the process it names must still be the one that
 * wrote it (same id, same start time). A gateway killed (SIGKILL) leaves the file behind, and its
 * id may since name an unrelated process, which must never be signalled.
 */
export function gatewayFromPidFile(dataDir: string): PidFileCheck {
  const file = join(dataDir, PID_FILE);
  let lines: string[];
  try {
    lines = readFileSync(file, 'utf8').split('\n');
  } catch {
    return { refused: `no running service found (${file} is missing): give its process id with --pid` };
  }
  const pid = Number(lines[0].trim());
  if (!/^\d+$/.test(lines[0].trim()) || !Number.isSafeInteger(pid) || pid < 1)
    return { refused: `${file} does not hold a process id` };
  const recorded = lines[1]?.trim() || null;
  const started = processStartTime(pid);
  if (started === null || !processRuns(pid)) {
    return {
      refused:
        `no gateway is running: ${file} names process ${pid}, which is not running (a gateway that was killed leaves its file behind): ` +
        'start the service, or give its process id with --pid',
    };
  }
  if (recorded === null || recorded !== started) {
    return {
      refused:
        `stale gateway.pid (process ${pid} is not a gateway of ${dataDir}): ` +
        (recorded === null
          ? 'the file records no start time to check the process by (written by an earlier version)'
          : `process ${pid} started at another time than the gateway that wrote ${file}, which is gone`) +
        "; nothing was signalled. Give the service's process id with --pid, or restart the service (it writes the file again)",
    };
  }
  return { gateway: pid };
}
