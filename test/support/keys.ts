import type { KeyChangesAsked } from '../../src/keys/api-key/api-key.decider';
import { OPERATOR } from '../../src/keys/api-key/api-key.decider';
import { CreateKeyHandler, type KeySettings } from '../../src/keys/create/create-key.handler';
import { RevokeKeyHandler } from '../../src/keys/revoke/revoke-key.handler';
import { UpdateKeyHandler } from '../../src/keys/update/update-key.handler';
import type { Runtime } from '../../src/runtime/runtime';

/** Keys made, changed and revoked as the operator tool does (the operator may manage every key). */

export const createKey = (runtime: Runtime, orgId: string, name: string, settings: KeySettings = {}) =>
  new CreateKeyHandler(runtime.events).execute({ orgId, actor: OPERATOR, name, settings });

export const updateKey = (runtime: Runtime, keyId: string, changes: KeyChangesAsked) =>
  new UpdateKeyHandler(runtime.events).execute({ keyId, orgId: null, actor: OPERATOR, changes });

export const revokeKey = (runtime: Runtime, keyId: string) =>
  new RevokeKeyHandler(runtime.events).execute({ keyId, orgId: null, actor: OPERATOR });
