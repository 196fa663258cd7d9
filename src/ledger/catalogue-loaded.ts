import { type ReservationSettled, settledUsage } from './ledger.events';
import { HOSTED_TOOL_CLASSES } from '../canonical/canonical';
import type { TokenPrices } from './money';
import { bandFor, type PriceBand, pricesForPrompt, promptTokens } from './price-bands';

/** One model on one host at one catalogue version: the prices a request it served is billed at. */
export interface CataloguePrice {
  /** The model's slug. */
  model: string;
  /** The catalogue host's id, and the model's name there (as a settlement names them). */
  host: string;
  hostModel: string;
  prices: TokenPrices;
  /**
   * Its long-context bands, by ascending threshold: a request whose prompt is above one is billed at
   * its token prices. Absent when it has none, and from events written before bands existed.
   */
  longContext?: PriceBand[];
}

/**
 * A catalogue version's prices, written to the log (stream `catalogue-<version>`) before the first
 * reservation priced with it, once per version: `ledger audit` checks each settlement's prices
 * against the version it names from the log alone. A version is the first 16 hex digits of the
 * SHA-256 of the catalogue file's bytes (see Catalogue.load).
 */
export interface CatalogueLoaded {
  type: 'CatalogueLoaded';
  data: {
    version: string;
    /** When it was written: the first request priced with it, by the first instance to serve one. */
    recordedAt: number;
    prices: CataloguePrice[];
  };
}

export const catalogueStream = (version: string) => `catalogue-${version}`;

/**
 * Why a settlement's prices are not those of its catalogue version (listed: that version's
 * prices), or null when they are: some model of the version on the settlement's host and host
 * model (the model reserved, or a `models` fallback that served) has exactly the token prices its
 * tokens are billed at — its long-context band's when the settlement's prompt (every input token,
 * the cache's included) is above the band's threshold, else its base prices — and the per-use
 * price of every hosted tool it billed. Base prices above a band's threshold are refused, as are a
 * band's below it.
 */
export function pricesNotOfVersion(listed: readonly CataloguePrice[], settled: ReservationSettled['data']): string | null {
  const onHost = listed.filter((p) => p.host === settled.host && p.hostModel === settled.hostModel);
  if (onHost.length === 0)
    return `catalogue version ${settled.catalogueVersion} has no host ${settled.host} serving ${settled.hostModel}`;
  const { prices } = settled;
  const same = (p: TokenPrices) =>
    p.input === prices.input &&
    p.output === prices.output &&
    (['cacheRead', 'cacheWrite', 'cacheWrite1h'] as const).every((c) => prices[c] === undefined || prices[c] === p[c]) &&
    HOSTED_TOOL_CLASSES.every(
      (c) => prices.hostedToolUses?.[c] === undefined || prices.hostedToolUses[c] === p.hostedToolUses?.[c],
    );
  const prompt = promptTokens(settledUsage(settled));
  if (onHost.some((p) => same(pricesForPrompt(p.prices, p.longContext, prompt)))) return null;
  const expected = onHost.map((p) => {
    const band = bandFor(p.longContext, prompt);
    const at = pricesForPrompt(p.prices, p.longContext, prompt);
    return band === null
      ? `${JSON.stringify(at)}${p.longContext?.length ? ` (its base prices: this one's ${prompt} prompt tokens are above no band's threshold)` : ''}`
      : `${JSON.stringify(at)} (its band above ${band.aboveInputTokens} prompt tokens: this one has ${prompt})`;
  });
  return `prices ${JSON.stringify(prices)} are not catalogue version ${settled.catalogueVersion}'s for ${settled.hostModel} on ${settled.host} (${expected.join(', ')})`;
}
