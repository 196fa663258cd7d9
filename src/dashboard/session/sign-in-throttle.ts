import type { Attempt, AttemptAllowance, AttemptStore } from '../../attempt-limits/attempt-store';
import { normalizeEmail } from '../../identity/user.decider';

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

/** A sign-up from `address`. */
export const signUpAttempt = (address: string): Attempt => ({
  group: `sign-up ${address}`,
  counts: [{ key: 'address', allowance: SIGN_UP_PER_ADDRESS }],
});

/**
 * An owner adding a member: counted per owner and per organization. One group for all of them (one
 * Redis Cluster slot): an owner's count must be the same whichever of their organizations they add to.
 */
export const addMemberAttempt = (userId: string, orgId: string): Attempt => ({
  group: 'add-member',
  counts: [
    { key: `user ${userId}`, allowance: ADD_MEMBER_ATTEMPTS },
    { key: `org ${orgId}`, allowance: ADD_MEMBER_ATTEMPTS },
  ],
});

/**
 * The dashboard's sign-in throttle: per account *and* address (guessing one person's password
 * from one place), and per address across accounts (spraying guesses), with a higher allowance.
 * Each attempt is taken before the password is checked, on both counts at once; a success clears
 * the account's count at that address and gives the address its attempt back. The rightful user is
 * never held by what happens at another address: guesses from elsewhere neither count against them
 * nor lock the account everywhere. Counted in the store given: shared by every process on Redis.
 */
export class SignInThrottles {
  constructor(
    private readonly store: AttemptStore,
    private readonly perAccountAndAddress: AttemptAllowance = SIGN_IN_PER_ACCOUNT_AND_ADDRESS,
    private readonly perAddress: AttemptAllowance = SIGN_IN_PER_ADDRESS,
  ) {}

  /**
   * Takes an attempt for this email from this address: 0 when it may be evaluated (and is
   * counted as failed until succeeded() says otherwise), else the milliseconds to wait.
   */
  take(email: string, address: string, now = Date.now()): Promise<number> {
    const { group, account, fromAddress } = this.counts(email, address);
    return this.store.take({ group, counts: [account, fromAddress] }, now);
  }

  async succeeded(email: string, address: string, now = Date.now()): Promise<void> {
    const { group, account, fromAddress } = this.counts(email, address);
    await this.store.clear({ group, counts: [account] });
    await this.store.giveBack({ group, counts: [fromAddress] }, now);
  }

  /** Both counts in the address's group: one attempt takes them together. */
  private counts(email: string, address: string) {
    return {
      group: `sign-in ${address}`,
      account: { key: `account ${normalizeEmail(email)}`, allowance: this.perAccountAndAddress },
      fromAddress: { key: 'address', allowance: this.perAddress },
    };
  }
}
