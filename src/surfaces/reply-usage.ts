import type { Reply } from '../inference/reduce';
import { TokenUsage, uncachedUsage } from '../ledger/money';

const NONE = uncachedUsage(0, 0);

/**
 * The tokens a reply reports, by class: as billed (the host's count, or the estimate when it gave
 * none), else as the host has counted so far.
 */
export const replyTokens = (reply: Pick<Reply, 'billed' | 'usage'>): TokenUsage => reply.billed?.usage ?? reply.usage ?? NONE;

/** How much of the output was reasoning, as the host counted it. */
export const reasoningTokens = (reply: Pick<Reply, 'usage'>): number => reply.usage?.reasoningTokens ?? 0;

/** Every input token, whatever the cache did with it. */
export const allInputTokens = (tokens: TokenUsage): number =>
  tokens.inputTokens + tokens.cacheReadTokens + tokens.cacheWriteTokens + tokens.cacheWrite1hTokens;
