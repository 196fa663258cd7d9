import { type CanonicalRequest, HostError } from '../canonical/canonical';
import type { CatalogueModel, ModelHost } from '../catalogue/catalogue';
import type { HostKind, UpstreamRequest } from '../hosts/host-kind';
import { HOST_KINDS } from '../hosts/hosts';
import { type Refusal, servableModel } from './admission';
import { estimateInputTokens } from './tokens';

/**
 * Counting a request's input tokens, decided (the messages surface's `count_tokens`): by the
 * model's hosts whose kind can count, in the catalogue's order, the next one trying when one
 * fails before answering; by the gateway's own estimate when none can. Nothing is reserved or
 * billed. Pure: the shell authenticates, looks the model up and makes the calls.
 */

/** One host's counting call. */
export interface CountingCall {
  served: ModelHost;
  kind: HostKind;
  upstream: UpstreamRequest;
}

export type TokenCountPlan = { kind: 'hosts'; calls: CountingCall[] } | { kind: 'estimate'; inputTokens: number };

/**
 * Given the model asked for, what the catalogue found for it, the client's body (in the messages
 * format, passed on whole; null when the client speaks another, which only the estimate counts) and the same request in canonical form (its betas, and the estimate):
 * the hosts to ask, the estimate, or the refusal (an unknown or unservable model).
 */
export function planTokenCount(
  requested: string,
  catalogued: CatalogueModel | null,
  body: Record<string, unknown> | null,
  request: CanonicalRequest,
): TokenCountPlan | Refusal {
  const servable = servableModel(requested, catalogued);
  if (servable.kind === 'refuse') return servable;
  const calls: CountingCall[] = [];
  for (const served of servable.hosts) {
    const kind: HostKind = HOST_KINDS[served.host.kind];
    const upstream =
      body && kind.countTokensRequest?.(body, served.model, served.host.apiKey, request.betas ?? [], served.host.settings);
    if (upstream) calls.push({ served, kind, upstream });
  }
  return calls.length > 0 ? { kind: 'hosts', calls } : { kind: 'estimate', inputTokens: estimateInputTokens(request) };
}

/** A host's count as it answered it (it may say more than the count), checked: `input_tokens` a whole number ≥ 0. */
export function tokenCountOf(answer: unknown): { input_tokens: number } & Record<string, unknown> {
  const count = (answer as { input_tokens?: unknown } | null)?.input_tokens;
  if (!Number.isSafeInteger(count) || (count as number) < 0) {
    throw new HostError(
      'malformed',
      `upstream answered a token count without a whole "input_tokens": ${JSON.stringify(answer)?.slice(0, 100)}`,
    );
  }
  return answer as { input_tokens: number } & Record<string, unknown>;
}
