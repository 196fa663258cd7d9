import { chmodSync, closeSync, openSync } from 'node:fs';

/**
 * Makes `path` readable and writable by its owner only (0600): created so if missing, tightened if
 * it exists (a file made by an earlier version with the umask's mode). The log holds password
 * hashes and key hashes; SQLite gives its -wal and -shm files the main file's mode when it makes them.
 *
 * Never opens an existing file: closing any descriptor of a file drops every POSIX lock this process
 * holds on it (SQLite's, the serving claim's), so an existing file is only chmod-ed. A file owned by
 * another user (chmod refused) is left as it is.
 */
export function ownerOnly(path: string): void {
  try {
    closeSync(openSync(path, 'wx', 0o600));
    return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  tighten(path);
}

/** Tightens an existing file to 0600; one missing, or not ours, is left. */
export function tighten(path: string): void {
  try {
    chmodSync(path, 0o600);
  } catch {
    // Missing (nothing to tighten) or not ours to change.
  }
}
