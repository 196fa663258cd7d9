import { Body, Controller, Get, HttpCode, Inject, Param, Post, UseFilters } from '@nestjs/common';
import { ApiError } from '../../http/api-error';
import { bodyValidation } from '../../http/validation';
import { IdentityService } from '../../identity/identity.service';
import type { ProjectionStore } from '../../projections/projection-store';
import { type KeyRecord, keyStatus } from '../../identity/key-lookup';
import { PROJECTIONS } from '../../runtime/runtime.module';
import { dashboardErrors } from '../dashboard-error';
import { ActiveOrgId, SignedIn } from '../session/session.guard';
import { KeyNameDto } from './keys.dto';

/** The active organization's API keys: listed (never their secrets), created (the secret shown once), revoked. */
@Controller('dashboard/api/keys')
@UseFilters(dashboardErrors)
@SignedIn({ activeOrg: true })
export class KeysController {
  constructor(
    private readonly identity: IdentityService,
    @Inject(PROJECTIONS) private readonly projections: ProjectionStore,
  ) {}

  @Get()
  async list(@ActiveOrgId() orgId: string) {
    const keys = (await this.projections.keysOf(orgId)).sort((a, b) => b.createdAt - a.createdAt);
    return { data: keys.map(keyView) };
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
    if (keyStatus(key) === 'active') await this.identity.revokeApiKey(keyId);
    return { id: keyId, status: 'revoked' };
  }
}

const keyView = (k: KeyRecord) => ({
  id: k.keyId,
  name: k.name,
  prefix: k.prefix,
  createdAt: new Date(k.createdAt).toISOString(),
  lastUsedAt: k.lastUsedAt === null ? null : new Date(k.lastUsedAt).toISOString(),
  status: keyStatus(k),
});
