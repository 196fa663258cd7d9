import { normalizeEmail } from '../../identity/user.decider';

/** How an attempt limit behaves: so many attempts, then a wait that doubles up to a cap. */
export interface AttemptAllowance {
  /** Attempts let through before any wait. */
  attempts: number;
  firstDelayMs: number;
  maxDelayMs: number;
}

interface Counted {
  count: number;
  /** Until when further attempts wait. */
  until: number;
  /** When the last attempt was taken. */
  last: number;
}

/**
 * Attempts counted per key, each one *before* it is evaluated: of any number of attempts arriving
 * at once, exactly `attempts` are let through, and the rest are refused at once without being
 * counted (a burst does not lengthen the wait). Once the allowance is used, each further attempt
 * waits, twice as long each time, up to the cap; a key left alone for the cap past its wait
 * starts afresh. Synchronous, so taking an attempt is atomic within the process.
 */
export class AttemptLimit {
  private readonly counted = new Map<string, Counted>();

  constructor(private readonly allowance: AttemptAllowance) {}

  /** Milliseconds until any of `keys` may be tried again, or 0. */
  waitFor(keys: string[], now: number): number {
    return Math.max(0, ...keys.map((k) => (this.current(k, now)?.until ?? 0) - now));
  }

  /** Takes an attempt on every key at once, or none: 0 when taken, else the milliseconds to wait. */
  take(keys: string[], now: number): number {
    const wait = this.waitFor(keys, now);
    if (wait > 0) return wait;
    for (const key of keys) {
      const count = (this.current(key, now)?.count ?? 0) + 1;
      this.counted.set(key, { count, until: now + this.delayAfter(count), last: now });
    }
    if (this.counted.size > 100_000) this.forgetOld(now);
    return 0;
  }

  /** An attempt taken that is not to count (it succeeded): given back. */
  giveBack(keys: string[], now: number): void {
    for (const key of keys) {
      const entry = this.current(key, now);
      if (!entry) continue;
      const count = entry.count - 1;
      if (count <= 0) this.counted.delete(key);
      else this.counted.set(key, { ...entry, count, until: count < this.allowance.attempts ? 0 : entry.until });
    }
  }

  /** Forgets the attempts on `keys` (a success proves the person knows the password). */
  clear(keys: string[]): void {
    for (const key of keys) this.counted.delete(key);
  }

  private delayAfter(count: number): number {
    const { attempts, firstDelayMs, maxDelayMs } = this.allowance;
    return count < attempts ? 0 : Math.min(maxDelayMs, firstDelayMs * 2 ** (count - attempts));
  }

  private current(key: string, now: number): Counted | undefined {
    const entry = this.counted.get(key);
    if (entry && this.stale(entry, now)) {
      this.counted.delete(key);
      return undefined;
    }
    return entry;
  }

  private stale(entry: Counted, now: number): boolean {
    return Math.max(entry.until, entry.last) + this.allowance.maxDelayMs < now;
  }

  private forgetOld(now: number): void {
    for (const [key, entry] of this.counted) if (this.stale(entry, now)) this.counted.delete(key);
  }
}

/** Sign-in: 4 attempts per account from one address before waits (2 s, doubling to 5 min). */
export const SIGN_IN_PER_ACCOUNT_AND_ADDRESS: AttemptAllowance = { attempts: 4, firstDelayMs: 2_000, maxDelayMs: 5 * 60_000 };
/** Sign-in: 30 failed attempts from one address, on any accounts, before waits (a spray of guesses). */
export const SIGN_IN_PER_ADDRESS: AttemptAllowance = { attempts: 30, firstDelayMs: 2_000, maxDelayMs: 5 * 60_000 };
/** Sign-up: 10 per address before waits (1 min, doubling to 1 h). */
export const SIGN_UP_PER_ADDRESS: AttemptAllowance = { attempts: 10, firstDelayMs: 60_000, maxDelayMs: 60 * 60_000 };
/**
 * Adding a member by email (which tells whether the email has an account): 10 attempts per owner and
 * per organization before waits (1 min, doubling to 1 h); a member added gives the attempt back.
 */
export const ADD_MEMBER_ATTEMPTS: AttemptAllowance = { attempts: 10, firstDelayMs: 60_000, maxDelayMs: 60 * 60_000 };

/**
 * The dashboard's sign-in throttle: per account *and* address (guessing one person's password
 * from one place), and per address across accounts (spraying guesses), with a higher allowance.
 * Each attempt is taken before the password is checked; a success clears the account's count at
 * that address and gives the address its attempt back. The rightful user is never held by what
 * happens at another address: guesses from elsewhere neither count against them nor lock the
 * account everywhere.
 */
export class SignInThrottles {
  private readonly byAccountAndAddress: AttemptLimit;
  private readonly byAddress: AttemptLimit;

  constructor(
    perAccountAndAddress: AttemptAllowance = SIGN_IN_PER_ACCOUNT_AND_ADDRESS,
    perAddress: AttemptAllowance = SIGN_IN_PER_ADDRESS,
  ) {
    this.byAccountAndAddress = new AttemptLimit(perAccountAndAddress);
    this.byAddress = new AttemptLimit(perAddress);
  }

  /**
   * Takes an attempt for this email from this address: 0 when it may be evaluated (and is
   * counted as failed until succeeded() says otherwise), else the milliseconds to wait.
   */
  take(email: string, address: string, now = Date.now()): number {
    const pair = pairKey(email, address);
    const wait = Math.max(this.byAccountAndAddress.waitFor(pair, now), this.byAddress.waitFor(addressKey(address), now));
    if (wait > 0) return wait;
    this.byAccountAndAddress.take(pair, now);
    this.byAddress.take(addressKey(address), now);
    return 0;
  }

  succeeded(email: string, address: string, now = Date.now()): void {
    this.byAccountAndAddress.clear(pairKey(email, address));
    this.byAddress.giveBack(addressKey(address), now);
  }
}

const pairKey = (email: string, address: string): string[] => [`${normalizeEmail(email)}\n${address}`];
const addressKey = (address: string): string[] => [address];
