/**
 * What the ledger needs of the read models, as the ledger states it (the projection stores
 * implement it): the balance check and hold at admission, and the reservations past expiry.
 * The ledger's rules stay free of any store; the stores depend on the ledger, not the reverse.
 */
import type { KeyHold } from './key-limit';

/** Refused: the organization's available balance, or (`keyRemaining`) what the key's limit has left in its period. */
export type HoldResult = { admitted: true } | { admitted: false; available: number; keyRemaining?: number };

export interface CreditHolds {
  /**
   * Atomically holds `amount` for a reservation if the organization's available balance covers
   * it and, when the key has a limit, so does what the limit has left in its period. The hold is
   * pending until the reservation's event is applied; if that never happens it is swept after
   * `pendingUntil`. The key's holds are counted either way (a limit set later sees them).
   */
  hold(orgId: string, reservationId: string, amount: number, pendingUntil: number, key: KeyHold): Promise<HoldResult>;
  /** Undoes a pending hold whose event could not be appended. */
  dropHold(orgId: string, reservationId: string): Promise<void>;
  /** The organization's balance as the read models have it (a debit is checked against what is available). */
  balance(orgId: string): Promise<{ granted: number; spent: number; reserved: number; pending: number }>;
  /** Open reservations whose expiry is at or before `now`. */
  expiredReservations(now: number, limit: number): Promise<Array<{ reservationId: string }>>;
}
