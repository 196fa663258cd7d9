import { Controller, Get, Req, UseFilters, UseGuards } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { openRouterErrors } from '../http/api-error';
import { ApiKeyGuard, KeyedRequest } from '../surfaces/api-key.guard';
import { CreditsView, GetCreditsQuery } from './get-credits.query';

/** GET /api/v1/credits: OpenRouter's route, so its errors are in OpenRouter's format. */
@Controller('api/v1/credits')
@UseGuards(ApiKeyGuard)
@UseFilters(openRouterErrors)
export class CreditsController {
  constructor(private readonly queries: QueryBus) {}

  @Get()
  async credits(@Req() request: KeyedRequest): Promise<{ data: CreditsView }> {
    return { data: await this.queries.execute(new GetCreditsQuery(request.apiKey.orgId)) };
  }
}
