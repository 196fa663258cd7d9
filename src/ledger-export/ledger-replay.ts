import type { RecordedEvent } from '../eventstore/event-store';
import { type CreditNoteIssued, type LedgerEvent, settledCharge } from '../ledger/ledger.events';
import { type NanoSum, nanoSum, readNanoSum } from '../ledger/money';
import {
  adjustmentNamesGeneration,
  creditNoteReasonUnknown,
  grantIdReused,
  grantNotPositive,
  idempotencyKeyReused,
  type RuleBreach,
} from '../ledger/ledger-rules';

/**
 * An organization's money as its events add up: nano-credits. Sums of a lifetime's events may pass
 * 2^53 (the balance's bound bounds net grants, not grants): each is a NanoSum, a number while safe.
 */
export interface LedgerFigures {
  granted: NanoSum;
  /** Σ settled charges. */
  charged: NanoSum;
  /** Σ refunds + Σ adjustments (signed). */
  credited: NanoSum;
  /** granted − charged + credited. */
  balance: NanoSum;
  /** Held by reservations still open. */
  reserved: NanoSum;
  /** Each key's spend: Σ its settled charges − Σ refunds naming it. */
  keys: Record<string, NanoSum>;
  /** Reservations still open: what they hold and for which key (needed to resolve them later). */
  openReservations: Record<string, { amount: number; keyId: string }>;
}

/** One thing an event says that its organization's ledger does not bear out (`rule`: the ledger rule it breaks, when one of ledger-rules.ts). */
export interface ReplayDifference {
  field: string;
  expected: unknown;
  found: unknown;
  rule?: string;
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

export const SUM_FIELDS = ['granted', 'charged', 'credited', 'balance', 'reserved'] as const;

/**
 * Replays one organization's ledger events (pure): recomputes every charge from its tokens and prices,
 * checks each resolution against its open reservation and each refund against what its generation was
 * charged, and adds up the balance and each key's spend. What it cannot bear out is returned, never thrown.
 */
export class LedgerReplay {
  /** Added up exactly, as bigint; `figures` gives them as files carry them. */
  private granted: bigint;
  private charged: bigint;
  private credited: bigint;
  private reserved: bigint;
  private readonly keys: Map<string, bigint>;
  private readonly openReservations: LedgerFigures['openReservations'];
  /** Per settled generation: its key, what it was charged, and what refunds have returned of it. */
  private readonly settled = new Map<string, { keyId: string; charged: number; refunded: number }>();
  /** The grant ids and credit notes' idempotency keys used so far (of the events replayed: a period's export knows none before it). */
  private readonly grantIds = new Set<string>();
  private readonly creditNoteKeys = new Set<string>();

  /**
   * `opening`: the figures before the first event replayed (a sum that is not one counts as 0: the
   * verifier names it); `fromGenesis`: false when earlier events exist that are not replayed (an export
   * from a date on), so a refund of a generation settled before cannot be checked against its charge.
   */
  constructor(
    opening: LedgerFigures = emptyFigures(),
    private readonly fromGenesis = true,
  ) {
    const sum = (value: unknown) => readNanoSum(value) ?? 0n;
    this.granted = sum(opening.granted);
    this.charged = sum(opening.charged);
    this.credited = sum(opening.credited);
    this.reserved = sum(opening.reserved);
    this.keys = new Map(Object.entries(opening.keys ?? {}).map(([keyId, spent]) => [keyId, sum(spent)]));
    // An amount that is not one counts as 0 (the verifier names it): sums stay bigint arithmetic.
    this.openReservations = Object.fromEntries(
      Object.entries(opening.openReservations ?? {}).map(([id, open]) => [
        id,
        { amount: isAmount(open?.amount) ? open.amount : 0, keyId: open?.keyId },
      ]),
    );
  }

  get figures(): LedgerFigures {
    return {
      granted: nanoSum(this.granted),
      charged: nanoSum(this.charged),
      credited: nanoSum(this.credited),
      balance: nanoSum(this.granted - this.charged + this.credited),
      reserved: nanoSum(this.reserved),
      keys: Object.fromEntries([...this.keys].map(([keyId, spent]) => [keyId, nanoSum(spent)])),
      openReservations: structuredClone(this.openReservations),
    };
  }

  private spend(keyId: string, amount: number): void {
    this.keys.set(keyId, (this.keys.get(keyId) ?? 0n) + BigInt(amount));
  }

  apply(recorded: Pick<RecordedEvent, 'type' | 'data'>): ReplayDifference[] {
    const event = recorded as LedgerEvent | CreditNoteIssued;
    const open = this.openReservations;
    const differences: ReplayDifference[] = [];
    const amountOf = (field: string, value: unknown): number => {
      if (isAmount(value)) return value;
      differences.push({ field, expected: 'an integer of nano-credits', found: value });
      return 0;
    };
    const breached = (breach: RuleBreach | null) => {
      if (breach !== null) differences.push(breach);
    };
    switch (event.type) {
      case 'CreditsGranted': {
        const grant = event.data;
        breached(grantNotPositive(grant));
        breached(grantIdReused(grant, this.grantIds));
        if (grant.grantId !== undefined) this.grantIds.add(grant.grantId);
        // Counted as it stands, whatever it breaks: the figures are the file's events added up.
        this.granted += BigInt(isAmount(grant.amount) ? grant.amount : 0);
        break;
      }
      case 'CreditsReserved': {
        const d = event.data;
        if (open[d.reservationId] !== undefined || this.settled.has(d.reservationId)) {
          differences.push({ field: 'data.reservationId', expected: 'a new reservation', found: d.reservationId });
        }
        const amount = amountOf('data.amount', d.amount);
        open[d.reservationId] = { amount, keyId: d.keyId };
        this.reserved += BigInt(amount);
        break;
      }
      case 'ReservationSettled':
      case 'ReservationReleased':
      case 'ReservationExpired': {
        const d = event.data;
        const held = open[d.reservationId];
        if (held === undefined) {
          differences.push({ field: 'data.reservationId', expected: 'an open reservation', found: d.reservationId });
        } else {
          if (held.amount !== d.held) differences.push({ field: 'data.held', expected: held.amount, found: d.held });
          if (held.keyId !== d.keyId) differences.push({ field: 'data.keyId', expected: held.keyId, found: d.keyId });
          this.reserved -= BigInt(held.amount);
          delete open[d.reservationId];
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
        this.charged += BigInt(charge);
        this.spend(s.keyId, charge);
        this.settled.set(s.reservationId, { keyId: s.keyId, charged: charge, refunded: 0 });
        break;
      }
      case 'CreditNoteIssued': {
        const d = event.data;
        breached(idempotencyKeyReused(d, this.creditNoteKeys));
        this.creditNoteKeys.add(d.idempotencyKey);
        breached(creditNoteReasonUnknown(d));
        breached(adjustmentNamesGeneration(d));
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
          if (d.keyId !== null) this.spend(d.keyId, -amount);
        } else if (d.kind === 'adjustment') {
          if (amount === 0) differences.push({ field: 'data.amount', expected: 'a non-zero adjustment', found: amount });
        } else {
          differences.push({ field: 'data.kind', expected: 'refund or adjustment', found: d.kind });
        }
        this.credited += BigInt(amount);
        break;
      }
      // Progress and refusals move no credits.
    }
    return differences;
  }
}
