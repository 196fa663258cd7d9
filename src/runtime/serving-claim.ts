import { mkdirSync, readdirSync } from 'node:fs';
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

/** Claims held and released together (the last taken first). */
export const heldTogether = (...claims: ServingClaim[]): ServingClaim => ({
  release: () => [...claims].reverse().forEach((claim) => claim.release()),
});

const isBusy = (error: unknown) => (error as { code?: string }).code === 'SQLITE_BUSY';

/** A lock file, opened (made owner-only if new: serving.lock names the serving process). */
function openLock(dataDir: string, name = SERVING_LOCK, timeoutMs = 0): Database.Database {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, name);
  ownerOnly(file);
  const db = new Database(file, { timeout: timeoutMs });
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

/** The lock file of the instances whose read models are in one Redis store, named by the store's id. */
const storeLock = (storeId: string) => `serving-${storeId}.lock`;
const STORE_LOCK = /^serving-([0-9a-f]{32})\.lock$/;
/**
 * How long a look at another store's lock file waits for it: others' looks hold it a moment; live
 * instances hold it for good (their read models are in that store).
 */
const PROBE_WAIT_MS = 500;
/** How long an instance waits for its own store's lock file while others look at it (a look's wait at most). */
const OWN_WAIT_MS = 4 * PROBE_WAIT_MS;

/** Why a Redis-mode instance (or the operator tool's rebuild) is refused: one serves the data directory with read models in another store. */
export class StoreClaimError extends Error {
  constructor(
    readonly dataDir: string,
    /** The lock file held by what serves. */
    readonly heldLock: string,
  ) {
    super(
      `a gateway instance is already serving from ${dataDir} with its read models in another Redis store ` +
        `(another REDIS_URL or REDIS_PREFIX: it holds ${heldLock}): each would admit requests against its own copy of the balances, ` +
        'and together they overdraw. Give every instance of one DATA_DIR the same REDIS_URL and REDIS_PREFIX',
    );
    this.name = 'StoreClaimError';
  }
}

/** Whether live instances hold another store's lock file (an exclusive lock on it is refused). */
function heldByOthers(file: string): boolean {
  let db: Database.Database;
  try {
    db = new Database(file, { timeout: PROBE_WAIT_MS, fileMustExist: true });
  } catch (error) {
    // Deleted by hand since the directory was listed.
    if ((error as { code?: string }).code === 'SQLITE_CANTOPEN') return false;
    throw error;
  }
  try {
    db.exec('BEGIN EXCLUSIVE');
    return false;
  } catch (error) {
    if (isBusy(error)) return true;
    throw error;
  } finally {
    db.close();
  }
}

/**
 * Instances serving one data directory with read models in Redis must share one store: each store's
 * balances admit requests on their own, and two stores overdraw together. `storeId` is the store's
 * identity, kept in it (RedisProjectionStore.storeId: not its URL, which spells one server many ways).
 *
 * The claim is a shared lock on `serving-<storeId>.lock`, held while the instance serves; then every
 * other store's lock file is looked at: one held means an instance serves with another store (refused:
 * StoreClaimError); one nobody holds was left by instances that have ended, and is passed over (kept:
 * removing a file another instance may have just opened would let it hold a lock nobody sees). Taking
 * one's own before looking makes two instances of two stores starting together see at least one the
 * other's. The OS drops the lock when the process ends, however it ends. Taken beside a shared claim
 * on serving.lock.
 */
export function claimStore(dataDir: string, storeId: string): ServingClaim {
  const own = openLock(dataDir, storeLock(storeId), OWN_WAIT_MS);
  try {
    // The first read takes a shared lock, and the locking mode keeps it after the read.
    own.prepare('SELECT count(*) FROM sqlite_master').get();
    for (const name of readdirSync(dataDir)) {
      const other = STORE_LOCK.exec(name);
      if (other !== null && other[1] !== storeId && heldByOthers(join(dataDir, name))) throw new StoreClaimError(dataDir, name);
    }
  } catch (error) {
    own.close();
    // Held past the wait by instances of another store looking at it one after another (one
    // restarting in a loop): said as such, not as SQLite's "database is locked".
    if (isBusy(error))
      throw new Error(
        `${storeLock(storeId)} in ${dataDir} was held for more than ${OWN_WAIT_MS} ms by instances starting with another Redis store: ` +
          'stop them (every instance of one DATA_DIR needs the same REDIS_URL and REDIS_PREFIX), then start this one again',
      );
    throw error;
  }
  return { release: () => own.close() };
}
