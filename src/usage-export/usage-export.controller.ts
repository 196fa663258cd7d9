import { Controller, Get, Query, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { chatCompletionsErrors } from '../http/api-error';
import { ManagementKeyGuard } from '../keys/management-key.guard';
import { ledgerPositionHeader } from '../read-your-writes/ledger-position';
import type { KeyedRequest } from '../surfaces/api-key.guard';
import { focusAskOf } from './focus';
import { type FocusExport, UsageExport } from './usage-export';

/** How every route answers an export: a CSV download, naming the ledger position it was read up to. */
export function sendFocusCsv(reply: FastifyReply, orgId: string, exported: FocusExport): string {
  void reply
    .header('content-type', 'text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="usage-focus-${orgId}.csv"`)
    .headers(ledgerPositionHeader(exported.position));
  return exported.csv;
}

/**
 * GET /api/v1/usage/focus: the management key's organization's usage in the FOCUS columns, as
 * CSV (`group=request|day`, `from`, `to`); errors in the management API's format.
 */
@Controller('api/v1/usage')
@UseGuards(ManagementKeyGuard)
@UseFilters(chatCompletionsErrors)
export class UsageExportController {
  constructor(private readonly usageExport: UsageExport) {}

  @Get('focus')
  async focus(
    @Req() request: KeyedRequest,
    @Query() query: Record<string, unknown>,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<string> {
    const { orgId } = request.apiKey;
    return sendFocusCsv(reply, orgId, await this.usageExport.focus(orgId, focusAskOf(query)));
  }
}
