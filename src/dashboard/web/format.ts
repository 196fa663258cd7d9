// Formatting for people. Money is shown exactly to the nano-credit; dates in the viewer's locale,
// except calendar days, which the server counts in UTC.

const group = (digits: string): string => digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/** Credits with up to 9 decimals, trailing zeros trimmed: 0.000123, 12.5, 1,024. */
export function formatCredits(value: number): string {
  if (!Number.isFinite(value)) return '—';
  const fixed = Math.abs(value)
    .toFixed(9)
    .replace(/\.?0+$/, '');
  const [int, frac] = fixed.split('.');
  const sign = value < 0 && fixed !== '0' ? '-' : '';
  return sign + group(int) + (frac ? `.${frac}` : '');
}

/** Exact credits from integer nano-credits (no floating point at all). */
export function formatNano(nano: number | string | bigint): string {
  let n: bigint;
  try {
    n = BigInt(nano);
  } catch {
    return formatCredits(Number(nano) / 1e9);
  }
  const sign = n < 0n ? '-' : '';
  const digits = (n < 0n ? -n : n).toString().padStart(10, '0');
  const frac = digits.slice(-9).replace(/0+$/, '');
  return sign + group(digits.slice(0, -9)) + (frac ? `.${frac}` : '');
}

/** Prefers the exact nano-credit figure when the server sends one. */
export const formatCost = (cost: number, costNano?: number | null): string =>
  typeof costNano === 'number' && Number.isInteger(costNano) ? formatNano(costNano) : formatCredits(cost);

export const formatInt = (n: number): string => (Number.isFinite(n) ? n.toLocaleString('en-US') : '—');

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const timeParts = { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' } as const;
const dateTimeSeconds = new Intl.DateTimeFormat(undefined, timeParts);
const dateTimeSecondsYear = new Intl.DateTimeFormat(undefined, { ...timeParts, year: 'numeric' });
const shortDay = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
const longDay = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeZone: 'UTC' });

export const formatDateTime = (iso: string): string => dateTime.format(new Date(iso));
/** A request's time to the second; the year only when it is not this year (keeps the table narrow). */
export function formatTime(iso: string): string {
  const date = new Date(iso);
  return (date.getFullYear() === new Date().getFullYear() ? dateTimeSeconds : dateTimeSecondsYear).format(date);
}

/** 'YYYY-MM-DD' (a UTC day) as "May 3", or "May 3, 2025" when long. */
export const formatDay = (day: string, long = false): string => (long ? longDay : shortDay).format(new Date(`${day}T00:00:00Z`));

export function formatLatency(ms: number | null): string {
  if (ms == null) return '—';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

/** Today's UTC day, shifted by `offsetDays`, as 'YYYY-MM-DD' (the server buckets spend by UTC day). */
export function utcDay(offsetDays = 0): string {
  return new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);
}
