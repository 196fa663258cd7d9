import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh temporary directory, removed by the returned cleanup. */
export function tempDir(label: string): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), `mg-${label}-`));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}
