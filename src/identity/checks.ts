import { IdentityRuleError } from './identity-rule-error';
import type { RateLimits } from './identity.events';

/** What the deciders of organizations and of keys check alike: names, and rate limits. */

const MAX_NAME = 100;

/** A UTF-16 surrogate standing alone (with the `u` flag, a pair is one code point and does not match). */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Whether text is well-formed Unicode. JSON can carry a lone surrogate (`"\ud800"`), which no
 * UTF-8 store, digest or URI encoder takes as it is: some throw, others turn it into U+FFFD, so
 * that two different texts become one. Such text is refused where it enters.
 */
export const wellFormed = (text: string): boolean => !LONE_SURROGATE.test(text);

/** A name as given, trimmed: 1 to 100 characters of well-formed text. `what`: whose name, for the message. */
export function checkName(what: string, name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > MAX_NAME) {
    throw new IdentityRuleError('invalid_name', `${what} name must be 1 to ${MAX_NAME} characters`);
  }
  if (!wellFormed(trimmed)) throw new IdentityRuleError('invalid_name', `${what} name must be well-formed text`);
  return trimmed;
}

/** The largest rate limit accepted: far above any real traffic, and well inside a double's integers. */
const MAX_RATE_LIMIT = 1_000_000_000_000;

/** Rate limits as given, checked: each a whole number from 1 up; absent ones are none. Empty means none at all. */
export function checkRateLimits(limits: RateLimits): RateLimits | null {
  const checked: RateLimits = {};
  for (const field of ['requestsPerMinute', 'tokensPerMinute'] as const) {
    const value = limits[field];
    if (value === undefined || value === null) continue;
    if (!Number.isSafeInteger(value) || value < 1 || value > MAX_RATE_LIMIT) {
      throw new IdentityRuleError(
        'invalid_rate_limits',
        `${field === 'requestsPerMinute' ? 'requests' : 'tokens'} per minute must be a whole number from 1 to ${MAX_RATE_LIMIT}`,
      );
    }
    checked[field] = value;
  }
  return Object.keys(checked).length === 0 ? null : checked;
}
