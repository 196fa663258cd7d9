import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The file beside the service's data holding its process id, for `model-gateway catalogue reload` to signal. */
export const PID_FILE = 'gateway.pid';

/** Writes this process's id beside its data; the returned function removes it unless another instance has written its own since. */
export function writePidFile(dataDir: string): () => void {
  const file = join(dataDir, PID_FILE);
  writeFileSync(file, `${process.pid}\n`);
  return () => {
    try {
      if (readFileSync(file, 'utf8').trim() === String(process.pid)) rmSync(file, { force: true });
    } catch {
      // Already gone.
    }
  };
}
