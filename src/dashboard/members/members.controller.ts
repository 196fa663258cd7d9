import { Body, Controller, Get, HttpCode, Inject, Param, Post, UseFilters } from '@nestjs/common';
import { IdentityService } from '../../identity/identity.service';
import { mayManageKeys } from '../../identity/organization.decider';
import { bodyValidation } from '../../http/validation';
import type { ReadModels } from '../../projections/read-models';
import type { MemberRecord } from '../../projections/read-models';
import { Projector } from '../../projections/projector';
import { READ_MODELS } from '../../runtime/runtime.module';
import { dashboardErrors } from '../dashboard-error';
import { ActiveOrgId, CurrentSession, SignedIn } from '../session/session.guard';
import type { Session } from '../session/sessions';
import { AddMemberDto, KeyAccessDto } from './members.dto';

/**
 * The active organization's members: every member sees them; owners add people by email (they must
 * have signed up), remove them, and choose which members may manage keys. Who may do what is the
 * organization decider's rule: here it is only asked, as the signed-in member.
 */
@Controller('dashboard/api/members')
@UseFilters(dashboardErrors)
@SignedIn({ activeOrg: true })
export class MembersController {
  constructor(
    private readonly identity: IdentityService,
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
    private readonly projector: Projector,
  ) {}

  @Get()
  async list(@ActiveOrgId() orgId: string, @CurrentSession() session: Session) {
    return { data: (await this.readModels.membersOf(orgId)).map((m) => memberView(m, session)) };
  }

  @Post()
  @HttpCode(201)
  async add(@Body(bodyValidation) body: AddMemberDto, @ActiveOrgId() orgId: string, @CurrentSession() session: Session) {
    const { userId } = await this.identity.addMember(orgId, body.email, body.role ?? 'member', {
      by: session.userId,
      manageKeys: body.manageKeys,
    });
    return this.shown(orgId, userId, session);
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

const memberView = (m: MemberRecord, session: Session) => ({
  userId: m.userId,
  email: m.email,
  role: m.role,
  manageKeys: mayManageKeys(m),
  addedAt: new Date(m.addedAt).toISOString(),
  you: m.userId === session.userId,
});
