import { HOSTED_TOOL_CLASSES, type HostedToolClass } from '../canonical/canonical';

/**
 * Money is integers: amounts are nano-credits (1 credit = 1 US dollar = 1e9 nano-credits),
 * prices are nano-credits per million tokens, or per thousand uses of a hosted tool. Decimal
 * text is parsed exactly, never through floating point.
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

/**
 * A sum of nano-credits over many events (a lifetime's grants, a month's charges), which the balance's
 * bound does not bound: a JSON number while it is a safe integer, beyond that its decimal digits as a
 * string, so that no figure is ever carried rounded. Added up as bigint.
 */
export type NanoSum = number | string;

export const nanoSum = (n: bigint): NanoSum => (n <= BigInt(MAX_NANO) && n >= -BigInt(MAX_NANO) ? Number(n) : n.toString());

/** A sum as a file carries it (a safe integer, or integer digits), exactly; null for anything else. */
export function readNanoSum(value: unknown): bigint | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? BigInt(value) : null;
  if (typeof value === 'string' && /^-?\d{1,40}$/.test(value)) return BigInt(value);
  return null;
}

/** Exact decimal credits of a sum of any size. */
export function formatNanoSum(sum: NanoSum | bigint): string {
  const n = typeof sum === 'bigint' ? sum : BigInt(sum);
  const abs = n < 0n ? -n : n;
  const per = BigInt(NANO_PER_CREDIT);
  const rest = abs % per;
  const fraction = rest === 0n ? '' : `.${rest.toString().padStart(9, '0').replace(/0+$/, '')}`;
  return `${n < 0n ? '-' : ''}${abs / per}${fraction}`;
}

/** Credits as a JSON number, for wire formats that expect one (exact to 1e-9 for display). */
export const creditsNumber = (nano: number): number => Number(formatCredits(nano));

/** Nano-credits per million tokens of each class. */
export interface TokenPrices {
  /** Uncached input. */
  input: number;
  /** Input read from the cache. */
  cacheRead: number;
  /** Input written to the cache for 5 minutes. */
  cacheWrite: number;
  /** Input written to the cache for an hour. */
  cacheWrite1h: number;
  /** Output, reasoning included. */
  output: number;
  /** Nano-credits per 1,000 uses of each hosted tool the host prices (absent: none priced). */
  hostedToolUses?: HostedToolPrices;
}

/** Nano-credits per 1,000 uses, by class of hosted tool: a class left out has no price (the host is not asked to run it). */
export type HostedToolPrices = Partial<Record<HostedToolClass, number>>;

/** Uses of hosted tools by class, as billed. */
export type HostedToolCounts = Partial<Record<HostedToolClass, number>>;

/** Tokens of each class, each billed at its own price. The input classes do not overlap. */
export interface TokenUsage {
  /** Input neither read from nor written to the cache. */
  inputTokens: number;
  cacheReadTokens: number;
  /** Written to the cache for 5 minutes. */
  cacheWriteTokens: number;
  /** Written to the cache for an hour. */
  cacheWrite1hTokens: number;
  outputTokens: number;
  /** Uses of tools the host ran itself, by class, each billed at its price per 1,000 (absent: none). */
  hostedToolUses?: HostedToolCounts;
}

/** Usage with no cached input: an estimate, or what a host that reports no cache counts. */
export const uncachedUsage = (inputTokens: number, outputTokens: number): TokenUsage => ({
  inputTokens,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  outputTokens,
});

/** Nano-credits per million tokens (and uses × price per thousand, scaled by 1,000), summed, as whole nano-credits: rounded up, once. */
function roundedUp(numerator: bigint): number {
  const million = 1_000_000n;
  const charge = (numerator + million - 1n) / million;
  if (charge > BigInt(MAX_NANO)) throw new MoneyFormatError('charge is larger than the ledger allows');
  return Number(charge);
}

/**
 * Uses × price per 1,000 uses, over every class used, in millionths of a nano-credit (× 1,000): the
 * same unit as tokens × price per million, so that both are summed before the one rounding. A use
 * of a class without a price is refused (the ledger's rules check it first): never billed as free.
 */
function usesTimesPrices(uses: HostedToolCounts | undefined, prices: HostedToolPrices | undefined): bigint {
  let sum = 0n;
  if (uses === undefined) return sum;
  for (const toolClass of HOSTED_TOOL_CLASSES) {
    const n = uses[toolClass] ?? 0;
    if (n === 0) continue;
    const price = prices?.[toolClass];
    if (price === undefined) throw new MoneyFormatError(`${n} ${toolClass} uses have no price`);
    sum += BigInt(n) * BigInt(price) * 1_000n;
  }
  return sum;
}

/**
 * The cost of a request, computed once and rounded up once:
 * ceil(Σ tokens of a class × its price / 1e6 + Σ uses of a hosted tool × its price / 1e3)
 * over uncached input, cache reads, 5-minute and 1-hour cache writes, output, and each class of hosted-tool use.
 */
export function chargeFor(usage: TokenUsage, prices: TokenPrices): number {
  // Exact in doubles while every product and their sum are safe integers (any request's tokens at
  // any price the catalogue takes): BigInt, a dozen allocations a request, only beyond, or with hosted tools.
  if (usage.hostedToolUses === undefined) {
    const sum =
      exactProduct(usage.inputTokens, prices.input) +
      exactProduct(usage.cacheReadTokens, prices.cacheRead) +
      exactProduct(usage.cacheWriteTokens, prices.cacheWrite) +
      exactProduct(usage.cacheWrite1hTokens, prices.cacheWrite1h) +
      exactProduct(usage.outputTokens, prices.output);
    // Each term ≥ 0, so every partial sum is at most the sum: safe, hence exact.
    if (Number.isSafeInteger(sum)) {
      const rest = sum % 1_000_000;
      return (sum - rest) / 1_000_000 + (rest > 0 ? 1 : 0);
    }
  }
  return roundedUp(
    BigInt(usage.inputTokens) * BigInt(prices.input) +
      BigInt(usage.cacheReadTokens) * BigInt(prices.cacheRead) +
      BigInt(usage.cacheWriteTokens) * BigInt(prices.cacheWrite) +
      BigInt(usage.cacheWrite1hTokens) * BigInt(prices.cacheWrite1h) +
      BigInt(usage.outputTokens) * BigInt(prices.output) +
      usesTimesPrices(usage.hostedToolUses, prices.hostedToolUses),
  );
}

/**
 * count × price of two safe integers when the product is a safe integer ≥ 0 (then exact: one past
 * 2^53 would round to 2^53 or more), else NaN: what BigInt would refuse or compute is left to it.
 */
function exactProduct(count: number, price: number): number {
  if (!Number.isSafeInteger(count) || !Number.isSafeInteger(price)) return NaN;
  const product = count * price;
  return product >= 0 && Number.isSafeInteger(product) ? product : NaN;
}

/** The dearest an input token can be: before the call, nobody knows which input the cache will serve or take. */
export const dearestInputPrice = (prices: TokenPrices): number =>
  Math.max(prices.input, prices.cacheRead, prices.cacheWrite, prices.cacheWrite1h);

/**
 * What to hold for a request: its estimated input at the dearest input price, its output at the
 * output price, and the most uses its carried hosted tools may make (`hostedToolUses`) at their prices.
 */
export const reservationFor = (
  inputTokens: number,
  outputTokens: number,
  prices: TokenPrices,
  hostedToolUses?: HostedToolCounts,
): number =>
  roundedUp(
    BigInt(inputTokens) * BigInt(dearestInputPrice(prices)) +
      BigInt(outputTokens) * BigInt(prices.output) +
      usesTimesPrices(hostedToolUses, prices.hostedToolUses),
  );

/**
 * A price times a fraction, rounded up to a whole nano-credit per million tokens (a price such as
 * 0.000000001 credits has no exact tenth): a derived price never falls below its list price.
 */
export function scaledPrice(price: number, numerator: number, denominator: number): number {
  const scaled = (BigInt(price) * BigInt(numerator) + BigInt(denominator) - 1n) / BigInt(denominator);
  if (scaled > BigInt(MAX_NANO)) throw new MoneyFormatError('price is larger than the ledger allows');
  return Number(scaled);
}

export const isTokenCount = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;
export const isNanoAmount = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;
