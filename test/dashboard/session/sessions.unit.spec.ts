import { createHmac } from 'node:crypto';
import { sameSecret } from '../../../src/dashboard/session/same-secret';
import { SESSION_TTL_MS, SessionTokens } from '../../../src/dashboard/session/sessions';

describe('session tokens', () => {
  const tokens = new SessionTokens(Buffer.from('test secret'));
  const T = 1_700_000_000_000;
  const ada = { userId: 'u1', email: 'ada@example.com', sessionGeneration: 3 };

  it('verifies a session it issued, until it expires', () => {
    // given a session issued at T
    const { token, session } = tokens.issue(ada, 'o1', T);
    // then it reads back whole while it lasts, and not from its expiry on
    expect(tokens.verify(token, T + 1)).toEqual(session);
    expect(session).toMatchObject({
      userId: 'u1',
      email: 'ada@example.com',
      generation: 3,
      sessionId: expect.stringMatching(/^[\w-]{22}$/),
      activeOrgId: 'o1',
      expiresAt: T + SESSION_TTL_MS,
    });
    expect(tokens.verify(token, T + SESSION_TTL_MS)).toBeNull();
    // each sign-in is a session of its own
    expect(tokens.issue(ada, 'o1', T).session.sessionId).not.toBe(session.sessionId);
  });

  it('refuses a signed session from before sessions could end (it names none)', () => {
    const old = Buffer.from(
      JSON.stringify({ userId: 'u1', email: 'ada@example.com', activeOrgId: null, csrf: 'c', expiresAt: T + 1000 }),
    ).toString('base64url');
    const mac = createHmac('sha256', Buffer.from('test secret')).update(old).digest('base64url');
    expect(tokens.verify(`${old}.${mac}`, T)).toBeNull();
  });

  it('refuses an edited session, another instance’s secret, and tokens that are not tokens', () => {
    const { token } = tokens.issue(ada, 'o1', T);
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
    const { session } = tokens.issue(ada, null, T);
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
