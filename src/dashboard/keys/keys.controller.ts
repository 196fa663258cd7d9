import { Body, Controller, Get, HttpCode, Inject, Param, Post, UseFilters } from '@nestjs/common';
import { ApiError } from '../../http/api-error';
import { bodyValidation } from '../../http/validation';
import { IdentityService, revokeOnce } from '../../identity/identity.service';
import type { ProjectionStore } from '../../projections/projection-store';
import { type KeyRecord, keyStatus } from '../../identity/key-lookup';
import { PROJECTIONS } from '../../runtime/runtime.module';
import { dashboardErrors } from '../dashboard-error';
import { ActiveOrgId, CurrentSession, SignedIn } from '../session/session.guard';
import type { Session } from '../session/sessions';
import { mayManageKeys } from '../../identity/identity.decider';
import { isoTime } from '../../identity/iso-time';
import { CreateKeyDto, KeyExpiryDto, KeyLimitDto, KeyRateLimitsDto } from './keys.dto';
import { periodOf } from '../../ledger/key-limit';
import { formatCredits, parseCredits } from '../../ledger/money';
import { Projector } from '../../projections/projector';

/**
 * The active organization's API keys: listed (never their secrets) to every member; created (the
 * secret shown once), limited, given an expiry and revoked by owners and the members they allow.
 */
@Controller('dashboard/api/keys')
@UseFilters(dashboardErrors)
@SignedIn({ activeOrg: true })
export class KeysController {
  constructor(
    private readonly identity: IdentityService,
    @Inject(PROJECTIONS) private readonly projections: ProjectionStore,
    private readonly projector: Projector,
  ) {}

  @Get()
  async list(@ActiveOrgId() orgId: string) {
    const keys = (await this.projections.keysOf(orgId)).sort((a, b) => b.createdAt - a.createdAt);
    return { data: await Promise.all(keys.map((k) => this.view(orgId, k))) };
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
    await this.keyOf(orgId, keyId, session);
    if (body.limit === undefined)
      throw new ApiError('invalid_request', 'limit is required: an amount of credits, or null for none');
    let amount: number | null = null;
    if (body.limit !== null && body.limit !== undefined && body.limit.trim() !== '') {
      try {
        amount = parseCredits(body.limit.trim());
      } catch (error) {
        throw new ApiError('invalid_request', `limit: ${(error as Error).message}`);
      }
    }
    await this.identity.updateApiKey(keyId, { limit: amount === null ? null : { amount, reset: body.reset } });
    return this.updated(orgId, keyId);
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
    await this.keyOf(orgId, keyId, session);
    // Neither given: none of its own (the decider reads an empty set so).
    const rateLimits = {
      requestsPerMinute: body.requestsPerMinute ?? undefined,
      tokensPerMinute: body.tokensPerMinute ?? undefined,
    };
    await this.identity.updateApiKey(keyId, { rateLimits });
    return this.updated(orgId, keyId);
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
    await this.keyOf(orgId, keyId, session);
    const expiresAt = body.expiresAt == null ? null : isoTime(body.expiresAt);
    if (expiresAt === null && body.expiresAt != null) {
      throw new ApiError(
        'invalid_request',
        'expiresAt must be a time in ISO 8601 with its zone (e.g. 2027-01-31T00:00:00Z), or null',
      );
    }
    await this.identity.updateApiKey(keyId, { expiresAt });
    return this.updated(orgId, keyId);
  }

  /**
   * A key of the active organization that the signed-in member may manage: 403 for a member an
   * owner has not allowed, 404 for a key of another organization (never changed).
   */
  private async keyOf(orgId: string, keyId: string | null, session: Session): Promise<KeyRecord | null> {
    if (!mayManageKeys((await this.projections.membership(orgId, session.userId)) ?? undefined)) {
      throw new ApiError('forbidden', "only the organization's owners, and members they allow, manage its keys");
    }
    if (keyId === null) return null;
    const key = (await this.projections.keysOf(orgId)).find((k) => k.keyId === keyId);
    if (!key) throw new ApiError('not_found', 'no such key in this organization');
    return key;
  }

  /** The key as the page shows it, once the read models show the change just made. */
  private async updated(orgId: string, keyId: string) {
    await this.projector.catchUp();
    const updated = (await this.projections.keysOf(orgId)).find((k) => k.keyId === keyId)!;
    return this.view(orgId, updated);
  }

  /** A key as the page shows it, with what its limit counts now. */
  private async view(orgId: string, k: KeyRecord) {
    const usage = k.limit ? await this.projections.keyUsage(orgId, k.keyId, periodOf(k.limit.reset, Date.now())) : null;
    return keyView(k, usage);
  }

  @Post()
  @HttpCode(201)
  async create(@Body(bodyValidation) body: CreateKeyDto, @ActiveOrgId() orgId: string, @CurrentSession() session: Session) {
    await this.keyOf(orgId, null, session);
    const key = await this.identity.createApiKey(orgId, body.name, body.management === true ? { kind: 'management' } : {});
    return {
      id: key.keyId,
      name: key.name,
      prefix: key.prefix,
      secret: key.secret,
      createdAt: new Date().toISOString(),
      kind: key.kind ?? 'ordinary',
    };
  }

  @Post(':id/revoke')
  @HttpCode(200)
  async revoke(@Param('id') keyId: string, @ActiveOrgId() orgId: string, @CurrentSession() session: Session) {
    const key = (await this.keyOf(orgId, keyId, session))!;
    if (keyStatus(key) !== 'revoked') await revokeOnce(this.identity, keyId);
    return { id: keyId, status: 'revoked' };
  }
}

const keyView = (k: KeyRecord, limitUsage: number | null) => ({
  id: k.keyId,
  name: k.name,
  prefix: k.prefix,
  createdAt: new Date(k.createdAt).toISOString(),
  lastUsedAt: k.lastUsedAt === null ? null : new Date(k.lastUsedAt).toISOString(),
  status: keyStatus(k),
  spent: formatCredits(k.spent ?? 0),
  limit: k.limit ? formatCredits(k.limit.amount) : null,
  limitReset: k.limit ? k.limit.reset : null,
  limitUsage: limitUsage === null ? null : formatCredits(limitUsage),
  kind: k.kind ?? 'ordinary',
  rateLimits: k.rateLimits ?? null,
  expiresAt: k.expiresAt === undefined ? null : new Date(k.expiresAt).toISOString(),
});
