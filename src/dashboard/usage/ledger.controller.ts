import { Controller, Get, Inject, Query, Res, UseFilters } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { EventStore } from '../../eventstore/event-store';
import { orgChainHead } from '../../ledger/ledger-chain';
import { type ExportQuery, sendLedgerExport } from '../../ledger-export/export-route';
import { EVENTS } from '../../runtime/runtime.module';
import { dashboardErrors } from '../dashboard-error';
import { ActiveOrgId, SignedIn } from '../session/session.guard';

/**
 * The active organization's ledger for the members who see its usage: its hash chain's head and event
 * count (shown on the usage page, to keep and compare with an export), and its export as a download.
 */
@Controller('dashboard/api/ledger')
@UseFilters(dashboardErrors)
@SignedIn({ activeOrg: true })
export class DashboardLedgerController {
  constructor(@Inject(EVENTS) private readonly events: EventStore) {}

  @Get('chain')
  async chain(@ActiveOrgId() orgId: string) {
    const { head, events, position } = await orgChainHead(this.events, orgId);
    return { head, events, position };
  }

  @Get('export')
  export(@ActiveOrgId() orgId: string, @Query() query: ExportQuery, @Res() reply: FastifyReply) {
    return sendLedgerExport(reply, this.events, orgId, query);
  }
}
