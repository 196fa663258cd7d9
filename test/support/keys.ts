import type { KeyChangesAsked } from '../../src/keys/api-key/api-key.decider';
import { OPERATOR } from '../../src/keys/api-key/api-key.decider';
import { CreateKeyCommand, CreateKeyHandler, type KeySettings } from '../../src/keys/create/create-key.command';
import { RevokeKeyCommand, RevokeKeyHandler } from '../../src/keys/revoke/revoke-key.command';
import { UpdateKeyCommand, UpdateKeyHandler } from '../../src/keys/update/update-key.command';
import type { Runtime } from '../../src/runtime/runtime';

/** Keys made, changed and revoked as the operator tool does (the operator may manage every key). */

export const createKey = (runtime: Runtime, orgId: string, name: string, settings: KeySettings = {}) =>
  new CreateKeyHandler(runtime.events).execute(new CreateKeyCommand({ orgId, actor: OPERATOR, name, settings }));

export const updateKey = (runtime: Runtime, keyId: string, changes: KeyChangesAsked) =>
  new UpdateKeyHandler(runtime.events).execute(new UpdateKeyCommand({ keyId, orgId: null, actor: OPERATOR, changes }));

export const revokeKey = (runtime: Runtime, keyId: string) =>
  new RevokeKeyHandler(runtime.events).execute(new RevokeKeyCommand({ keyId, orgId: null, actor: OPERATOR }));
