import { randomUUID } from 'node:crypto';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module';
import { Catalogue } from './catalogue/catalogue';
import { SessionTokens } from './dashboard/sessions';
import { serveWebApp } from './dashboard/web-app';
import { HostTransport } from './hosts/transport';
import type { Runtime } from './runtime/runtime';
import { ErrorFormatByRoute } from './error-formats';

export interface AppOptions {
  logger?: boolean;
  /** Defaults to the catalogue file named by the configuration. */
  catalogue?: Catalogue;
}

/** Builds the HTTP application on an opened runtime (used by main and by tests). */
export async function createApp(runtime: Runtime, options: AppOptions = {}): Promise<NestFastifyApplication> {
  const catalogue = options.catalogue ?? Catalogue.load(runtime.config.cataloguePath);
  const transport = new HostTransport({
    firstByteMs: runtime.config.hostFirstByteTimeoutMs,
    replyMs: runtime.config.requestTimeoutMs,
    idleMs: runtime.config.requestTimeoutMs,
  });
  const adapter = new FastifyAdapter({
    // No Nest middleware here: without middie, no middleware walk on every request.
    skipMiddie: true,
    bodyLimit: runtime.config.bodyLimitBytes,
    requestTimeout: runtime.config.requestTimeoutMs,
    genReqId: (request: { headers: Record<string, string | string[] | undefined> }) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : `req_${randomUUID().replace(/-/g, '')}`;
    },
  });
  const fastify = adapter.getInstance();
  // Callback style: an async hook costs a promise on every request.
  fastify.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
    done();
  });
  serveWebApp(fastify);
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRuntime(runtime, catalogue, transport, SessionTokens.fromEnvironment(runtime.config.dataDir, runtime.config.dashboardSecret)), adapter, {
    logger: options.logger === false ? false : ['error', 'warn'],
    // Fastify's own JSON parser (secure-json-parse, bodyLimit) instead of Nest's wrapper around it.
    bodyParser: false,
  });
  app.useGlobalFilters(new ErrorFormatByRoute());
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  return app;
}
