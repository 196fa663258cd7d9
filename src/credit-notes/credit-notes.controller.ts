import { Body, Controller, Headers, HttpCode, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { ApiError, chatCompletionsErrors } from '../http/api-error';
import { schemaValidation } from '../http/schema-validation';
import { ManagementKeyGuard } from '../keys/management-key.guard';
import type { KeyedRequest } from '../surfaces/api-key.guard';
import { creditNoteView } from './credit-notes';
import { type CreditNoteBody, creditNoteSchema } from './credit-notes.schema';
import { IssueCreditNoteHandler } from './issue-credit-note.handler';

/** The idempotency key of a request: the body's, else the Idempotency-Key header's; one of them is required. */
export function idempotencyKeyOf(body: CreditNoteBody, header: unknown): string {
  const key = body.idempotency_key ?? (typeof header === 'string' && header !== '' ? header : undefined);
  if (key === undefined)
    throw new ApiError(
      'invalid_request',
      'idempotency_key is required (or an Idempotency-Key header): the same key again returns the first note',
      {
        param: 'idempotency_key',
      },
    );
  return key;
}

/**
 * POST /api/v1/credit-notes: a refund of a generation or an adjustment of the balance, issued by a
 * management key the operator gave billing rights (hasBillingRights), once per idempotency key (201 when issued now, 200 with the
 * first note when its key had issued it). Answered once the read models include it.
 */
@Controller('api/v1/credit-notes')
@UseGuards(ManagementKeyGuard)
@UseFilters(chatCompletionsErrors)
export class CreditNotesController {
  constructor(private readonly credit: IssueCreditNoteHandler) {}

  @Post()
  @HttpCode(201)
  async issue(
    @Req() request: KeyedRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Headers('idempotency-key') header: unknown,
    @Body(schemaValidation<CreditNoteBody>(creditNoteSchema)) body: CreditNoteBody,
  ) {
    const { orgId, keyId, billing } = request.apiKey;
    if (billing !== true)
      throw new ApiError(
        'forbidden',
        "issuing credit notes needs a management key given billing rights by the gateway's operator (model-gateway keys create --management --billing); rights given in the dashboard, or before the gateway recorded who made a key, do not count",
      );
    const issued = await this.credit.execute(orgId, body, idempotencyKeyOf(body, header), keyId);
    if (issued.alreadyIssued) void reply.status(200);
    return { data: creditNoteView(issued.note, issued.alreadyIssued) };
  }
}
