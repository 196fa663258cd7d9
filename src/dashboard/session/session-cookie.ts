import { serialize as serializeCookie } from 'cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SESSION_COOKIE, SESSION_TTL_MS } from './sessions';

/**
 * Sets the session cookie (HttpOnly, SameSite=Strict, for /dashboard only; Secure behind HTTPS),
 * or clears it when `token` is null.
 */
export function setSessionCookie(request: FastifyRequest, reply: FastifyReply, token: string | null): void {
  const secure = request.protocol === 'https' || request.headers['x-forwarded-proto'] === 'https';
  void reply.header(
    'set-cookie',
    serializeCookie(SESSION_COOKIE, token ?? '', {
      httpOnly: true,
      sameSite: 'strict',
      secure,
      path: '/dashboard',
      maxAge: token ? SESSION_TTL_MS / 1000 : 0,
    }),
  );
}
