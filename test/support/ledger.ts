import type { TokenPrices } from '../../src/ledger/money';

/** Prices by class: the cache's at the input price unless `cache` says otherwise. */
export const pricesOf = (input: number, output: number, cache: Partial<TokenPrices> = {}): TokenPrices => ({
  input,
  cacheRead: input,
  cacheWrite: input,
  cacheWrite1h: input,
  output,
  ...cache,
});
