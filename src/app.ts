import { randomUUID } from 'node:crypto';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppModule } from './app.module';
import { Catalogue } from './catalogue/catalogue';
import { SessionTokens } from './dashboard/session/sessions';
import { serveWebApp } from './dashboard/web-app';
import type { Runtime } from './runtime/runtime';
import { ErrorFormatByRoute, errorFormatFor } from './error-formats';
import { ApiError, replyWithError } from './http/api-error';
import { connectionErrorHandler, trackRequestsOnConnections } from './http/client-errors';
import { boundJsonDepth } from './http/json-body';
import { maskSecrets } from './key-secret/key-secret';

export interface AppOptions {
  logger?: boolean;
  /** Defaults to the catalogue file named by the configuration. */
  catalogue?: Catalogue;
}

/** Builds the HTTP application on an opened runtime (used by main and by tests). */
export async function createApp(runtime: Runtime, options: AppOptions = {}): Promise<NestFastifyApplication> {
  const catalogue = options.catalogue ?? Catalogue.load(runtime.config.cataloguePath);
  const newRequestId = () => `req_${randomUUID().replace(/-/g, '')}`;
  const adapter = new FastifyAdapter({
    // No Nest middleware here: without middie, no middleware walk on every request.
    skipMiddie: true,
    bodyLimit: runtime.config.bodyLimitBytes,
    // Receiving the request (headers and body) has its own, short limit: a client that stops
    // sending mid-body is answered 408 and cut off, rather than held for the answer's 10 minutes.
    requestTimeout: runtime.config.requestReadTimeoutMs,
    http: {
      headersTimeout: Math.min(60_000, runtime.config.requestReadTimeoutMs),
      // How often Node looks for requests past those limits (its default, 30 s, would add up to that much).
      connectionsCheckingInterval: Math.min(5_000, Math.ceil(runtime.config.requestReadTimeoutMs / 2)),
    },
    // A URL that cannot be decoded (a bad percent-encoding) is refused in the format of the surface it names.
    frameworkErrors: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      // Raised while routing, before the onRequest hook that names every answer.
      void reply.header('x-request-id', request.id);
      const message = error.code === 'FST_ERR_BAD_URL' ? 'the URL is not valid (a malformed percent-encoding)' : error.message;
      replyWithError(reply, new ApiError('invalid_request', message), errorFormatFor(request.method, request.url));
    },
    // What Node would answer itself (400, 408, 431) answers with an id, in the surface's format.
    clientErrorHandler: connectionErrorHandler(newRequestId, errorFormatFor),
    genReqId: (request: { headers: Record<string, string | string[] | undefined> }) => {
      const given = request.headers['x-request-id'];
      // A client's id is kept (and recorded), unless it holds a secret.
      const usable = typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) && maskSecrets(given) === given;
      return usable ? given : newRequestId();
    },
  });
  const fastify = adapter.getInstance();
  // Bodies nested past a bound are a 400 before anything recursive reads them.
  boundJsonDepth(fastify);
  trackRequestsOnConnections(fastify);
  // Callback style: an async hook costs a promise on every request.
  fastify.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
    done();
  });
  serveWebApp(fastify);
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.forRuntime(
      runtime,
      catalogue,
      SessionTokens.fromEnvironment(runtime.config.dataDir, runtime.config.dashboardSecret),
    ),
    adapter,
    {
      logger: options.logger === false ? false : ['error', 'warn'],
      // Fastify's own JSON parser (secure-json-parse, bodyLimit) instead of Nest's wrapper around it.
      bodyParser: false,
    },
  );
  app.useGlobalFilters(new ErrorFormatByRoute());
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  return app;
}
