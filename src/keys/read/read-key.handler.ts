import { Inject, Injectable } from '@nestjs/common';
import type { ProjectionStore } from '../../projections/projection-store';
import { Projector } from '../../projections/projector';
import { PROJECTIONS } from '../../runtime/runtime.module';
import { keyNotFound } from '../api-key/api-key.decider';
import { type ListKeysQuery, type ShownKey, visibleKeys, withLimitUsage } from '../list/list-keys.handler';

export type ReadKeyQuery = ListKeysQuery & { keyId: string };

/** One key of the organization, if `actor` sees it; else key_not_found, as a command about it would answer. */
@Injectable()
export class ReadKeyHandler {
  constructor(
    @Inject(PROJECTIONS) private readonly projections: ProjectionStore,
    private readonly projector: Projector,
  ) {}

  async execute({ keyId, ...asked }: ReadKeyQuery): Promise<ShownKey> {
    const key = (await visibleKeys(this.projections, this.projector, asked)).find((k) => k.keyId === keyId);
    if (!key) throw keyNotFound(asked, keyId);
    return asked.limitUsage ? withLimitUsage(this.projections, key, Date.now()) : key;
  }
}
