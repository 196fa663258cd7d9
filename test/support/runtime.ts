import { loadConfig } from '../../src/config/config';
import { openRuntime, Runtime } from '../../src/runtime/runtime';
import { testRedisUrl, uniquePrefix } from './redis';
import { tempDir } from './temp';
import type { RuntimeLog } from '../../src/runtime-log/runtime-log';

export interface TestRuntime {
  runtime: Runtime;
  env: Record<string, string>;
  cleanup: () => Promise<void>;
}

/**
 * A runtime on a fresh SQLite log, with read models in-process or in Redis under a unique
 * prefix. `env` is the environment that opens the same stores from another process.
 */
export async function openTestRuntime(
  options: {
    redis?: boolean;
    sweep?: boolean;
    env?: Record<string, string>;
    log?: RuntimeLog;
    /** The clock spacing the sweeper's lines while sweeps fail. */
    sweepFailureClock?: () => number;
  } = {},
): Promise<TestRuntime> {
  const dir = tempDir('runtime');
  const env: Record<string, string> = {
    DATA_DIR: dir.path,
    LOG_POLL_MS: '20',
    // Circuits never open unless a test asks: suites fail the same host on purpose, test after test.
    HOST_BREAKER_FAILURES: '0',
    ...(options.redis ? { REDIS_URL: testRedisUrl()!, REDIS_PREFIX: uniquePrefix('rt') } : { REDIS_URL: '' }),
    ...options.env,
  };
  const runtime = await openRuntime(loadConfig(env), {
    sweep: options.sweep,
    log: options.log,
    sweepFailureClock: options.sweepFailureClock,
  });
  return {
    runtime,
    env,
    cleanup: async () => {
      await runtime.projections.reset();
      await runtime.close();
      dir.cleanup();
    },
  };
}

/** An organization with `credits` nano-credits, ready to spend. */
export async function fundedOrganization(runtime: Runtime, credits: number): Promise<string> {
  const { orgId } = await runtime.identity.createOrganization('Test org');
  if (credits > 0) await runtime.ledger.grant(orgId, credits, 'test');
  await runtime.projector.catchUp();
  return orgId;
}
