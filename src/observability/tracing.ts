import {
  Attributes,
  Context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  Span,
  SpanKind,
  SpanStatusCode,
  trace,
  Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVICE_NAME,
  ATTR_URL_PATH,
} from '@opentelemetry/semantic-conventions';
import type { RequestFacts, RequestSpans, RequestTrace } from './request-facts';
import { GATEWAY, GEN_AI, usageAttributes } from './span-attributes';

/**
 * OpenTelemetry traces, when OTEL_EXPORTER_OTLP_ENDPOINT names a collector: a span per request
 * (continuing the client's `traceparent`), children for admission, each host call and the
 * settlement, exported over OTLP/HTTP in batches. Contexts are passed explicitly (nothing global
 * is registered): without an endpoint none of this exists and the pipeline skips its spans.
 */
export class Tracing implements RequestSpans {
  private readonly propagator = new W3CTraceContextPropagator();
  private readonly tracer: Tracer;

  private constructor(private readonly provider: NodeTracerProvider) {
    this.tracer = provider.getTracer('model-gateway');
  }

  /** `endpoint`: the OTLP/HTTP base URL (traces go to its /v1/traces, as the variable's specification says). */
  static start(endpoint: string, serviceName = process.env.OTEL_SERVICE_NAME || 'model-gateway'): Tracing {
    const exporter = new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, '')}/v1/traces` });
    const provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName }),
      spanProcessors: [new BatchSpanProcessor(exporter)],
    });
    return new Tracing(provider);
  }

  /** The request's server span, a child of the client's trace when its headers carry one. */
  startRequest(headers: Record<string, unknown>, method: string, path: string): RequestTrace {
    const parent = this.propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
    const span = this.tracer.startSpan(
      `${method} ${path}`,
      { kind: SpanKind.SERVER, attributes: { [ATTR_HTTP_REQUEST_METHOD]: method, [ATTR_URL_PATH]: path } },
      parent,
    );
    return { tracing: this, context: trace.setSpan(parent, span) };
  }

  /** Ends the request's span with what its facts say (named after the GenAI conventions once the model is known). */
  endRequest(at: RequestTrace, facts: RequestFacts, requestId: string, status: number): void {
    const span = trace.getSpan(at.context);
    if (!span) return;
    if (facts.surface !== undefined && facts.model !== undefined) {
      span.updateName(`${facts.surface === 'embeddings' ? 'embeddings' : 'chat'} ${facts.model}`);
    }
    const attributes: Attributes = { [ATTR_HTTP_RESPONSE_STATUS_CODE]: status, [GATEWAY.requestId]: requestId };
    if (facts.surface !== undefined) {
      attributes[GEN_AI.operation] = facts.surface === 'embeddings' ? 'embeddings' : 'chat';
      attributes[GATEWAY.surface] = facts.surface;
    }
    if (facts.model !== undefined) attributes[GEN_AI.requestModel] = facts.model;
    if (facts.orgId !== undefined) attributes[GATEWAY.orgId] = facts.orgId;
    if (facts.keyId !== undefined) attributes[GATEWAY.keyId] = facts.keyId;
    if (facts.host !== undefined) attributes[GATEWAY.host] = facts.host;
    if (facts.outcome !== undefined) attributes[GATEWAY.outcome] = facts.outcome;
    if (facts.fallback !== undefined) attributes[GATEWAY.fallback] = facts.fallback;
    if (facts.usage !== undefined) Object.assign(attributes, usageAttributes(facts.usage));
    if (facts.cost !== undefined) attributes[GATEWAY.costNano] = facts.cost;
    span.setAttributes(attributes);
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: facts.error });
    span.end();
  }

  /** A child span of the request (or of another span's context). */
  child(parent: Context, name: string, attributes: Attributes = {}, kind: SpanKind = SpanKind.INTERNAL): Span {
    return this.tracer.startSpan(name, { kind, attributes }, parent);
  }

  /** The `traceparent` (and `tracestate`) headers of a span, for the call it makes. */
  headersOf(parent: Context, span: Span): Record<string, string> {
    const headers: Record<string, string> = {};
    this.propagator.inject(trace.setSpan(parent, span), headers, defaultTextMapSetter);
    return headers;
  }

  /** Exports every span ended so far. */
  flush(): Promise<void> {
    return this.provider.forceFlush();
  }

  /**
   * Exports what is left and stops, within `boundMs`: resolves to null, or to why not everything was
   * exported (a collector that is down costs traces, never the shutdown: this never rejects).
   */
  async shutdown(boundMs = 5_000): Promise<string | null> {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`the collector did not take them within ${boundMs} ms`), boundMs);
    });
    try {
      return await Promise.race([this.provider.shutdown().then(() => null), bound]);
    } catch (error) {
      return (error as Error).message;
    } finally {
      clearTimeout(timer);
    }
  }
}
