import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmdirSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A real disk that fills up: a tmpfs of a few MB mounted on a fresh directory (mounting takes root,
 * as this machine and CI have). Where mounting is not permitted the tests that need it are skipped
 * with a loud line, except under CI=true, where they fail.
 */
export interface SmallDisk {
  path: string;
  /** Writes a file until the disk has no room left (ENOSPC). */
  fill(): void;
  /** Removes what `fill` wrote: the disk has room again. */
  free(): void;
  unmount(): void;
}

/** Mounts a tmpfs of `sizeMb` on a fresh directory. */
export function mountSmallDisk(label: string, sizeMb: number): SmallDisk {
  const path = mkdtempSync(join(tmpdir(), `mg-${label}-`));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m`, 'tmpfs', path], { stdio: 'pipe' });
  } catch (error) {
    rmdirSync(path);
    throw error;
  }
  const filler = join(path, 'filler');
  return {
    path,
    fill() {
      const fd = openSync(filler, 'w');
      const chunk = Buffer.alloc(64 * 1024, 1);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      } finally {
        closeSync(fd);
      }
    },
    free: () => rmSync(filler, { force: true }),
    unmount() {
      // Lazily: a test that failed may have left a file open on it; the disk goes once that closes.
      execFileSync('umount', ['--lazy', path], { stdio: 'pipe' });
      rmdirSync(path);
    },
  };
}

/** Why a tmpfs cannot be mounted here, or null when it can (tried once, then unmounted). */
function whyNoMount(): string | null {
  try {
    mountSmallDisk('mount-check', 1).unmount();
    return null;
  } catch (error) {
    const { stderr, message } = error as { stderr?: Buffer; message: string };
    return stderr?.toString().trim() || message;
  }
}

const cannotMount = whyNoMount();
if (cannotMount !== null) {
  if (process.env.CI === 'true')
    throw new Error(`CI=true but a tmpfs cannot be mounted (${cannotMount}): the full-disk tests cannot be skipped in CI`);
  process.stdout.write(`\n!!! FULL-DISK TESTS SKIPPED: mounting a tmpfs needs root (${cannotMount}). !!!\n\n`);
}

/** `describe`, or where no tmpfs can be mounted (and not under CI=true), `describe.skip`. */
export const describeWithSmallDisk = (name: string, fn: () => void) =>
  (cannotMount === null ? describe : describe.skip)(`${name} [a real full disk: a small tmpfs]`, fn);
