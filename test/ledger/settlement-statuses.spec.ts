import { join } from 'node:path';
import { auditLedger } from '../../src/audit/ledger-audit';
import type { ReservationSettled } from '../../src/ledger/ledger.events';
import { uncachedUsage } from '../../src/ledger/money';
import { rebuildProjections } from '../../src/projections/projector';
import type { SettlementStatus } from '../../src/inference/settlement';
import { pricesOf } from '../support/ledger';
import { operatorTool, operatorToolJson } from '../support/operator-tool';
import { fundedOrganization, openTestRuntime, TestRuntime } from '../support/runtime';
import { createKey } from '../support/keys';
import { tempDir } from '../support/temp';

/**
 * A settlement's status names how a request ended; it is never a figure. A stream cut at the end of
 * a shutdown's grace period was recorded `client_abort` until 2026-11-28 and `shutdown` since: a log
 * holding both (an old log written to by a new version) replays to the same balances and request
 * log, each event keeping the status it was written with; the audit finds it clean; its export
 * verifies with nothing but the file; and a charge is the same whichever status it carries.
 */

const PRICES = pricesOf(1_000_000_000, 2_000_000_000);
const USAGE = uncachedUsage(1_000, 50);

describe('settlement statuses: `client_abort` written before `shutdown` existed, and `shutdown`, in one log', () => {
  let t: TestRuntime;
  const dir = tempDir('statuses');
  afterAll(async () => {
    await t.cleanup();
    dir.cleanup();
  });

  it('replay to the same balances and request log, audit clean, and an export that verifies', async () => {
    t = await openTestRuntime();
    const { runtime } = t;
    const orgId = await fundedOrganization(runtime, 1_000_000_000);
    const { keyId } = await createKey(runtime, orgId, 'k');
    const admit = async (requestId: string) => {
      const admission = await runtime.ledger.admit({
        requestId,
        keyId,
        surface: 'chat-completions',
        model: 'test/gpt',
        orgId,
        amount: 10_000_000,
      });
      if (!admission.admitted) throw new Error('not admitted');
      return admission.ticket;
    };
    const settle = async (requestId: string, status: SettlementStatus) =>
      (
        await runtime.ledger.recordSettlement(await admit(requestId), {
          usage: USAGE,
          prices: PRICES,
          host: 'fake-openai',
          hostModel: 'fake-gpt',
          status,
          latencyMs: 1_000,
          attempts: [{ host: 'fake-openai', credential: null, status: 200, reason: status, durationMs: 1_000 }],
        })
      ).event as ReservationSettled;
    // As an older version recorded a stream cut at the grace period's end, then as this one does.
    const before = await settle('cut-before', 'client_abort');
    const since = await settle('cut-since', 'shutdown');
    // A request answered in one piece the shutdown ended before its host answered: its hold released.
    await runtime.ledger.release(await admit('whole-since'), {
      reason: 'shutdown',
      host: 'fake-openai',
      status: 'shutdown',
      latencyMs: 1_000,
    });
    expect(since.data.amount).toBe(before.data.amount);
    await runtime.projector.catchUp();

    const read = async () => ({
      balance: await runtime.projections.balance(orgId),
      key: (await runtime.projections.key(orgId, keyId))?.spent,
      requests: (await runtime.projections.recentRequests(orgId, 10)).map(({ requestId, status, cost }) => ({
        requestId,
        status,
        cost,
      })),
    });
    const folded = await read();
    expect(folded.requests).toEqual(
      expect.arrayContaining([
        { requestId: 'cut-before', status: 'client_abort', cost: before.data.amount },
        { requestId: 'cut-since', status: 'shutdown', cost: since.data.amount },
        { requestId: 'whole-since', status: 'shutdown', cost: 0 },
      ]),
    );
    expect(folded.balance).toMatchObject({ spent: 2 * before.data.amount, reserved: 0 });
    expect((await auditLedger(runtime.events, runtime.projections)).differences).toEqual([]);

    // Dropped and folded again from the log: the same, to the unit, each event with the status it was written with.
    await rebuildProjections(runtime.events, runtime.projections, 100);
    expect(await read()).toEqual(folded);

    // The export, verified with nothing but the file (no configuration, no log).
    const file = join(dir.path, 'export.ndjson');
    expect(await operatorTool(t.env, ['ledger', 'export', '--org', orgId, '--output', file])).toMatchObject({ code: 0 });
    const verified = await operatorToolJson({ PATH: process.env.PATH ?? '' }, ['ledger', 'verify', file]);
    expect(verified).toMatchObject({ verified: true, figures: { charged: 2 * before.data.amount, reserved: 0 } });
  });
});
