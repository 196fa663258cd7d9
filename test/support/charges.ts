import { parseCredits } from '../../src/ledger/money';

/** The token classes a catalogue entry prices by the million. */
const TOKEN_CLASSES = ['input', 'cacheRead', 'cacheWrite', 'cacheWrite1h', 'output'] as const;
type TokenClass = (typeof TOKEN_CLASSES)[number];

/** A catalogue entry's list prices, in US dollars: per million tokens of a class, per thousand uses of a web search. */
export type ListPrices = { input: string; output: string } & Partial<Record<TokenClass | 'webSearch', string>>;

/** Tokens by class, as a host reports them (its reasoning within the output, billed at the output's price). */
export type TokenCounts = { input: number; output: number } & Partial<Record<TokenClass, number>>;

/**
 * What a request must be charged, in nano-credits, exactly: ceil(Σ tokens × price / 10^6 + web
 * searches × price / 10^3), summed in whole nano-credits and rounded up once.
 */
export function chargeOf(prices: ListPrices, tokens: TokenCounts, uses: { webSearch?: number } = {}): number {
  const at = (price: string | undefined, what: string) => {
    if (price === undefined) throw new Error(`no list price for ${what}`);
    return BigInt(parseCredits(price));
  };
  let sum = 0n;
  for (const cls of TOKEN_CLASSES) {
    const count = tokens[cls] ?? 0;
    if (count > 0) sum += BigInt(count) * at(prices[cls], cls);
  }
  if (uses.webSearch) sum += BigInt(uses.webSearch) * at(prices.webSearch, 'webSearch') * 1000n;
  return Number((sum + 999_999n) / 1_000_000n);
}
