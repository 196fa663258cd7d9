import { Inject, Injectable } from '@nestjs/common';
import type { EventStore } from '../../eventstore/event-store';
import { maskSecrets } from '../../key-secret/key-secret';
import { EVENTS } from '../../runtime/runtime.module';
import { handleKeyCommand } from '../api-key/api-key.commands';
import type { KeyActor, KeyChangesAsked } from '../api-key/api-key.decider';
import type { ApiKeyUpdated, KeyChanges } from '../api-key/api-key.events';

export interface UpdatedKey {
  keyId: string;
  orgId: string;
  /** What changed, as checked. */
  changes: KeyChanges;
  /** The log position of the change: a view of the key waits for the read models to reach it. */
  position: number;
}

/**
 * Change a key's name, credit limit, rate limits, expiry, or whether it is disabled, as `actor`
 * asks in `orgId` (null: the operator, naming the key alone).
 */
export interface UpdateKeyCommand {
  keyId: string;
  orgId: string | null;
  actor: KeyActor;
  changes: KeyChangesAsked;
}

@Injectable()
export class UpdateKeyHandler {
  constructor(@Inject(EVENTS) private readonly events: EventStore) {}

  async execute(command: UpdateKeyCommand): Promise<UpdatedKey> {
    // A secret pasted into a new name is masked before the name is stored (and shown).
    const changes =
      command.changes.name === undefined ? command.changes : { ...command.changes, name: maskSecrets(command.changes.name) };
    const { events, position } = await handleKeyCommand(this.events, {
      type: 'UpdateApiKey',
      ...command,
      changes,
      now: Date.now(),
    });
    const { orgId, changes: made } = (events[0] as ApiKeyUpdated).data;
    return { keyId: command.keyId, orgId, changes: made, position };
  }
}
