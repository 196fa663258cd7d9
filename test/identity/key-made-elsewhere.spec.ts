import { operatorToolJson as json } from '../support/operator-tool';
import { openTestRuntime } from '../support/runtime';

/**
 * A key made by another process (the operator tool here; another worker of a set alike) is in the
 * log before this process's read models have applied it. Looking it up then must not answer
 * "invalid or revoked": the look-up catches up with the log first. The log is looked at for other
 * processes' events only every 10 s here, far longer than the test waits.
 */
describe('a key made by another process, used at once', () => {
  it('authenticates without waiting for the next look at the log', async () => {
    const t = await openTestRuntime({ env: { LOG_POLL_MS: '10000' } });
    try {
      const { orgId } = await t.runtime.identity.createOrganization('Elsewhere');
      await t.runtime.projector.catchUp();
      const made = await json(t.env, ['keys', 'create', '--org', orgId, '--name', 'from the tool']);
      const secret = JSON.stringify(made).match(/sk-svc-[A-Za-z0-9_-]+/)![0];

      const key = await t.runtime.identity.authenticate(secret);
      expect(key).toMatchObject({ orgId, name: 'from the tool' });
    } finally {
      await t.cleanup();
    }
  });

  it('still answers null for a well-formed key nobody made; made-up keys at once share one catch-up', async () => {
    const t = await openTestRuntime({ env: { LOG_POLL_MS: '10000' } });
    try {
      const catchUps = jest.spyOn(t.runtime.projector, 'catchUpNow');
      const madeUp = ['x', 'y', 'z'].map((c) => `sk-svc-${c.repeat(43)}`);
      expect(await Promise.all(madeUp.map((secret) => t.runtime.identity.authenticate(secret)))).toEqual([null, null, null]);
      expect(catchUps).toHaveBeenCalledTimes(1);
    } finally {
      await t.cleanup();
    }
  });
});
