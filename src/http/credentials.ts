import type { FastifyRequest } from 'fastify';
import type { KeyRecord } from '../identity/key-lookup';
import { ApiError } from './api-error';

/**
 * Where a surface takes the API key from: `Authorization: Bearer …` everywhere; the messages
 * surface also takes `x-api-key`, and the Gemini surface `x-goog-api-key` or the `key` query
 * parameter, as their formats' own clients send it.
 */
export type KeyHeaders = 'bearer' | 'x-api-key or bearer' | 'x-goog-api-key, key or bearer';

const WHERE_TO_SEND: Record<KeyHeaders, string> = {
  bearer: 'send "Authorization: Bearer <key>"',
  'x-api-key or bearer': 'send it in "x-api-key" (or "Authorization: Bearer")',
  'x-goog-api-key, key or bearer': 'send it in "x-goog-api-key" or the "key" query parameter (or "Authorization: Bearer")',
};

/** The secret from `Authorization: Bearer …`, or null. */
export function bearerKey(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match ? match[1] : null;
}

/** The secret from `x-api-key`, else from `Authorization: Bearer`, or null. */
function xApiKeyOrBearer(request: FastifyRequest): string | null {
  const header = request.headers['x-api-key'];
  if (typeof header === 'string' && header.trim() !== '') return header.trim();
  return bearerKey(request);
}

/** The secret from `x-goog-api-key`, else the `key` query parameter, else `Authorization: Bearer`, or null. */
function googKeyOrBearer(request: FastifyRequest): string | null {
  const header = request.headers['x-goog-api-key'];
  if (typeof header === 'string' && header.trim() !== '') return header.trim();
  const query = (request.query as Record<string, unknown> | undefined)?.key;
  if (typeof query === 'string' && query.trim() !== '') return query.trim();
  return bearerKey(request);
}

const KEY_OF: Record<KeyHeaders, (request: FastifyRequest) => string | null> = {
  bearer: bearerKey,
  'x-api-key or bearer': xApiKeyOrBearer,
  'x-goog-api-key, key or bearer': googKeyOrBearer,
};

/**
 * The one rule for a request without a key: 401, saying where the key goes. Every route that
 * takes an API key reads it through here (guards before the body is read, controllers after).
 */
export function requireKey(request: FastifyRequest, headers: KeyHeaders = 'bearer'): string {
  const secret = KEY_OF[headers](request);
  if (secret === null) throw new ApiError('invalid_api_key', `missing API key: ${WHERE_TO_SEND[headers]}`);
  return secret;
}

/** A key that is not one, or no longer: the same answer either way. */
export const invalidApiKey = (): ApiError => new ApiError('invalid_api_key', 'invalid or revoked API key');

/** An ordinary key, or the answer for what was sent instead: 401 for none, 403 for a management key. */
export function ordinaryKey(key: KeyRecord | null): KeyRecord {
  if (!key) throw invalidApiKey();
  if (key.kind === 'management') {
    throw new ApiError(
      'forbidden',
      'this is a management key: it manages the organization’s keys (/api/v1/keys) and cannot call models; use an ordinary key',
    );
  }
  return key;
}
