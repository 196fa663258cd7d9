import { Body, Controller, HttpCode, Inject, Post, Res, UseFilters } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { creditNoteView } from '../../credit-notes/credit-notes';
import { type CreditNoteBody, creditNoteSchema } from '../../credit-notes/credit-notes.schema';
import { IssueCreditNoteHandler } from '../../credit-notes/issue-credit-note.handler';
import { ApiError } from '../../http/api-error';
import { mayManageBilling } from '../../identity/organization.decider';
import { schemaValidation } from '../../http/schema-validation';
import type { ReadModels } from '../../projections/read-models';
import { READ_MODELS } from '../../runtime/runtime.module';
import { dashboardErrors } from '../dashboard-error';
import { ActiveOrgId, CurrentSession, SignedIn } from '../session/session.guard';
import type { Session } from '../session/sessions';

/**
 * Credit notes from the dashboard: the active organization's owners (the members who manage its
 * billing) refund a generation or adjust the balance, once per idempotency key (the page makes one
 * per note it asks for, so a retried click issues it once).
 */
@Controller('dashboard/api/credit-notes')
@UseFilters(dashboardErrors)
@SignedIn({ activeOrg: true })
export class CreditNotesController {
  constructor(
    private readonly credit: IssueCreditNoteHandler,
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
  ) {}

  @Post()
  @HttpCode(201)
  async issue(
    @Body(schemaValidation<CreditNoteBody>(creditNoteSchema)) body: CreditNoteBody,
    @ActiveOrgId() orgId: string,
    @CurrentSession() session: Session,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    if (!mayManageBilling((await this.readModels.membership(orgId, session.userId)) ?? undefined))
      throw new ApiError('forbidden', "only the organization's owners manage its billing");
    if (body.idempotency_key === undefined)
      throw new ApiError('invalid_request', 'idempotency_key is required: the same key again returns the first note');
    const issued = await this.credit.execute(orgId, body, body.idempotency_key, session.userId);
    if (issued.alreadyIssued) void reply.status(200);
    return creditNoteView(issued.note, issued.alreadyIssued);
  }
}
