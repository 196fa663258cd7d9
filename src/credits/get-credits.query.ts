import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { creditsNumber } from '../ledger/money';
import { availableOf, type ReadModels, reservedOf } from '../projections/read-models';
import { READ_MODELS } from '../runtime/runtime.module';
import { Inject } from '@nestjs/common';

/** Credits as the caller sees them: decimal credits, holds counted as reserved. */
export interface CreditsView {
  total_credits: number;
  total_usage: number;
  reserved: number;
  available: number;
}

export class GetCreditsQuery extends Query<CreditsView> {
  constructor(readonly orgId: string) {
    super();
  }
}

@QueryHandler(GetCreditsQuery)
export class GetCreditsHandler implements IQueryHandler<GetCreditsQuery, CreditsView> {
  constructor(@Inject(READ_MODELS) private readonly readModels: ReadModels) {}

  async execute({ orgId }: GetCreditsQuery): Promise<CreditsView> {
    const balance = await this.readModels.balance(orgId);
    return {
      total_credits: creditsNumber(balance.granted),
      total_usage: creditsNumber(balance.spent),
      reserved: creditsNumber(reservedOf(balance)),
      available: creditsNumber(availableOf(balance)),
    };
  }
}
