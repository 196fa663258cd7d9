import type { TokenPrices, TokenUsage } from './money';

/**
 * Long-context price bands: hosts that price a whole request higher when its prompt is long
 * (Gemini 2.5 Pro above 200,000 prompt tokens, Claude Sonnet 4 and 4.5 with the 1M-context beta
 * above 200,000 input tokens). A band is a threshold and the token prices of a request whose prompt
 * is more than it: every token of that request, output included, takes the band's prices. Pure: the
 * settlement, the hold and `ledger audit` decide with the same functions.
 */

/** The token classes a band prices: a hosted tool's per-use price does not change with the prompt. */
export type BandPrices = Omit<TokenPrices, 'hostedToolUses'>;

export interface PriceBand {
  /** The band applies to a request whose prompt has more tokens than this ("prompts > 200k tokens"). */
  aboveInputTokens: number;
  /** Nano-credits per million tokens of each class. */
  prices: BandPrices;
}

/**
 * The prompt as the hosts count it for their bands: every input token, read from the cache or
 * written to it included (Anthropic: input_tokens + cache_creation_input_tokens +
 * cache_read_input_tokens; Google: the prompt with its cached content). Output never counts.
 */
export const promptTokens = (
  usage: Pick<TokenUsage, 'inputTokens' | 'cacheReadTokens' | 'cacheWriteTokens' | 'cacheWrite1hTokens'>,
): number => usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens + usage.cacheWrite1hTokens;

/** The band a prompt of `prompt` tokens falls in: the one of the highest threshold it is above; null for none (base prices). */
export function bandFor(bands: readonly PriceBand[] | undefined, prompt: number): PriceBand | null {
  let found: PriceBand | null = null;
  for (const band of bands ?? []) {
    if (prompt > band.aboveInputTokens && (found === null || band.aboveInputTokens > found.aboveInputTokens)) found = band;
  }
  return found;
}

/** `band`'s token prices with `base`'s per-use prices of hosted tools. */
const withToolPrices = (band: BandPrices, base: TokenPrices): TokenPrices => {
  const prices: TokenPrices = {
    input: band.input,
    cacheRead: band.cacheRead,
    cacheWrite: band.cacheWrite,
    cacheWrite1h: band.cacheWrite1h,
    output: band.output,
  };
  if (base.hostedToolUses !== undefined) prices.hostedToolUses = base.hostedToolUses;
  return prices;
};

/**
 * The prices a request of `prompt` prompt tokens is billed at: its band's for every token class
 * (the hosted tools' per-use prices stay the base's), or the base prices when its prompt is above
 * no band's threshold.
 */
export function pricesForPrompt(base: TokenPrices, bands: readonly PriceBand[] | undefined, prompt: number): TokenPrices {
  const band = bandFor(bands, prompt);
  return band === null ? base : withToolPrices(band.prices, base);
}

/**
 * What a hold prices a request at, from its estimated prompt: each class at the higher of the base
 * price and the band's the estimate falls in, so that the hold is never below what the request
 * could cost as estimated (a band cheaper in some class is held at the base price there).
 */
export function holdPricesForPrompt(base: TokenPrices, bands: readonly PriceBand[] | undefined, prompt: number): TokenPrices {
  const band = bandFor(bands, prompt);
  if (band === null) return base;
  const b = band.prices;
  return withToolPrices(
    {
      input: Math.max(base.input, b.input),
      cacheRead: Math.max(base.cacheRead, b.cacheRead),
      cacheWrite: Math.max(base.cacheWrite, b.cacheWrite),
      cacheWrite1h: Math.max(base.cacheWrite1h, b.cacheWrite1h),
      output: Math.max(base.output, b.output),
    },
    base,
  );
}
