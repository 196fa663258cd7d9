import { type CreateApiKey, type KeyActor, OPERATOR } from '../../../src/keys/api-key/api-key.decider';
import { acme, allowed, created, given, k1, MAY_NOT_MANAGE, otherPlatform, owner, platform, viewer } from '../api-key/given';

/** Making a key: who may, in which organization, of which kind, with what settings. */

const create = (actor: KeyActor, extra: Partial<CreateApiKey> = {}): CreateApiKey => ({
  type: 'CreateApiKey',
  keyId: 'k9',
  orgId: 'o1',
  actor,
  name: ' ci ',
  hash: 'hash-k9',
  prefix: 'sk-svc-abcdef',
  now: 5,
  ...extra,
});

const madeK9 = (extra: Parameters<typeof created>[2] = {}) => [
  created('k9', 'o1', { name: 'ci', hash: 'hash-k9', createdAt: 5, ...extra }),
];

describe('create a key', () => {
  it("the organization's owners and the members they allow make keys, ordinary or management", () => {
    given(acme).when(create(owner)).then(madeK9());
    given(acme)
      .when(create(allowed, { kind: 'management' }))
      .then(madeK9({ kind: 'management' }));
  });

  it('a member no owner allowed, or someone of no membership, is refused', () => {
    given(acme).when(create(viewer)).thenRefused('not_key_manager', MAY_NOT_MANAGE);
    given(acme)
      .when(create({ kind: 'member', userId: 'stranger' }))
      .thenRefused('not_key_manager', MAY_NOT_MANAGE);
  });

  it('a management key makes ordinary keys of its own organization only', () => {
    given(acme).when(create(platform)).then(madeK9());
    given(acme)
      .when(create(platform, { kind: 'management' }))
      .thenRefused('not_key_manager', /ordinary keys only/);
    given(acme)
      .when(create(otherPlatform))
      .thenRefused('not_key_manager', /its own organization/);
  });

  it('the operator makes keys of any kind in any organization that exists', () => {
    given(acme)
      .when(create(OPERATOR, { kind: 'management' }))
      .then(madeK9({ kind: 'management' }));
    given([]).when(create(OPERATOR)).thenRefused('organization_not_found', 'no organization o1');
  });

  it('checks what the key is made with', () => {
    given(acme)
      .when(
        create(owner, {
          rateLimits: { requestsPerMinute: 60 },
          expiresAt: 10,
          limit: { amount: 1_000, reset: 'daily' },
        }),
      )
      .then(madeK9({ rateLimits: { requestsPerMinute: 60 }, expiresAt: 10, limit: { amount: 1_000, reset: 'daily' } }));
    given(acme)
      .when(create(owner, { name: '  ' }))
      .thenRefused('invalid_name');
    given(acme)
      .when(create(owner, { expiresAt: 5 }))
      .thenRefused('invalid_expiry');
    given(acme)
      .when(create(owner, { limit: { amount: 0, reset: 'never' } }))
      .thenRefused('invalid_limit');
    given(acme)
      .when(create(owner, { rateLimits: { tokensPerMinute: 0 } }))
      .thenRefused('invalid_rate_limits');
    given(acme, k1)
      .when(create(owner, { keyId: 'k1' }))
      .thenRefused('key_exists');
  });
});
