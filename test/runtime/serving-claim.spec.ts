import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/config';
import { openRuntime } from '../../src/runtime/runtime';
import { ServingClaimError } from '../../src/runtime/serving-claim';
import { ROOT } from '../support/processes';
import { describeWithRedis, testRedisUrl, uniquePrefix } from '../support/redis';
import { fundedOrganization } from '../support/runtime';
import { tempDir } from '../support/temp';

describe('one serving instance per log when read models are in-process', () => {
  const dir = tempDir('claim');
  const env = { DATA_DIR: dir.path, REDIS_URL: '', SIMULATED_HOST_PORT: 'off' };
  afterAll(() => dir.cleanup());

  it('refuses a second serving instance on the same data (it would overdraw), lets operator tools in, and frees the claim on close', async () => {
    const first = await openRuntime(loadConfig(env), { serving: true });
    try {
      await expect(openRuntime(loadConfig(env), { serving: true })).rejects.toThrow(ServingClaimError);
      await expect(openRuntime(loadConfig(env), { serving: true })).rejects.toThrow(/REDIS_URL/);
      // The operator tool (not serving) opens the same log beside it.
      const tool = await openRuntime(loadConfig(env));
      await tool.close();
    } finally {
      await first.close();
    }
    const next = await openRuntime(loadConfig(env), { serving: true });
    await next.close();
  });

  it('the service refuses to start beside another with a clear message (exit 1)', async () => {
    const first = await openRuntime(loadConfig(env), { serving: true });
    try {
      const run = spawnSync(process.execPath, [join(ROOT, 'dist/src/main.js')], {
        env: { ...process.env, ...env, PORT: '0' },
        encoding: 'utf8',
        timeout: 20_000,
      });
      expect(run.status).toBe(1);
      expect(run.stderr).toMatch(/another gateway instance is already serving from .* REDIS_URL/);
    } finally {
      await first.close();
    }
  });
});

describeWithRedis('several serving instances with read models in Redis', () => {
  it('starts them on one log: both hold it together (a shared claim), and each sees what the other appends', async () => {
    const dir = tempDir('claim-redis');
    const env = { DATA_DIR: dir.path, REDIS_URL: testRedisUrl()!, REDIS_PREFIX: uniquePrefix('claim'), LOG_POLL_MS: '20' };
    const first = await openRuntime(loadConfig(env), { serving: true });
    const second = await openRuntime(loadConfig(env), { serving: true });
    try {
      // Each holds a shared claim on the lock beside the log (it keeps out an instance with in-process read models).
      expect(existsSync(join(dir.path, 'serving.lock'))).toBe(true);
      const orgId = await fundedOrganization(first, 2_000);
      await second.ledger.grant(orgId, 3_000, 'from the second instance');
      for (const instance of [first, second]) {
        const grants = await instance.events.readStream(`credits-${orgId}`);
        expect(grants.map((e) => (e.data as { amount: number }).amount)).toEqual([2_000, 3_000]);
        await instance.projector.catchUp();
        expect((await instance.projections.balance(orgId)).granted).toBe(5_000);
      }
    } finally {
      await second.close();
      await first.projections.reset();
      await first.close();
      dir.cleanup();
    }
  });
});

describeWithRedis(
  'instances with in-process read models and with read models in Redis never serve one data directory together',
  () => {
    const dir = tempDir('claim-mixed');
    const inProcess = { DATA_DIR: dir.path, REDIS_URL: '', SIMULATED_HOST_PORT: 'off' };
    const prefix = uniquePrefix('claim-mixed');
    const inRedis = { DATA_DIR: dir.path, REDIS_URL: testRedisUrl()!, REDIS_PREFIX: prefix, SIMULATED_HOST_PORT: 'off' };
    afterAll(async () => {
      const tool = await openRuntime(loadConfig(inRedis));
      await tool.projections.reset();
      await tool.close();
      dir.cleanup();
    });

    it('refuses an instance with REDIS_URL while an in-process one serves (each would admit against other balances: they overdrew)', async () => {
      const first = await openRuntime(loadConfig(inProcess), { serving: true });
      try {
        await expect(openRuntime(loadConfig(inRedis), { serving: true })).rejects.toThrow(
          /a gateway instance with in-process read models \(no REDIS_URL\) is already serving from .*Stop that instance and start every instance with REDIS_URL/,
        );
        // The service itself: exit 1 with that one line.
        const run = spawnSync(process.execPath, [join(ROOT, 'dist/src/main.js')], {
          env: { ...process.env, EVENTSTORE_URL: '', ...inRedis, PORT: '0' },
          encoding: 'utf8',
          timeout: 20_000,
        });
        expect(run.status).toBe(1);
        expect(run.stderr).toMatch(
          /model gateway failed to start: a gateway instance with in-process read models \(no REDIS_URL\)/,
        );
      } finally {
        await first.close();
      }
    });

    it('refuses an in-process instance while Redis ones serve, which start together; frees the data once they stop', async () => {
      const first = await openRuntime(loadConfig(inRedis), { serving: true });
      let second: Awaited<ReturnType<typeof openRuntime>> | null = await openRuntime(loadConfig(inRedis), { serving: true });
      try {
        await expect(openRuntime(loadConfig(inProcess), { serving: true })).rejects.toThrow(ServingClaimError);
        await expect(openRuntime(loadConfig(inProcess), { serving: true })).rejects.toThrow(
          /gateway instances with read models in Redis \(REDIS_URL, or a WORKERS set\) are already serving from .*same REDIS_URL/,
        );
        await second.close();
        second = null;
        // One left still keeps it out.
        await expect(openRuntime(loadConfig(inProcess), { serving: true })).rejects.toThrow(/read models in Redis/);
      } finally {
        await second?.close();
        await first.close();
      }
      const alone = await openRuntime(loadConfig(inProcess), { serving: true });
      await alone.close();
    });
  },
);
