import { Inject, Injectable } from '@nestjs/common';
import type { EventStore, RecordedEvent } from '../../eventstore/event-store';
import { IdentityRuleError } from '../../identity/identity-rule-error';
import { EVENTS } from '../../runtime/runtime.module';
import { handleKeyCommand } from '../api-key/api-key.commands';
import type { KeyActor } from '../api-key/api-key.decider';
import { type ApiKeyRevoked, apiKeyStream } from '../api-key/api-key.events';

export interface RevokedKey {
  keyId: string;
  orgId: string;
  /** The log position of its revocation: a view of the key waits for the read models to reach it. */
  position: number;
}

/**
 * Revoke a key, for good, as `actor` asks in `orgId` (null: the operator, naming the key alone).
 * `once`: as a DELETE does, a key revoked meanwhile (by a request at the same moment) is revoked, as
 * asked; without it, revoking a revoked key is refused.
 */
export interface RevokeKeyCommand {
  keyId: string;
  orgId: string | null;
  actor: KeyActor;
  once?: boolean;
}

@Injectable()
export class RevokeKeyHandler {
  constructor(@Inject(EVENTS) private readonly events: EventStore) {}

  async execute({ keyId, orgId, actor, once }: RevokeKeyCommand): Promise<RevokedKey> {
    try {
      const { events, position } = await handleKeyCommand(this.events, {
        type: 'RevokeApiKey',
        keyId,
        orgId,
        actor,
        now: Date.now(),
      });
      return { keyId, orgId: events[0].data.orgId, position };
    } catch (error) {
      // Refused as revoked only once the asker was found to see the key and to manage keys.
      if (!(once && error instanceof IdentityRuleError && error.code === 'key_revoked')) throw error;
      // A revoked key's stream ends with its revocation.
      const stream = await this.events.readStream(apiKeyStream(keyId));
      const revocation = stream[stream.length - 1] as RecordedEvent<'ApiKeyRevoked', ApiKeyRevoked['data']>;
      return { keyId, orgId: revocation.data.orgId, position: revocation.position };
    }
  }
}
