/**
 * Money is integers: amounts are nano-credits (1 credit = 1 US dollar = 1e9 nano-credits),
 * prices are nano-credits per million tokens. Decimal text is parsed exactly, never through
 * floating point.
 */
export const NANO_PER_CREDIT = 1_000_000_000;

/** Largest balance the ledger handles exactly: 2^53 - 1 nano-credits, about 9 million credits. */
export const MAX_NANO = Number.MAX_SAFE_INTEGER;

const DECIMAL = /^(\d{1,16})(?:\.(\d{1,9}))?$/;

export class MoneyFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MoneyFormatError';
  }
}

/** "12.50" → 12_500_000_000. Rejects signs, exponents and more than 9 decimals. */
export function parseCredits(text: string): number {
  const match = DECIMAL.exec(text.trim());
  if (!match) {
    throw new MoneyFormatError(`"${text}" is not an amount of credits: use a plain decimal such as 12.50 (at most 9 decimals)`);
  }
  const nano = BigInt(match[1]) * BigInt(NANO_PER_CREDIT) + BigInt((match[2] ?? '').padEnd(9, '0'));
  if (nano > BigInt(MAX_NANO)) throw new MoneyFormatError(`"${text}" is larger than the ledger allows`);
  return Number(nano);
}

/** 12_500_000_000 → "12.5": exact decimal text of an amount in nano-credits. */
export function formatCredits(nano: number): string {
  const sign = nano < 0 ? '-' : '';
  // Amounts are safe integers: remainder, difference and quotient are exact in doubles (no BigInt on every reply).
  const abs = Math.abs(nano);
  const rest = abs % NANO_PER_CREDIT;
  const whole = (abs - rest) / NANO_PER_CREDIT;
  const fraction = rest === 0 ? '' : String(rest).padStart(9, '0').replace(/0+$/, '');
  return `${sign}${whole}${fraction ? `.${fraction}` : ''}`;
}

/** Credits as a JSON number, for wire formats that expect one (exact to 1e-9 for display). */
export const creditsNumber = (nano: number): number => Number(formatCredits(nano));

export interface TokenPrices {
  /** Nano-credits per million input tokens. */
  input: number;
  /** Nano-credits per million output tokens. */
  output: number;
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

/**
 * The cost of a request, computed once and rounded up once:
 * ceil((input tokens × input price + output tokens × output price) / 1e6).
 */
export function chargeFor(usage: TokenUsage, prices: TokenPrices): number {
  const numerator = BigInt(usage.inputTokens) * BigInt(prices.input) + BigInt(usage.outputTokens) * BigInt(prices.output);
  const million = 1_000_000n;
  const charge = (numerator + million - 1n) / million;
  if (charge > BigInt(MAX_NANO)) throw new MoneyFormatError('charge is larger than the ledger allows');
  return Number(charge);
}

export const isTokenCount = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;
export const isNanoAmount = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;
