import { Body, Controller, Get, HttpCode, Inject, Param, Post, UseFilters } from '@nestjs/common';
import { ApiError } from '../../http/api-error';
import { IdentityRuleError } from '../../identity/identity-rule-error';
import { IdentityService } from '../../identity/identity.service';
import { mayManageKeys } from '../../identity/organization.decider';
import { bodyValidation } from '../../http/validation';
import type { ReadModels } from '../../projections/read-models';
import type { MemberRecord } from '../../projections/read-models';
import { Projector } from '../../projections/projector';
import { ATTEMPTS, READ_MODELS } from '../../runtime/runtime.module';
import { dashboardErrors } from '../dashboard-error';
import { ActiveOrgId, CurrentSession, SignedIn } from '../session/session.guard';
import type { Session } from '../session/sessions';
import { attemptReleased, attemptTaken, tooManyAttempts } from '../session/sign-in';
import { addMemberAttempt } from '../session/sign-in-throttle';
import type { AttemptStore } from '../../attempt-limits/attempt-store';
import { AddMemberDto, KeyAccessDto } from './members.dto';

/**
 * The active organization's members: every member sees them; owners add people by email (they must
 * have signed up), remove them, and choose which members may manage keys. Who may do what is the
 * organization decider's rule: here it is only asked, as the signed-in member.
 *
 * Adding someone tells whether their email has an account (sign-up never does), and anyone may sign
 * up and own an organization: only owners are answered (others get 403 before any email is looked
 * up), and their attempts are throttled per owner and per organization (as sign-in's: with Redis, shared
 * by every process), each taken before it is tried, a member actually added giving it back. An unknown
 * email is answered in words that say what to do, not "no user with this email".
 */
@Controller('dashboard/api/members')
@UseFilters(dashboardErrors)
@SignedIn({ activeOrg: true })
export class MembersController {
  constructor(
    private readonly identity: IdentityService,
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
    private readonly projector: Projector,
    @Inject(ATTEMPTS) private readonly attempts: AttemptStore,
  ) {}

  @Get()
  async list(@ActiveOrgId() orgId: string, @CurrentSession() session: Session) {
    return { data: (await this.readModels.membersOf(orgId)).map((m) => memberView(m, session)) };
  }

  @Post()
  @HttpCode(201)
  async add(@Body(bodyValidation) body: AddMemberDto, @ActiveOrgId() orgId: string, @CurrentSession() session: Session) {
    // The decider refuses a member too, but only once the email is found: asked first, a member
    // would learn who has an account (and use up the owners' attempts).
    if ((await this.readModels.membership(orgId, session.userId))?.role !== 'owner')
      throw new ApiError('forbidden', "only the organization's owners manage its members");
    const attempt = addMemberAttempt(session.userId, orgId);
    const waitMs = await attemptTaken(this.attempts.take(attempt, Date.now()));
    if (waitMs > 0) {
      const refused = tooManyAttempts('attempts to add members', waitMs);
      throw refused.withHeaders({ 'retry-after': String(refused.details.retryAfterSeconds) });
    }
    let added: { userId: string };
    try {
      added = await this.identity.addMember(orgId, body.email, body.role ?? 'member', {
        by: session.userId,
        manageKeys: body.manageKeys,
      });
    } catch (error) {
      if (error instanceof IdentityRuleError && error.code === 'user_not_found') throw cannotAdd(body.email);
      throw error;
    }
    await attemptReleased(this.attempts.giveBack(attempt, Date.now()));
    return this.shown(orgId, added.userId, session);
  }

  @Post(':userId/remove')
  @HttpCode(200)
  async remove(@Param('userId') userId: string, @ActiveOrgId() orgId: string, @CurrentSession() session: Session) {
    await this.identity.removeMember(orgId, userId, session.userId);
    await this.projector.catchUp();
    return { userId, removed: true };
  }

  @Post(':userId/key-access')
  @HttpCode(200)
  async keyAccess(
    @Param('userId') userId: string,
    @Body(bodyValidation) body: KeyAccessDto,
    @ActiveOrgId() orgId: string,
    @CurrentSession() session: Session,
  ) {
    await this.identity.setMemberKeyAccess(orgId, userId, body.manageKeys, session.userId);
    return this.shown(orgId, userId, session);
  }

  /** The member as the read models show them once they have caught up with the change. */
  private async shown(orgId: string, userId: string, session: Session) {
    await this.projector.catchUp();
    const member = await this.readModels.membership(orgId, userId);
    return member ? memberView(member, session) : { userId };
  }
}

/** An email with no account, told as what to do (sign-up says nothing of who has one; this says as little as it can). */
const cannotAdd = (email: string): ApiError =>
  new ApiError(
    'not_found',
    `${email} cannot be added yet: people are added once they have signed up with this email (ask them to sign up, then add them again)`,
  );

const memberView = (m: MemberRecord, session: Session) => ({
  userId: m.userId,
  email: m.email,
  role: m.role,
  manageKeys: mayManageKeys(m),
  addedAt: new Date(m.addedAt).toISOString(),
  you: m.userId === session.userId,
});
