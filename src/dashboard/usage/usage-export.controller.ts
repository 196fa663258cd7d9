import { Controller, Get, Inject, Query, Res, UseFilters } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { ApiError } from '../../http/api-error';
import { mayManageBilling } from '../../identity/organization.decider';
import type { ReadModels } from '../../projections/read-models';
import { READ_MODELS } from '../../runtime/runtime.module';
import { focusAskOf } from '../../usage-export/focus';
import { UsageExport } from '../../usage-export/usage-export';
import { sendFocusCsv } from '../../usage-export/usage-export.controller';
import { dashboardErrors } from '../dashboard-error';
import { ActiveOrgId, CurrentSession, SignedIn } from '../session/session.guard';
import type { Session } from '../session/sessions';

/** GET /dashboard/api/usage/focus: the active organization's usage in the FOCUS columns, a CSV download for those who may see billing (owners: mayManageBilling). */
@Controller('dashboard/api/usage')
@UseFilters(dashboardErrors)
@SignedIn({ activeOrg: true })
export class UsageExportDownloadController {
  constructor(
    private readonly usageExport: UsageExport,
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
  ) {}

  @Get('focus')
  async focus(
    @ActiveOrgId() orgId: string,
    @CurrentSession() session: Session,
    @Query() query: Record<string, unknown>,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<string> {
    if (!mayManageBilling((await this.readModels.membership(orgId, session.userId)) ?? undefined))
      throw new ApiError('forbidden', "only the organization's owners may download its billing");
    return sendFocusCsv(reply, orgId, await this.usageExport.focus(orgId, focusAskOf(query)));
  }
}
