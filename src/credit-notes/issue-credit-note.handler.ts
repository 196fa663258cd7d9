import { Inject, Injectable } from '@nestjs/common';
import { LedgerService, type IssuedCreditNote } from '../ledger/ledger.service';
import { Projector } from '../projections/projector';
import type { ReadModels } from '../projections/read-models';
import { READ_MODELS } from '../runtime/runtime.module';
import { issueCreditNote } from './credit-notes';
import type { CreditNoteBody } from './credit-notes.schema';

/**
 * Issues the credit note a front door's body asks for (the management API's: the dashboard issues
 * none), once per idempotency key, and answers once the read models include it: a balance or
 * `/generation` read right after shows it. Each front door decides who may, and which idempotency key is the request's.
 */
@Injectable()
export class IssueCreditNoteHandler {
  constructor(
    private readonly ledger: LedgerService,
    private readonly projector: Projector,
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
  ) {}

  async execute(orgId: string, body: CreditNoteBody, idempotencyKey: string, issuedBy: string): Promise<IssuedCreditNote> {
    const issued = await issueCreditNote(this.ledger, this.readModels, {
      orgId,
      kind: body.kind,
      ...(body.generation === undefined ? {} : { generation: body.generation }),
      ...(body.amount === undefined ? {} : { amount: body.amount }),
      reason: body.reason,
      idempotencyKey,
      ...(body.memo === undefined ? {} : { memo: body.memo }),
      issuedBy,
    });
    await this.projector.waitFor(issued.position);
    return issued;
  }
}
