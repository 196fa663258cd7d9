import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Config } from '../config/config';
import { ownerOnly } from '../eventstore/owner-only';

/** The lock file beside the log that serving instances hold (see claimServing). */
export const SERVING_LOCK = 'serving.lock';

/** Who holds the data directory when a claim is refused. */
export type ServingHolder = 'in-process' | 'redis';

/** Why the service refuses to start: another instance serves from the same data with read models the two cannot share. */
export class ServingClaimError extends Error {
  constructor(
    dataDir: string,
    /** Read models of the instance refused. */
    readonly mine: ServingHolder,
    /** Read models of what already serves there. */
    readonly holder: ServingHolder,
  ) {
    super(
      holder === 'in-process' && mine === 'in-process'
        ? `another gateway instance is already serving from ${dataDir} with in-process read models: ` +
            'two such instances each admit requests against their own copy of the balances and overdraw. ' +
            'Run one instance, or give every instance REDIS_URL (shared read models)'
        : holder === 'in-process'
          ? `a gateway instance with in-process read models (no REDIS_URL) is already serving from ${dataDir}: ` +
            'an instance with read models in Redis beside it would admit requests against other balances than its own, and together they overdraw. ' +
            'Stop that instance and start every instance with REDIS_URL, or run that one alone'
          : `gateway instances with read models in Redis (REDIS_URL, or a WORKERS set) are already serving from ${dataDir} ` +
            '(or the operator tool is rebuilding read models there): an instance with in-process read models beside them would admit requests against its own copy of the balances, and together they overdraw. ' +
            'Start this one with the same REDIS_URL, or stop them first',
    );
    this.name = 'ServingClaimError';
  }
}

/** What holds the claim; released when the service stops (or by the OS, when the process dies). */
export interface ServingClaim {
  release(): void;
}

const isBusy = (error: unknown) => (error as { code?: string }).code === 'SQLITE_BUSY';

/** The lock file, opened with no wait (made owner-only if new: it names the serving process). */
function openLock(dataDir: string): Database.Database {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, SERVING_LOCK);
  ownerOnly(file);
  const db = new Database(file, { timeout: 0 });
  // Held from the first read (a shared lock) or write (an exclusive one) until the connection closes.
  db.pragma('locking_mode = EXCLUSIVE');
  return db;
}

/**
 * A shared hold on the data directory: any number of holders together, none beside an exclusive
 * one (an instance with in-process read models). Throws ServingClaimError (holder 'in-process')
 * while one serves. `mine` names the read models of who asks, for the message.
 */
export function claimShared(dataDir: string, mine: ServingHolder = 'redis'): ServingClaim {
  const db = openLock(dataDir);
  try {
    // The first read takes a shared lock, and the locking mode keeps it after the read.
    db.prepare('SELECT count(*) FROM sqlite_master').get();
  } catch (error) {
    db.close();
    if (isBusy(error)) throw new ServingClaimError(dataDir, mine, 'in-process');
    throw error;
  }
  return { release: () => db.close() };
}

function claimExclusive(dataDir: string): ServingClaim {
  const db = openLock(dataDir);
  try {
    // The first write takes the exclusive lock, and the locking mode keeps it after the commit.
    db.exec('BEGIN EXCLUSIVE; CREATE TABLE IF NOT EXISTS serving (pid INTEGER); DELETE FROM serving;');
    db.prepare('INSERT INTO serving (pid) VALUES (?)').run(process.pid);
    db.exec('COMMIT');
  } catch (error) {
    db.close();
    if (!isBusy(error)) throw error;
    // Busy: an exclusive holder (another in-process instance), or shared ones (Redis-mode instances).
    // A shared hold taken now tells them apart (and is let go at once).
    let holder: ServingHolder = 'in-process';
    try {
      claimShared(dataDir).release();
      holder = 'redis';
    } catch {
      // Refused a shared hold too: an exclusive holder.
    }
    throw new ServingClaimError(dataDir, 'in-process', holder);
  }
  return { release: () => db.close() };
}

/**
 * Instances serving one data directory must agree on where the read models are. With read models
 * in this process (no REDIS_URL), only one instance may serve it: each would check balances against
 * its own copy and, together, admit more than the organization holds; and none may serve beside
 * instances whose read models are in Redis, for the same reason. Instances with REDIS_URL (and a
 * WORKERS set's primary and workers) share one read model and may serve together.
 *
 * So the claim is a lock on a small SQLite file beside the log, held for as long as the service
 * runs: exclusive for an in-process instance, shared for a Redis one. The OS drops it when the
 * process ends, however it ends (a SIGKILL leaves nothing stale).
 */
export function claimServing(config: Config): ServingClaim {
  return config.redisUrl === null ? claimExclusive(config.dataDir) : claimShared(config.dataDir);
}
