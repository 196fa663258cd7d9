import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { creditsNumber, type NanoSum, nanoSum } from '../ledger/money';
import { availableOf, type ReadModels, reservedOf } from '../projections/read-models';
import { READ_MODELS } from '../runtime/runtime.module';
import { Inject } from '@nestjs/common';

/**
 * Credits as the caller sees them: OpenRouter's fields in decimal credits (JSON numbers, for its
 * clients; holds counted as reserved), and beside each the exact figure in nano-credits (`…_nano`, as
 * every exact amount the API answers): a JSON integer while it is a safe integer, past 2^53 its
 * decimal digits as a string (a NanoSum, as statements and exports carry sums), never a float. The
 * read models hold amounts exactly up to 2^53 − 1 nano-credits (the balance's bound; README, Known
 * limitations): a lifetime's grants or usage beyond it is exact in statements and exports only.
 */
export interface CreditsView {
  total_credits: number;
  total_usage: number;
  reserved: number;
  available: number;
  total_credits_nano: NanoSum;
  total_usage_nano: NanoSum;
  reserved_nano: NanoSum;
  available_nano: NanoSum;
}

export class GetCreditsQuery extends Query<CreditsView> {
  constructor(readonly orgId: string) {
    super();
  }
}

/** A read model's amount (an integer) as the API carries exact sums. */
const exact = (nano: number): NanoSum => nanoSum(BigInt(nano));

@QueryHandler(GetCreditsQuery)
export class GetCreditsHandler implements IQueryHandler<GetCreditsQuery, CreditsView> {
  constructor(@Inject(READ_MODELS) private readonly readModels: ReadModels) {}

  async execute({ orgId }: GetCreditsQuery): Promise<CreditsView> {
    const balance = await this.readModels.balance(orgId);
    const reserved = reservedOf(balance);
    const available = availableOf(balance);
    return {
      total_credits: creditsNumber(balance.granted),
      total_usage: creditsNumber(balance.spent),
      reserved: creditsNumber(reserved),
      available: creditsNumber(available),
      total_credits_nano: exact(balance.granted),
      total_usage_nano: exact(balance.spent),
      reserved_nano: exact(reserved),
      available_nano: exact(available),
    };
  }
}
