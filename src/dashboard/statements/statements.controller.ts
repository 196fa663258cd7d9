import { Controller, Get, Inject, Query, Res, UseFilters } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { EventStore } from '../../eventstore/event-store';
import { ApiError } from '../../http/api-error';
import { mayManageBilling } from '../../identity/organization.decider';
import type { ReadModels } from '../../projections/read-models';
import { EVENTS, READ_MODELS } from '../../runtime/runtime.module';
import { checkStatementMonth, StatementPeriodError } from '../../statements/statement';
import { statementCsv, statementHtml } from '../../statements/statement-format';
import { readStatement } from '../../statements/statement.query';
import { LEDGER_POSITION_HEADER } from '../../read-your-writes/ledger-position';
import { dashboardErrors } from '../dashboard-error';
import { Session } from '../session/sessions';
import { ActiveOrgId, CurrentSession, SignedIn } from '../session/session.guard';

const FORMATS = ['json', 'csv', 'html'] as const;
type Format = (typeof FORMATS)[number];

/** The active organization's monthly statement, for those who may see its billing (owners). */
@Controller('dashboard/api/statements')
@UseFilters(dashboardErrors)
@SignedIn({ activeOrg: true })
export class StatementsController {
  constructor(
    @Inject(EVENTS) private readonly events: EventStore,
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
  ) {}

  @Get()
  async statement(
    @ActiveOrgId() orgId: string,
    @CurrentSession() session: Session,
    @Query() query: { month?: unknown; format?: unknown },
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    if (!mayManageBilling((await this.readModels.membership(orgId, session.userId)) ?? undefined)) {
      throw new ApiError('forbidden', "only the organization's owners see its statements");
    }
    const month = typeof query.month === 'string' ? query.month : '';
    try {
      checkStatementMonth(month);
    } catch (error) {
      if (error instanceof StatementPeriodError) throw new ApiError('invalid_request', `month: ${error.message}`);
      throw error;
    }
    const format = (query.format ?? 'json') as Format;
    if (!FORMATS.includes(format)) throw new ApiError('invalid_request', `format must be one of ${FORMATS.join(', ')}`);
    const { statement, position } = await readStatement(this.events, orgId, month);
    // The log's head it was read to, beside the statement (as the FOCUS export names it), not in it.
    void reply.header(LEDGER_POSITION_HEADER, String(position));
    if (format === 'json') return statement;
    const name = `statement-${orgId}-${month}.${format}`;
    void reply
      .header('content-type', format === 'csv' ? 'text/csv; charset=utf-8' : 'text/html; charset=utf-8')
      .header('content-disposition', `${format === 'csv' ? 'attachment' : 'inline'}; filename="${name}"`);
    return format === 'csv' ? statementCsv(statement) : statementHtml(statement);
  }
}
