import { Inject, Injectable, Logger } from '@nestjs/common';
import type { AttemptStore } from '../../attempt-limits/attempt-store';
import { ApiError, toApiError } from '../../http/api-error';
import { IdentityRuleError } from '../../identity/identity-rule-error';
import { IdentityService } from '../../identity/identity.service';
import { hashPassword, verifyPassword } from '../../identity/secrets';
import type { ReadModels } from '../../projections/read-models';
import { failureText } from '../../projections/store-errors';
import { ATTEMPTS, READ_MODELS } from '../../runtime/runtime.module';
import type { SessionUser } from './sessions';
import { SignInThrottles, signUpAttempt } from './sign-in-throttle';

/** The 429 for an attempt that must wait, with the seconds to wait (also in Retry-After). */
export const tooManyAttempts = (what: string, waitMs: number): ApiError => {
  const retryAfterSeconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new ApiError('rate_limited', `too many ${what}: try again in ${retryAfterSeconds} s`, { retryAfterSeconds });
};

/**
 * An attempt taken: its wait, or 0. One that cannot be counted (Redis unreachable) is refused with a
 * 503, never let through uncounted: with several processes, none could tell how many were tried.
 */
export async function attemptTaken(taking: Promise<number>): Promise<number> {
  try {
    return await taking;
  } catch (error) {
    if (toApiError(error).code !== 'unavailable') throw error;
    throw new ApiError(
      'unavailable',
      'the gateway cannot count attempts right now (its Redis is unreachable): nothing was tried; try again in a moment',
      {},
      { 'retry-after': '1' },
    );
  }
}

const attemptsLog = new Logger('Attempts');

/**
 * A success's release of its attempt (given back or cleared): one that fails leaves the attempt counted
 * (stricter, never looser) and does not undo the success. Said without whose attempt it was.
 */
export async function attemptReleased(releasing: Promise<void>): Promise<void> {
  await releasing.catch((error: unknown) => attemptsLog.warn(`an attempt that succeeded stays counted: ${failureText(error)}`));
}

/**
 * Email and password checked, with attempts throttled (see SignInThrottles; in Redis, shared by every
 * process): the
 * attempt is taken before the password is checked, so attempts arriving together cannot all be
 * evaluated. The session starts in the user's first organization.
 */
@Injectable()
export class SignIn {
  private readonly throttles: SignInThrottles;
  /** Checked against when the email is unknown, so both cases take as long. */
  private readonly decoyHash = hashPassword('decoy password never used');

  constructor(
    private readonly identity: IdentityService,
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
    @Inject(ATTEMPTS) attempts: AttemptStore,
  ) {
    this.throttles = new SignInThrottles(attempts);
  }

  /** The user and the organization the session starts in; a wrong email or password is a 401 either way, too many a 429. */
  async check(email: string, password: string, address: string): Promise<SessionUser & { activeOrgId: string | null }> {
    const waitMs = await attemptTaken(this.throttles.take(email, address));
    if (waitMs > 0) throw tooManyAttempts('failed sign-ins', waitMs);
    const { state: user } = await this.identity.user(email);
    const valid = await verifyPassword(password, user.exists ? user.passwordHash : await this.decoyHash);
    if (!user.exists || !valid) throw new ApiError('invalid_api_key', 'wrong email or password');
    await attemptReleased(this.throttles.succeeded(email, address));
    const orgs = await this.readModels.organizationsOf(user.userId);
    return {
      userId: user.userId,
      email: user.email,
      sessionGeneration: user.sessionGeneration,
      activeOrgId: orgs[0]?.orgId ?? null,
    };
  }

  /** The signed-in person's password, checked (and throttled) as a sign-in: a wrong one is a 403 (they are signed in). */
  async confirm(email: string, password: string, address: string): Promise<void> {
    try {
      await this.check(email, password, address);
    } catch (error) {
      if (error instanceof ApiError && error.code === 'invalid_api_key')
        throw new ApiError('forbidden', 'wrong current password');
      throw error;
    }
  }
}

/**
 * Signing up, throttled per address, answering the same whether or not the email already has an
 * account (and in about the same time: a password is hashed either way), so that sign-up does not
 * tell who has one. It never starts a session: the person signs in next, as anyone would.
 */
@Injectable()
export class SignUp {
  constructor(
    private readonly identity: IdentityService,
    @Inject(ATTEMPTS) private readonly attempts: AttemptStore,
  ) {}

  async register(email: string, password: string, address: string): Promise<void> {
    const waitMs = await attemptTaken(this.attempts.take(signUpAttempt(address), Date.now()));
    if (waitMs > 0) throw tooManyAttempts('sign-ups from this address', waitMs);
    try {
      await this.identity.registerUser(email, password);
    } catch (error) {
      if (error instanceof IdentityRuleError && error.code === 'user_exists') {
        await hashPassword(password);
        return;
      }
      if (error instanceof IdentityRuleError) throw new ApiError('invalid_request', error.message);
      throw error;
    }
  }
}
