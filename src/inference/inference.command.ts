import { Command } from '@nestjs/cqrs';
import type { Observable } from 'rxjs';
import type { CatalogueModel } from '../catalogue/catalogue';
import type { CanonicalEvent, CanonicalRequest } from '../canonical/canonical';
import type { TokenUsage } from '../ledger/money';
import type { RequestFacts } from '../observability/request-facts';
import type { RoutingAsk } from '../routing/preferences';

export type SurfaceName = 'chat-completions' | 'messages' | 'responses' | 'gemini' | 'native' | 'playground' | 'embeddings';

/**
 * Who pays: an API key secret as the client sent it (the surface has refused a request without
 * one), or instead an organization already authenticated by other means (the dashboard's
 * playground, signed in and a member), billed under a pseudo key id.
 */
export type InferenceCaller =
  { apiKey: string; principal?: undefined } | { apiKey: null; principal: { orgId: string; keyId: string } };

export type InferenceInput = InferenceCaller & {
  surface: SurfaceName;
  /** A catalogue slug or UUID. */
  model: string;
  request: CanonicalRequest;
  requestId: string;
  /** The request's log facts, filled in by the pipeline (absent: not logged). */
  facts?: RequestFacts;
  /** How the client asks to be routed (provider preferences, `models` fallbacks) and the conversation it continues; absent: the catalogue's order. */
  routing?: RoutingAsk;
};

/** The last event of a completed request: what was charged, as settled in the ledger. */
export interface Billed {
  type: 'billed';
  /** Tokens by class as billed: the host's count, or the estimate when it gave none. */
  usage: TokenUsage;
  /** Nano-credits. */
  cost: number;
  host: string;
  /** The settlement's position in the event log: a read model at it includes the charge (see x-ledger-position). */
  position: number;
}

export type PipelineEvent = CanonicalEvent | Billed;

/** The reply header naming the betas left out of the call (AdmissionPlan.omittedBetas). */
export const OMITTED_BETAS_HEADER = 'x-gateway-omitted-betas';

/** The reply header naming why the host that served went without the reasoning asked for (InferenceResult.omittedReasoning). */
export const OMITTED_REASONING_HEADER = 'x-gateway-omitted-reasoning';

export interface InferenceResult {
  requestId: string;
  model: CatalogueModel;
  /** Epoch seconds, for wire formats that carry a creation time. */
  created: number;
  /** Whether the client takes the reply as a stream (as its request said). */
  stream: boolean;
  /** Headers every answer to the request carries (a key's rate limits), whatever the reply turns out to be. */
  headers?: Record<string, string>;
  /**
   * Why the host last called goes without the reasoning asked for (its kind's omittedReasoning), or
   * null; set as each host is called, read by the surfaces as they write their headers.
   */
  omittedReasoning?: string | null;
  /** Cold: subscribing calls the host; unsubscribing aborts it. Settles exactly once on any ending. */
  events: Observable<PipelineEvent>;
}

/** The one inference command every surface dispatches. */
export class InferenceCommand extends Command<InferenceResult> {
  constructor(readonly input: InferenceInput) {
    super();
  }
}
