import type { Usage } from '../../src/canonical/canonical';

/** A host's usage: the classes given, none of the others. */
export const usage = (counts: Partial<Usage>): Usage => ({
  inputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  outputTokens: 0,
  reasoningTokens: 0,
  ...counts,
});
