import { type KeyActor, OPERATOR, type UpdateApiKey } from '../../../src/keys/api-key/api-key.decider';
import type { ApiKeyEvent, KeyChanges } from '../../../src/keys/api-key/api-key.events';
import { acme, allowed, given, k1, k2, km, MAY_NOT_MANAGE, otherPlatform, owner, platform, viewer } from '../api-key/given';

/** Changing a key: who may change which key, and what a change may be. */

const update = (
  actor: KeyActor,
  keyId = 'k1',
  changes: UpdateApiKey['changes'] = { name: ' renamed ' },
  orgId: string | null = 'o1',
): UpdateApiKey => ({ type: 'UpdateApiKey', keyId, orgId, actor, changes, now: 5 });

const updated = (keyId: string, orgId: string, changes: KeyChanges): ApiKeyEvent[] => [
  { type: 'ApiKeyUpdated', data: { keyId, orgId, hash: `hash-${keyId}`, changes, updatedAt: 5 } },
];

const revoked: ApiKeyEvent = { type: 'ApiKeyRevoked', data: { keyId: 'k1', orgId: 'o1', hash: 'hash-k1', revokedAt: 2 } };

describe('update a key', () => {
  it("the organization's owners and the members they allow change its keys; management keys, owners only", () => {
    given(acme, k1)
      .when(update(owner))
      .then(updated('k1', 'o1', { name: 'renamed' }));
    given(acme, k1)
      .when(update(allowed))
      .then(updated('k1', 'o1', { name: 'renamed' }));
    given(acme, km)
      .when(update(owner, 'km'))
      .then(updated('km', 'o1', { name: 'renamed' }));
    // Not enabled again, nor given a later expiry, by a member: an owner may have stopped it.
    given(acme, km).when(update(allowed, 'km')).thenRefused('not_owner', "only the organization's owners change management keys");
  });

  it('a member no owner allowed is refused, whichever key is named', () => {
    given(acme, k1).when(update(viewer)).thenRefused('not_key_manager', MAY_NOT_MANAGE);
    given(acme, k2).when(update(viewer, 'k2')).thenRefused('not_key_manager', MAY_NOT_MANAGE);
    given(acme).when(update(viewer, 'k404')).thenRefused('not_key_manager', MAY_NOT_MANAGE);
  });

  it("another organization's key is as unknown as a key that never was", () => {
    given(acme, k2).when(update(owner, 'k2')).thenRefused('key_not_found', 'no such key in this organization');
    given(acme).when(update(owner, 'k404')).thenRefused('key_not_found', 'no such key in this organization');
  });

  it("a management key changes its organization's ordinary keys; a management key, itself included, is not found", () => {
    given(acme, k1)
      .when(update(platform))
      .then(updated('k1', 'o1', { name: 'renamed' }));
    given(acme, km).when(update(platform, 'km')).thenRefused('key_not_found', 'no key km in this organization');
    given(acme, k2).when(update(platform, 'k2')).thenRefused('key_not_found', 'no key k2 in this organization');
    given(acme, k1).when(update(otherPlatform)).thenRefused('not_key_manager');
  });

  it('the operator changes any key, naming it alone; only the operator may name no organization', () => {
    given(acme, k2)
      .when(update(OPERATOR, 'k2', { disabled: true }, null))
      .then(updated('k2', 'o2', { disabled: true }));
    given([])
      .when(update(OPERATOR, 'k404', { disabled: true }, null))
      .thenRefused('key_not_found', 'no key k404');
    given(acme, k1)
      .when(update(owner, 'k1', { disabled: true }, null))
      .thenRefused('key_not_found');
  });

  it('a revoked key cannot be changed', () => {
    given(acme, [...k1, revoked])
      .when(update(owner))
      .thenRefused('key_revoked', /revoked/);
  });

  it("checks the changes: at least one; a limit's amount alone keeps its reset", () => {
    given(acme, k1)
      .when(update(owner, 'k1', {}))
      .thenRefused('no_change', /nothing to change/);
    given(acme, k1)
      .when(update(owner, 'k1', { expiresAt: 5 }))
      .thenRefused('invalid_expiry');
    const limited: ApiKeyEvent[] = [...k1, ...updated('k1', 'o1', { limit: { amount: 10, reset: 'weekly' } })];
    given(acme, limited)
      .when(update(owner, 'k1', { limit: { amount: 20 } }))
      .then(updated('k1', 'o1', { limit: { amount: 20, reset: 'weekly' } }));
    given(acme, k1)
      .when(update(owner, 'k1', { limit: { amount: 20 } }))
      .then(updated('k1', 'o1', { limit: { amount: 20, reset: 'never' } }));
    given(acme, k1)
      .when(update(owner, 'k1', { rateLimits: {}, expiresAt: null, limit: null }))
      .then(updated('k1', 'o1', { rateLimits: null, expiresAt: null, limit: null }));
  });
});
