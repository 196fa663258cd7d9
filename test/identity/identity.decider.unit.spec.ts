import {
  decideApiKey,
  decideOrganization,
  decideUser,
  evolveApiKey,
  evolveOrganization,
  IdentityRuleError,
  initialApiKey,
  initialOrganization,
  initialUser,
} from '../../src/identity/identity.decider';
import {
  hashKeySecret,
  keyPrefixOf,
  looksLikeKeySecret,
  newKeySecret,
  hashPassword,
  verifyPassword,
} from '../../src/identity/secrets';

const codeOf = (fn: () => unknown) => {
  try {
    fn();
    return null;
  } catch (error) {
    return (error as IdentityRuleError).code;
  }
};

describe('identity deciders', () => {
  const [created] = decideOrganization(
    { type: 'CreateOrganization', orgId: 'o1', name: '  Acme ', now: 1 },
    initialOrganization(),
  );
  const org = evolveOrganization(initialOrganization(), created);

  it('creates organizations with a trimmed, bounded name', () => {
    expect(created).toEqual({ type: 'OrganizationCreated', data: { orgId: 'o1', name: 'Acme', createdAt: 1 } });
    expect(
      codeOf(() => decideOrganization({ type: 'CreateOrganization', orgId: 'o', name: ' ', now: 1 }, initialOrganization())),
    ).toBe('invalid_name');
    expect(
      codeOf(() =>
        decideOrganization({ type: 'CreateOrganization', orgId: 'o', name: 'x'.repeat(101), now: 1 }, initialOrganization()),
      ),
    ).toBe('invalid_name');
    expect(codeOf(() => decideOrganization({ type: 'CreateOrganization', orgId: 'o1', name: 'A', now: 1 }, org))).toBe(
      'organization_exists',
    );
  });

  it('adds a member once', () => {
    const [added] = decideOrganization({ type: 'AddMember', orgId: 'o1', userId: 'u1', role: 'owner', now: 2 }, org);
    const withMember = evolveOrganization(org, added);
    expect(
      codeOf(() => decideOrganization({ type: 'AddMember', orgId: 'o1', userId: 'u1', role: 'member', now: 3 }, withMember)),
    ).toBe('already_member');
    expect(
      codeOf(() =>
        decideOrganization({ type: 'AddMember', orgId: 'o2', userId: 'u1', role: 'member', now: 3 }, initialOrganization()),
      ),
    ).toBe('organization_not_found');
  });

  it('registers users with a normalized, valid email', () => {
    const [registered] = decideUser(
      { type: 'RegisterUser', userId: 'u1', email: ' Ada@Example.COM ', passwordHash: 'h', now: 1 },
      initialUser(),
    );
    expect(registered.data.email).toBe('ada@example.com');
    expect(
      codeOf(() => decideUser({ type: 'RegisterUser', userId: 'u', email: 'nope', passwordHash: 'h', now: 1 }, initialUser())),
    ).toBe('invalid_email');
  });

  it('creates and revokes keys once, only for existing organizations', () => {
    const create = {
      type: 'CreateApiKey' as const,
      keyId: 'k1',
      orgId: 'o1',
      name: 'ci',
      hash: 'abc',
      prefix: 'sk-svc-abcdef',
      now: 1,
    };
    expect(codeOf(() => decideApiKey(create, initialApiKey(), initialOrganization()))).toBe('organization_not_found');
    const [keyCreated] = decideApiKey(create, initialApiKey(), org);
    const key = evolveApiKey(initialApiKey(), keyCreated);
    const [revoked] = decideApiKey({ type: 'RevokeApiKey', keyId: 'k1', now: 2 }, key, org);
    expect(revoked).toEqual({ type: 'ApiKeyRevoked', data: { keyId: 'k1', orgId: 'o1', hash: 'abc', revokedAt: 2 } });
    expect(codeOf(() => decideApiKey({ type: 'RevokeApiKey', keyId: 'k1', now: 3 }, evolveApiKey(key, revoked), org))).toBe(
      'key_revoked',
    );
    expect(codeOf(() => decideApiKey({ type: 'RevokeApiKey', keyId: 'k9', now: 3 }, initialApiKey(), org))).toBe('key_not_found');
  });
});

describe('secrets', () => {
  it('makes sk-svc- secrets of 32 random bytes, stored only as a hash', () => {
    const secret = newKeySecret();
    expect(secret).toMatch(/^sk-svc-[A-Za-z0-9_-]{43}$/);
    expect(looksLikeKeySecret(secret)).toBe(true);
    expect(newKeySecret()).not.toBe(secret);
    expect(hashKeySecret(secret)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashKeySecret(secret)).not.toContain(secret.slice(7));
    expect(keyPrefixOf(secret)).toBe(secret.slice(0, 13));
    expect(looksLikeKeySecret('sk-svc-short')).toBe(false);
  });

  it('hashes passwords with scrypt and a salt', async () => {
    const a = await hashPassword('correct horse');
    const b = await hashPassword('correct horse');
    expect(a).not.toBe(b);
    expect(a.startsWith('scrypt$')).toBe(true);
    expect(await verifyPassword('correct horse', a)).toBe(true);
    expect(await verifyPassword('wrong horse', a)).toBe(false);
  });
});
