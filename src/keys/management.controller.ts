import { Body, Controller, Delete, Get, Header, HttpCode, Param, Patch, Post, Req, UseFilters, UseGuards } from '@nestjs/common';
import { ApiError, chatCompletionsErrors } from '../http/api-error';
import { schemaValidation } from '../http/schema-validation';
import type { RateLimits } from '../identity/identity.events';
import { isoTime } from '../identity/iso-time';
import { parseCredits } from '../ledger/money';
import type { KeyedRequest } from '../surfaces/api-key.guard';
import type { KeyActor, KeyChangesAsked } from './api-key/api-key.decider';
import { CreateKeyHandler } from './create/create-key.handler';
import { managedKeyView } from './key-views';
import { ListKeysHandler } from './list/list-keys.handler';
import { ManagementKeyGuard } from './management-key.guard';
import { createKeySchema, KeySettingsBody, updateKeySchema } from './management.schema';
import { ReadKeyHandler } from './read/read-key.handler';
import { RevokeKeyHandler } from './revoke/revoke-key.handler';
import { UpdateKeyHandler } from './update/update-key.handler';

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

/** The management key calling, as the one who asks, in its organization. */
function askerOf(request: KeyedRequest): { orgId: string; actor: KeyActor } {
  const { keyId, orgId } = request.apiKey;
  return { orgId, actor: { kind: 'management_key', keyId, orgId } };
}

/**
 * The management API: a platform issues, reads, changes and revokes its organization's ordinary
 * keys programmatically, with a management key (which keys it sees is the key decider's rule:
 * another organization's key, or a management key, is "not found"). What it writes is read back
 * once the read models show it.
 */
@Controller('api/v1/keys')
@UseGuards(ManagementKeyGuard)
@UseFilters(chatCompletionsErrors)
export class ManagementController {
  constructor(
    private readonly creating: CreateKeyHandler,
    private readonly updating: UpdateKeyHandler,
    private readonly revoking: RevokeKeyHandler,
    private readonly listing: ListKeysHandler,
    private readonly reading: ReadKeyHandler,
  ) {}

  @Post()
  @HttpCode(201)
  // The answer holds the key's secret: no cache may keep it.
  @Header('cache-control', 'no-store')
  async create(@Req() request: KeyedRequest, @Body(schemaValidation<KeySettingsBody>(createKeySchema)) body: KeySettingsBody) {
    const changes = changesOf(body);
    const asker = askerOf(request);
    const created = await this.creating.execute({
      ...asker,
      name: body.name!,
      settings: {
        ...(changes.rateLimits ? { rateLimits: changes.rateLimits } : {}),
        ...(changes.limit ? { limit: { amount: changes.limit.amount, reset: changes.limit.reset ?? 'never' } } : {}),
        ...(typeof changes.expiresAt === 'number' ? { expiresAt: changes.expiresAt } : {}),
      },
    });
    const key = await this.reading.execute({ ...asker, keyId: created.keyId, after: created.position });
    // The secret is shown here once; only its hash is kept.
    return { data: managedKeyView(key), key: created.secret };
  }

  @Get()
  async list(@Req() request: KeyedRequest) {
    const keys = await this.listing.execute(askerOf(request));
    return { data: keys.sort((a, b) => a.createdAt - b.createdAt).map(managedKeyView) };
  }

  /** The key as the read models show it after every write so far (made here or elsewhere). */
  @Get(':id')
  async read(@Req() request: KeyedRequest, @Param('id') id: string) {
    return {
      data: managedKeyView(await this.reading.execute({ ...askerOf(request), keyId: id, after: 'head' })),
    };
  }

  @Patch(':id')
  async update(
    @Req() request: KeyedRequest,
    @Param('id') id: string,
    @Body(schemaValidation<KeySettingsBody>(updateKeySchema)) body: KeySettingsBody,
  ) {
    const asker = askerOf(request);
    const { position } = await this.updating.execute({ ...asker, keyId: id, changes: changesOf(body) });
    return { data: managedKeyView(await this.reading.execute({ ...asker, keyId: id, after: position })) };
  }

  /** Revoked, whoever revoked it first: a DELETE of a key revoked meanwhile answers it as revoked. */
  @Delete(':id')
  async revoke(@Req() request: KeyedRequest, @Param('id') id: string) {
    const asker = askerOf(request);
    const { position } = await this.revoking.execute({ ...asker, keyId: id, once: true });
    return { data: managedKeyView(await this.reading.execute({ ...asker, keyId: id, after: position })) };
  }
}
