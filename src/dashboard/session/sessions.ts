import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sameSecret } from './same-secret';

/**
 * What a dashboard session carries. The active organization is checked against memberships on
 * use; whether the session is still live (not signed out, of its user's current generation)
 * against the user's stream (see sessionLive).
 */
export interface Session {
  userId: string;
  email: string;
  /** Names this session, for signing it out alone. */
  sessionId: string;
  /** The user's session generation it was issued in: a password change or a removal starts the next. */
  generation: number;
  activeOrgId: string | null;
  /** Sent back by the web app in `x-csrf-token` on every state-changing request. */
  csrf: string;
  expiresAt: number;
}

export const SESSION_COOKIE = 'mg_session';
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

/** Who a session is issued to: the user, and the session generation their stream is in. */
export interface SessionUser {
  userId: string;
  email: string;
  sessionGeneration: number;
}

/**
 * Sessions as signed cookies (HMAC-SHA256): any instance that shares the secret can check one,
 * with no session store; their end (sign-out, a password change, a removal) is an event in the
 * user's stream, which every instance reads. The secret comes from DASHBOARD_SECRET, or is made
 * once in DATA_DIR.
 */
export class SessionTokens {
  constructor(private readonly secret: Buffer) {}

  static fromEnvironment(dataDir: string, configured: string | undefined): SessionTokens {
    if (configured) return new SessionTokens(Buffer.from(configured, 'utf8'));
    mkdirSync(dataDir, { recursive: true });
    const file = join(dataDir, 'dashboard.secret');
    if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('base64url'), { mode: 0o600, flag: 'wx' });
    return new SessionTokens(Buffer.from(readFileSync(file, 'utf8').trim(), 'utf8'));
  }

  private mac(body: string): string {
    return createHmac('sha256', this.secret).update(body).digest('base64url');
  }

  issue(user: SessionUser, activeOrgId: string | null, now = Date.now()): { token: string; session: Session } {
    const session: Session = {
      userId: user.userId,
      email: user.email,
      sessionId: randomBytes(16).toString('base64url'),
      generation: user.sessionGeneration,
      activeOrgId,
      csrf: randomBytes(24).toString('base64url'),
      expiresAt: now + SESSION_TTL_MS,
    };
    return { token: this.sign(session), session };
  }

  /** The same session pointing at another organization (same CSRF token and expiry). */
  withActiveOrg(session: Session, orgId: string): string {
    return this.sign({ ...session, activeOrgId: orgId });
  }

  private sign(session: Session): string {
    const body = Buffer.from(JSON.stringify(session)).toString('base64url');
    return `${body}.${this.mac(body)}`;
  }

  verify(token: string | undefined, now = Date.now()): Session | null {
    if (!token) return null;
    const [body, mac] = token.split('.');
    if (!body || !mac) return null;
    if (!sameSecret(mac, this.mac(body))) return null;
    try {
      const session = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Session;
      // A session issued before sessions could end names none: it is refused (its user signs in again).
      if (typeof session.sessionId !== 'string' || !Number.isSafeInteger(session.generation)) return null;
      return session.expiresAt > now ? session : null;
    } catch {
      return null;
    }
  }
}
