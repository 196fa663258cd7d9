import { auditLedger } from '../../src/audit/ledger-audit';
import { AppendOutcomeUnknownError, EventStore } from '../../src/eventstore/event-store';
import { LedgerService, ReservationNotRecordedError } from '../../src/ledger/ledger.service';
import { Projector } from '../../src/projections/projector';
import { availableOf } from '../../src/projections/read-models';
import { eventually } from '../support/processes';
import { testRedisUrl } from '../support/redis';
import { fundedOrganization, openTestRuntime, TestRuntime } from '../support/runtime';
import { uncachedUsage } from '../../src/ledger/money';
import { pricesOf } from '../support/ledger';

const facts = (i: number) => ({ requestId: `q${i}`, keyId: 'k', surface: 'chat-completions', model: 'test/model' });
const settlement = {
  usage: uncachedUsage(1000, 250),
  prices: pricesOf(150_000_000, 600_000_000),
  host: 'simulated',
  hostModel: 'sim-1',
  status: 'ok',
  latencyMs: 12,
};

for (const redis of [false, true]) {
  const enabled = !redis || Boolean(testRedisUrl());
  (enabled ? describe : describe.skip)(`ledger service (${redis ? 'Redis' : 'in-process'} read models)`, () => {
    let t: TestRuntime;
    beforeEach(async () => {
      t = await openTestRuntime({ redis });
    });
    afterEach(async () => t.cleanup());

    it('admits exactly 20 of 200 concurrent reservations when the credit covers 20', async () => {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 20 * 1_000_000);
      let lowest = Infinity;
      const results = await Promise.all(
        Array.from({ length: 200 }, async (_, i) => {
          const admission = await runtime.ledger.admit({ ...facts(i), orgId, amount: 1_000_000 });
          lowest = Math.min(lowest, availableOf(await runtime.projections.balance(orgId)));
          return admission;
        }),
      );
      expect(results.filter((r) => r.admitted)).toHaveLength(20);
      expect(results.filter((r) => !r.admitted)).toHaveLength(180);
      expect(lowest).toBeGreaterThanOrEqual(0);
      await runtime.projector.catchUp();
      expect(await runtime.projections.balance(orgId)).toEqual({
        granted: 20_000_000,
        spent: 0,
        reserved: 20_000_000,
        pending: 0,
      });
      const refused = results.find((r) => !r.admitted);
      expect(refused).toEqual({ admitted: false, available: 0 });
      const report = await auditLedger(runtime.events, runtime.projections);
      expect(report.differences).toEqual([]);
      expect(report.reservations).toBe(20);
    });

    it('appends a reservation to the log without waiting for the disk, and its settlement waiting for it', async () => {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 10_000_000_000);
      const append = jest.spyOn(runtime.events, 'append');
      const admission = await runtime.ledger.admit({ ...facts(1), orgId, amount: 2_000_000 });
      if (!admission.admitted) throw new Error('expected admission');
      await runtime.ledger.recordSettlement(admission.ticket, settlement);
      expect(append.mock.calls.map(([, events, , durability]) => [events[0].type, durability ?? 'disk'])).toEqual([
        ['CreditsReserved', 'log'],
        ['ReservationSettled', 'disk'],
      ]);
      append.mockRestore();
    });

    it('settles at the charge computed from usage and returns the rest of the hold', async () => {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 10_000_000_000);
      const admission = await runtime.ledger.admit({ ...facts(1), orgId, amount: 2_000_000 });
      if (!admission.admitted) throw new Error('expected admission');
      const { event: settled } = await runtime.ledger.recordSettlement(admission.ticket, settlement);
      // 1000 × $0.15/M + 250 × $0.60/M = 0.00015 + 0.00015 = 0.0003 credits
      expect(settled).toMatchObject({ type: 'ReservationSettled', data: { amount: 300_000, held: 2_000_000 } });
      await runtime.projector.catchUp();
      expect(await runtime.projections.balance(orgId)).toEqual({
        granted: 10_000_000_000,
        spent: 300_000,
        reserved: 0,
        pending: 0,
      });
      expect(await runtime.projections.recentRequests(orgId, 5)).toEqual([
        expect.objectContaining({
          requestId: 'q1',
          cost: 300_000,
          inputTokens: 1000,
          outputTokens: 250,
          host: 'simulated',
          status: 'ok',
        }),
      ]);
      await expect(runtime.ledger.recordSettlement(admission.ticket, settlement)).rejects.toMatchObject({
        code: 'already_resolved',
      });
      expect((await auditLedger(runtime.events, runtime.projections)).differences).toEqual([]);
    });

    it('gives reservations time-ordered ids, so each new reservation stream sorts after the last', async () => {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 1_000_000_000);
      const ids: string[] = [];
      for (let i = 0; i < 50; i++) {
        const admission = await runtime.ledger.admit({ ...facts(i), orgId, amount: 1_000 });
        if (!admission.admitted) throw new Error('expected admission');
        ids.push(admission.ticket.reservationId);
      }
      for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect([...ids].sort()).toEqual(ids);
      expect(new Set(ids).size).toBe(50);
    });

    it('releases a failed request in full', async () => {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 5_000_000);
      const admission = await runtime.ledger.admit({ ...facts(2), orgId, amount: 5_000_000 });
      if (!admission.admitted) throw new Error('expected admission');
      await runtime.ledger.release(admission.ticket, {
        reason: 'provider failed before output',
        host: 'h',
        status: 'provider_error',
        latencyMs: 3,
      });
      await runtime.projector.catchUp();
      expect(availableOf(await runtime.projections.balance(orgId))).toBe(5_000_000);
      expect((await runtime.projections.recentRequests(orgId, 1))[0]).toMatchObject({ status: 'provider_error', cost: 0 });
    });

    it('undoes a hold whose reservation event cannot be appended', async () => {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 5_000_000);
      // A ledger whose reservation ids repeat: the second reservation's stream already exists.
      const { reservationTtlMs, pendingHoldMs } = runtime.config;
      const ledger = new LedgerService(
        runtime.events,
        runtime.projections,
        { reservationTtlMs, pendingHoldMs },
        Date.now,
        () => 'same-id',
      );
      const first = await ledger.admit({ ...facts(3), orgId, amount: 1_000_000 });
      expect(first.admitted).toBe(true);
      await expect(ledger.admit({ ...facts(4), orgId, amount: 1_000_000 })).rejects.toThrow(ReservationNotRecordedError);
      await runtime.projector.catchUp();
      expect(await runtime.projections.balance(orgId)).toMatchObject({ reserved: 1_000_000, pending: 0 });
    });

    it('keeps the hold of a reservation whose append has an unknown outcome until its event lands or the hold is swept', async () => {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 5_000_000);
      await runtime.projector.catchUp();
      const { reservationTtlMs, pendingHoldMs } = runtime.config;
      // A log whose appends of reservations end with an unknown outcome: written (the reply was lost) or not.
      const flaky = (written: boolean): EventStore => ({
        readAll: (after, limit) => runtime.events.readAll(after, limit),
        headPosition: () => runtime.events.headPosition(),
        subscribe: (after, signal) => runtime.events.subscribe(after, signal),
        appendFailure: () => runtime.events.appendFailure(),
        logId: () => runtime.events.logId(),
        readLogId: () => runtime.events.readLogId(),
        close: () => runtime.events.close(),
        append: async (streamId, events, expected) => {
          if (written) await runtime.events.append(streamId, events, expected);
          throw new AppendOutcomeUnknownError(streamId, new Error('connection lost'));
        },
        readStream: (id) => runtime.events.readStream(id),
      });
      const unwritten = new LedgerService(flaky(false), runtime.projections, { reservationTtlMs, pendingHoldMs });
      await expect(unwritten.admit({ ...facts(5), orgId, amount: 1_000_000 })).rejects.toThrow(ReservationNotRecordedError);
      // The event might still show up: the hold stays until then, or until it is swept.
      expect(availableOf(await runtime.projections.balance(orgId))).toBe(4_000_000);
      expect(await runtime.projections.sweepPendingHolds(Date.now() + pendingHoldMs + 1)).toBe(1);
      expect(availableOf(await runtime.projections.balance(orgId))).toBe(5_000_000);

      const written = new LedgerService(flaky(true), runtime.projections, { reservationTtlMs, pendingHoldMs });
      await expect(written.admit({ ...facts(6), orgId, amount: 1_000_000 })).rejects.toThrow(ReservationNotRecordedError);
      await runtime.projector.catchUp();
      expect(await runtime.projections.balance(orgId)).toMatchObject({ reserved: 1_000_000, pending: 0 });
      expect((await auditLedger(runtime.events, runtime.projections)).differences).toEqual([]);
    });

    it('sweeps no hold whose reservation is in the log but not yet applied: its credit is never admitted twice', async () => {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 1_000_000);
      // The read models lag: nothing appended from now on is applied until a projector follows the log again.
      await runtime.projector.stop();
      expect((await runtime.ledger.admit({ ...facts(7), orgId, amount: 1_000_000 })).admitted).toBe(true);
      // Past the hold's deadline, its event in the log and not applied: the sweep waits for the read models.
      const pastDeadline = Date.now() + runtime.config.pendingHoldMs + 1;
      const swept = await runtime.projector.sweepPendingHolds(pastDeadline, 50).catch((error: Error) => error);
      expect(availableOf(await runtime.projections.balance(orgId))).toBe(0);
      expect((await runtime.ledger.admit({ ...facts(8), orgId, amount: 1_000_000 })).admitted).toBe(false);
      expect(String(swept)).toMatch(/did not reach position/);

      // Followed again, the event turns the hold into its reservation; the sweep finds nothing to undo.
      const following = new Projector(runtime.events, runtime.projections, runtime.config.requestLogRetention);
      await following.start();
      try {
        expect(await following.sweepPendingHolds(pastDeadline, 5_000)).toBe(0);
        expect(await runtime.projections.balance(orgId)).toMatchObject({ reserved: 1_000_000, pending: 0 });
        expect((await auditLedger(runtime.events, runtime.projections)).differences).toEqual([]);
      } finally {
        await following.stop();
      }
    });

    it("a running instance's sweeper leaves such a hold alone however short PENDING_HOLD_MS is", async () => {
      // When each sweep left off (the projector stopped, it fails): the sweeper reads its failure
      // clock once per failed sweep (its lines are one a minute at most).
      const leftOff: number[] = [];
      const waiting: Array<() => void> = [];
      const sweepFailureClock = () => {
        leftOff.push(Date.now());
        waiting.splice(0).forEach((wake) => wake());
        return Date.now();
      };
      const short = await openTestRuntime({
        redis,
        sweep: true,
        sweepFailureClock,
        env: { PENDING_HOLD_MS: '100', SWEEP_INTERVAL_MS: '10' },
      });
      try {
        const { runtime } = short;
        const orgId = await fundedOrganization(runtime, 1_000_000);
        await runtime.projector.stop();
        expect((await runtime.ledger.admit({ ...facts(9), orgId, amount: 1_000_000 })).admitted).toBe(true);
        // Two sweeps left off after the hold's deadline: the second began after it (one sweep at a time).
        const deadline = Date.now() + runtime.config.pendingHoldMs;
        while (leftOff.filter((at) => at > deadline).length < 2) await new Promise<void>((wake) => waiting.push(wake));
        expect(availableOf(await runtime.projections.balance(orgId))).toBe(0);
        expect((await runtime.ledger.admit({ ...facts(10), orgId, amount: 1_000_000 })).admitted).toBe(false);
      } finally {
        await short.cleanup();
      }
    });

    it('refuses grants to unknown organizations and nonsense amounts', async () => {
      const { runtime } = t;
      await expect(runtime.ledger.grant('00000000-0000-0000-0000-000000000000', 5, 'x')).rejects.toMatchObject({
        code: 'organization_not_found',
      });
      const orgId = await fundedOrganization(runtime, 0);
      await expect(runtime.ledger.grant(orgId, 0, 'x')).rejects.toMatchObject({ code: 'invalid_amount' });
      await expect(runtime.ledger.grant(orgId, -5, 'x')).rejects.toMatchObject({ code: 'invalid_amount' });
      expect(await runtime.events.readStream(`credits-${orgId}`)).toEqual([]);
    });

    it('grants once per grant id: a retry, even a concurrent one, answers the grant made', async () => {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 0);
      const first = await runtime.ledger.grant(orgId, 7_000, 'invoice 12', 'inv-12');
      expect(first).toMatchObject({ grant: { grantId: 'inv-12', amount: 7_000, reason: 'invoice 12' }, alreadyGranted: false });
      expect(await runtime.ledger.grant(orgId, 7_000, 'invoice 12, again', 'inv-12')).toEqual({ ...first, alreadyGranted: true });
      await expect(runtime.ledger.grant(orgId, 8_000, 'x', 'inv-12')).rejects.toMatchObject({ code: 'grant_conflict' });

      const racing = await Promise.all([1, 2, 3].map(() => runtime.ledger.grant(orgId, 5_000, 'raced', 'inv-13')));
      expect(racing.filter((r) => !r.alreadyGranted)).toHaveLength(1);
      expect(new Set(racing.map((r) => r.grant.grantedAt)).size).toBe(1);
      expect((await runtime.events.readStream(`credits-${orgId}`)).map((e) => e.data)).toEqual([
        expect.objectContaining({ grantId: 'inv-12', amount: 7_000 }),
        expect.objectContaining({ grantId: 'inv-13', amount: 5_000 }),
      ]);
      await runtime.projector.catchUp();
      expect((await runtime.projections.balance(orgId)).granted).toBe(12_000);
    });

    it('refused for the balance, asks once more once caught up: credit that arrived meanwhile is held once, never twice', async () => {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 0);
      const { reservationTtlMs, pendingHoldMs } = runtime.config;
      // The catch-up brings in credit another process granted (here: granted by it, once, then applied).
      const caughtUp = jest.fn(async () => {
        await runtime.ledger.grant(orgId, 1_500_000, 'granted elsewhere', 'elsewhere-1');
        await runtime.projector.catchUp();
      });
      const ledger = new LedgerService(runtime.events, runtime.projections, { reservationTtlMs, pendingHoldMs, caughtUp });
      const holds = jest.spyOn(runtime.projections, 'hold');

      const results = await Promise.all([11, 12, 13].map((i) => ledger.admit({ ...facts(i), orgId, amount: 1_000_000 })));
      expect(results.filter((r) => r.admitted)).toHaveLength(1);
      expect(results.filter((r) => !r.admitted)).toEqual([
        { admitted: false, available: 500_000 },
        { admitted: false, available: 500_000 },
      ]);
      // Each refused once, caught up once, asked again once: no more.
      expect(caughtUp).toHaveBeenCalledTimes(3);
      expect(holds).toHaveBeenCalledTimes(6);

      // Still short once caught up: refused, after one catch-up only.
      caughtUp.mockClear();
      holds.mockClear();
      expect(await ledger.admit({ ...facts(14), orgId, amount: 1_000_000 })).toEqual({ admitted: false, available: 500_000 });
      expect(caughtUp).toHaveBeenCalledTimes(1);
      expect(holds).toHaveBeenCalledTimes(2);

      // A key's limit is no balance another process raises: refused at once.
      caughtUp.mockClear();
      const limited = await ledger.admit({
        ...facts(15),
        keyId: 'limited',
        orgId,
        amount: 400_000,
        keyLimit: { amount: 300_000, reset: 'never' },
      });
      expect(limited).toMatchObject({ admitted: false, keyRemaining: 300_000 });
      expect(caughtUp).not.toHaveBeenCalled();

      await runtime.projector.catchUp();
      expect(await runtime.projections.balance(orgId)).toEqual({ granted: 1_500_000, spent: 0, reserved: 1_000_000, pending: 0 });
      expect((await auditLedger(runtime.events, runtime.projections)).differences).toEqual([]);
      holds.mockRestore();
    });
  });
}

describe('reservation expiry', () => {
  it('expires unsettled reservations exactly once, whichever instance notices first', async () => {
    const t = await openTestRuntime({ env: { REQUEST_TIMEOUT_MS: '1000', RESERVATION_TTL_MS: '1100', SWEEP_INTERVAL_MS: '20' } });
    try {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 3_000_000);
      const admissions = await Promise.all([0, 1, 2].map((i) => runtime.ledger.admit({ ...facts(i), orgId, amount: 1_000_000 })));
      const tickets = admissions.map((a) => (a.admitted ? a.ticket : null));
      await runtime.projector.catchUp();
      // Nothing is due yet.
      expect(await runtime.ledger.expireDue()).toBe(0);
      // Two "instances" racing to expire the same reservation: one wins.
      await eventually(async () => (await runtime.projections.expiredReservations(Date.now(), 10)).length === 3, 15_000);
      const race = await Promise.all([
        runtime.ledger.expire(tickets[0]!.reservationId),
        runtime.ledger.expire(tickets[0]!.reservationId),
      ]);
      expect(race.filter(Boolean)).toHaveLength(1);
      // A late settlement of an expired reservation is refused rather than billed twice.
      await expect(runtime.ledger.recordSettlement(tickets[0]!, settlement)).rejects.toMatchObject({ code: 'already_resolved' });
      await runtime.ledger.expireDue();
      await runtime.projector.catchUp();
      expect(await runtime.projections.balance(orgId)).toEqual({ granted: 3_000_000, spent: 0, reserved: 0, pending: 0 });
      const report = await auditLedger(runtime.events, runtime.projections);
      expect(report).toMatchObject({ expiries: 3, differences: [] });
    } finally {
      await t.cleanup();
    }
  });
});
