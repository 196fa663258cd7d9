import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * A saved state's file (the in-process read models', the alert follower's), written so that a reader
 * or a crash never sees half of it: into a side file named for this one write, then renamed over it.
 * Owner-only (0600), as the log's files are.
 */

/**
 * A side file older than this is a save that will never finish (its writer was killed): a save
 * writes for seconds at most, so no live writer's side file is ever this old.
 */
export const STALE_SIDE_FILE_MS = 10 * 60_000;

/**
 * Writes `pieces` beside `file`, then renames it over `file`. A write that fails (a full disk)
 * removes its side file, leaves the last save in place, and throws. Each write names its own side
 * file: several processes on one data directory (a worker set's) may save the same file at once.
 */
export async function writeAside(file: string, pieces: readonly string[]): Promise<void> {
  const side = `${file}.${randomUUID()}.partial`;
  try {
    await mkdir(dirname(file), { recursive: true });
    // Owner-only, as the log it is folded from (the rename keeps the mode).
    await writeFile(side, pieces, { mode: 0o600 });
    await rename(side, file);
  } catch (error) {
    await rm(side, { force: true }).catch(() => undefined);
    throw error;
  }
}

/**
 * Removes the side files of `file` that writers killed mid-save left behind (STALE_SIDE_FILE_MS),
 * and says so. Nothing else ever removes them, and each is as large as a save.
 */
export async function removeStaleSideFiles(file: string, log: (line: string) => void, now = Date.now()): Promise<string[]> {
  const directory = dirname(file);
  const prefix = `${basename(file)}.`;
  let names: string[];
  try {
    names = await readdir(directory);
  } catch {
    return []; // No directory yet: nothing was ever saved here.
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!name.startsWith(prefix) || !name.endsWith('.partial')) continue;
    const path = join(directory, name);
    try {
      if (now - (await stat(path)).mtimeMs < STALE_SIDE_FILE_MS) continue;
      await rm(path, { force: true });
      removed.push(name);
    } catch {
      // Renamed or removed meanwhile by its writer or another instance: nothing left to do.
    }
  }
  if (removed.length > 0) log(`${file}: removed ${removed.length} side file(s) of saves never finished (${removed.join(', ')})`);
  return removed;
}
