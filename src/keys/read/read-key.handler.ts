import { Inject, Injectable } from '@nestjs/common';
import { Projector } from '../../projections/projector';
import type { ReadModels } from '../../projections/read-models';
import { READ_MODELS } from '../../runtime/runtime.module';
import { keyNotFound, keyVisibleTo } from '../api-key/api-key.decider';
import { type ListKeysQuery, reached, type ShownKey, withLimitUsage } from '../list/list-keys.handler';

export type ReadKeyQuery = ListKeysQuery & { keyId: string };

/** One key of the organization, if `actor` sees it; else key_not_found, as a command about it would answer. */
@Injectable()
export class ReadKeyHandler {
  constructor(
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
    private readonly projector: Projector,
  ) {}

  async execute({ keyId, ...asked }: ReadKeyQuery): Promise<ShownKey> {
    await reached(this.projector, asked.after);
    const key = await this.readModels.key(asked.orgId, keyId);
    if (!key || !keyVisibleTo({ actor: asked.actor, orgId: asked.orgId }, key)) throw keyNotFound(asked, keyId);
    return asked.limitUsage ? withLimitUsage(this.readModels, key, Date.now()) : key;
  }
}
