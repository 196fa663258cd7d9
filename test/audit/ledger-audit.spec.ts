import { auditLedger } from '../../src/audit/ledger-audit';
import { Projector } from '../../src/projections/projector';
import { fundedOrganization, openTestRuntime } from '../support/runtime';
import { reserve } from '../support/ledger';

describe('ledger audit while requests append', () => {
  it('waits for read models that have not applied the latest events, and says so when they do not catch up', async () => {
    const t = await openTestRuntime();
    let follower: Projector | null = null;
    try {
      const { runtime } = t;
      const orgId = await fundedOrganization(runtime, 1_000_000_000);
      // The log moves on while the read models stand still: a reservation they have not applied.
      await runtime.projector.stop();
      const admission = await reserve(runtime.ledger, {
        requestId: 'q1',
        keyId: 'k',
        surface: 'native',
        model: 'm',
        orgId,
        amount: 5_000_000,
      });
      expect(admission.admitted).toBe(true);

      const stale = await auditLedger(runtime.events, runtime.projections, { projectionWaitMs: 50 });
      expect(stale.differences).toEqual([
        expect.stringMatching(new RegExp(`^organization ${orgId}: read models behind the log`)),
      ]);

      // The same audit, with the read models catching up while it waits: clean, reservation included.
      const auditing = auditLedger(runtime.events, runtime.projections, { projectionWaitMs: 10_000 });
      follower = new Projector(runtime.events, runtime.projections, runtime.config.requestLogRetention);
      await follower.start();
      const report = await auditing;
      expect(report.differences).toEqual([]);
      expect(report.totals.reserved).toBe(5_000_000);
    } finally {
      await follower?.stop();
      await t.cleanup();
    }
  });
});
