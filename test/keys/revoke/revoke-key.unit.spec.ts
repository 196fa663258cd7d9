import { type KeyActor, OPERATOR, type RevokeApiKey } from '../../../src/keys/api-key/api-key.decider';
import type { ApiKeyEvent } from '../../../src/keys/api-key/api-key.events';
import { acme, allowed, given, k1, k2, km, MAY_NOT_MANAGE, owner, platform, viewer } from '../api-key/given';

/** Revoking a key: once, for good, by those who may manage it. */

const revoke = (actor: KeyActor, keyId = 'k1', orgId: string | null = 'o1'): RevokeApiKey => ({
  type: 'RevokeApiKey',
  keyId,
  orgId,
  actor,
  now: 5,
});

const revoked = (keyId: string, orgId: string, revokedAt = 5): ApiKeyEvent[] => [
  { type: 'ApiKeyRevoked', data: { keyId, orgId, hash: `hash-${keyId}`, revokedAt } },
];

describe('revoke a key', () => {
  it("the organization's owners and the members they allow revoke its keys, once", () => {
    given(acme, k1).when(revoke(owner)).then(revoked('k1', 'o1'));
    given(acme, km).when(revoke(allowed, 'km')).then(revoked('km', 'o1'));
    given(acme, [...k1, ...revoked('k1', 'o1', 2)])
      .when(revoke(owner))
      .thenRefused('key_revoked', 'key is already revoked');
  });

  it('a member no owner allowed is refused', () => {
    given(acme, k1).when(revoke(viewer)).thenRefused('not_key_manager', MAY_NOT_MANAGE);
  });

  it("another organization's key is not found, revoked or not: never changed, and nothing said of it", () => {
    given(acme, k2).when(revoke(owner, 'k2')).thenRefused('key_not_found');
    given(acme, [...k2, ...revoked('k2', 'o2', 2)])
      .when(revoke(owner, 'k2'))
      .thenRefused('key_not_found');
  });

  it("a management key revokes its organization's ordinary keys, and no management key", () => {
    given(acme, k1).when(revoke(platform)).then(revoked('k1', 'o1'));
    given(acme, km).when(revoke(platform, 'km')).thenRefused('key_not_found', 'no key km in this organization');
  });

  it('the operator revokes any key, naming it alone', () => {
    given(acme, k2)
      .when(revoke(OPERATOR, 'k2', null))
      .then(revoked('k2', 'o2'));
    given([])
      .when(revoke(OPERATOR, 'k404', null))
      .thenRefused('key_not_found', 'no key k404');
  });
});
