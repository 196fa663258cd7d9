import type { EmbeddingsResult } from '../../embeddings/embeddings.command';
import { creditsNumber } from '../../ledger/money';

/**
 * The embeddings reply: the host's own, whole (its `data`, in the encoding asked for), named by
 * the catalogue's slug, with `usage` as billed: `prompt_tokens`, `total_tokens` and our `cost`
 * (credits, as a number, as chat-completions' usage.cost).
 */
export function embeddingsBody({ model, reply, billed }: EmbeddingsResult): Record<string, unknown> {
  const tokens = billed.usage.inputTokens;
  const hostUsage = typeof reply.usage === 'object' && reply.usage !== null ? reply.usage : {};
  return {
    ...reply,
    object: reply.object ?? 'list',
    model: model.slug,
    usage: { ...hostUsage, prompt_tokens: tokens, total_tokens: tokens, cost: creditsNumber(billed.cost) },
  };
}
