import { HostError } from '../canonical/canonical';
import type { CatalogueModel, ModelHost } from '../catalogue/catalogue';
import type { UpstreamRequest } from '../hosts/host-kind';
import { HOST_KINDS } from '../hosts/hosts';
import { highestPrices, type Refusal, servableModel } from '../inference/admission';
import { tokensForChars } from '../inference/tokens';
import { isTokenCount, reservationFor, type TokenPrices } from '../ledger/money';
import type { EmbeddingsInputValue } from './embeddings.command';

/**
 * Embeddings, decided: which hosts to call and what to hold before calling them, and what to
 * bill from a host's reply. Pure: the billed-request shell authenticates and asks the ledger, the
 * handler makes the calls.
 */

/** One host's embeddings call, made with the key of the credential its pool lends it (null: a host that takes none). */
export interface EmbeddingsCall {
  served: ModelHost;
  upstream: (apiKey: string | null) => UpstreamRequest;
}

export interface EmbeddingsPlan {
  kind: 'reserve';
  model: CatalogueModel;
  /** In the catalogue's order: the first is called, the rest are fallbacks. */
  calls: EmbeddingsCall[];
  /** The input's tokens, estimated: what is reserved, and billed when a host reports no usable count. */
  inputTokens: number;
  /** The most a host could report for this input (a token covers at least one byte): larger counts are not believed. */
  maxInputTokens: number;
  /** The highest prices among the hosts: a fallback must stay covered. */
  prices: TokenPrices;
  /** Nano-credits to hold: the estimated input at the dearest input price (no output). */
  amount: number;
}

const isTokenArray = (item: unknown): item is number[] => Array.isArray(item);

/** The pieces of input, each a text or a token array. */
const piecesOf = (input: EmbeddingsInputValue): Array<string | number[]> =>
  typeof input === 'string'
    ? [input]
    : input.length > 0 && typeof input[0] === 'number'
      ? [input as number[]]
      : (input as Array<string | number[]>);

/** Tokens in the input, estimated: a text by the one chars-per-token rule, a token array by its length. */
export const estimateEmbeddingTokens = (input: EmbeddingsInputValue): number =>
  piecesOf(input).reduce((n, piece) => n + (isTokenArray(piece) ? piece.length : tokensForChars(piece.length)), 0);

/** The most tokens a host can truthfully count: every byte of text a token, every token array its length. */
export const embeddingTokensBound = (input: EmbeddingsInputValue): number =>
  piecesOf(input).reduce((n, piece) => n + (isTokenArray(piece) ? piece.length : Buffer.byteLength(piece, 'utf8')), 0) +
  // Some hosts add a token or two per input (a start or end marker).
  2 * piecesOf(input).length;

/**
 * Given the model asked for, what the catalogue found for it and the client's body: the calls to
 * make and what to reserve, or the refusal (unknown model, a chat model, no configured host).
 */
export function planEmbeddings(
  requested: string,
  catalogued: CatalogueModel | null,
  body: Record<string, unknown> & { input: EmbeddingsInputValue },
): EmbeddingsPlan | Refusal {
  const servable = servableModel(requested, catalogued, 'embedding');
  if (servable.kind === 'refuse') return servable;
  const calls: EmbeddingsCall[] = [];
  for (const served of servable.hosts) {
    const kind = HOST_KINDS[served.host.kind];
    // The catalogue admits embedding models on embedding hosts only: a host without the call is skipped.
    if (kind.embeddingsRequest)
      calls.push({ served, upstream: (apiKey) => kind.embeddingsRequest!(body, served.model, apiKey, served.host.settings) });
  }
  const inputTokens = estimateEmbeddingTokens(body.input);
  const prices = highestPrices(
    calls.map((c) => c.served),
    inputTokens,
  );
  return {
    kind: 'reserve',
    model: servable.model,
    calls,
    inputTokens,
    maxInputTokens: embeddingTokensBound(body.input),
    prices,
    amount: reservationFor(inputTokens, 0, prices),
  };
}

/** A host's embeddings reply: a list, `{"data": [...]}`, and whatever else the host sent. */
export type EmbeddingsReply = Record<string, unknown> & { data: unknown[] };

/** A host's reply, checked to be an embeddings list (`{"data": [...]}`); anything else is the host's failure. */
export function embeddingsReplyOf(answer: unknown): EmbeddingsReply {
  const reply = answer as { data?: unknown } | null;
  if (typeof reply !== 'object' || reply === null || Array.isArray(reply) || !Array.isArray(reply.data)) {
    throw new HostError(
      'malformed',
      `upstream answered embeddings without a "data" list: ${JSON.stringify(answer)?.slice(0, 100)}`,
    );
  }
  return reply as EmbeddingsReply;
}

/** The input tokens to bill: as the host counted them (`usage.prompt_tokens`) when that is a whole number within the bound, else the estimate. */
export function billedEmbeddingTokens(
  reply: Record<string, unknown>,
  plan: Pick<EmbeddingsPlan, 'inputTokens' | 'maxInputTokens'>,
) {
  const counted = (reply.usage as { prompt_tokens?: unknown } | null | undefined)?.prompt_tokens;
  if (isTokenCount(counted) && counted <= plan.maxInputTokens) return { tokens: counted, counted: true };
  return { tokens: plan.inputTokens, counted: false };
}
