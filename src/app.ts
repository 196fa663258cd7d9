import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module';
import { Catalogue } from './catalogue/catalogue';
import { SessionTokens } from './dashboard/sessions';
import { HostTransport } from './hosts/transport';
import type { Runtime } from './runtime/runtime';
import { ErrorFormatByRoute } from './error-formats';

/** The built web app (dist/dashboard), found from here whether running compiled or not. */
function dashboardFiles(): string | null {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const candidate = join(dir, 'dist', 'dashboard');
    if (existsSync(join(candidate, 'index.html'))) return candidate;
    if (existsSync(join(dir, 'dashboard', 'index.html'))) return join(dir, 'dashboard');
  }
  return null;
}

export interface AppOptions {
  logger?: boolean;
  /** Defaults to the catalogue file named by the configuration. */
  catalogue?: Catalogue;
}

/** Builds the HTTP application on an opened runtime (used by main and by tests). */
export async function createApp(runtime: Runtime, options: AppOptions = {}): Promise<NestFastifyApplication> {
  const catalogue = options.catalogue ?? Catalogue.load(runtime.config.cataloguePath);
  const transport = new HostTransport({ firstByteMs: runtime.config.hostFirstByteTimeoutMs, idleMs: runtime.config.requestTimeoutMs });
  const adapter = new FastifyAdapter({
    bodyLimit: runtime.config.bodyLimitBytes,
    requestTimeout: runtime.config.requestTimeoutMs,
    genReqId: (request: { headers: Record<string, string | string[] | undefined> }) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : `req_${randomUUID().replace(/-/g, '')}`;
    },
  });
  const fastify = adapter.getInstance();
  fastify.addHook('onRequest', async (request, reply) => {
    void reply.header('x-request-id', request.id);
  });
  fastify.get('/', (_request, reply) => reply.redirect('/dashboard/'));
  fastify.get('/dashboard', (_request, reply) => reply.redirect('/dashboard/'));
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRuntime(runtime, catalogue, transport, SessionTokens.fromEnvironment(runtime.config.dataDir, runtime.config.dashboardSecret)), adapter, {
    logger: options.logger === false ? false : ['error', 'warn'],
  });
  app.useGlobalFilters(new ErrorFormatByRoute());
  const web = dashboardFiles();
  if (web) app.useStaticAssets({ root: web, prefix: '/dashboard/', index: ['index.html'], wildcard: false });
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  return app;
}
