import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { maskSecrets } from '../key-secret/key-secret';
import { GatewayMetrics, type MetricSources } from './metrics';
import { serveMetrics } from './metrics-server';
import { errorTold } from '../http/api-error';
import { factsOf, lineLevelOf, noteFailure, type ObservedRequest, requestLine } from './request-facts';

/** Where a response keeps its Fastify reply, for the one listener of every response's close. */
const OBSERVED_REPLY = Symbol('observedReply');

type ObservedResponse = ServerResponse & { [OBSERVED_REPLY]: FastifyReply };

/** The status a request's line and metrics show when its client left before its reply ended (nginx's). */
const CLIENT_CLOSED_REQUEST = 499;

export interface ObservationSettings {
  host: string;
  /** Prometheus metrics at GET /metrics. */
  metrics: boolean;
  /** A port of its own for GET /metrics; null: the service port. */
  metricsPort: number | null;
  /** The OTLP/HTTP collector for traces; null: no tracing. */
  otlpEndpoint: string | null;
}

export interface ObservedSources {
  /** Whether a line is logged per request. */
  logging: boolean;
  /** What the gauges read when scraped. */
  gauges: MetricSources;
  /** The event log, whose appends are timed. */
  eventLog: { onAppend(listener: (seconds: number) => void): void };
  /** Resolves when the settlements in flight are made: spans end with them. */
  settled: () => Promise<void>;
}

/**
 * What the service tells of each request: its one log line, its metrics and its span, when it
 * ends — or, for a client that left mid-reply, once its settlement says what it was billed.
 */
export async function observeRequests(
  fastify: FastifyInstance,
  settings: ObservationSettings,
  sources: ObservedSources,
): Promise<void> {
  fastify.decorateRequest('facts', null);
  const metrics = settings.metrics ? new GatewayMetrics(sources.gauges) : null;
  if (metrics) sources.eventLog.onAppend((seconds) => metrics.observeAppend(seconds));
  // The SDK is loaded only when traces are exported.
  const tracing = settings.otlpEndpoint === null ? null : (await import('./tracing')).Tracing.start(settings.otlpEndpoint);
  if (tracing) {
    fastify.decorate('tracing', tracing);
    // Spans end with their settlements (a request cut at the grace period's end is settled as the
    // server closes): wait for those, then export what is left. Errors cost traces, never the shutdown.
    fastify.addHook('onClose', async () => {
      await sources.settled();
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
  if (sources.logging || metrics || tracing) {
    const requestEnded = (request: FastifyRequest, status: number, latencyMs: number) => {
      // An error answered where the pipeline did not describe it (Redis away, a log taking no appends, a bad body): its line says so too.
      const told = errorTold(request);
      if (told) noteFailure(request, told.outcome, told.message);
      const facts = (request as unknown as ObservedRequest).facts;
      metrics?.observe(facts, status, latencyMs);
      if (sources.logging) {
        const line = requestLine(request.method, request.url, status, latencyMs, facts);
        request.log[lineLevelOf(line.path as string, status)](line, 'request');
      }
      if (facts?.trace) facts.trace.tracing.endRequest(facts.trace, facts, request.id, status);
    };
    fastify.addHook('onResponse', (request, reply, done) => {
      requestEnded(request, reply.statusCode, reply.elapsedTime);
      done();
    });
    // A stream its client cuts never finishes (no onResponse): its line, with status 499 (the
    // client closed the request), once its settlement says what it was billed. One listener
    // function for every request (its reply kept on the response): no closure per request.
    function whenClosed(this: ObservedResponse): void {
      if (this.writableFinished) return;
      const reply = this[OBSERVED_REPLY];
      const latencyMs = reply.elapsedTime;
      // After the other listeners of this event: the stream's own one ends the request, and says when it is settled.
      setImmediate(() => {
        const settled = (reply.request as unknown as ObservedRequest).facts?.settled ?? Promise.resolve();
        void settled.then(() => requestEnded(reply.request, CLIENT_CLOSED_REQUEST, latencyMs));
      });
    }
    fastify.addHook('onRequest', (_request, reply, done) => {
      (reply.raw as ObservedResponse)[OBSERVED_REPLY] = reply;
      reply.raw.on('close', whenClosed);
      done();
    });
  }
  if (metrics) await serveMetrics(fastify, metrics, settings.host, settings.metricsPort);
}
