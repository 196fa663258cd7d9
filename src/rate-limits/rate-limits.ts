import { ApiError } from '../http/api-error';
import type { RateLimits } from '../identity/identity.events';
import type { TokenUsage } from '../ledger/money';

/**
 * Rate limits, decided: requests and tokens a key may use in any 60 seconds, counted in
 * one-second buckets (a sliding window exact to the second). A request is admitted when the
 * requests of the last 60 s are below the requests limit and the tokens billed in them below the
 * tokens limit; it then counts one request at once, and its billed tokens once it is settled.
 * Pure: the stores (Redis across instances, or this process) keep the buckets and apply this.
 */

export const WINDOW_SECONDS = 60;

/** The limits that apply to a key: its own, else its organization's default; null when none. */
export function limitsFor(own: RateLimits | undefined, organizationDefault: RateLimits | undefined): RateLimits | null {
  const limits = own ?? organizationDefault;
  return limits && (limits.requestsPerMinute !== undefined || limits.tokensPerMinute !== undefined) ? limits : null;
}

/** What a request counts against a tokens-per-minute limit: every token it was billed, of every class. */
export const totalTokens = (u: TokenUsage): number =>
  u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens + u.cacheWrite1hTokens + u.outputTokens;

/** One limit as it stands after a check. Times are milliseconds from the check. */
export interface LimitState {
  limit: number;
  /** What is left in the window (after counting this request, when admitted). */
  remaining: number;
  /** Until everything counted in the window has left it: the limit is whole again. */
  resetMs: number;
  /** Until enough has left the window for one more request (0 when one may go now). */
  retryMs: number;
}

export interface RateLimitCheck {
  admitted: boolean;
  requests?: LimitState;
  tokens?: LimitState;
}

/** A window's one-second buckets: second (epoch) → count. */
export type Buckets = Map<number, number>;

/**
 * Drops the buckets that have left the window ending at `second`; what remains is in time order
 * (a Map keeps the order buckets were first counted in, and seconds only go forward).
 */
export function inWindow(buckets: Buckets, second: number): Buckets {
  const oldest = second - WINDOW_SECONDS + 1;
  for (const s of buckets.keys()) {
    if (s >= oldest) break;
    buckets.delete(s);
  }
  return buckets;
}

/** A limit's state over the window's buckets (in time order) at `nowMs`. */
export function limitState(window: Iterable<[number, number]>, limit: number, nowMs: number): LimitState {
  const leaves = (second: number) => Math.max(0, (second + WINDOW_SECONDS) * 1000 - nowMs);
  let used = 0;
  let newest: number | null = null;
  for (const [second, count] of window) {
    used += count;
    newest = second;
  }
  let retryMs = 0;
  let left = used;
  for (const [second, count] of window) {
    if (left < limit) break;
    left -= count;
    retryMs = leaves(second);
  }
  return { limit, remaining: Math.max(0, limit - used), resetMs: newest === null ? 0 : leaves(newest), retryMs };
}

/**
 * The check of one request against its limits over its buckets, at `nowMs`: admitted when both
 * limits have room; an admitted request is counted in `requests` at once.
 */
export function checkLimits(limits: RateLimits, requests: Buckets, tokens: Buckets, nowMs: number): RateLimitCheck {
  const second = Math.floor(nowMs / 1000);
  const requestState =
    limits.requestsPerMinute === undefined ? undefined : limitState(inWindow(requests, second), limits.requestsPerMinute, nowMs);
  const tokenState =
    limits.tokensPerMinute === undefined ? undefined : limitState(inWindow(tokens, second), limits.tokensPerMinute, nowMs);
  const admitted = (requestState?.remaining ?? 1) > 0 && (tokenState?.remaining ?? 1) > 0;
  if (admitted && requestState) {
    requests.set(second, (requests.get(second) ?? 0) + 1);
    requestState.remaining -= 1;
    requestState.resetMs = (second + WINDOW_SECONDS) * 1000 - nowMs;
  }
  return { admitted, requests: requestState, tokens: tokenState };
}

/** Seconds, rounded up, as a header shows them (`1s`, `42s`): the conventions of the chat-completions APIs. */
const seconds = (ms: number) => `${Math.ceil(ms / 1000)}s`;

/** `x-ratelimit-*` headers for a key's limits, as every reply to it carries them. */
export function rateLimitHeaders(check: RateLimitCheck): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, state] of [
    ['requests', check.requests],
    ['tokens', check.tokens],
  ] as const) {
    if (!state) continue;
    headers[`x-ratelimit-limit-${name}`] = String(state.limit);
    headers[`x-ratelimit-remaining-${name}`] = String(state.remaining);
    headers[`x-ratelimit-reset-${name}`] = seconds(state.resetMs);
  }
  return headers;
}

const perMinute = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'} per minute`;

/** The 429 for a request over its limits: what was reached, and when to try again (also in Retry-After). */
export function rateLimited(check: RateLimitCheck): ApiError {
  const over = [
    check.requests && check.requests.remaining === 0 ? perMinute(check.requests.limit, 'request') : null,
    check.tokens && check.tokens.remaining === 0 ? perMinute(check.tokens.limit, 'token') : null,
  ].filter((reason): reason is string => reason !== null);
  const retryMs = Math.max(check.requests?.retryMs ?? 0, check.tokens?.retryMs ?? 0);
  const retryAfterSeconds = Math.max(1, Math.ceil(retryMs / 1000));
  return new ApiError(
    'rate_limited',
    `rate limit reached: this key may make ${over.join(' and ')}; try again in ${retryAfterSeconds} s`,
    { retryAfterSeconds },
    { ...rateLimitHeaders(check), 'retry-after': String(retryAfterSeconds) },
  );
}
