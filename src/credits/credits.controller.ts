import { Controller, Get, Query, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import type { FastifyReply } from 'fastify';
import { openRouterErrors } from '../http/api-error';
import { LEDGER_POSITION_HEADER, minPositionOf } from '../read-your-writes/ledger-position';
import { ReadPosition } from '../read-your-writes/read-position';
import { ApiKeyGuard, KeyedRequest } from '../surfaces/api-key.guard';
import { CreditsView, GetCreditsQuery } from './get-credits.query';

/**
 * GET /api/v1/credits: OpenRouter's route, so its errors are in OpenRouter's format. With
 * `min_position`, answered once the balance includes that ledger position; `x-ledger-position` says what it reflects.
 */
@Controller('api/v1/credits')
@UseGuards(ApiKeyGuard)
@UseFilters(openRouterErrors)
export class CreditsController {
  constructor(
    private readonly queries: QueryBus,
    private readonly readPosition: ReadPosition,
  ) {}

  @Get()
  async credits(
    @Req() request: KeyedRequest,
    @Query('min_position') minPosition: unknown,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<{ data: CreditsView }> {
    const position = await this.readPosition.reach(minPositionOf(minPosition));
    void reply.header(LEDGER_POSITION_HEADER, String(position));
    return { data: await this.queries.execute(new GetCreditsQuery(request.apiKey.orgId)) };
  }
}
