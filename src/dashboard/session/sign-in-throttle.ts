import { normalizeEmail } from '../../identity/identity.decider';

/**
 * Slows down guessing: after a few failed sign-ins for an email (or from an address), each
 * further attempt must wait, twice as long each time, up to a cap. Kept per instance.
 */
export class SignInThrottle {
  private readonly failures = new Map<string, { count: number; until: number }>();

  constructor(
    private readonly freeAttempts = 3,
    private readonly firstDelayMs = 2_000,
    private readonly maxDelayMs = 5 * 60_000,
  ) {}

  /** Milliseconds to wait before trying again, or 0. */
  waitFor(keys: string[], now = Date.now()): number {
    return Math.max(0, ...keys.map((k) => (this.failures.get(k)?.until ?? 0) - now));
  }

  failed(keys: string[], now = Date.now()): void {
    for (const key of keys) {
      const count = (this.failures.get(key)?.count ?? 0) + 1;
      const delay =
        count <= this.freeAttempts ? 0 : Math.min(this.maxDelayMs, this.firstDelayMs * 2 ** (count - this.freeAttempts - 1));
      this.failures.set(key, { count, until: now + delay });
    }
    if (this.failures.size > 100_000) this.forgetOld(now);
  }

  succeeded(keys: string[]): void {
    for (const key of keys) this.failures.delete(key);
  }

  private forgetOld(now: number): void {
    for (const [key, entry] of this.failures) if (entry.until + this.maxDelayMs < now) this.failures.delete(key);
  }
}

/**
 * The dashboard's two throttles on sign-in: per email (3 free attempts), and per address (20, as
 * many people may share one). A success clears the email's count, not the address's.
 */
export class SignInThrottles {
  private readonly byEmail = new SignInThrottle(3);
  private readonly byAddress = new SignInThrottle(20);

  /** Milliseconds to wait before this email may be tried again from this address, or 0. */
  waitFor(email: string, address: string, now = Date.now()): number {
    return Math.max(this.byEmail.waitFor(emailKey(email), now), this.byAddress.waitFor(addressKey(address), now));
  }

  failed(email: string, address: string, now = Date.now()): void {
    this.byEmail.failed(emailKey(email), now);
    this.byAddress.failed(addressKey(address), now);
  }

  succeeded(email: string): void {
    this.byEmail.succeeded(emailKey(email));
  }
}

const emailKey = (email: string): string[] => [`email:${normalizeEmail(email)}`];
const addressKey = (address: string): string[] => [`ip:${address}`];
