import type { RecordedEvent } from '../eventstore/event-store';
import { type CreditNoteIssued, type LedgerEvent, settledCharge } from '../ledger/ledger.events';

/** An organization's money as its events add up: nano-credits. */
export interface LedgerFigures {
  granted: number;
  /** Σ settled charges. */
  charged: number;
  /** Σ refunds + Σ adjustments (signed). */
  credited: number;
  /** granted − charged + credited. */
  balance: number;
  /** Held by reservations still open. */
  reserved: number;
  /** Each key's spend: Σ its settled charges − Σ refunds naming it. */
  keys: Record<string, number>;
  /** Reservations still open: what they hold and for which key (needed to resolve them later). */
  openReservations: Record<string, { amount: number; keyId: string }>;
}

/** One thing an event says that its organization's ledger does not bear out. */
export interface ReplayDifference {
  field: string;
  expected: unknown;
  found: unknown;
}

export const emptyFigures = (): LedgerFigures => ({
  granted: 0,
  charged: 0,
  credited: 0,
  balance: 0,
  reserved: 0,
  keys: {},
  openReservations: {},
});

const isAmount = (n: unknown): n is number => Number.isSafeInteger(n);

/**
 * Replays one organization's ledger events (pure): recomputes every charge from its tokens and prices,
 * checks each resolution against its open reservation and each refund against what its generation was
 * charged, and adds up the balance and each key's spend. What it cannot bear out is returned, never thrown.
 */
export class LedgerReplay {
  readonly figures: LedgerFigures;
  /** Per settled generation: its key, what it was charged, and what refunds have returned of it. */
  private readonly settled = new Map<string, { keyId: string; charged: number; refunded: number }>();

  /**
   * `opening`: the figures before the first event replayed; `fromGenesis`: false when earlier events
   * exist that are not replayed (an export from a date on), so a refund of a generation settled before
   * cannot be checked against its charge.
   */
  constructor(
    opening: LedgerFigures = emptyFigures(),
    private readonly fromGenesis = true,
  ) {
    this.figures = structuredClone(opening);
  }

  apply(recorded: Pick<RecordedEvent, 'type' | 'data'>): ReplayDifference[] {
    const event = recorded as LedgerEvent | CreditNoteIssued;
    const f = this.figures;
    const differences: ReplayDifference[] = [];
    const amountOf = (field: string, value: unknown): number => {
      if (isAmount(value)) return value;
      differences.push({ field, expected: 'an integer of nano-credits', found: value });
      return 0;
    };
    switch (event.type) {
      case 'CreditsGranted':
        f.granted += amountOf('data.amount', event.data.amount);
        break;
      case 'CreditsReserved': {
        const d = event.data;
        if (f.openReservations[d.reservationId] !== undefined || this.settled.has(d.reservationId)) {
          differences.push({ field: 'data.reservationId', expected: 'a new reservation', found: d.reservationId });
        }
        const amount = amountOf('data.amount', d.amount);
        f.openReservations[d.reservationId] = { amount, keyId: d.keyId };
        f.reserved += amount;
        break;
      }
      case 'ReservationSettled':
      case 'ReservationReleased':
      case 'ReservationExpired': {
        const d = event.data;
        const open = f.openReservations[d.reservationId];
        if (open === undefined) {
          differences.push({ field: 'data.reservationId', expected: 'an open reservation', found: d.reservationId });
        } else {
          if (open.amount !== d.held) differences.push({ field: 'data.held', expected: open.amount, found: d.held });
          if (open.keyId !== d.keyId) differences.push({ field: 'data.keyId', expected: open.keyId, found: d.keyId });
          f.reserved -= open.amount;
          delete f.openReservations[d.reservationId];
        }
        if (event.type !== 'ReservationSettled') break;
        const s = event.data;
        let recomputed: number | string;
        try {
          recomputed = settledCharge(s);
        } catch (error) {
          recomputed = `not recomputable: ${(error as Error).message}`;
        }
        if (recomputed !== s.amount) differences.push({ field: 'data.amount', expected: recomputed, found: s.amount });
        const charge = amountOf('data.amount', s.amount);
        f.charged += charge;
        f.keys[s.keyId] = (f.keys[s.keyId] ?? 0) + charge;
        this.settled.set(s.reservationId, { keyId: s.keyId, charged: charge, refunded: 0 });
        break;
      }
      case 'CreditNoteIssued': {
        const d = event.data;
        const amount = amountOf('data.amount', d.amount);
        if (d.kind === 'refund') {
          const generation = d.reservationId === null ? undefined : this.settled.get(d.reservationId);
          if (amount <= 0) differences.push({ field: 'data.amount', expected: 'a refund above 0', found: amount });
          if (generation === undefined) {
            if (this.fromGenesis)
              differences.push({ field: 'data.reservationId', expected: 'a settled generation', found: d.reservationId });
          } else {
            if (generation.keyId !== d.keyId)
              differences.push({ field: 'data.keyId', expected: generation.keyId, found: d.keyId });
            if (generation.refunded + amount > generation.charged) {
              differences.push({
                field: 'data.amount',
                expected: `at most ${generation.charged - generation.refunded} (charged ${generation.charged}, refunded ${generation.refunded})`,
                found: amount,
              });
            }
            generation.refunded += amount;
          }
          if (d.keyId !== null) f.keys[d.keyId] = (f.keys[d.keyId] ?? 0) - amount;
        } else if (d.kind === 'adjustment') {
          if (amount === 0) differences.push({ field: 'data.amount', expected: 'a non-zero adjustment', found: amount });
        } else {
          differences.push({ field: 'data.kind', expected: 'refund or adjustment', found: d.kind });
        }
        f.credited += amount;
        break;
      }
      // Progress and refusals move no credits.
    }
    f.balance = f.granted - f.charged + f.credited;
    return differences;
  }
}
