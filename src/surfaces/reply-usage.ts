import type { Usage } from '../canonical/canonical';
import type { Reply } from '../inference/reduce';

const NONE: Usage = {
  inputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  outputTokens: 0,
  reasoningTokens: 0,
};

/**
 * The tokens a reply reports, by class: as billed (the host's count, or the estimate when it gave
 * none), else as the host has counted so far; reasoning as the host counted it.
 */
export function replyUsage(reply: Pick<Reply, 'billed' | 'usage'>): Usage {
  const counted = reply.usage ?? NONE;
  return reply.billed ? { ...reply.billed.usage, reasoningTokens: counted.reasoningTokens } : counted;
}

/** Every input token, whatever the cache did with it. */
export const allInputTokens = (usage: Usage): number =>
  usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens + usage.cacheWrite1hTokens;
