import { Inject, Injectable } from '@nestjs/common';
import type { KeyRecord } from '../../identity/key-lookup';
import { periodOf } from '../../ledger/key-limit';
import { Projector } from '../../projections/projector';
import type { ReadModels } from '../../projections/read-models';
import { READ_MODELS } from '../../runtime/runtime.module';
import { type KeyActor, keyVisibleTo } from '../api-key/api-key.decider';

/** A key as the read models show it; `limitUsage`, when asked for and the key has a limit: what the limit counts now. */
export type ShownKey = KeyRecord & { limitUsage?: number };

/** Which keys, asked by whom, and how fresh. */
export interface ListKeysQuery {
  orgId: string;
  actor: KeyActor;
  /**
   * A log position the read models must have reached first: a write's, so that it shows; 'head',
   * everything in the log now (a read that follows writes made elsewhere). Absent: as they are.
   */
  after?: number | 'head';
  /** With what each key's credit limit counts now. */
  limitUsage?: boolean;
}

/** Once the read models have reached `after`. */
export async function reached(projector: Projector, after: ListKeysQuery['after']): Promise<void> {
  if (after === 'head') await projector.catchUp();
  else if (after !== undefined) await projector.waitFor(after);
}

/** The keys of `orgId` that `actor` sees (see keyVisibleTo), once the read models have reached `after`. */
async function visibleKeys(
  readModels: ReadModels,
  projector: Projector,
  { orgId, actor, after }: ListKeysQuery,
): Promise<KeyRecord[]> {
  await reached(projector, after);
  return (await readModels.keysOf(orgId)).filter((key) => keyVisibleTo({ actor, orgId }, key));
}

/** The key with what its credit limit counts now, in the period `now` falls in. */
export async function withLimitUsage(readModels: ReadModels, key: KeyRecord, now: number): Promise<ShownKey> {
  if (!key.limit) return key;
  return { ...key, limitUsage: await readModels.keyUsage(key.orgId, key.keyId, periodOf(key.limit.reset, now)) };
}

/** The organization's keys that `actor` sees, in the read models' order. */
@Injectable()
export class ListKeysHandler {
  constructor(
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
    private readonly projector: Projector,
  ) {}

  async execute(query: ListKeysQuery): Promise<ShownKey[]> {
    const keys = await visibleKeys(this.readModels, this.projector, query);
    if (!query.limitUsage) return keys;
    const now = Date.now();
    return Promise.all(keys.map((key) => withLimitUsage(this.readModels, key, now)));
  }
}
