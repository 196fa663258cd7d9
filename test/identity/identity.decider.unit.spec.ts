import { IdentityRuleError } from '../../src/identity/identity-rule-error';
import {
  decideOrganization,
  evolveOrganization,
  initialOrganization,
  mayManageKeys,
} from '../../src/identity/organization.decider';
import { decideUser, evolveUser, initialUser, sessionLive, type UserCommand } from '../../src/identity/user.decider';
import { decideApiKey, evolveApiKey, initialApiKey, OPERATOR } from '../../src/keys/api-key/api-key.decider';
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

  it('refuses names and emails that are not well-formed text (a lone surrogate), and takes pairs', () => {
    for (const name of ['Acme \ud800', '\udfff', 'a\udc00\ud800b']) {
      expect(
        codeOf(() => decideOrganization({ type: 'CreateOrganization', orgId: 'o', name, now: 1 }, initialOrganization())),
      ).toBe('invalid_name');
    }
    const [emoji] = decideOrganization(
      { type: 'CreateOrganization', orgId: 'o', name: 'Acme \ud83d\ude80', now: 1 },
      initialOrganization(),
    );
    expect(emoji.data).toMatchObject({ name: 'Acme 🚀' });
    expect(
      codeOf(() =>
        decideUser({ type: 'RegisterUser', userId: 'u', email: 'a\ud800@x.com', passwordHash: 'h', now: 1 }, initialUser()),
      ),
    ).toBe('invalid_email');
  });

  const add = (userId: string, role: 'owner' | 'member', extra: { by?: string; manageKeys?: boolean } = {}) => ({
    type: 'AddMember' as const,
    orgId: 'o1',
    userId,
    email: `${userId}@example.com`,
    role,
    ...extra,
    now: 2,
  });
  const apply = (state: typeof org, command: Parameters<typeof decideOrganization>[0]) =>
    decideOrganization(command, state).reduce(evolveOrganization, state);

  it('adds a member once; its founder is its first owner, and only owners add the rest', () => {
    const [added] = decideOrganization(add('u1', 'owner'), org);
    expect(added.data).toMatchObject({ userId: 'u1', email: 'u1@example.com', role: 'owner' });
    const withMember = evolveOrganization(org, added);
    expect(codeOf(() => decideOrganization(add('u1', 'member'), withMember))).toBe('already_member');
    expect(codeOf(() => decideOrganization({ ...add('u1', 'member'), orgId: 'o2' }, initialOrganization()))).toBe(
      'organization_not_found',
    );
    // A second owner needs an owner to ask (or the operator, who asks as no one).
    expect(codeOf(() => decideOrganization(add('u2', 'owner', { by: 'u9' }), withMember))).toBe('not_owner');
    const withTwo = apply(withMember, add('u2', 'member', { by: 'u1' }));
    expect(codeOf(() => decideOrganization(add('u3', 'member', { by: 'u2' }), withTwo))).toBe('not_owner');
    expect(apply(withTwo, add('u3', 'owner')).members.get('u3')).toEqual({
      role: 'owner',
      manageKeys: false,
      email: 'u3@example.com',
    });
  });

  it('owners choose which members manage keys; owners always do', () => {
    const state = apply(apply(org, add('u1', 'owner')), add('u2', 'member', { by: 'u1', manageKeys: true }));
    expect(mayManageKeys(state.members.get('u1'))).toBe(true);
    expect(mayManageKeys(state.members.get('u2'))).toBe(true);
    const revoked = apply(state, { type: 'SetMemberKeyAccess', orgId: 'o1', userId: 'u2', manageKeys: false, by: 'u1', now: 3 });
    expect(mayManageKeys(revoked.members.get('u2'))).toBe(false);
    expect(mayManageKeys(undefined)).toBe(false);
    const set = (userId: string, by: string) =>
      codeOf(() =>
        decideOrganization({ type: 'SetMemberKeyAccess', orgId: 'o1', userId, manageKeys: true, by, now: 3 }, revoked),
      );
    expect(set('u2', 'u2')).toBe('not_owner');
    expect(set('u1', 'u1')).toBe('no_change');
    expect(set('u7', 'u1')).toBe('not_member');
  });

  it('owners remove members, never the last owner', () => {
    const state = apply(apply(org, add('u1', 'owner')), add('u2', 'member', { by: 'u1' }));
    const remove = (userId: string, by?: string) => ({ type: 'RemoveMember' as const, orgId: 'o1', userId, by, now: 4 });
    expect(codeOf(() => decideOrganization(remove('u1', 'u2'), state))).toBe('not_owner');
    expect(codeOf(() => decideOrganization(remove('u1', 'u1'), state))).toBe('last_owner');
    expect(codeOf(() => decideOrganization(remove('u1'), state))).toBe('last_owner');
    expect(codeOf(() => decideOrganization(remove('u5', 'u1'), state))).toBe('not_member');
    const without = apply(state, remove('u2', 'u1'));
    expect([...without.members.keys()]).toEqual(['u1']);
    // With a second owner, either may go.
    const twoOwners = apply(state, add('u3', 'owner', { by: 'u1' }));
    expect([...apply(twoOwners, remove('u1', 'u3')).members.keys()]).toEqual(['u2', 'u3']);
  });

  it('registers users with a normalized, valid email', () => {
    const [registered] = decideUser(
      { type: 'RegisterUser', userId: 'u1', email: ' Ada@Example.COM ', passwordHash: 'h', now: 1 },
      initialUser(),
    );
    expect(registered).toMatchObject({ type: 'UserRegistered', data: { email: 'ada@example.com' } });
    expect(
      codeOf(() => decideUser({ type: 'RegisterUser', userId: 'u', email: 'nope', passwordHash: 'h', now: 1 }, initialUser())),
    ).toBe('invalid_email');
  });

  describe('sessions end through the user stream', () => {
    const registered = decideUser(
      { type: 'RegisterUser', userId: 'u1', email: 'ada@example.com', passwordHash: 'h', now: 1 },
      initialUser(),
    );
    const given = (...commands: UserCommand[]) =>
      commands.reduce(
        (state, command) => decideUser(command, state).reduce(evolveUser, state),
        registered.reduce(evolveUser, initialUser()),
      );
    const laptop = { userId: 'u1', sessionId: 'laptop', generation: 0 };
    const phone = { userId: 'u1', sessionId: 'phone', generation: 0 };

    it("a new user's sessions of generation 0 are live; no other user's, no other generation", () => {
      const ada = given();
      expect(sessionLive(ada, laptop)).toBe(true);
      expect(sessionLive(ada, { ...laptop, userId: 'u2' })).toBe(false);
      expect(sessionLive(ada, { ...laptop, generation: 1 })).toBe(false);
      expect(sessionLive(initialUser(), laptop)).toBe(false);
    });

    it('signing out ends that session only, once', () => {
      const ada = given({ type: 'SignOut', session: laptop, now: 2 });
      expect(sessionLive(ada, laptop)).toBe(false);
      expect(sessionLive(ada, phone)).toBe(true);
      expect(decideUser({ type: 'SignOut', session: laptop, now: 3 }, ada)).toEqual([]);
    });

    it('a password change or a removal ends every session from before; sessions issued after live', () => {
      for (const ending of [
        { type: 'ChangePassword' as const, userId: 'u1', passwordHash: 'h2', now: 2 },
        { type: 'EndSessions' as const, userId: 'u1', orgId: 'o1', now: 2 },
      ]) {
        const ada = given({ type: 'SignOut', session: laptop, now: 1 }, ending);
        expect(sessionLive(ada, phone)).toBe(false);
        expect(sessionLive(ada, { ...laptop, generation: 1 })).toBe(true);
        expect(ada).toMatchObject({ sessionGeneration: 1, passwordHash: ending.type === 'ChangePassword' ? 'h2' : 'h' });
      }
      expect(codeOf(() => decideUser({ type: 'EndSessions', userId: 'u2', orgId: 'o1', now: 2 }, given()))).toBe(
        'user_not_found',
      );
    });
  });

  it('creates and revokes keys once, only for existing organizations', () => {
    const create = {
      type: 'CreateApiKey' as const,
      keyId: 'k1',
      orgId: 'o1',
      actor: OPERATOR,
      name: 'ci',
      hash: 'abc',
      prefix: 'sk-svc-abcdef',
      now: 1,
    };
    expect(codeOf(() => decideApiKey(create, initialApiKey(), initialOrganization()))).toBe('organization_not_found');
    const [keyCreated] = decideApiKey(create, initialApiKey(), org);
    const key = evolveApiKey(initialApiKey(), keyCreated);
    const revoke = (keyId: string, now: number) => ({ type: 'RevokeApiKey' as const, keyId, orgId: 'o1', actor: OPERATOR, now });
    const [revoked] = decideApiKey(revoke('k1', 2), key, org);
    expect(revoked).toEqual({ type: 'ApiKeyRevoked', data: { keyId: 'k1', orgId: 'o1', hash: 'abc', revokedAt: 2 } });
    expect(codeOf(() => decideApiKey(revoke('k1', 3), evolveApiKey(key, revoked), org))).toBe('key_revoked');
    expect(codeOf(() => decideApiKey(revoke('k9', 3), initialApiKey(), org))).toBe('key_not_found');
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
