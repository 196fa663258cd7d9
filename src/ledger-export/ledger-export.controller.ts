import { Controller, Get, Inject, Query, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { EventStore } from '../eventstore/event-store';
import { chatCompletionsErrors } from '../http/api-error';
import { ManagementKeyGuard } from '../keys/management-key.guard';
import { orgChainHead } from '../ledger/ledger-chain';
import { EVENTS } from '../runtime/runtime.module';
import type { KeyedRequest } from '../surfaces/api-key.guard';
import { type ExportQuery, sendLedgerExport } from './export-route';

/**
 * The management API's view of the ledger, for the management key's organization: its export for an
 * auditor's `ledger verify`, and its chain's head (the link to keep, and compare later exports with).
 */
@Controller('api/v1/ledger')
@UseGuards(ManagementKeyGuard)
@UseFilters(chatCompletionsErrors)
export class LedgerExportController {
  constructor(@Inject(EVENTS) private readonly events: EventStore) {}

  @Get('export')
  export(@Req() request: KeyedRequest, @Query() query: ExportQuery, @Res() reply: FastifyReply) {
    return sendLedgerExport(reply, this.events, request.apiKey.orgId, query);
  }

  @Get('chain')
  async chain(@Req() request: KeyedRequest) {
    const head = await orgChainHead(this.events, request.apiKey.orgId);
    return { org_id: head.orgId, head: head.head, events: head.events, position: head.position };
  }
}
