import { type CataloguePrice, pricesNotOfVersion } from '../../src/ledger/catalogue-loaded';
import type { ReservationSettled } from '../../src/ledger/ledger.events';
import { chargeFor, type TokenPrices } from '../../src/ledger/money';
import { bandFor, holdPricesForPrompt, type PriceBand, pricesForPrompt, promptTokens } from '../../src/ledger/price-bands';

/** Gemini 2.5 Pro on the Gemini API: $1.25/M input, $0.125/M cached, $10/M output; above 200,000 prompt tokens $2.50, $0.25, $15. */
const BASE: TokenPrices = {
  input: 1_250_000_000,
  cacheRead: 125_000_000,
  cacheWrite: 1_250_000_000,
  cacheWrite1h: 1_250_000_000,
  output: 10_000_000_000,
  hostedToolUses: { webSearch: 35_000_000_000 },
};
const BAND: PriceBand = {
  aboveInputTokens: 200_000,
  prices: {
    input: 2_500_000_000,
    cacheRead: 250_000_000,
    cacheWrite: 2_500_000_000,
    cacheWrite1h: 2_500_000_000,
    output: 15_000_000_000,
  },
};
const usage = (inputTokens: number, cacheReadTokens = 0, outputTokens = 1_000) => ({
  inputTokens,
  cacheReadTokens,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  outputTokens,
});

describe('long-context bands: which prices a request takes', () => {
  it('given a prompt of exactly the threshold, then the base prices; one token more, then the band’s for every class', () => {
    expect(pricesForPrompt(BASE, [BAND], 200_000)).toBe(BASE);
    expect(pricesForPrompt(BASE, [BAND], 200_001)).toEqual({ ...BAND.prices, hostedToolUses: BASE.hostedToolUses });
  });

  it('counts the prompt as every input token, read from the cache or written to it, and never the output', () => {
    expect(promptTokens({ inputTokens: 1, cacheReadTokens: 2, cacheWriteTokens: 3, cacheWrite1hTokens: 4 })).toBe(10);
    // 100,000 uncached and 100,001 read from the cache: above the threshold, every token at the band's prices.
    expect(pricesForPrompt(BASE, [BAND], promptTokens(usage(100_000, 100_001))).input).toBe(BAND.prices.input);
    // A million output tokens on a short prompt: base prices.
    expect(pricesForPrompt(BASE, [BAND], promptTokens(usage(10, 0, 1_000_000)))).toBe(BASE);
  });

  it('with several bands, takes the one of the highest threshold the prompt is above, whatever their order', () => {
    const low = { ...BAND, aboveInputTokens: 32_000 };
    const high = { ...BAND, aboveInputTokens: 128_000 };
    expect(bandFor([high, low], 32_000)).toBeNull();
    expect(bandFor([high, low], 32_001)).toBe(low);
    expect(bandFor([high, low], 128_001)).toBe(high);
    expect(bandFor(undefined, 10_000_000)).toBeNull();
  });

  it('charges a 250,000-token prompt at the band, a 150,000-token one at the base, exactly', () => {
    // 250,000 × $2.50 + 2,000 × $15 = $655,000 per million → 655,000,000 nano-credits
    expect(chargeFor(usage(250_000, 0, 2_000), pricesForPrompt(BASE, [BAND], 250_000))).toBe(655_000_000);
    // 150,000 × $1.25 + 2,000 × $10 = $207,500 per million → 207,500,000 nano-credits
    expect(chargeFor(usage(150_000, 0, 2_000), pricesForPrompt(BASE, [BAND], 150_000))).toBe(207_500_000);
  });

  it('holds each class at the higher of the base and the band when the estimate is above the threshold', () => {
    const cheaperCache = { ...BAND, prices: { ...BAND.prices, cacheRead: 1 } };
    expect(holdPricesForPrompt(BASE, [cheaperCache], 200_000)).toBe(BASE);
    expect(holdPricesForPrompt(BASE, [cheaperCache], 200_001)).toEqual({
      ...BAND.prices,
      cacheRead: BASE.cacheRead,
      hostedToolUses: BASE.hostedToolUses,
    });
  });
});

describe("long-context bands: ledger audit's check of a settlement's prices against its version's", () => {
  const listed = (longContext?: PriceBand[]): CataloguePrice[] => [
    {
      model: 'google/gemini-2.5-pro',
      host: 'gemini',
      hostModel: 'gemini-2.5-pro',
      prices: BASE,
      ...(longContext ? { longContext } : {}),
    },
  ];
  const settled = (tokens: ReturnType<typeof usage>, prices: TokenPrices) =>
    ({
      host: 'gemini',
      hostModel: 'gemini-2.5-pro',
      catalogueVersion: 'v1',
      ...tokens,
      prices: { ...prices, hostedToolUses: undefined },
    }) as unknown as ReservationSettled['data'];

  it('accepts the base prices up to the threshold and the band’s above it', () => {
    expect(pricesNotOfVersion(listed([BAND]), settled(usage(200_000), BASE))).toBeNull();
    expect(pricesNotOfVersion(listed([BAND]), settled(usage(200_001), { ...BASE, ...BAND.prices }))).toBeNull();
    expect(pricesNotOfVersion(listed([BAND]), settled(usage(100_000, 100_001), { ...BASE, ...BAND.prices }))).toBeNull();
  });

  it('names base prices above the threshold, and the band’s at or below it', () => {
    expect(pricesNotOfVersion(listed([BAND]), settled(usage(200_001), BASE))).toMatch(
      /^prices .* are not catalogue version v1's for gemini-2\.5-pro on gemini \(.*"input":2500000000.* \(its band above 200000 prompt tokens: this one has 200001\)\)$/,
    );
    expect(pricesNotOfVersion(listed([BAND]), settled(usage(200_000), { ...BASE, ...BAND.prices }))).toMatch(
      /are not catalogue version v1's .*"input":1250000000/,
    );
  });

  it('for a version recorded without bands (before they existed), accepts the base prices at any prompt', () => {
    expect(pricesNotOfVersion(listed(), settled(usage(900_000), BASE))).toBeNull();
    expect(pricesNotOfVersion(listed(), settled(usage(900_000), { ...BASE, ...BAND.prices }))).not.toBeNull();
  });
});
