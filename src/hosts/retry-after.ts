/** Longest wait a `Retry-After` is read as (a day): a larger number is no more useful and would overflow timers. */
const LONGEST_SECONDS = 86_400;

/**
 * An upstream's `Retry-After` (RFC 9110 §10.2.3): whole seconds, or an HTTP-date, as milliseconds
 * from `now`; null when absent or unreadable. A date in the past is no wait.
 */
export function parseRetryAfter(value: string | undefined, now: number): number | null {
  const text = value?.trim();
  if (!text) return null;
  if (/^\d+$/.test(text)) return Math.min(Number(text), LONGEST_SECONDS) * 1000;
  // An HTTP-date begins with its day's name (IMF-fixdate, RFC 850 and asctime alike): Date.parse alone would read '-5' as a year.
  const at = /^[A-Za-z]{3}/.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - now);
}
