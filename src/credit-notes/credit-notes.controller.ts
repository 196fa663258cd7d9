import { Body, Controller, Headers, HttpCode, Inject, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { ApiError, chatCompletionsErrors } from '../http/api-error';
import { schemaValidation } from '../http/schema-validation';
import { ManagementKeyGuard } from '../keys/management-key.guard';
import { LedgerService } from '../ledger/ledger.service';
import { Projector } from '../projections/projector';
import type { ReadModels } from '../projections/read-models';
import { READ_MODELS } from '../runtime/runtime.module';
import type { KeyedRequest } from '../surfaces/api-key.guard';
import { creditNoteView, issueCreditNote } from './credit-notes';
import { type CreditNoteBody, creditNoteSchema } from './credit-notes.schema';

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
 * management key with billing rights, once per idempotency key (201 when issued now, 200 with the
 * first note when its key had issued it). Answered once the read models include it.
 */
@Controller('api/v1/credit-notes')
@UseGuards(ManagementKeyGuard)
@UseFilters(chatCompletionsErrors)
export class CreditNotesController {
  constructor(
    private readonly ledger: LedgerService,
    private readonly projector: Projector,
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
  ) {}

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
        'issuing credit notes needs a management key with billing rights (made by an owner in the dashboard, or: keys create --management --billing)',
      );
    const issued = await issueCreditNote(this.ledger, this.readModels, {
      orgId,
      kind: body.kind,
      ...(body.generation === undefined ? {} : { generation: body.generation }),
      ...(body.amount === undefined ? {} : { amount: body.amount }),
      reason: body.reason,
      idempotencyKey: idempotencyKeyOf(body, header),
      ...(body.memo === undefined ? {} : { memo: body.memo }),
      issuedBy: keyId,
    });
    await this.projector.waitFor(issued.position);
    if (issued.alreadyIssued) void reply.status(200);
    return { data: creditNoteView(issued.note, issued.alreadyIssued) };
  }
}
