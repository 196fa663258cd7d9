import { Controller, Get, Req, UseFilters, UseGuards } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { openRouterErrors } from '../http/api-error';
import { ApiKeyGuard, KeyedRequest } from '../surfaces/api-key.guard';
import { CreditsView, GetCreditsQuery } from './get-credits.query';

@Controller('api/v1/credits')
@UseGuards(ApiKeyGuard)
/** OpenRouter's route, answering errors in its format. */
@UseFilters(openRouterErrors)
export class CreditsController {
  constructor(private readonly queries: QueryBus) {}

  @Get()
  async credits(@Req() request: KeyedRequest): Promise<{ data: CreditsView }> {
    return { data: await this.queries.execute(new GetCreditsQuery(request.apiKey.orgId)) };
  }
}
