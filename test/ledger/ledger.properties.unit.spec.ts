import fc from 'fast-check';
import type { RecordedEvent } from '../../src/eventstore/event-store';
import { LogAuditor } from '../../src/audit/ledger-audit';
import {
  decideGrant,
  initialCreditAccount,
  decideReservation,
  evolveReservation,
  initialReservation,
  LedgerRuleError,
  Reservation,
} from '../../src/ledger/ledger.decider';
import type { LedgerEvent } from '../../src/ledger/ledger.events';
import { MemoryProjectionStore } from '../../src/projections/memory-projection-store';
import { ReadModel } from '../../src/projections/read-model';
import { availableOf } from '../../src/projections/read-models';
import { pricesOf } from '../support/ledger';

/**
 * Random sequences of ledger commands for a few organizations, run through the pure deciders
 * and the in-process read models, checking the design brief's invariants after every step.
 */
type Op =
  | { kind: 'grant'; org: number; amount: number }
  | { kind: 'reserve'; org: number; amount: number }
  | { kind: 'settle'; pick: number; input: number; cacheRead: number; cacheWrite: number; output: number }
  | { kind: 'release'; pick: number }
  | { kind: 'tick'; ms: number }
  | { kind: 'expire'; pick: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('grant' as const), org: fc.nat(2), amount: fc.integer({ min: 1, max: 5_000_000 }) }),
  fc.record({ kind: fc.constant('reserve' as const), org: fc.nat(2), amount: fc.integer({ min: 0, max: 2_000_000 }) }),
  fc.record({
    kind: fc.constant('settle' as const),
    pick: fc.nat(),
    input: fc.integer({ min: 0, max: 4000 }),
    cacheRead: fc.integer({ min: 0, max: 40_000 }),
    cacheWrite: fc.integer({ min: 0, max: 4000 }),
    output: fc.integer({ min: 0, max: 4000 }),
  }),
  fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 40_000 }) }),
  fc.record({ kind: fc.constant('expire' as const), pick: fc.nat() }),
);

const prices = pricesOf(150_000_000, 600_000_000, { cacheRead: 15_000_000, cacheWrite: 187_500_000, cacheWrite1h: 300_000_000 });
const TTL = 60_000;

async function run(ops: Op[]): Promise<void> {
  const log: RecordedEvent[] = [];
  const store = new MemoryProjectionStore(100);
  const reservations = new Map<string, { state: Reservation; revision: number }>();
  let now = 0;
  let overrun = new Map<string, number>();

  async function append(streamId: string, events: LedgerEvent[]): Promise<void> {
    const recorded = events.map((e) => ({ ...e, streamId, revision: 0, position: log.length + 1, recordedAt: now }));
    log.push(...recorded);
    await store.apply(recorded);
  }

  for (const [i, o] of ops.entries()) {
    const orgId = `org-${'org' in o ? o.org : 0}`;
    const ids = [...reservations.keys()];
    const chosen = 'pick' in o && ids.length > 0 ? ids[o.pick % ids.length] : null;
    try {
      switch (o.kind) {
        case 'grant':
          await append(
            `credits-${orgId}`,
            decideGrant(
              { type: 'GrantCredits', orgId, grantId: `g${i}`, amount: o.amount, reason: 't', now },
              initialCreditAccount(),
            ),
          );
          break;
        case 'reserve': {
          const id = `r${i}`;
          const admission = await store.hold(orgId, id, o.amount, now + 1000, { keyId: 'k' });
          const before = availableOf(await store.balance(orgId));
          if (!admission.admitted) {
            expect(admission.available).toBeLessThan(o.amount);
            break;
          }
          const events = decideReservation(
            {
              type: 'Reserve',
              reservationId: id,
              orgId,
              amount: o.amount,
              now,
              ttlMs: TTL,
              requestId: id,
              keyId: 'k',
              surface: 's',
              model: 'm',
            },
            initialReservation(),
          );
          await append(`reservation-${id}`, events);
          expect(availableOf(await store.balance(orgId))).toBe(before);
          reservations.set(id, { state: evolveReservation(initialReservation(), events[0]), revision: 0 });
          break;
        }
        case 'settle':
        case 'release':
        case 'expire': {
          if (!chosen) break;
          const r = reservations.get(chosen)!;
          const events =
            o.kind === 'settle'
              ? decideReservation(
                  {
                    type: 'Settle',
                    usage: {
                      inputTokens: o.input,
                      cacheReadTokens: o.cacheRead,
                      cacheWriteTokens: o.cacheWrite,
                      cacheWrite1hTokens: o.cacheWrite >> 1,
                      outputTokens: o.output,
                    },
                    prices,
                    host: 'h',
                    hostModel: 'hm',
                    status: 'ok',
                    latencyMs: 1,
                    now,
                  },
                  r.state,
                )
              : o.kind === 'release'
                ? decideReservation(
                    { type: 'Release', reason: 'failed', host: null, status: 'error', latencyMs: 1, now },
                    r.state,
                  )
                : decideReservation({ type: 'Expire', now }, r.state);
          await append(`reservation-${chosen}`, events);
          const event = events[0];
          if (event.type === 'ReservationSettled') {
            overrun.set(
              event.data.orgId,
              (overrun.get(event.data.orgId) ?? 0) + Math.max(0, event.data.amount - event.data.held),
            );
          }
          reservations.set(chosen, { state: evolveReservation(r.state, event), revision: r.revision + 1 });
          break;
        }
        case 'tick':
          now += o.ms;
          break;
      }
    } catch (error) {
      // Refusals are part of the game (double resolution, early expiry); anything else is a bug.
      expect(error).toBeInstanceOf(LedgerRuleError);
    }

    // Invariant: overdraw is bounded by what settlements exceeded their estimates.
    for (const org of ['org-0', 'org-1', 'org-2']) {
      const b = await store.balance(org);
      expect(availableOf(b)).toBeGreaterThanOrEqual(-(overrun.get(org) ?? 0));
    }
  }

  // Invariants at the end: replay equals projection, to the unit; the audit finds nothing.
  const replayed = new ReadModel(100);
  const auditor = new LogAuditor();
  for (const e of log) {
    replayed.apply(e);
    auditor.check(e);
  }
  expect(auditor.differences).toEqual([]);
  const projected = await store.ledgers();
  for (const [orgId, ledger] of replayed.orgs) {
    expect(projected.get(orgId)).toEqual(ledger);
  }
  // Every open reservation expires eventually, and then nothing stays held.
  for (const [id, r] of reservations) {
    if (r.state.status === 'open')
      await append(`reservation-${id}`, decideReservation({ type: 'Expire', now: now + TTL }, r.state));
  }
  for (const ledger of (await store.ledgers()).values()) expect(ledger.reserved).toBe(0);
  overrun = new Map();
}

describe('ledger invariants (property-based)', () => {
  it('hold for random command sequences', async () => {
    await fc.assert(fc.asyncProperty(fc.array(op, { maxLength: 120 }), run), { numRuns: 300 });
  });
});
