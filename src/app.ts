import { randomUUID } from 'node:crypto';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LogController, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
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
import { factsOf, levelOf, ObservedRequest, requestLine } from './observability/request-facts';
import { Tracing } from './observability/tracing';
import { InFlightSettlements } from './inference/in-flight';
import { openApiDocument } from './openapi/openapi.document';
import { GatewayMetrics } from './observability/metrics';
import { openStreams } from './surfaces/sse';
import type { Config } from './config/config';
import { eventsBehind, Lifecycle, READY_LAG_BOUND, readiness } from './observability/health';

/** The read-model lag metric counts events up to this many (a scrape reads no more of the log). */
const LAG_COUNTED_UP_TO = 10_000;

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

/** The status a request's line and metrics show when its client left before its reply ended (nginx's). */
const CLIENT_CLOSED_REQUEST = 499;

/** GET /metrics on a port of its own (METRICS_PORT), closed with the application. */
async function serveMetricsAlone(fastify: FastifyInstance, metrics: GatewayMetrics, config: Config): Promise<void> {
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('only GET /metrics here\n');
      return;
    }
    metrics.text().then(
      (text) => response.writeHead(200, { 'content-type': metrics.contentType }).end(text),
      (error: Error) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`${error.message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.metricsPort!, config.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  // Where it listens (a port of 0 picks one), for the start-up line and for tests.
  fastify.decorate('metricsUrl', `http://${config.host}:${port}/metrics`);
  fastify.addHook('onClose', (_instance, done) => server.close(() => done()));
}

const SHUTTING_DOWN = new ApiError('unavailable', 'the gateway is shutting down: send the request again (to another instance)');

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
    // While draining, our own hook answers (in the surface's format) instead of Fastify's plain 503.
    return503OnClosing: false,
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
    ? new GatewayMetrics({
        lag: () => eventsBehind(runtime.events, runtime.projector.position, LAG_COUNTED_UP_TO),
        openStreams,
        reservationsHeld: () => runtime.projections.openReservationCount(),
        reservationsExpired: () => runtime.reservationsExpired,
      })
    : null;
  if (metrics) runtime.events.onAppend((seconds) => metrics.observeAppend(seconds));
  const tracing = runtime.config.otlpEndpoint === null ? null : Tracing.start(runtime.config.otlpEndpoint);
  /** The pipeline's settlements in flight, once the application exists. */
  let settlements: InFlightSettlements | null = null;
  if (tracing) {
    fastify.decorate('tracing', tracing);
    // Spans end with their settlements (a request cut at the grace period's end is settled as the
    // server closes): wait for those, then export what is left. Errors cost traces, never the shutdown.
    fastify.addHook('onClose', async () => {
      await settlements?.settled();
      await new Promise((resolve) => setImmediate(resolve));
      const failure = await tracing.shutdown();
      if (failure) fastify.log.warn(`traces not all exported at shutdown: ${failure}`);
    });
    // The request's span, from its arrival (continuing the client's trace); the pipeline's spans hang from it.
    fastify.addHook('onRequest', (request, _reply, done) => {
      factsOf(request).trace = tracing.startRequest(request.headers, request.method, maskSecrets(request.url.split('?')[0]));
      done();
    });
  }
  if (logging || metrics || tracing) {
    const requestEnded = (request: FastifyRequest, status: number, latencyMs: number) => {
      const facts = (request as unknown as ObservedRequest).facts;
      metrics?.observe(facts, status, latencyMs);
      if (logging) request.log[levelOf(status)](requestLine(request.method, request.url, status, latencyMs, facts), 'request');
      if (facts?.trace) facts.trace.tracing.endRequest(facts.trace, facts, request.id, status);
    };
    fastify.addHook('onResponse', (request, reply, done) => {
      requestEnded(request, reply.statusCode, reply.elapsedTime);
      done();
    });
    // A stream its client cuts never finishes (no onResponse): its line, with status 499 (the
    // client closed the request), once its settlement says what it was billed.
    fastify.addHook('onRequest', (request, reply, done) => {
      reply.raw.once('close', () => {
        if (reply.raw.writableFinished) return;
        const latencyMs = reply.elapsedTime;
        // After the other listeners of this event: the stream's own one ends the request, and says when it is settled.
        setImmediate(() => {
          const settled = (request as unknown as ObservedRequest).facts?.settled ?? Promise.resolve();
          void settled.then(() => requestEnded(request, CLIENT_CLOSED_REQUEST, latencyMs));
        });
      });
      done();
    });
  }
  if (metrics && runtime.config.metricsPort === null) {
    fastify.get('/metrics', async (_request, reply) => {
      void reply.header('content-type', metrics.contentType);
      return metrics.text();
    });
  }
  if (metrics && runtime.config.metricsPort !== null) await serveMetricsAlone(fastify, metrics, runtime.config);
  // The API's description, built once from the schemas the routes validate with.
  const openApi = JSON.stringify(openApiDocument());
  fastify.get('/api/v1/openapi.json', (_request, reply) => void reply.type('application/json').send(openApi));
  const lifecycle = options.lifecycle ?? { draining: false };
  fastify.get('/health/live', (_request, reply) => void reply.send({ status: 'live' }));
  fastify.get('/health/ready', async (_request, reply) => {
    const [behind, store] = await Promise.all([
      eventsBehind(runtime.events, runtime.projector.position, READY_LAG_BOUND + 1).catch((error: Error) => error),
      runtime.projections.checkpoint().then(
        () => null,
        (error: Error) => error,
      ),
    ]);
    const state = readiness({ draining: lifecycle.draining, behind, store });
    return reply.code(state.ready ? 200 : 503).send(state);
  });
  // Callback style: an async hook costs a promise on every request.
  fastify.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
    // Shutting down: a request on a connection kept alive is answered at once, in its surface's
    // format, and the connection closed; the health routes still say how the service is.
    if (lifecycle.draining && !request.url.startsWith('/health/') && request.url !== '/health') {
      void reply.header('connection', 'close');
      return replyWithError(reply, SHUTTING_DOWN, errorFormatFor(request.method, request.url));
    }
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
  settlements = app.get(InFlightSettlements, { strict: false });
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  return app;
}
