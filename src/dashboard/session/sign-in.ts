import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '../../http/api-error';
import { IdentityRuleError } from '../../identity/identity-rule-error';
import { IdentityService } from '../../identity/identity.service';
import { hashPassword, verifyPassword } from '../../identity/secrets';
import type { ReadModels } from '../../projections/read-models';
import { READ_MODELS } from '../../runtime/runtime.module';
import type { SessionUser } from './sessions';
import { AttemptLimit, SIGN_UP_PER_ADDRESS, SignInThrottles } from './sign-in-throttle';

/** The 429 for an attempt that must wait, with the seconds to wait (also in Retry-After). */
export const tooManyAttempts = (what: string, waitMs: number): ApiError => {
  const retryAfterSeconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new ApiError('rate_limited', `too many ${what}: try again in ${retryAfterSeconds} s`, { retryAfterSeconds });
};

/**
 * Email and password checked, with attempts throttled (per instance; see SignInThrottles): the
 * attempt is taken before the password is checked, so attempts arriving together cannot all be
 * evaluated. The session starts in the user's first organization.
 */
@Injectable()
export class SignIn {
  private readonly throttles = new SignInThrottles();
  /** Checked against when the email is unknown, so both cases take as long. */
  private readonly decoyHash = hashPassword('decoy password never used');

  constructor(
    private readonly identity: IdentityService,
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
  ) {}

  /** The user and the organization the session starts in; a wrong email or password is a 401 either way, too many a 429. */
  async check(email: string, password: string, address: string): Promise<SessionUser & { activeOrgId: string | null }> {
    const waitMs = this.throttles.take(email, address);
    if (waitMs > 0) throw tooManyAttempts('failed sign-ins', waitMs);
    const { state: user } = await this.identity.user(email);
    const valid = await verifyPassword(password, user.exists ? user.passwordHash : await this.decoyHash);
    if (!user.exists || !valid) throw new ApiError('invalid_api_key', 'wrong email or password');
    this.throttles.succeeded(email, address);
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
  private readonly perAddress = new AttemptLimit(SIGN_UP_PER_ADDRESS);

  constructor(private readonly identity: IdentityService) {}

  async register(email: string, password: string, address: string): Promise<void> {
    const waitMs = this.perAddress.take([address], Date.now());
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
