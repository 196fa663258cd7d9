/** `2027-01-31T00:00:00Z` or with an offset (`+02:00`); seconds and their fraction optional. */
const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/;

/**
 * A time in ISO 8601 with its zone, as milliseconds; null for anything else — a day the month does
 * not have (which Date.parse would roll over), an hour past 23, or no zone (which would be read in
 * the server's own).
 */
export function isoTime(text: string): number | null {
  const parts = ISO_TIME.exec(text);
  if (!parts) return null;
  const [year, month, day, hour, minute, second] = parts.slice(1, 7).map((p) => Number(p ?? 0));
  const calendar = new Date(Date.UTC(year, month - 1, day));
  if (calendar.getUTCMonth() !== month - 1 || calendar.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59) {
    return null;
  }
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? null : ms;
}
