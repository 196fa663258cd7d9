import { Inject } from '@nestjs/common';
import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import type { ProjectionStore } from '../../projections/projection-store';
import { Projector } from '../../projections/projector';
import { PROJECTIONS } from '../../runtime/runtime.module';
import { keyNotFound } from '../api-key/api-key.decider';
import { type KeysAsked, type ShownKey, visibleKeys, withLimitUsage } from '../list/list-keys.query';

/** One key of the organization, if `actor` sees it; else key_not_found, as a command about it would answer. */
export class ReadKeyQuery extends Query<ShownKey> {
  constructor(readonly input: KeysAsked & { keyId: string }) {
    super();
  }
}

@QueryHandler(ReadKeyQuery)
export class ReadKeyHandler implements IQueryHandler<ReadKeyQuery, ShownKey> {
  constructor(
    @Inject(PROJECTIONS) private readonly projections: ProjectionStore,
    private readonly projector: Projector,
  ) {}

  async execute({ input: { keyId, ...asked } }: ReadKeyQuery): Promise<ShownKey> {
    const key = (await visibleKeys(this.projections, this.projector, asked)).find((k) => k.keyId === keyId);
    if (!key) throw keyNotFound(asked, keyId);
    return asked.limitUsage ? withLimitUsage(this.projections, key, Date.now()) : key;
  }
}
