import { Body, Controller, Get, HttpCode, Inject, Param, Post, UseFilters } from '@nestjs/common';
import { ApiError } from '../../http/api-error';
import { bodyValidation } from '../../http/validation';
import { IdentityService } from '../../identity/identity.service';
import type { ProjectionStore } from '../../projections/projection-store';
import { type KeyRecord, keyStatus } from '../../identity/key-lookup';
import { PROJECTIONS } from '../../runtime/runtime.module';
import { dashboardErrors } from '../dashboard-error';
import { ActiveOrgId, SignedIn } from '../session/session.guard';
import { KeyLimitDto, KeyNameDto } from './keys.dto';
import { periodOf } from '../../ledger/key-limit';
import { formatCredits, parseCredits } from '../../ledger/money';
import { Projector } from '../../projections/projector';

/** The active organization's API keys: listed (never their secrets), created (the secret shown once), revoked. */
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
  async limit(@Param('id') keyId: string, @Body(bodyValidation) body: KeyLimitDto, @ActiveOrgId() orgId: string) {
    const key = (await this.projections.keysOf(orgId)).find((k) => k.keyId === keyId);
    if (!key) throw new ApiError('not_found', 'no such key in this organization');
    let amount: number | null = null;
    if (body.limit !== null && body.limit !== undefined && body.limit.trim() !== '') {
      try {
        amount = parseCredits(body.limit.trim());
      } catch (error) {
        throw new ApiError('invalid_request', `limit: ${(error as Error).message}`);
      }
    }
    await this.identity.updateApiKey(keyId, { limit: amount === null ? null : { amount, reset: body.reset } });
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
  async create(@Body(bodyValidation) body: KeyNameDto, @ActiveOrgId() orgId: string) {
    const key = await this.identity.createApiKey(orgId, body.name);
    return { id: key.keyId, name: key.name, prefix: key.prefix, secret: key.secret, createdAt: new Date().toISOString() };
  }

  @Post(':id/revoke')
  @HttpCode(200)
  async revoke(@Param('id') keyId: string, @ActiveOrgId() orgId: string) {
    // Only keys of the active organization: another organization's key is "not found", never revoked.
    const key = (await this.projections.keysOf(orgId)).find((k) => k.keyId === keyId);
    if (!key) throw new ApiError('not_found', 'no such key in this organization');
    if (keyStatus(key) !== 'revoked') await this.identity.revokeApiKey(keyId);
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
});
