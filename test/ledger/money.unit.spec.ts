import { chargeFor, creditsNumber, formatCredits, MoneyFormatError, parseCredits } from '../../src/ledger/money';

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
    expect(chargeFor({ inputTokens: 1000, outputTokens: 500 }, { input: 150_000_000, output: 600_000_000 })).toBe(450_000);
    // 1 token at 1 nano-credit per million tokens is a millionth of a nano-credit: rounds up to 1.
    expect(chargeFor({ inputTokens: 1, outputTokens: 0 }, { input: 1, output: 0 })).toBe(1);
    // Large products stay exact (beyond 2^53 before division).
    expect(
      chargeFor({ inputTokens: 9_000_000, outputTokens: 9_000_000 }, { input: 75_000_000_000, output: 150_000_000_000 }),
    ).toBe(2_025_000_000_000);
    expect(chargeFor({ inputTokens: 0, outputTokens: 0 }, { input: 5, output: 5 })).toBe(0);
  });
});
