import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/** The built web app (dist/dashboard), found from here whether running compiled or not. */
function builtApp(): string | null {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const candidate = join(dir, 'dist', 'dashboard');
    if (existsSync(join(candidate, 'index.html'))) return candidate;
    if (existsSync(join(dir, 'dashboard', 'index.html'))) return join(dir, 'dashboard');
  }
  return null;
}

/**
 * Every answer of the dashboard's API is the signed-in person's own (key and webhook secrets, CSRF
 * tokens, the books): no cache, the browser's included, may keep it (`no-store`; `no-cache` only
 * asks a cache to check again before using what it kept). Set when the request arrives, so that
 * errors carry it too.
 */
function storeNoDashboardAnswers(fastify: FastifyInstance): void {
  fastify.addHook('onRequest', (request, reply, done) => {
    if (request.url.startsWith('/dashboard/api/')) void reply.header('cache-control', 'no-store');
    done();
  });
}

/**
 * Serves the dashboard's few built files from memory under /dashboard/. The page is one
 * document with hash routes, so only the files the build wrote exist; anything else is a 404.
 */
export function serveWebApp(fastify: FastifyInstance): boolean {
  storeNoDashboardAnswers(fastify);
  const root = builtApp();
  if (!root) return false;
  const files = new Map(
    readdirSync(root)
      .filter((name) => TYPES[extname(name)])
      .map((name) => [name, { body: readFileSync(join(root, name)), type: TYPES[extname(name)] }]),
  );
  const security = {
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'same-origin',
    'content-security-policy':
      "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
  };
  fastify.get('/', (_request, reply) => reply.redirect('/dashboard/'));
  fastify.get('/dashboard', (_request, reply) => reply.redirect('/dashboard/'));
  fastify.get<{ Params: { file?: string } }>('/dashboard/:file', (request, reply) => {
    const name = request.params.file || 'index.html';
    const file = files.get(name);
    if (!file) return reply.status(404).type('text/plain').send('not found');
    return reply
      .headers(security)
      .header('cache-control', name === 'index.html' ? 'no-store' : 'public, max-age=300')
      .type(file.type)
      .send(file.body);
  });
  return true;
}
