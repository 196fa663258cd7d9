import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { EventStore } from '../../eventstore/event-store';
import type { KeyLimit, RateLimits } from '../../identity/identity.events';
import { hashKeySecret, keyPrefixOf, newKeySecret } from '../../identity/secrets';
import { maskSecrets } from '../../key-secret/key-secret';
import { EVENTS } from '../../runtime/runtime.module';
import { handleKeyCommand } from '../api-key/api-key.commands';
import { hasBillingRights, type KeyActor } from '../api-key/api-key.decider';
import type { ApiKeyCreated } from '../api-key/api-key.events';

/** What a key may be made with beyond its name. */
export interface KeySettings {
  rateLimits?: RateLimits;
  /** When the key stops working (ms). */
  expiresAt?: number;
  /** A management key (it manages keys and cannot call models). */
  kind?: 'management';
  /** Billing rights for a management key (it may issue credit notes): the operator's to give only. */
  billing?: true;
  limit?: KeyLimit;
}

export interface CreatedKey {
  keyId: string;
  /** Shown once, to whoever created the key; only its hash is kept. */
  secret: string;
  orgId: string;
  name: string;
  prefix: string;
  kind?: 'management';
  billing?: true;
  createdAt: number;
  /** The log position of its creation: a view of the key waits for the read models to reach it. */
  position: number;
}

/** Make a key for an organization, as `actor` asks. */
export interface CreateKeyCommand {
  orgId: string;
  actor: KeyActor;
  name: string;
  settings?: KeySettings;
}

@Injectable()
export class CreateKeyHandler {
  constructor(@Inject(EVENTS) private readonly events: EventStore) {}

  async execute({ orgId, actor, name, settings = {} }: CreateKeyCommand): Promise<CreatedKey> {
    const keyId = randomUUID();
    const secret = newKeySecret();
    const prefix = keyPrefixOf(secret);
    const { events, position } = await handleKeyCommand(this.events, {
      type: 'CreateApiKey',
      keyId,
      orgId,
      actor,
      // A secret pasted into the name is masked before the name is stored (and shown).
      name: maskSecrets(name),
      hash: hashKeySecret(secret),
      prefix,
      ...settings,
      now: Date.now(),
    });
    const created = (events[0] as ApiKeyCreated).data;
    return {
      keyId,
      secret,
      orgId,
      name: created.name,
      prefix,
      ...(created.kind ? { kind: created.kind } : {}),
      ...(hasBillingRights(created) ? { billing: true as const } : {}),
      createdAt: created.createdAt,
      position,
    };
  }
}
