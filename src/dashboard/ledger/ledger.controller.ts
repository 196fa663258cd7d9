import { Controller, Get, Inject, Query, Res, UseFilters } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { EventStore } from '../../eventstore/event-store';
import { ApiError } from '../../http/api-error';
import { mayManageBilling } from '../../identity/organization.decider';
import { orgChainHead } from '../../ledger/ledger-chain';
import { type ExportQuery, sendLedgerExport } from '../../ledger-export/export-route';
import type { ReadModels } from '../../projections/read-models';
import { EVENTS, READ_MODELS } from '../../runtime/runtime.module';
import { dashboardErrors } from '../dashboard-error';
import { Session } from '../session/sessions';
import { ActiveOrgId, CurrentSession, SignedIn } from '../session/session.guard';

/**
 * The active organization's ledger for those who may see its billing (owners): its hash chain's head
 * and event count (shown on the Billing page, to keep and compare with an export), and its export as a download.
 */
@Controller('dashboard/api/ledger')
@UseFilters(dashboardErrors)
@SignedIn({ activeOrg: true })
export class DashboardLedgerController {
  constructor(
    @Inject(EVENTS) private readonly events: EventStore,
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
  ) {}

  private async mayManageBilling(orgId: string, session: Session): Promise<void> {
    if (!mayManageBilling((await this.readModels.membership(orgId, session.userId)) ?? undefined)) {
      throw new ApiError('forbidden', "only the organization's owners see its ledger");
    }
  }

  @Get('chain')
  async chain(@ActiveOrgId() orgId: string, @CurrentSession() session: Session) {
    await this.mayManageBilling(orgId, session);
    const { head, events, position } = await orgChainHead(this.events, orgId);
    return { head, events, position };
  }

  @Get('export')
  async export(
    @ActiveOrgId() orgId: string,
    @CurrentSession() session: Session,
    @Query() query: ExportQuery,
    @Res() reply: FastifyReply,
  ) {
    await this.mayManageBilling(orgId, session);
    return sendLedgerExport(reply, this.events, orgId, query);
  }
}
