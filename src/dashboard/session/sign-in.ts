import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '../../http/api-error';
import { IdentityService } from '../../identity/identity.service';
import { hashPassword, verifyPassword } from '../../identity/secrets';
import type { ProjectionStore } from '../../projections/projection-store';
import { PROJECTIONS } from '../../runtime/runtime.module';
import { SignInThrottles } from './sign-in-throttle';

/** Email and password checked, with failures throttled (per instance); the session starts in the user's first organization. */
@Injectable()
export class SignIn {
  private readonly throttles = new SignInThrottles();
  /** Checked against when the email is unknown, so both cases take as long. */
  private readonly decoyHash = hashPassword('decoy password never used');

  constructor(
    private readonly identity: IdentityService,
    @Inject(PROJECTIONS) private readonly projections: ProjectionStore,
  ) {}

  /** Whole seconds to wait before this email may be tried again from this address, or 0. */
  retryAfterSeconds(email: string, address: string): number {
    return Math.ceil(this.throttles.waitFor(email, address) / 1000);
  }

  /** The user and the organization the session starts in; a wrong email or password is a 401 either way. */
  async check(
    email: string,
    password: string,
    address: string,
  ): Promise<{ userId: string; email: string; activeOrgId: string | null }> {
    const { state: user } = await this.identity.user(email);
    const valid = await verifyPassword(password, user.exists ? user.passwordHash : await this.decoyHash);
    if (!user.exists || !valid) {
      this.throttles.failed(email, address);
      throw new ApiError('invalid_api_key', 'wrong email or password');
    }
    this.throttles.succeeded(email);
    const orgs = await this.projections.organizationsOf(user.userId);
    return { userId: user.userId, email: user.email, activeOrgId: orgs[0]?.orgId ?? null };
  }
}
