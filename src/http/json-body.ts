import type { FastifyInstance } from 'fastify';
import { ApiError } from './api-error';

/**
 * How deep a request body may nest (objects and arrays). Real requests stay far below it (a
 * tool's JSON Schema nests a few levels); a body nested thousands of levels deep would only
 * reach the recursive code behind the parser (validation, translation, token counting) and
 * overflow its stack.
 */
export const MAX_JSON_DEPTH = 128;

/**
 * Whether `text` nests objects and arrays deeper than `limit`: one pass over the characters,
 * brackets inside strings ignored. No parse: it runs before one, so a too-deep body costs no
 * more than reading it.
 */
export function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

const BODILESS = new Set(['DELETE', 'GET', 'HEAD', 'OPTIONS']);

/**
 * Fastify's own JSON parser (secure-json-parse: no `__proto__` or `constructor.prototype`
 * keys, the body limit) behind a bound on nesting: a body deeper than MAX_JSON_DEPTH is a 400.
 */
export function boundJsonDepth(fastify: FastifyInstance, limit = MAX_JSON_DEPTH): void {
  const parse = fastify.getDefaultJsonParser('error', 'error');
  fastify.removeContentTypeParser('application/json');
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    // Clients send `content-type: application/json` on a DELETE (or GET) with no body: there is none to read.
    if (text === '' && BODILESS.has(request.method)) {
      done(null, undefined);
      return;
    }
    if (nestsDeeperThan(text, limit)) {
      done(new ApiError('invalid_request', `the body nests objects and arrays more than ${limit} levels deep`), undefined);
      return;
    }
    void parse(request, text, done);
  });
}
