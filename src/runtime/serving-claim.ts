import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Config } from '../config/config';

/** Why the service refuses to start: another instance serves from the same data with read models of its own. */
export class ServingClaimError extends Error {
  constructor(dataDir: string) {
    super(
      `another gateway instance is already serving from ${dataDir} with in-process read models: ` +
        'two such instances each admit requests against their own copy of the balances and overdraw. ' +
        'Run one instance, or give every instance REDIS_URL (shared read models)',
    );
    this.name = 'ServingClaimError';
  }
}

/** What holds the claim; released when the service stops (or by the OS, when the process dies). */
export interface ServingClaim {
  release(): void;
}

/**
 * With read models in this process (no REDIS_URL), only one instance may serve a data directory:
 * each instance would check balances against its own copy and, together, admit more than the
 * organization holds. The claim is an exclusive lock on a small SQLite file beside the log, held
 * for as long as the service runs: the OS drops it when the process ends, however it ends (a
 * SIGKILL leaves nothing stale). With Redis, instances share one read model: nothing to claim.
 */
export function claimServing(config: Config): ServingClaim | null {
  if (config.redisUrl !== null) return null;
  mkdirSync(config.dataDir, { recursive: true });
  const db = new Database(join(config.dataDir, 'serving.lock'), { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    // The first write takes the exclusive lock, and the locking mode keeps it after the commit.
    db.exec('BEGIN EXCLUSIVE; CREATE TABLE IF NOT EXISTS serving (pid INTEGER); DELETE FROM serving;');
    db.prepare('INSERT INTO serving (pid) VALUES (?)').run(process.pid);
    db.exec('COMMIT');
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code === 'SQLITE_BUSY') throw new ServingClaimError(config.dataDir);
    throw error;
  }
  return { release: () => db.close() };
}
