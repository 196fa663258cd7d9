import type { TokenPrices } from './money';

/**
 * Ledger events. Amounts are nano-credits, prices nano-credits per million tokens.
 * A settlement carries everything needed to recompute its charge on its own.
 */
export interface CreditsGranted {
  type: 'CreditsGranted';
  data: { orgId: string; grantId: string; amount: number; reason: string; grantedAt: number };
}

/** What a request is, carried on its reservation and on its resolution for the request log. */
export interface RequestFacts {
  requestId: string;
  keyId: string;
  surface: string;
  model: string;
}

export interface CreditsReserved {
  type: 'CreditsReserved';
  data: RequestFacts & {
    reservationId: string;
    orgId: string;
    amount: number;
    reservedAt: number;
    expiresAt: number;
  };
}

/** How the request ended, as the request log shows it. */
export interface RequestOutcome {
  /** `ok`, or the error kind that ended it (`client_abort`, `provider_error`, `timeout`, …). */
  status: string;
  latencyMs: number;
}

export interface ReservationSettled {
  type: 'ReservationSettled';
  data: RequestFacts &
    RequestOutcome & {
      reservationId: string;
      orgId: string;
      host: string;
      hostModel: string;
      inputTokens: number;
      outputTokens: number;
      prices: TokenPrices;
      /** The charge: ceil((inputTokens × prices.input + outputTokens × prices.output) / 1e6). */
      amount: number;
      /** What the reservation held; the difference returns to the balance. */
      held: number;
      settledAt: number;
    };
}

export interface ReservationReleased {
  type: 'ReservationReleased';
  data: RequestFacts &
    RequestOutcome & {
      reservationId: string;
      orgId: string;
      host: string | null;
      held: number;
      reason: string;
      releasedAt: number;
    };
}

export interface ReservationExpired {
  type: 'ReservationExpired';
  data: RequestFacts & { reservationId: string; orgId: string; held: number; expiredAt: number };
}

/**
 * A request of a known organization turned away before anything was reserved (its balance
 * could not cover it, its model is unknown, its token cap too high): nothing moves in the
 * ledger, but the request log shows it like any other.
 */
export interface RequestRefused {
  type: 'RequestRefused';
  data: RequestFacts &
    RequestOutcome & {
      refusalId: string;
      orgId: string;
      reason: string;
      refusedAt: number;
    };
}

export type ReservationEvent = CreditsReserved | ReservationSettled | ReservationReleased | ReservationExpired;
export type LedgerEvent = CreditsGranted | ReservationEvent | RequestRefused;

export const creditsStream = (orgId: string) => `credits-${orgId}`;
export const reservationStream = (reservationId: string) => `reservation-${reservationId}`;
export const refusalStream = (refusalId: string) => `refusal-${refusalId}`;
