import { type Attributes, type Span, SpanStatusCode } from '@opentelemetry/api';
import type { TokenUsage } from '../ledger/money';

// The names and helpers the pipeline writes its spans with, apart from tracing.ts: the OpenTelemetry
// SDK there (about 300 modules) is loaded only when traces are exported.

/**
 * The GenAI semantic conventions' attributes (still "incubating" in OpenTelemetry, whose JS docs
 * advise copying such names rather than importing the unstable entry point).
 */
export const GEN_AI = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  maxTokens: 'gen_ai.request.max_tokens',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cacheReadTokens: 'gen_ai.usage.cache_read.input_tokens',
  cacheCreationTokens: 'gen_ai.usage.cache_creation.input_tokens',
} as const;

/** The gateway's own attributes. */
export const GATEWAY = {
  requestId: 'gateway.request_id',
  orgId: 'gateway.org_id',
  keyId: 'gateway.key_id',
  surface: 'gateway.surface',
  host: 'gateway.host',
  outcome: 'gateway.outcome',
  costNano: 'gateway.cost_nano_credits',
  fallback: 'gateway.fallback',
  /** A host call's place among the request's calls (1: the first), retries included. */
  attempt: 'gateway.attempt',
} as const;

/** GenAI usage attributes of billed tokens: input counts every class of input, as the conventions define it. */
export const usageAttributes = (u: TokenUsage): Attributes => ({
  [GEN_AI.inputTokens]: u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens + u.cacheWrite1hTokens,
  [GEN_AI.cacheReadTokens]: u.cacheReadTokens,
  [GEN_AI.cacheCreationTokens]: u.cacheWriteTokens + u.cacheWrite1hTokens,
  [GEN_AI.outputTokens]: u.outputTokens,
});

/** Ends a span as failed, saying why. */
export function failed(span: Span, message: string): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.end();
}
