import { join } from 'node:path';
import { auditLedger } from '../../src/audit/ledger-audit';
import { loadConfig } from '../../src/config/config';
import { rebuildProjections } from '../../src/projections/projector';
import { ReadModelsLostError, RedisProjectionStore } from '../../src/projections/redis-projection-store';
import { availableOf } from '../../src/projections/read-models';
import { openRuntime } from '../../src/runtime/runtime';
import { Child, eventually, ROOT, startNode } from '../support/processes';
import { describeWithRedis } from '../support/redis';
import { fundedOrganization, openTestRuntime } from '../support/runtime';
import { uncachedUsage } from '../../src/ledger/money';
import { pricesOf } from '../support/ledger';

const WORKER = join(ROOT, 'test/support/workers/ledger-worker.js');

describeWithRedis('ledger across processes', () => {
  it('admits exactly 20 of 200 reservations fired by 3 processes sharing Redis and the SQLite file', async () => {
    const t = await openTestRuntime({ redis: true });
    const children: Child[] = [];
    try {
      const orgId = await fundedOrganization(t.runtime, 20 * 1_000_000);
      for (const count of [67, 67, 66]) children.push(startNode(WORKER, ['reserve', orgId, String(count), '1000000'], t.env));
      await Promise.all(children.map((c) => c.waitForLine('ready')));
      for (const c of children) c.process.stdin!.write('go\n');
      const results = await Promise.all(
        children.map(async (c) => JSON.parse(await c.waitForLine('{')) as { admitted: number; refused: number }),
      );
      expect(results.reduce((n, r) => n + r.admitted, 0)).toBe(20);
      expect(results.reduce((n, r) => n + r.refused, 0)).toBe(180);
      await t.runtime.projector.catchUp();
      const balance = await t.runtime.projections.balance(orgId);
      expect(balance).toEqual({ granted: 20_000_000, spent: 0, reserved: 20_000_000, pending: 0 });
      expect(availableOf(balance)).toBe(0);
      expect((await auditLedger(t.runtime.events, t.runtime.projections)).differences).toEqual([]);
    } finally {
      children.forEach((c) => c.process.kill('SIGKILL'));
      await t.cleanup();
    }
  });

  it('recovers from a process killed mid-burst: no torn event, holds expire, audit clean', async () => {
    const timing = { REQUEST_TIMEOUT_MS: '1000', RESERVATION_TTL_MS: '1500', PENDING_HOLD_MS: '300', SWEEP_INTERVAL_MS: '50' };
    const t = await openTestRuntime({ redis: true, env: timing });
    const orgId = await fundedOrganization(t.runtime, 1_000_000_000);
    await t.runtime.close();
    const doomed = startNode(WORKER, ['burst', orgId, '1000'], { ...t.env, ...timing });
    await doomed.waitForLine('appending');
    doomed.process.kill('SIGKILL');
    await doomed.exited();

    // Restart on the same log and Redis.
    const restarted = await openRuntime(loadConfig({ ...t.env, ...timing }), { sweep: true });
    try {
      await restarted.projector.catchUp();
      await eventually(async () => {
        const b = await restarted.projections.balance(orgId);
        return b.reserved === 0 && b.pending === 0;
      }, 10_000);
      await restarted.projector.catchUp();
      const report = await auditLedger(restarted.events, restarted.projections);
      expect(report.differences).toEqual([]);
      expect(report.reservations).toBeGreaterThan(100);
      expect(report.expiries).toBeGreaterThan(0);
      expect(report.settlements + report.expiries + report.releases).toBe(report.reservations);
    } finally {
      await restarted.projections.reset();
      await restarted.close();
    }
  });

  it('rebuilds the read models by itself when Redis is emptied while it runs', async () => {
    const t = await openTestRuntime({ redis: true });
    try {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 50_000_000);
      for (let i = 0; i < 5; i++) {
        const a = await runtime.ledger.admit({
          requestId: `q${i}`,
          keyId: 'k',
          surface: 's',
          model: 'm',
          orgId,
          amount: 1_000_000,
        });
        if (a.admitted && i % 2 === 0) {
          await runtime.ledger.recordSettlement(a.ticket, {
            usage: uncachedUsage(100, 100),
            prices: pricesOf(1_000_000_000, 2_000_000_000),
            host: 'h',
            hostModel: 'hm',
            status: 'ok',
            latencyMs: 1,
          });
        }
      }
      await runtime.projector.catchUp();
      const before = await runtime.projections.balance(orgId);

      // Empty Redis under the running instance (only this test's keys: never a FLUSHALL).
      await (runtime.projections as RedisProjectionStore).reset();
      // Read models gone are not read as an empty balance: the read is refused (a 503 to a client).
      await expect(runtime.projections.balance(orgId)).rejects.toBeInstanceOf(ReadModelsLostError);

      // The next event it follows reveals the loss; it rebuilds and applies the new grant on top.
      await runtime.ledger.grant(orgId, 7_000_000, 'after the flush');
      await runtime.projector.catchUp();
      expect(await runtime.projections.balance(orgId)).toEqual({ ...before, granted: before.granted + 7_000_000 });
      expect((await auditLedger(runtime.events, runtime.projections)).differences).toEqual([]);

      // The operator's rebuild gives the same balances.
      await rebuildProjections(runtime.events, runtime.projections, 100);
      expect(await runtime.projections.balance(orgId)).toEqual({ ...before, granted: before.granted + 7_000_000 });
    } finally {
      await t.cleanup();
    }
  });
});
