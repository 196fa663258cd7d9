import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Req, UseFilters, UseGuards } from '@nestjs/common';
import { ApiError, chatCompletionsErrors } from '../http/api-error';
import { schemaValidation } from '../http/schema-validation';
import type { RateLimits } from '../identity/identity.events';
import type { KeyChangesAsked } from '../identity/identity.decider';
import { isoTime } from '../identity/iso-time';
import { IdentityService, revokeOnce } from '../identity/identity.service';
import type { KeyRecord } from '../identity/key-lookup';
import { maskSecrets } from '../key-secret/key-secret';
import { parseCredits } from '../ledger/money';
import type { ProjectionStore } from '../projections/projection-store';
import { Projector } from '../projections/projector';
import { PROJECTIONS } from '../runtime/runtime.module';
import type { KeyedRequest } from '../surfaces/api-key.guard';
import { managedKeyView } from './key-views';
import { ManagementKeyGuard } from './management-key.guard';
import { createKeySchema, KeySettingsBody, updateKeySchema } from './management.schema';

const rateLimitsOf = (body: NonNullable<KeySettingsBody['rate_limits']>): RateLimits => ({
  ...(body.requests_per_minute === undefined ? {} : { requestsPerMinute: body.requests_per_minute }),
  ...(body.tokens_per_minute === undefined ? {} : { tokensPerMinute: body.tokens_per_minute }),
});

/** Credits as JSON gives them, in nano-credits (at most 9 decimals). */
function nanoOf(credits: number): number {
  // As decimal text (String(5e-7) would be "5e-7"); more than 9 decimals do not survive the round trip.
  const text = credits.toFixed(9);
  if (Number(text) !== credits) {
    throw new ApiError('invalid_request', 'limit: an amount of credits has at most 9 decimals', { param: 'limit' });
  }
  try {
    return parseCredits(text);
  } catch (error) {
    throw new ApiError('invalid_request', `limit: ${(error as Error).message}`, { param: 'limit' });
  }
}

function timeOf(text: string): number {
  const ms = isoTime(text);
  if (ms === null) {
    throw new ApiError(
      'invalid_request',
      'expires_at must be a time in ISO 8601 with its zone (e.g. 2027-01-31T00:00:00Z), or null',
      {
        param: 'expires_at',
      },
    );
  }
  return ms;
}

/** The changes a body asks for, in identity's terms (a limit without its reset keeps the key's). */
function changesOf(body: KeySettingsBody): KeyChangesAsked {
  const changes: KeyChangesAsked = {};
  if (body.name !== undefined) changes.name = body.name;
  if (body.rate_limits !== undefined) changes.rateLimits = body.rate_limits === null ? null : rateLimitsOf(body.rate_limits);
  if (body.expires_at !== undefined) changes.expiresAt = body.expires_at === null ? null : timeOf(body.expires_at);
  if (body.disabled !== undefined) changes.disabled = body.disabled;
  if (body.limit === null) changes.limit = null;
  else if (body.limit !== undefined) changes.limit = { amount: nanoOf(body.limit), reset: body.limit_reset };
  else if (body.limit_reset !== undefined) {
    throw new ApiError('invalid_request', 'limit_reset goes with limit', { param: 'limit_reset' });
  }
  return changes;
}

/**
 * The management API: a platform issues, reads, changes and revokes its organization's ordinary
 * keys programmatically, with a management key. Confined to the management key's organization:
 * another organization's key is "not found". What it writes is read back once the read models
 * show it.
 */
@Controller('api/v1/keys')
@UseGuards(ManagementKeyGuard)
@UseFilters(chatCompletionsErrors)
export class ManagementController {
  constructor(
    private readonly identity: IdentityService,
    private readonly projector: Projector,
    @Inject(PROJECTIONS) private readonly projections: ProjectionStore,
  ) {}

  @Post()
  @HttpCode(201)
  async create(@Req() request: KeyedRequest, @Body(schemaValidation<KeySettingsBody>(createKeySchema)) body: KeySettingsBody) {
    const changes = changesOf(body);
    const created = await this.identity.createApiKey(request.apiKey.orgId, body.name!, {
      ...(changes.rateLimits ? { rateLimits: changes.rateLimits } : {}),
      ...(changes.limit ? { limit: { amount: changes.limit.amount, reset: changes.limit.reset ?? 'never' } } : {}),
      ...(typeof changes.expiresAt === 'number' ? { expiresAt: changes.expiresAt } : {}),
    });
    const key = await this.keyOf(request, created.keyId);
    // The secret is shown here once; only its hash is kept.
    return { data: managedKeyView(key), key: created.secret };
  }

  @Get()
  async list(@Req() request: KeyedRequest) {
    const keys = await this.projections.keysOf(request.apiKey.orgId);
    return {
      data: keys
        .filter((k) => k.kind !== 'management')
        .sort((a, b) => a.createdAt - b.createdAt)
        .map(managedKeyView),
    };
  }

  @Get(':id')
  async read(@Req() request: KeyedRequest, @Param('id') id: string) {
    return { data: managedKeyView(await this.keyOf(request, id)) };
  }

  @Patch(':id')
  async update(
    @Req() request: KeyedRequest,
    @Param('id') id: string,
    @Body(schemaValidation<KeySettingsBody>(updateKeySchema)) body: KeySettingsBody,
  ) {
    await this.keyOf(request, id);
    await this.identity.updateApiKey(id, changesOf(body));
    return { data: managedKeyView(await this.keyOf(request, id)) };
  }

  @Delete(':id')
  async revoke(@Req() request: KeyedRequest, @Param('id') id: string) {
    const key = await this.keyOf(request, id);
    if (key.revokedAt === null) await revokeOnce(this.identity, id);
    return { data: managedKeyView(await this.keyOf(request, id)) };
  }

  /** An ordinary key of the caller's organization, as the read models show it after every write so far. */
  private async keyOf(request: KeyedRequest, keyId: string): Promise<KeyRecord> {
    await this.projector.catchUp();
    const key = (await this.projections.keysOf(request.apiKey.orgId)).find((k) => k.keyId === keyId && k.kind !== 'management');
    if (!key) throw new ApiError('not_found', `no key ${maskSecrets(keyId.slice(0, 64))} in this organization`);
    return key;
  }
}
