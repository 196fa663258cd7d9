import type { Attributes, Context, Span, SpanKind } from '@opentelemetry/api';
import { maskSecrets } from '../key-secret/key-secret';
import type { HostAttempt } from '../ledger/ledger.events';
import type { TokenUsage } from '../ledger/money';

/** What the pipeline asks of tracing (tracing.ts implements it): spans under a request's own. */
export interface RequestSpans {
  endRequest(at: RequestTrace, facts: RequestFacts, requestId: string, status: number): void;
  child(parent: Context, name: string, attributes?: Attributes, kind?: SpanKind): Span;
  /** The `traceparent` (and `tracestate`) headers of a span, for the call it makes. */
  headersOf(parent: Context, span: Span): Record<string, string>;
}

/** A request's place in its trace, as the pipeline carries it: where its children hang. */
export interface RequestTrace {
  tracing: RequestSpans;
  /** The context holding the request's own span. */
  context: Context;
}

/**
 * What the pipeline learned of one request, for its one log line: filled in as the request
 * goes (one object per request, written in place; nothing per token but a time check).
 */
export interface RequestFacts {
  surface?: string;
  orgId?: string;
  keyId?: string;
  /** The catalogue model serving it, once known: a bounded set, so metrics and spans may name it. */
  model?: string;
  /** The model as the client named it: for the log line (secrets masked there), when no catalogue model is known. */
  requested?: string;
  host?: string;
  /** The ledger's status of the request (ok, client_abort, provider_error, …) or the refusal's code. */
  outcome?: string;
  usage?: TokenUsage;
  /** Nano-credits charged. */
  cost?: number;
  /** Milliseconds from arrival to the first output forwarded. */
  ttftMs?: number;
  /** A later host served after an earlier one failed. */
  fallback?: boolean;
  /** Every host call on the way (retries and hosts passed over included), as the ledger records them. */
  attempts?: HostAttempt[];
  /** Milliseconds of the last host's call, from its start to its end (or the request's). */
  upstreamMs?: number;
  /** The request's trace, when tracing is on: the pipeline's spans hang from it. */
  trace?: RequestTrace;
  /** Resolves when the request's reservation is settled or released (a cut stream's line waits for it). */
  settled?: Promise<void>;
  /** Hosted tools the client offered that were left out of the call (no serving host runs them). */
  omittedTools?: string[];
  /** Betas the client asked for that were left out of the call (the 1M-context beta where no host prices it). */
  omittedBetas?: string[];
  /** Why the request was refused or failed, as the client was told. */
  error?: string;
}

/** Where a Fastify request keeps its facts (decorated as null; set when the pipeline takes it). */
export interface ObservedRequest {
  facts: RequestFacts | null;
}

/** The request's facts object, made when first asked for. */
export function factsOf(request: unknown): RequestFacts {
  const observed = request as ObservedRequest;
  return (observed.facts ??= {});
}

/**
 * A request answered with an error (a refusal or a failure, the gateway's own infrastructure
 * included: Redis away, a log taking no appends): its outcome and what the client was told, for its
 * line, unless the pipeline has already said how it ended. `error` is the client's message, which
 * never carries a secret (ApiError masks it).
 */
export function noteFailure(request: unknown, outcome: string, error: string): void {
  const facts = factsOf(request);
  if (facts.outcome !== undefined) return;
  facts.outcome = outcome;
  facts.error = error;
}

export type LogLevelName = 'debug' | 'info' | 'warn' | 'error';

/** A served request is logged at info, a failure of ours or the provider's (5xx) at error, a refusal (4xx) at warn. */
export const levelOf = (status: number): LogLevelName => (status >= 500 ? 'error' : status >= 400 ? 'warn' : 'info');

/** Health probes and metrics scrapes: a load balancer's and Prometheus's, every few seconds. */
const PROBES = new Set(['/health', '/health/live', '/health/ready', '/metrics']);

/**
 * The level of a request's line (`path` without its query): a probe or a scrape answered 2xx at
 * debug (they would drown the rest at info), one answered otherwise (a 503 readiness) as any request.
 */
export const lineLevelOf = (path: string, status: number): LogLevelName =>
  status >= 200 && status < 300 && PROBES.has(path) ? 'debug' : levelOf(status);

/** The request's one log line (its fields; the request id comes from the request's logger). */
export function requestLine(
  method: string,
  url: string,
  status: number,
  latencyMs: number,
  facts: RequestFacts | null,
): Record<string, unknown> {
  const query = url.indexOf('?');
  const line: Record<string, unknown> = {
    method,
    path: query === -1 ? url : url.slice(0, query),
    status,
    latencyMs: Math.round(latencyMs * 100) / 100,
  };
  if (facts === null) return line;
  line.surface = facts.surface;
  line.orgId = facts.orgId;
  line.keyId = facts.keyId;
  line.model = facts.model ?? (facts.requested === undefined ? undefined : maskSecrets(facts.requested));
  if (facts.host !== undefined) line.host = facts.host;
  if (facts.outcome !== undefined) line.outcome = facts.outcome;
  if (facts.usage !== undefined) {
    const u = facts.usage;
    line.inputTokens = u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens + u.cacheWrite1hTokens;
    line.cachedTokens = u.cacheReadTokens;
    line.cacheWriteTokens = u.cacheWriteTokens + u.cacheWrite1hTokens;
    line.outputTokens = u.outputTokens;
  }
  if (facts.cost !== undefined) {
    line.costNanoCredits = facts.cost;
    line.cost = facts.cost / 1e9;
  }
  if (facts.ttftMs !== undefined) line.ttftMs = facts.ttftMs;
  line.fallback = facts.fallback === true;
  if (facts.attempts !== undefined) line.attempts = facts.attempts;
  if (facts.omittedTools !== undefined) line.omittedTools = facts.omittedTools;
  // Names the client sent in a header: masked as the model asked for is.
  if (facts.omittedBetas !== undefined) line.omittedBetas = facts.omittedBetas.map(maskSecrets);
  if (facts.error !== undefined) line.error = facts.error;
  return line;
}
