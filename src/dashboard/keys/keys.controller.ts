import { Body, Controller, Get, HttpCode, Param, Post, UseFilters } from '@nestjs/common';
import { ApiError } from '../../http/api-error';
import { bodyValidation } from '../../http/validation';
import { isoTime } from '../../identity/iso-time';
import { keyStatus } from '../../identity/key-lookup';
import type { KeyActor, KeyChangesAsked } from '../../keys/api-key/api-key.decider';
import { CreateKeyHandler } from '../../keys/create/create-key.handler';
import { ListKeysHandler, type ShownKey } from '../../keys/list/list-keys.handler';
import { ReadKeyHandler } from '../../keys/read/read-key.handler';
import { RevokeKeyHandler } from '../../keys/revoke/revoke-key.handler';
import { UpdateKeyHandler } from '../../keys/update/update-key.handler';
import { formatCredits, parseCredits } from '../../ledger/money';
import { dashboardErrors } from '../dashboard-error';
import { ActiveOrgId, CurrentSession, SignedIn } from '../session/session.guard';
import type { Session } from '../session/sessions';
import { CreateKeyDto, KeyExpiryDto, KeyLimitDto, KeyRateLimitsDto } from './keys.dto';

const memberOf = (session: Session): KeyActor => ({ kind: 'member', userId: session.userId });

/**
 * The active organization's API keys: listed (never their secrets) to every member; created (the
 * secret shown once), limited, given an expiry and revoked by those the key decider lets manage
 * keys (owners, and the members they allow; management keys, owners only), as the signed-in member
 * asks. Billing rights are never given here: the operator tool gives them.
 */
@Controller('dashboard/api/keys')
@UseFilters(dashboardErrors)
@SignedIn({ activeOrg: true })
export class KeysController {
  constructor(
    private readonly creating: CreateKeyHandler,
    private readonly updating: UpdateKeyHandler,
    private readonly revoking: RevokeKeyHandler,
    private readonly listing: ListKeysHandler,
    private readonly reading: ReadKeyHandler,
  ) {}

  @Get()
  async list(@ActiveOrgId() orgId: string, @CurrentSession() session: Session) {
    const keys = await this.listing.execute({ orgId, actor: memberOf(session), limitUsage: true });
    return { data: keys.sort((a, b) => b.createdAt - a.createdAt).map(keyView) };
  }

  /** Sets (or with a null limit, clears) a key's credit limit. */
  @Post(':id/limit')
  @HttpCode(200)
  async limit(
    @Param('id') keyId: string,
    @Body(bodyValidation) body: KeyLimitDto,
    @ActiveOrgId() orgId: string,
    @CurrentSession() session: Session,
  ) {
    if (body.limit === undefined)
      throw new ApiError('invalid_request', 'limit is required: an amount of credits, or null for none');
    let amount: number | null = null;
    if (body.limit !== null && body.limit.trim() !== '') {
      try {
        amount = parseCredits(body.limit.trim());
      } catch (error) {
        throw new ApiError('invalid_request', `limit: ${(error as Error).message}`);
      }
    }
    return this.update(orgId, keyId, session, { limit: amount === null ? null : { amount, reset: body.reset } });
  }

  /** Sets a key's own rate limits; none of either clears them (its organization's default applies). */
  @Post(':id/rate-limits')
  @HttpCode(200)
  async rateLimits(
    @Param('id') keyId: string,
    @Body(bodyValidation) body: KeyRateLimitsDto,
    @ActiveOrgId() orgId: string,
    @CurrentSession() session: Session,
  ) {
    // Neither given: none of its own (the decider reads an empty set so).
    const rateLimits = {
      requestsPerMinute: body.requestsPerMinute ?? undefined,
      tokensPerMinute: body.tokensPerMinute ?? undefined,
    };
    return this.update(orgId, keyId, session, { rateLimits });
  }

  /** Sets when a key stops working, or (null) never. */
  @Post(':id/expiry')
  @HttpCode(200)
  async expiry(
    @Param('id') keyId: string,
    @Body(bodyValidation) body: KeyExpiryDto,
    @ActiveOrgId() orgId: string,
    @CurrentSession() session: Session,
  ) {
    const expiresAt = body.expiresAt == null ? null : isoTime(body.expiresAt);
    if (expiresAt === null && body.expiresAt != null) {
      throw new ApiError(
        'invalid_request',
        'expiresAt must be a time in ISO 8601 with its zone (e.g. 2027-01-31T00:00:00Z), or null',
      );
    }
    return this.update(orgId, keyId, session, { expiresAt });
  }

  /** Changes the key as the member asks, and shows it once the read models show the change. */
  private async update(orgId: string, keyId: string, session: Session, changes: KeyChangesAsked) {
    const actor = memberOf(session);
    const { position } = await this.updating.execute({ keyId, orgId, actor, changes });
    return keyView(await this.reading.execute({ orgId, keyId, actor, after: position, limitUsage: true }));
  }

  @Post()
  @HttpCode(201)
  async create(@Body(bodyValidation) body: CreateKeyDto, @ActiveOrgId() orgId: string, @CurrentSession() session: Session) {
    const key = await this.creating.execute({
      orgId,
      actor: memberOf(session),
      name: body.name,
      settings: {
        // The key's rules refuse a management key to all but owners, and billing rights to all but
        // the operator: asked here, they are answered 403 saying so.
        ...(body.management === true ? { kind: 'management' as const } : {}),
        ...(body.billing === true ? { billing: true as const } : {}),
      },
    });
    return {
      id: key.keyId,
      name: key.name,
      prefix: key.prefix,
      secret: key.secret,
      createdAt: new Date(key.createdAt).toISOString(),
      kind: key.kind ?? 'ordinary',
      billing: key.billing === true,
    };
  }

  /** Revoked, whoever revoked it first: a key revoked meanwhile is answered as revoked. */
  @Post(':id/revoke')
  @HttpCode(200)
  async revoke(@Param('id') keyId: string, @ActiveOrgId() orgId: string, @CurrentSession() session: Session) {
    await this.revoking.execute({ keyId, orgId, actor: memberOf(session), once: true });
    return { id: keyId, status: 'revoked' };
  }
}

/** A key as the page shows it, with what its limit counts now. */
const keyView = (k: ShownKey) => ({
  id: k.keyId,
  name: k.name,
  prefix: k.prefix,
  createdAt: new Date(k.createdAt).toISOString(),
  lastUsedAt: k.lastUsedAt === null ? null : new Date(k.lastUsedAt).toISOString(),
  status: keyStatus(k),
  spent: formatCredits(k.spent ?? 0),
  limit: k.limit ? formatCredits(k.limit.amount) : null,
  limitReset: k.limit ? k.limit.reset : null,
  limitUsage: k.limitUsage === undefined ? null : formatCredits(k.limitUsage),
  kind: k.kind ?? 'ordinary',
  billing: k.billing === true,
  rateLimits: k.rateLimits ?? null,
  expiresAt: k.expiresAt === undefined ? null : new Date(k.expiresAt).toISOString(),
});
