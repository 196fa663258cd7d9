import {
  chargeFor,
  creditsNumber,
  dearestInputPrice,
  formatCredits,
  MoneyFormatError,
  parseCredits,
  reservationFor,
  scaledPrice,
  TokenPrices,
  uncachedUsage,
} from '../../src/ledger/money';

/** Prices with the cache's classes at the input price: what a charge without cached tokens is billed at. */
const flat = (input: number, output: number): TokenPrices => ({
  input,
  cacheRead: input,
  cacheWrite: input,
  cacheWrite1h: input,
  output,
});

describe('money', () => {
  it('parses decimal credits exactly into nano-credits', () => {
    expect(parseCredits('12.50')).toBe(12_500_000_000);
    expect(parseCredits('0.000000001')).toBe(1);
    expect(parseCredits('7')).toBe(7_000_000_000);
    expect(parseCredits(' 0.1 ')).toBe(100_000_000);
  });

  it.each(['-1', '1e3', '1.0000000001', 'abc', '', '1,5', '99999999999999999'])('rejects "%s"', (text) => {
    expect(() => parseCredits(text)).toThrow(MoneyFormatError);
  });

  it('formats nano-credits as exact decimal text', () => {
    expect(formatCredits(12_500_000_000)).toBe('12.5');
    expect(formatCredits(1)).toBe('0.000000001');
    expect(formatCredits(0)).toBe('0');
    expect(formatCredits(-250_000_000)).toBe('-0.25');
    expect(creditsNumber(12_345_678_901)).toBe(12.345678901);
  });

  it('formats exactly up to the largest amount the ledger holds', () => {
    // Exact decimal text by BigInt, to compare with: amounts near 2^53 have no room for rounding.
    const exact = (nano: number) => {
      const abs = BigInt(Math.abs(nano));
      const fraction = (abs % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
      return `${nano < 0 ? '-' : ''}${abs / 1_000_000_000n}${fraction ? `.${fraction}` : ''}`;
    };
    expect(formatCredits(Number.MAX_SAFE_INTEGER)).toBe('9007199.254740991');
    for (const nano of [
      Number.MAX_SAFE_INTEGER - 1,
      9_000_000_999_999_999,
      8_999_999_999_999_999,
      1_000_000_000,
      999_999_999,
      -9_007_199_254_740_991,
    ]) {
      expect(formatCredits(nano)).toBe(exact(nano));
    }
    for (let k = 1; k < 5000; k++) {
      const nano = Math.floor(Number.MAX_SAFE_INTEGER / k) - (k % 7);
      expect(formatCredits(nano)).toBe(exact(nano));
    }
  });

  it('charges once, rounded up once, without floating point', () => {
    // 1000 in × $0.15/M + 500 out × $0.60/M = 0.00015 + 0.0003 = 0.00045 credits
    expect(chargeFor(uncachedUsage(1000, 500), flat(150_000_000, 600_000_000))).toBe(450_000);
    // 1 token at 1 nano-credit per million tokens is a millionth of a nano-credit: rounds up to 1.
    expect(chargeFor(uncachedUsage(1, 0), flat(1, 0))).toBe(1);
    // Large products stay exact (beyond 2^53 before division).
    expect(chargeFor(uncachedUsage(9_000_000, 9_000_000), flat(75_000_000_000, 150_000_000_000))).toBe(2_025_000_000_000);
    expect(chargeFor(uncachedUsage(0, 0), flat(5, 5))).toBe(0);
  });

  it('gives what the sum in BigInt gives, at and around the edge of exact doubles', () => {
    const inBigInt = (counts: number[], prices: number[]) => {
      const sum = counts.reduce((total, n, i) => total + BigInt(n) * BigInt(prices[i]), 0n);
      return Number((sum + 999_999n) / 1_000_000n);
    };
    const edge = Number.MAX_SAFE_INTEGER;
    let seed = 7;
    const random = (below: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return Math.floor((seed / 2_147_483_648) * below);
    };
    const cases = [
      [edge, 1, 0, 0, 0, 0],
      [edge - 999_999, 1, 0, 0, 0, 0],
      [94_906_265, 94_906_265, 0, 0, 0, 0],
      [94_906_266, 94_906_266, 0, 0, 0, 0],
      [Math.floor(edge / 2), 1, Math.floor(edge / 2) + 1, 1, 0, 0],
      [Math.floor(edge / 2) + 1, 1, Math.floor(edge / 2) + 1, 1, 0, 0],
    ];
    for (let i = 0; i < 2000; i++) {
      const scale = [1_000, 1_000_000, 1e8, 1e9][i % 4];
      cases.push(Array.from({ length: 6 }, () => random(scale)));
    }
    for (const [input, inputPrice, output, outputPrice, cacheRead, cacheReadPrice] of cases) {
      const usage = { ...uncachedUsage(input, output), cacheReadTokens: cacheRead };
      const prices = { ...flat(inputPrice, outputPrice), cacheRead: cacheReadPrice };
      expect(chargeFor(usage, prices)).toBe(inBigInt([input, output, cacheRead], [inputPrice, outputPrice, cacheReadPrice]));
    }
    // What BigInt refuses is still refused.
    expect(() => chargeFor(uncachedUsage(1.5, 0), flat(2, 0))).toThrow(RangeError);
  });
});

describe('the charge by token class', () => {
  // Claude Sonnet 4's list prices, nano-credits per million tokens: $3 input, $0.30 cache reads,
  // $3.75 5-minute writes, $6 1-hour writes, $15 output.
  const sonnet: TokenPrices = {
    input: 3_000_000_000,
    cacheRead: 300_000_000,
    cacheWrite: 3_750_000_000,
    cacheWrite1h: 6_000_000_000,
    output: 15_000_000_000,
  };
  const usage = {
    inputTokens: 100,
    cacheReadTokens: 20_000,
    cacheWriteTokens: 3_000,
    cacheWrite1hTokens: 1_000,
    outputTokens: 500,
  };

  describe('given tokens in every class', () => {
    it('when charged, then each class is billed at its own price, summed, and rounded up once', () => {
      // 100 × 3e9 + 20,000 × 3e8 + 3,000 × 3.75e9 + 1,000 × 6e9 + 500 × 15e9
      //   = 3e11 + 6e12 + 1.125e13 + 6e12 + 7.5e12 = 3.105e13; / 1e6 = 31,050,000 nano-credits (0.03105 credits)
      expect(chargeFor(usage, sonnet)).toBe(31_050_000);
    });

    it('when the same tokens are all billed at the input price, then the charge differs', () => {
      // 24,100 input × 3e9 + 500 × 15e9 = 7.23e13 + 7.5e12 = 7.98e13; / 1e6 = 79,800,000
      expect(chargeFor(usage, flat(3_000_000_000, 15_000_000_000))).toBe(79_800_000);
    });

    it('when every class has a fraction of a nano-credit, then the sum is rounded up once, not each class', () => {
      // 1 token of each class at 300,000 nano-credits per million = 0.3 each; 5 × 0.3 = 1.5 → 2 (per class it would be 5)
      const one = { inputTokens: 1, cacheReadTokens: 1, cacheWriteTokens: 1, cacheWrite1hTokens: 1, outputTokens: 1 };
      expect(chargeFor(one, flat(300_000, 300_000))).toBe(2);
    });
  });

  describe('given a reservation', () => {
    it('when sized, then its input is priced at the dearest input class, whichever it is', () => {
      expect(dearestInputPrice(sonnet)).toBe(6_000_000_000);
      expect(dearestInputPrice({ ...sonnet, cacheRead: 7_000_000_000 })).toBe(7_000_000_000);
      // 1,000 × 6e9 (1-hour writes) + 200 × 15e9 = 6e12 + 3e12 = 9e12; / 1e6 = 9,000,000
      expect(reservationFor(1_000, 200, sonnet)).toBe(9_000_000);
    });
  });

  describe('given a price scaled by a fraction', () => {
    it('when the result is whole, then it is exact', () => {
      // $0.80/M: a tenth is $0.08, five quarters $1.00, twice $1.60
      expect(scaledPrice(800_000_000, 1, 10)).toBe(80_000_000);
      expect(scaledPrice(800_000_000, 5, 4)).toBe(1_000_000_000);
      expect(scaledPrice(800_000_000, 2, 1)).toBe(1_600_000_000);
    });

    it('when it is not a whole nano-credit, then it is rounded up', () => {
      expect(scaledPrice(1, 1, 10)).toBe(1);
      expect(scaledPrice(15, 1, 10)).toBe(2);
      expect(scaledPrice(3, 5, 4)).toBe(4);
    });
  });
});

describe('the charge with hosted-tool uses', () => {
  const prices: TokenPrices = {
    input: 3_000_000_000,
    cacheRead: 300_000_000,
    cacheWrite: 3_750_000_000,
    cacheWrite1h: 6_000_000_000,
    output: 15_000_000_000,
    // $10 per 1,000 web searches, $0.01 per 1,000 fetches: nano-credits per 1,000 uses.
    hostedToolUses: { webSearch: 10_000_000_000, webFetch: 10_000_000 },
  };

  it('bills each use at its price per 1,000 beside the tokens, the exact sum rounded up once', () => {
    // 3 searches × $10 / 1,000 = $0.03 = 30,000,000 nano-credits; no tokens.
    expect(chargeFor({ ...uncachedUsage(0, 0), hostedToolUses: { webSearch: 3 } }, prices)).toBe(30_000_000);
    // 7 tokens of input at 3 nano-credits per million is 0.000021 nano-credits, 1 fetch at $0.01/1,000 is
    // 10,000 nano-credits: 10,000.000021 → 10,001 when summed first, never 10,001 + 1 (two roundings).
    expect(chargeFor({ ...uncachedUsage(7, 0), hostedToolUses: { webFetch: 1 } }, { ...prices, input: 3 })).toBe(10_001);
    const usage = { ...uncachedUsage(1234, 567), hostedToolUses: { webSearch: 2, webFetch: 5 } };
    const exact = 1234n * 3_000_000_000n + 567n * 15_000_000_000n + (2n * 10_000_000_000n + 5n * 10_000_000n) * 1000n;
    expect(chargeFor(usage, prices)).toBe(Number((exact + 999_999n) / 1_000_000n));
  });

  it('no use, or none of a class, costs nothing; a use of a class without a price is never billed as free', () => {
    expect(
      chargeFor({ ...uncachedUsage(0, 0), hostedToolUses: { webSearch: 0 } }, { ...prices, hostedToolUses: undefined }),
    ).toBe(0);
    expect(() => chargeFor({ ...uncachedUsage(0, 0), hostedToolUses: { fileSearch: 1 } }, prices)).toThrow(
      '1 fileSearch uses have no price',
    );
  });

  it('holds for the uses allowed at their prices with the tokens', () => {
    expect(reservationFor(0, 0, prices, { webSearch: 20 })).toBe(200_000_000);
    expect(reservationFor(10, 10, prices, { webSearch: 1 })).toBe(reservationFor(10, 10, prices) + 10_000_000);
  });
});
