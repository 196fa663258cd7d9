import {
  chargedGeneration,
  CreditAccount,
  CreditAccountEvent,
  decideCreditNote,
  decideReservation,
  evolveCreditAccount,
  initialCreditAccount,
  initialReservation,
  evolveReservation,
  IssueCreditNote,
  LedgerRuleError,
} from '../../src/ledger/ledger.decider';
import type { ReservationEvent } from '../../src/ledger/ledger.events';
import { MAX_NANO, uncachedUsage } from '../../src/ledger/money';

const generation = { orgId: 'org-1', keyId: 'key-1', charged: 1_000 };
const refund: IssueCreditNote = {
  type: 'IssueCreditNote',
  orgId: 'org-1',
  creditNoteId: 'cn-1',
  idempotencyKey: 'ticket-1',
  kind: 'refund',
  reservationId: 'r-1',
  amount: 400,
  reason: 'dispute',
  issuedBy: 'cli',
  generation,
  available: 0,
  now: 5_000,
};
const adjustment: IssueCreditNote = {
  ...refund,
  creditNoteId: 'cn-a',
  idempotencyKey: 'adj-1',
  kind: 'adjustment',
  reservationId: null,
  amount: -300,
  reason: 'correction',
  generation: null,
  available: 300,
};

/** given credit-account events, when a credit note is asked, then events (or an error code). */
function given(...history: CreditAccountEvent[]) {
  const state = history.reduce<CreditAccount>(evolveCreditAccount, initialCreditAccount());
  return {
    state,
    when: (command: IssueCreditNote) => {
      try {
        return { events: decideCreditNote(command, state), error: null };
      } catch (error) {
        if (!(error instanceof LedgerRuleError)) throw error;
        return { events: [], error: error.code, message: error.message };
      }
    },
  };
}

describe('credit notes (credit account decider)', () => {
  it("refunds part of a generation, naming its key, in the contract's shape", () => {
    expect(given().when(refund).events).toEqual([
      {
        type: 'CreditNoteIssued',
        data: {
          orgId: 'org-1',
          creditNoteId: 'cn-1',
          idempotencyKey: 'ticket-1',
          kind: 'refund',
          reservationId: 'r-1',
          keyId: 'key-1',
          amount: 400,
          reason: 'dispute',
          issuedBy: 'cli',
          issuedAt: 5_000,
        },
      },
    ]);
  });

  it('refunds a whole generation, and no more than it was charged less its earlier refunds', () => {
    expect(given().when({ ...refund, amount: 1_000 }).events).toHaveLength(1);
    expect(given().when({ ...refund, amount: 1_001 }).error).toBe('refund_exceeds_charge');
    const [first] = given().when(refund).events;
    const second = given(first).when({ ...refund, idempotencyKey: 'ticket-2', creditNoteId: 'cn-2', amount: 600 });
    expect(second.events).toHaveLength(1);
    const third = given(first, ...second.events).when({ ...refund, idempotencyKey: 'ticket-3', amount: 1 });
    expect(third.error).toBe('refund_exceeds_charge');
    expect(third.message).toMatch(/charged 0\.000001 credits, 0\.000001 already refunded: nothing is left to refund$/);
    expect(given(first).when({ ...refund, idempotencyKey: 'ticket-5', amount: 1_000 }).message).toMatch(
      /charged 0\.000001 credits, 0\.0000004 already refunded: at most 0\.0000006 credits can still be refunded$/,
    );
    // Another generation's refunds do not count against this one.
    expect(given(first).when({ ...refund, idempotencyKey: 'ticket-4', reservationId: 'r-2', amount: 1_000 }).events).toHaveLength(
      1,
    );
  });

  it('refunds the whole rest of a generation when no amount is given, and nothing once all is refunded', () => {
    const [part] = given().when(refund).events;
    const [rest] = given(part).when({ ...refund, idempotencyKey: 'ticket-2', amount: null }).events;
    expect(rest.data.amount).toBe(600);
    // Asked again with its key: the note issued, not a conflict.
    expect(given(part, rest).when({ ...refund, idempotencyKey: 'ticket-2', amount: null })).toEqual({ events: [], error: null });
    expect(given(part, rest).when({ ...refund, idempotencyKey: 'ticket-3', amount: null }).error).toBe('refund_exceeds_charge');
    expect(given().when({ ...adjustment, amount: null }).error).toBe('invalid_amount');
  });

  it('answers the same idempotency key with the first note: nothing more is issued', () => {
    const [first] = given().when(refund).events;
    const again = given(first);
    expect(again.when({ ...refund, creditNoteId: 'cn-retry', now: 9_000 })).toEqual({ events: [], error: null });
    expect(again.state.creditNotes.get('ticket-1')).toEqual(first.data);
    expect(again.state.refunded.get('r-1')).toBe(400);
    // A retry is answered even once the generation has been refunded in full by it.
    const whole = given(...given().when({ ...refund, amount: 1_000 }).events);
    expect(whole.when({ ...refund, amount: 1_000 })).toEqual({ events: [], error: null });
  });

  it('refuses the same idempotency key for another note', () => {
    const [first] = given().when(refund).events;
    expect(given(first).when({ ...refund, amount: 401 }).error).toBe('credit_note_conflict');
    expect(given(first).when({ ...refund, reason: 'goodwill' }).error).toBe('credit_note_conflict');
    expect(given(first).when({ ...adjustment, idempotencyKey: 'ticket-1' }).error).toBe('credit_note_conflict');
  });

  it('refuses a reason outside the codes, and a malformed idempotency key or memo', () => {
    expect(given().when({ ...refund, reason: 'because' }).error).toBe('invalid_credit_note');
    expect(given().when({ ...refund, reason: '' }).error).toBe('invalid_credit_note');
    expect(given().when({ ...refund, idempotencyKey: '' }).error).toBe('invalid_credit_note');
    expect(given().when({ ...refund, idempotencyKey: 'has space' }).error).toBe('invalid_credit_note');
    expect(given().when({ ...refund, idempotencyKey: 'k'.repeat(129) }).error).toBe('invalid_credit_note');
    expect(given().when({ ...refund, memo: 'm'.repeat(501) }).error).toBe('invalid_credit_note');
    for (const reason of ['dispute', 'provider_outage', 'goodwill', 'correction', 'other'])
      expect(given().when({ ...refund, reason }).error).toBeNull();
  });

  it('refuses zero, negative and fractional refunds, and a zero or fractional adjustment', () => {
    for (const amount of [0, -1, 0.5, Number.NaN, MAX_NANO + 1])
      expect(given().when({ ...refund, amount }).error).toBe('invalid_amount');
    for (const amount of [0, 1.5, -0.5, Number.POSITIVE_INFINITY])
      expect(given().when({ ...adjustment, amount }).error).toBe('invalid_amount');
  });

  it("refuses a refund of an unknown generation, and of another organization's as unknown", () => {
    expect(given().when({ ...refund, generation: null }).error).toBe('generation_not_found');
    const other = given().when({ ...refund, generation: { ...generation, orgId: 'org-2' } });
    expect(other.error).toBe('generation_not_found');
    expect(other.message).toBe('no generation r-1 in this organization');
  });

  it('refuses a refund of a generation that was never charged (released, or still open)', () => {
    expect(given().when({ ...refund, generation: { ...generation, charged: 0 } }).error).toBe('refund_exceeds_charge');
  });

  it('a refund names its generation, an adjustment none', () => {
    expect(given().when({ ...refund, reservationId: null }).error).toBe('invalid_credit_note');
    expect(given().when({ ...adjustment, reservationId: 'r-1' }).error).toBe('invalid_credit_note');
  });

  it('adjusts the balance either way, a debit never below what is available', () => {
    const [debit] = given().when(adjustment).events;
    expect(debit.data).toMatchObject({ kind: 'adjustment', reservationId: null, keyId: null, amount: -300 });
    expect(given().when({ ...adjustment, amount: -301 }).error).toBe('insufficient_balance');
    expect(given().when({ ...adjustment, amount: 5_000, available: -10 }).events[0].data.amount).toBe(5_000);
    const after = given(debit);
    expect(after.state.granted).toBe(-300);
    expect(after.state.refunded.size).toBe(0);
  });

  it('refuses a credit that would take the account past what the ledger holds', () => {
    const [big] = given().when({ ...adjustment, amount: MAX_NANO }).events;
    expect(given(big).when({ ...adjustment, idempotencyKey: 'adj-2', amount: 1 }).error).toBe('balance_overflow');
  });

  it('keeps a memo when given', () => {
    expect(given().when({ ...refund, memo: 'ticket #42' }).events[0].data.memo).toBe('ticket #42');
    expect(given().when({ ...refund, memo: '' }).events[0].data).not.toHaveProperty('memo');
  });
});

describe("a generation's charge, from its reservation stream", () => {
  const facts = { requestId: 'q', keyId: 'key-9', surface: 'chat-completions', model: 'm' };
  const stream = (...commands: Parameters<typeof decideReservation>[0][]) => {
    let state = initialReservation();
    const events: ReservationEvent[] = [];
    for (const command of commands) {
      for (const event of decideReservation(command, state)) {
        events.push(event);
        state = evolveReservation(state, event);
      }
    }
    return events;
  };
  const reserve = { type: 'Reserve' as const, reservationId: 'r', orgId: 'o', amount: 10_000, now: 1, ttlMs: 1_000, ...facts };
  const prices = { input: 1_000_000, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0, output: 2_000_000 };

  it('is its settlement’s amount, with its organization and key', () => {
    const events = stream(reserve, {
      type: 'Settle',
      usage: uncachedUsage(10, 5),
      prices,
      host: 'h',
      hostModel: 'hm',
      status: 'ok',
      latencyMs: 1,
      now: 2,
    });
    expect(chargedGeneration(events)).toEqual({ orgId: 'o', keyId: 'key-9', charged: 20 });
  });

  it('is 0 for a reservation released or still open, and none for no reservation', () => {
    expect(chargedGeneration(stream(reserve))).toEqual({ orgId: 'o', keyId: 'key-9', charged: 0 });
    const released = stream(reserve, {
      type: 'Release',
      reason: 'x',
      host: null,
      status: 'provider_error',
      latencyMs: 1,
      now: 2,
    });
    expect(chargedGeneration(released)?.charged).toBe(0);
    expect(chargedGeneration([])).toBeNull();
  });
});

describe('charge provenance on a settlement', () => {
  const facts = { requestId: 'q', keyId: 'k', surface: 'chat-completions', model: 'm' };
  const reserved = decideReservation(
    { type: 'Reserve', reservationId: 'r', orgId: 'o', amount: 10_000, now: 1, ttlMs: 1_000, ...facts },
    initialReservation(),
  );
  const open = reserved.reduce(evolveReservation, initialReservation());
  const prices = { input: 1_000_000, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0, output: 2_000_000 };
  const settle = (estimated?: string[]) =>
    decideReservation(
      {
        type: 'Settle',
        usage: uncachedUsage(10, 5),
        prices,
        host: 'h',
        hostModel: 'hm',
        status: 'ok',
        latencyMs: 1,
        now: 2,
        ...(estimated === undefined ? {} : { estimated: estimated as never }),
      },
      open,
    )[0].data as { estimated?: string[] };

  it("names the classes that are the gateway's estimate, each once in one order; absent when all are the host's", () => {
    expect(settle(['output', 'input', 'output']).estimated).toEqual(['input', 'output']);
    expect(settle([])).not.toHaveProperty('estimated');
    expect(settle()).not.toHaveProperty('estimated');
    expect(() => settle(['reasoning'])).toThrow(LedgerRuleError);
  });

  it("is carried from a stream's last progress to the settlement its expiry bills", () => {
    const [progress] = decideReservation(
      {
        type: 'RecordProgress',
        usage: uncachedUsage(10, 5),
        prices,
        host: 'h',
        hostModel: 'hm',
        estimated: ['output'],
        deliveredChars: 20,
        now: 2,
      },
      open,
    );
    const [settled] = decideReservation({ type: 'Expire', now: 5_000 }, evolveReservation(open, progress));
    expect(settled.data).toMatchObject({ interrupted: expect.anything(), estimated: ['output'] });
  });
});
