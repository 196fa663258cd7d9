import { auditLedger } from '../../src/audit/ledger-audit';
import { creditsStream } from '../../src/ledger/ledger.events';
import { LedgerRuleError } from '../../src/ledger/ledger.decider';
import { uncachedUsage } from '../../src/ledger/money';
import { availableOf } from '../../src/projections/read-models';
import { pricesOf } from '../support/ledger';
import { createKey } from '../support/keys';
import { testRedisUrl } from '../support/redis';
import { fundedOrganization, openTestRuntime, TestRuntime } from '../support/runtime';

const facts = (keyId: string) => ({ requestId: `q-${keyId}`, keyId, surface: 'chat-completions', model: 'test/model' });

for (const redis of [false, true]) {
  const enabled = !redis || Boolean(testRedisUrl());
  (enabled ? describe : describe.skip)(`credit notes (${redis ? 'Redis' : 'in-process'} read models)`, () => {
    let t: TestRuntime;
    beforeEach(async () => {
      t = await openTestRuntime({ redis });
    });
    afterEach(async () => t.cleanup());

    /** A generation charged 1000 × 1 + 500 × 2 = 2,000 nano-credits to `keyId`: its reservation id. */
    async function chargedGeneration(orgId: string, keyId: string): Promise<string> {
      const admission = await t.runtime.ledger.admit({ ...facts(keyId), orgId, amount: 10_000 });
      if (!admission.admitted) throw new Error('not admitted');
      await t.runtime.ledger.recordSettlement(admission.ticket, {
        usage: uncachedUsage(1000, 500),
        prices: pricesOf(1_000_000, 2_000_000),
        host: 'simulated',
        hostModel: 'sim-1',
        status: 'ok',
        latencyMs: 3,
      });
      return admission.ticket.reservationId;
    }

    it("returns a refund to the balance and takes it off the key's spend; the audit replays it clean", async () => {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 1_000_000);
      const { keyId } = await createKey(runtime, orgId, 'k');
      const generation = await chargedGeneration(orgId, keyId);
      await runtime.projector.catchUp();
      expect(await runtime.projections.balance(orgId)).toMatchObject({ granted: 1_000_000, spent: 2_000 });

      const ask = { orgId, kind: 'refund' as const, reservationId: generation, reason: 'dispute', issuedBy: 'cli' };
      const first = await runtime.ledger.issueCreditNote({ ...ask, idempotencyKey: 'ticket-1', amount: 1_500 });
      expect(first).toMatchObject({
        alreadyIssued: false,
        note: { kind: 'refund', keyId, amount: 1_500, reservationId: generation },
      });
      const again = await runtime.ledger.issueCreditNote({ ...ask, idempotencyKey: 'ticket-1', amount: 1_500 });
      expect(again).toMatchObject({ alreadyIssued: true, note: first.note });
      await expect(runtime.ledger.issueCreditNote({ ...ask, idempotencyKey: 'ticket-2', amount: 501 })).rejects.toMatchObject({
        code: 'refund_exceeds_charge',
      });
      await runtime.ledger.issueCreditNote({ ...ask, idempotencyKey: 'ticket-3', amount: 500 });
      await runtime.ledger.issueCreditNote({
        orgId,
        kind: 'adjustment',
        reservationId: null,
        reason: 'goodwill',
        issuedBy: 'cli',
        idempotencyKey: 'adj-1',
        amount: 7,
      });
      await runtime.projector.catchUp();

      const balance = await runtime.projections.balance(orgId);
      expect(balance).toMatchObject({ granted: 1_000_007, spent: 0, reserved: 0 });
      expect(availableOf(balance)).toBe(1_000_007);
      expect((await runtime.projections.key(orgId, keyId))?.spent).toBe(0);
      expect(await runtime.projections.keyUsage(orgId, keyId, 'all')).toBe(0);
      expect(await runtime.projections.refunded(orgId, [generation, 'other'])).toEqual(new Map([[generation, 2_000]]));

      const report = await auditLedger(runtime.events, runtime.projections);
      expect(report.differences).toEqual([]);
      expect(report.creditNotes).toBe(3);
    });

    it("refuses a debit above what is available, and another organization's generation as unknown", async () => {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 1_000);
      const other = await fundedOrganization(runtime, 1_000_000);
      const { keyId } = await createKey(runtime, other, 'k');
      const theirs = await chargedGeneration(other, keyId);
      await runtime.projector.catchUp();
      const base = { orgId, issuedBy: 'cli', reason: 'correction' };
      await expect(
        runtime.ledger.issueCreditNote({ ...base, kind: 'adjustment', reservationId: null, idempotencyKey: 'a', amount: -1_001 }),
      ).rejects.toMatchObject({ code: 'insufficient_balance' });
      const refusal = runtime.ledger.issueCreditNote({
        ...base,
        kind: 'refund',
        reservationId: theirs,
        idempotencyKey: 'b',
        amount: 1,
      });
      await expect(refusal).rejects.toBeInstanceOf(LedgerRuleError);
      await expect(refusal).rejects.toMatchObject({ code: 'generation_not_found' });
      await expect(
        runtime.ledger.issueCreditNote({ ...base, kind: 'refund', reservationId: 'no-such', idempotencyKey: 'c', amount: 1 }),
      ).rejects.toMatchObject({ code: 'generation_not_found' });
    });

    it('the audit catches a refund above its charge written straight into the log', async () => {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 1_000_000);
      const { keyId } = await createKey(runtime, orgId, 'k');
      const generation = await chargedGeneration(orgId, keyId);
      const note = (idempotencyKey: string, amount: number) => ({
        type: 'CreditNoteIssued',
        data: {
          orgId,
          creditNoteId: idempotencyKey,
          idempotencyKey,
          kind: 'refund',
          reservationId: generation,
          keyId,
          amount,
          reason: 'dispute',
          issuedBy: 'forger',
          issuedAt: Date.now(),
        },
      });
      // 1,500 then 600: 2,100 refunded of a 2,000 charge, past the decider.
      await runtime.events.append(creditsStream(orgId), [note('x-1', 1_500), note('x-2', 600)], 0);
      await runtime.projector.catchUp();
      const report = await auditLedger(runtime.events, runtime.projections);
      expect(report.differences).toEqual([
        expect.stringMatching(new RegExp(`generation ${generation} refunded 2100 in all, above its charge 2000`)),
      ]);
    });
  });
}
