import { randomUUID } from 'node:crypto';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { LogController, type FastifyError, type FastifyReply, type FastifyRequest } from 'fastify';
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
import { LogStream, loggerOptions, NestPinoLogger } from './observability/logging';
import { levelOf, ObservedRequest, requestLine } from './observability/request-facts';
import { GatewayMetrics } from './observability/metrics';
import { Lifecycle, readiness } from './observability/health';

export interface AppOptions {
  /** false: no log at all (most tests). Otherwise pino's JSON lines, to stdout or `logStream`. */
  logger?: boolean;
  /** Where log lines go instead of stdout (tests read them). */
  logStream?: LogStream;
  /** Set `draining` when shutting down: /health/ready then answers 503. */
  lifecycle?: Lifecycle;
  /** Defaults to the catalogue file named by the configuration. */
  catalogue?: Catalogue;
}

/** Builds the HTTP application on an opened runtime (used by main and by tests). */
export async function createApp(runtime: Runtime, options: AppOptions = {}): Promise<NestFastifyApplication> {
  const catalogue = options.catalogue ?? Catalogue.load(runtime.config.cataloguePath);
  const newRequestId = () => `req_${randomUUID().replace(/-/g, '')}`;
  const logging = options.logger !== false || options.logStream !== undefined;
  const adapter = new FastifyAdapter({
    logger: logging
      ? loggerOptions({ level: runtime.config.logLevel, pretty: runtime.config.logPretty }, options.logStream)
      : false,
    // One line per request, written when it ends (below), instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
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
  fastify.decorateRequest('facts', null);
  const metrics = runtime.config.metrics
    ? new GatewayMetrics(async () => Math.max(0, (await runtime.events.headPosition()) - runtime.projector.position))
    : null;
  if (logging || metrics) {
    fastify.addHook('onResponse', (request, reply, done) => {
      const facts = (request as unknown as ObservedRequest).facts;
      const status = reply.statusCode;
      metrics?.observe(facts, status, reply.elapsedTime);
      if (logging) {
        request.log[levelOf(status)](requestLine(request.method, request.url, status, reply.elapsedTime, facts), 'request');
      }
      done();
    });
  }
  if (metrics) {
    fastify.get('/metrics', async (_request, reply) => {
      void reply.header('content-type', metrics.contentType);
      return metrics.text();
    });
  }
  const lifecycle = options.lifecycle ?? { draining: false };
  fastify.get('/health/live', (_request, reply) => void reply.send({ status: 'live' }));
  fastify.get('/health/ready', async (_request, reply) => {
    const head = await runtime.events.headPosition().catch((error: Error) => error);
    const state = readiness({ draining: lifecycle.draining, head, applied: runtime.projector.position });
    return reply.code(state.ready ? 200 : 503).send(state);
  });
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
      logger: logging ? new NestPinoLogger(fastify.log) : false,
      // Fastify's own JSON parser (secure-json-parse, bodyLimit) instead of Nest's wrapper around it.
      bodyParser: false,
    },
  );
  app.useGlobalFilters(new ErrorFormatByRoute());
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  return app;
}
