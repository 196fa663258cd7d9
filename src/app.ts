import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { join } from 'node:path';
import { AlertDelivery } from './alerts/delivery';
import { AlertSecrets } from './alerts/signing';
import { WebhookDestinations } from './alerts/webhook-destinations';
import { AppModule } from './app.module';
import { Catalogue } from './catalogue/catalogue';
import { SessionTokens } from './dashboard/session/sessions';
import { serveWebApp } from './dashboard/web-app';
import { ErrorFormatByRoute, errorFormatFor } from './error-formats';
import { answerAtGraceEnd } from './http/grace-end';
import { httpAdapter } from './http/http-adapter';
import { InFlightSettlements, OpenRequests } from './inference/in-flight';
import { eventsBehind, type Lifecycle } from './observability/health';
import { serveHealth } from './observability/health-routes';
import { type LogStream, loggerOptions, NestPinoLogger } from './observability/logging';
import { observeRequests } from './observability/observe-requests';
import { serveOpenApiDocument } from './openapi/openapi.route';
import type { HostHealthReader } from './routing/plan';
import { type Runtime, SNAPSHOT_EVERY_MS } from './runtime/runtime';
import { openStreams } from './surfaces/sse';

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
  /** Host health for `sort` latency and throughput; defaults to the health the runtime measures (a bench gives its own). */
  hostHealth?: HostHealthReader;
}

/** Builds the HTTP application on an opened runtime (used by main and by tests). */
export async function createApp(runtime: Runtime, options: AppOptions = {}): Promise<NestFastifyApplication> {
  const { config, events, projector, projections } = runtime;
  const catalogue = options.catalogue ?? Catalogue.load(config.cataloguePath);
  const logging = options.logger !== false || options.logStream !== undefined;
  const logger = logging ? loggerOptions({ level: config.logLevel, pretty: config.logPretty }, options.logStream) : false;
  const adapter = httpAdapter(config, logger, errorFormatFor);
  const fastify = adapter.getInstance();
  runtime.requests.track(fastify);
  /** The pipeline's settlements in flight, once the application exists. */
  let settlements: InFlightSettlements | null = null;
  /** The requests to end at the shutdown's grace period's end, once the application exists. */
  let open: OpenRequests | null = null;
  // Those of routes whose use case does not end its own: answered 503 in their route's format then.
  answerAtGraceEnd(fastify, () => open, errorFormatFor);
  // Alerts are delivered by every instance from the log (each once, by claims on the log), from start to close.
  const alerts = new AlertDelivery(
    events,
    AlertSecrets.fromEnvironment(config.dataDir, config.dashboardSecret),
    {
      attemptTimeoutMs: config.alertAttemptTimeoutMs,
      retry: { maxAttempts: config.alertMaxAttempts, baseDelayMs: config.alertRetryBaseMs, maxDelayMs: 3_600_000 },
      tickMs: 250,
      snapshot: { file: join(config.dataDir, 'alerts.snapshot.json'), everyMs: SNAPSHOT_EVERY_MS },
      destinations: new WebhookDestinations(config.alertWebhookAllowCidrs),
    },
    (line) => fastify.log.warn(line),
  );
  fastify.addHook('onClose', () => alerts.stop());
  await observeRequests(fastify, config, {
    logging,
    gauges: {
      lag: () => eventsBehind(events, projector.position, LAG_COUNTED_UP_TO),
      openStreams,
      reservationsHeld: () => projections.openReservationCount(),
      storeAnswers: () => projections.checkpoint(),
      reservationsExpired: () => runtime.reservationsExpired,
      sweepsFailed: () => runtime.sweepsFailed,
      alertDeliveries: () => alerts.counts,
      routing: { circuits: () => runtime.routing.circuits(), health: () => runtime.routing.health.all() },
    },
    eventLog: events,
    settled: async () => settlements?.settled(),
  });
  serveOpenApiDocument(fastify);
  serveHealth(
    fastify,
    {
      events,
      applied: () => projector.position,
      storeAnswers: () => projections.checkpoint(),
      circuits: () => runtime.routing.circuits(),
      logReplaced: () => projector.logReplaced,
      logStanding: () => projector.logStanding(),
      servingRefusal: () => runtime.servingRefusal(),
    },
    options.lifecycle ?? { draining: false },
    errorFormatFor,
  );
  serveWebApp(fastify);
  const tokens = SessionTokens.fromEnvironment(config.dataDir, config.dashboardSecret);
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.forRuntime(runtime, catalogue, tokens, options.hostHealth ?? runtime.routing.health),
    adapter,
    {
      logger: logging ? new NestPinoLogger(fastify.log) : false,
      // Fastify's own JSON parser (secure-json-parse, bodyLimit) instead of Nest's wrapper around it.
      bodyParser: false,
    },
  );
  app.useGlobalFilters(new ErrorFormatByRoute());
  settlements = app.get(InFlightSettlements, { strict: false });
  open = app.get(OpenRequests, { strict: false });
  await app.init();
  await fastify.ready();
  await alerts.start();
  return app;
}

/**
 * The end of the shutdown's grace period: every request of the pipeline still open is ended as
 * `shutdown` (settled for what it delivered, as a client leaving would be) and answered — a 503 in
 * its surface's format, or its stream's error event — and every other route's request still open is
 * answered a 503 in its route's format. `ended`: how many; `answered` resolves once the pipeline's
 * settlements are in the log and their answers written, or after `boundMs` (a log not answering):
 * what is still open then is for the caller to cut.
 */
export function endOpenRequests(app: NestFastifyApplication, boundMs: number): { ended: number; answered: Promise<void> } {
  const open = app.get(OpenRequests, { strict: false });
  const ended = open.endAll();
  const answered = (async () => {
    let bound: NodeJS.Timeout | undefined;
    // A request whose host call is given up first has its settlement tracked only then.
    const settled = open.ended().then(() => app.get(InFlightSettlements, { strict: false }).settled());
    await Promise.race([settled, new Promise((resolve) => (bound = setTimeout(resolve, boundMs)))]);
    clearTimeout(bound);
    // Each answer is written as its settlement is told, within the same turn: after one more, all are.
    await new Promise((resolve) => setImmediate(resolve));
  })();
  return { ended, answered };
}
