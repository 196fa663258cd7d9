import { sameSecret } from '../../../src/dashboard/session/same-secret';
import { SESSION_TTL_MS, SessionTokens } from '../../../src/dashboard/session/sessions';

describe('session tokens', () => {
  const tokens = new SessionTokens(Buffer.from('test secret'));
  const T = 1_700_000_000_000;

  it('verifies a session it issued, until it expires', () => {
    // given a session issued at T
    const { token, session } = tokens.issue('u1', 'ada@example.com', 'o1', T);
    // then it reads back whole while it lasts, and not from its expiry on
    expect(tokens.verify(token, T + 1)).toEqual(session);
    expect(session).toMatchObject({ userId: 'u1', email: 'ada@example.com', activeOrgId: 'o1', expiresAt: T + SESSION_TTL_MS });
    expect(tokens.verify(token, T + SESSION_TTL_MS)).toBeNull();
  });

  it('refuses an edited session, another instance’s secret, and tokens that are not tokens', () => {
    const { token } = tokens.issue('u1', 'ada@example.com', 'o1', T);
    const [body, mac] = token.split('.');
    // when the body is edited (another active organization) under the same MAC
    const edited = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString()), activeOrgId: 'o2' }));
    expect(tokens.verify(`${edited.toString('base64url')}.${mac}`, T)).toBeNull();
    // when another secret signed it
    expect(new SessionTokens(Buffer.from('another secret')).verify(token, T)).toBeNull();
    // when it is missing, or has no MAC, or a MAC of another length
    for (const bad of [undefined, '', body, `${body}.`, `${body}.${mac}x`, `${body}.${mac.slice(1)}`])
      expect(tokens.verify(bad, T)).toBeNull();
  });

  it('switches the active organization keeping the CSRF token and the expiry', () => {
    const { session } = tokens.issue('u1', 'ada@example.com', null, T);
    const switched = tokens.verify(tokens.withActiveOrg(session, 'o9'), T);
    expect(switched).toEqual({ ...session, activeOrgId: 'o9' });
  });
});

describe('sameSecret', () => {
  it('is true only for the same text', () => {
    expect(sameSecret('abc', 'abc')).toBe(true);
    expect(sameSecret('abd', 'abc')).toBe(false);
    expect(sameSecret('ab', 'abc')).toBe(false);
    expect(sameSecret('', 'abc')).toBe(false);
    expect(sameSecret('', '')).toBe(true);
  });
});
