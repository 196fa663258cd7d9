import { type CreateApiKey, hasBillingRights, type KeyActor, OPERATOR } from '../../../src/keys/api-key/api-key.decider';
import type { KeyMaker } from '../../../src/keys/api-key/api-key.events';
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

/** The key made, as `createdBy` made it. */
const madeK9 = (createdBy: KeyMaker, extra: Parameters<typeof created>[2] = {}) => [
  created('k9', 'o1', { name: 'ci', hash: 'hash-k9', createdAt: 5, ...extra, createdBy }),
];
const byOwner: KeyMaker = { kind: 'member', userId: 'owner' };

describe('create a key', () => {
  it("the organization's owners and the members they allow make ordinary keys; the event says who made it", () => {
    given(acme).when(create(owner)).then(madeK9(byOwner));
    given(acme)
      .when(create(allowed))
      .then(madeK9({ kind: 'member', userId: 'dev' }));
  });

  it("management keys (which reach the owners' alerts and ledger) are made by owners only, not the members they allow", () => {
    given(acme)
      .when(create(owner, { kind: 'management' }))
      .then(madeK9(byOwner, { kind: 'management' }));
    given(acme)
      .when(create(allowed, { kind: 'management' }))
      .thenRefused('not_owner', "only the organization's owners make management keys");
    given(acme)
      .when(create(viewer, { kind: 'management' }))
      .thenRefused('not_key_manager', MAY_NOT_MANAGE);
  });

  it('billing rights are given by the operator only, to a management key only: an owner is refused', () => {
    given(acme)
      .when(create(OPERATOR, { kind: 'management', billing: true }))
      .then(madeK9({ kind: 'operator' }, { kind: 'management', billing: true }));
    given(acme)
      .when(create(owner, { kind: 'management', billing: true }))
      .thenRefused('not_key_manager', /operator only: model-gateway keys create --management --billing/);
    given(acme)
      .when(create(OPERATOR, { billing: true }))
      .thenRefused('invalid_key_rights', 'billing rights are for a management key only');
  });

  it('a key has billing rights only when the operator made it with them: not an owner, nor an event from before makers were recorded', () => {
    const key = (extra: Parameters<typeof created>[2]) => created('k9', 'o1', { kind: 'management', ...extra }).data;
    expect(hasBillingRights(key({ billing: true, createdBy: { kind: 'operator' } }))).toBe(true);
    // What an owner made in the dashboard before this rule: refused now.
    expect(hasBillingRights(key({ billing: true, createdBy: byOwner }))).toBe(false);
    // Written before keys said who made them: the operator's and an owner's cannot be told apart.
    expect(hasBillingRights(key({ billing: true }))).toBe(false);
    expect(hasBillingRights(key({ createdBy: { kind: 'operator' } }))).toBe(false);
    expect(hasBillingRights(created('k9', 'o1', { billing: true, createdBy: { kind: 'operator' } }).data)).toBe(false);
  });

  it('a member no owner allowed, or someone of no membership, is refused', () => {
    given(acme).when(create(viewer)).thenRefused('not_key_manager', MAY_NOT_MANAGE);
    given(acme)
      .when(create({ kind: 'member', userId: 'stranger' }))
      .thenRefused('not_key_manager', MAY_NOT_MANAGE);
  });

  it('a management key makes ordinary keys of its own organization only', () => {
    given(acme)
      .when(create(platform))
      .then(madeK9({ kind: 'management_key', keyId: 'km' }));
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
      .then(madeK9({ kind: 'operator' }, { kind: 'management' }));
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
      .then(madeK9(byOwner, { rateLimits: { requestsPerMinute: 60 }, expiresAt: 10, limit: { amount: 1_000, reset: 'daily' } }));
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
