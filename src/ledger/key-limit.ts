import type { KeyLimit, LimitReset } from '../identity/identity.events';
import type { CreditNoteIssued, ReservationSettled } from './ledger.events';

/**
 * Per-key credit limits, decided. A key's usage in a period is what its settlements in that
 * period charged plus what its open holds (pending or recorded) hold now, whenever they were taken:
 * a hold counts against the current period, a charge against the period its settlement lands in.
 */

/** The period `ms` falls in, for a limit that resets so: `all`, `d:2026-11-24`, `w:2026-11-23` (its Monday), `m:2026-11`. */
export function periodOf(reset: LimitReset, ms: number): string {
  const day = new Date(ms).toISOString().slice(0, 10);
  switch (reset) {
    case 'never':
      return 'all';
    case 'daily':
      return `d:${day}`;
    case 'weekly': {
      const date = new Date(`${day}T00:00:00Z`);
      const sinceMonday = (date.getUTCDay() + 6) % 7;
      return `w:${new Date(date.getTime() - sinceMonday * 86_400_000).toISOString().slice(0, 10)}`;
    }
    case 'monthly':
      return `m:${day.slice(0, 7)}`;
  }
}

export const LIMIT_RESETS: readonly LimitReset[] = ['never', 'daily', 'weekly', 'monthly'];

/** The period `ms` falls in, for each kind of reset. */
export const periodsOf = (ms: number): Record<LimitReset, string> =>
  Object.fromEntries(LIMIT_RESETS.map((reset) => [reset, periodOf(reset, ms)])) as Record<LimitReset, string>;

/** How an event moves a key's spend: by `amount` (signed nano-credits), all time and in the period `at` falls in of each reset in `resets`. */
export interface KeySpendChange {
  keyId: string;
  amount: number;
  at: number;
  resets: readonly LimitReset[];
}

const NEVER: readonly LimitReset[] = ['never'];

/**
 * The one rule for a key's spend, shared by the ledger's read models and the alerts so that they count
 * alike: a charge counts under every kind of limit; a refund comes off only under a limit that never
 * resets, as one that resets keeps counting the charge in the period it landed in (the refund does not
 * say when that was). An adjustment, or a settlement that charged nothing, moves no key's spend.
 */
export function keySpendChangeOf(event: ReservationSettled | CreditNoteIssued): KeySpendChange | null {
  switch (event.type) {
    case 'ReservationSettled': {
      const { keyId, amount, settledAt } = event.data;
      return amount > 0 ? { keyId, amount, at: settledAt, resets: LIMIT_RESETS } : null;
    }
    case 'CreditNoteIssued': {
      const { kind, keyId, amount, issuedAt } = event.data;
      return kind === 'refund' && keyId !== null ? { keyId, amount: -amount, at: issuedAt, resets: NEVER } : null;
    }
  }
}

/** What admission asks of the hold for a key: its id, and its limit in the current period if it has one. */
export interface KeyHold {
  keyId: string;
  limit?: { amount: number; period: string };
}

/** The key's hold at `now`: its limit in the period `now` falls in. */
export const keyHold = (keyId: string, limit: KeyLimit | undefined, now: number): KeyHold =>
  limit ? { keyId, limit: { amount: limit.amount, period: periodOf(limit.reset, now) } } : { keyId };

/** When the period `now` falls in ends (a limit that never resets: null). */
export function resetsAt(reset: LimitReset, now: number): number | null {
  const day = new Date(new Date(now).toISOString().slice(0, 10) + 'T00:00:00Z');
  switch (reset) {
    case 'never':
      return null;
    case 'daily':
      return day.getTime() + 86_400_000;
    case 'weekly':
      return day.getTime() + (7 - ((day.getUTCDay() + 6) % 7)) * 86_400_000;
    case 'monthly':
      return Date.UTC(day.getUTCFullYear(), day.getUTCMonth() + 1, 1);
  }
}
