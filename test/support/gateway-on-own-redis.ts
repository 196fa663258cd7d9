import type { ChildProcess } from 'node:child_process';
import { startGateway, TestGateway } from './gateway';
import { freePort, startRedis, stopRedis } from './own-redis';
import { eventually } from './processes';

/** A gateway whose read models are in a Redis of the test's own, which the test stops and starts under it. */
export interface GatewayOnOwnRedis {
  g: TestGateway;
  /** Kills the Redis (SIGKILL: as a crash). */
  stopRedis(): Promise<void>;
  /** Starts it again on the same port, empty. */
  startRedis(): Promise<void>;
  /** Closes the gateway (with its Redis back first: its read models are dropped from it then), then the Redis. */
  close(): Promise<void>;
}

export async function gatewayOnOwnRedis(options: Parameters<typeof startGateway>[0] = {}): Promise<GatewayOnOwnRedis> {
  const port = await freePort();
  let redis: ChildProcess = await startRedis(port);
  const g = await startGateway({ ...options, redis: true, env: { ...options.env, REDIS_URL: `redis://127.0.0.1:${port}` } });
  const down = () => redis.exitCode !== null || redis.signalCode !== null;
  return {
    g,
    stopRedis: () => stopRedis(redis),
    async startRedis() {
      redis = await startRedis(port);
    },
    async close() {
      if (down()) redis = await startRedis(port);
      await eventually(
        () =>
          g.t.runtime.projections.checkpoint().then(
            () => true,
            () => false,
          ),
        10_000,
        50,
      );
      await g.close();
      await stopRedis(redis);
    },
  };
}
