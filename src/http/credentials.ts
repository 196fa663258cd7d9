import type { FastifyRequest } from 'fastify';

/** The secret from `Authorization: Bearer …`, or null. */
export function bearerKey(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match ? match[1] : null;
}
