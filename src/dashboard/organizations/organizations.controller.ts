import { Body, Controller, HttpCode, Inject, Post, Req, Res, UseFilters } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../http/api-error';
import { bodyValidation } from '../../http/validation';
import { IdentityService } from '../../identity/identity.service';
import type { ReadModels } from '../../projections/read-models';
import { Projector } from '../../projections/projector';
import { READ_MODELS } from '../../runtime/runtime.module';
import { dashboardErrors } from '../dashboard-error';
import { CurrentSession, SignedIn } from '../session/session.guard';
import { setSessionCookie } from '../session/session-cookie';
import { sessionView } from '../session/session-view';
import { type Session, SessionTokens } from '../session/sessions';
import { ActiveOrgDto, OrganizationNameDto } from './organizations.dto';

/** How long the person who created an organization waits for it to show before being told to reload. */
const READ_YOUR_WRITES_MS = 5_000;

/** Creating an organization (its creator is its owner) and picking the active one. */
@Controller('dashboard/api/organizations')
@UseFilters(dashboardErrors)
@SignedIn()
export class OrganizationsController {
  constructor(
    private readonly identity: IdentityService,
    private readonly tokens: SessionTokens,
    private readonly projector: Projector,
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
  ) {}

  @Post()
  @HttpCode(201)
  async create(
    @Body(bodyValidation) body: OrganizationNameDto,
    @CurrentSession() session: Session,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const { orgId, name } = await this.identity.createOrganization(body.name);
    await this.identity.addMember(orgId, session.email, 'owner');
    await this.readYourWrites();
    setSessionCookie(request, reply, this.tokens.withActiveOrg(session, orgId));
    return { id: orgId, name };
  }

  @Post('active')
  @HttpCode(200)
  async switchTo(
    @Body(bodyValidation) body: ActiveOrgDto,
    @CurrentSession() session: Session,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    if ((await this.readModels.membership(body.orgId, session.userId)) === null) {
      throw new ApiError('not_found', 'no such organization');
    }
    setSessionCookie(request, reply, this.tokens.withActiveOrg(session, body.orgId));
    return sessionView(this.readModels, { ...session, activeOrgId: body.orgId });
  }

  /**
   * Read-your-writes for the person who just changed something: the next page they load reads the
   * read models, so answer once the projector has applied the log as far as it reaches now (the
   * membership just appended included).
   */
  private async readYourWrites(): Promise<void> {
    try {
      await this.projector.catchUp(READ_YOUR_WRITES_MS);
    } catch {
      throw new ApiError('internal_error', 'the change is taking long to show: reload in a moment');
    }
  }
}
