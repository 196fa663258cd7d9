import { Controller, Get, Inject, Query, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { ApiError, openRouterErrors } from '../http/api-error';
import type { ReadModels } from '../projections/read-models';
import { READ_MODELS } from '../runtime/runtime.module';
import { requestIdsOf } from '../surfaces/reply-id';
import { ApiKeyGuard, KeyedRequest } from '../surfaces/api-key.guard';
import { periodOf } from '../ledger/key-limit';
import type { LimitReset } from '../identity/identity.events';
import { maskSecrets } from '../key-secret/key-secret';
import { generationView, keyView } from './key-views';
import { LEDGER_POSITION_HEADER, minPositionOf } from '../read-your-writes/ledger-position';
import { ReadPosition } from '../read-your-writes/read-position';

/**
 * What a key may read of itself and of its organization's requests (Bearer, errors in OpenRouter's format: these routes are its).
 * With `min_position`, each answers once its read models include that ledger position; `x-ledger-position` says what it reflects.
 */
@Controller('api/v1')
@UseGuards(ApiKeyGuard)
@UseFilters(openRouterErrors)
export class KeyController {
  constructor(
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
    private readonly readPosition: ReadPosition,
  ) {}

  /** Waits for `min_position` (when asked) and names the position the answer reflects. */
  private async reached(minPosition: unknown, reply: FastifyReply): Promise<void> {
    void reply.header(LEDGER_POSITION_HEADER, String(await this.readPosition.reach(minPositionOf(minPosition))));
  }

  /** GET /api/v1/key: the calling key, its spend and its limits. */
  @Get('key')
  async key(
    @Req() request: KeyedRequest,
    @Query('min_position') minPosition: unknown,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    await this.reached(minPosition, reply);
    const { orgId, keyId } = request.apiKey;
    const [found, organization] = await Promise.all([this.readModels.key(orgId, keyId), this.readModels.organization(orgId)]);
    const key = found ?? request.apiKey;
    const now = Date.now();
    const resets = ['never', 'daily', 'weekly', 'monthly'] as const;
    const used = await Promise.all(resets.map((reset) => this.readModels.keyUsage(orgId, keyId, periodOf(reset, now))));
    const usedIn = Object.fromEntries(resets.map((reset, i) => [reset, used[i]])) as Record<LimitReset, number>;
    return { data: keyView(key, organization?.rateLimits, usedIn) };
  }

  /**
   * GET /api/v1/generation?id=…: one request of the caller's organization, from its request log, by
   * its x-request-id or the id its reply carried (ours, or the host's for a reply passed whole).
   */
  @Get('generation')
  async generation(
    @Req() request: KeyedRequest,
    @Query('id') id: unknown,
    @Query('min_position') minPosition: unknown,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    if (typeof id !== 'string' || id === '')
      throw new ApiError('invalid_request', 'id is required: the x-request-id of a request, or the id of its reply');
    await this.reached(minPosition, reply);
    const { orgId } = request.apiKey;
    let entry = await this.readModels.request(orgId, id);
    for (const requestId of requestIdsOf(id)) entry ??= await this.readModels.request(orgId, requestId);
    // Another organization's request is as unknown as one that never was.
    if (!entry)
      throw new ApiError(
        'not_found',
        `no request ${maskSecrets(id.slice(0, 128))} in this organization's request log (it keeps the latest requests only)`,
      );
    const refunded =
      entry.reservationId === null
        ? undefined
        : (await this.readModels.refunded(orgId, [entry.reservationId])).get(entry.reservationId);
    return { data: generationView(entry, refunded) };
  }
}
