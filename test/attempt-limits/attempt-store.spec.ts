import { createClient } from 'redis';
import { RedisAttemptStore } from '../../src/attempt-limits/redis-attempt-store';
import { RedisProjectionStore } from '../../src/projections/redis-projection-store';
import { describeWithRedis, testRedisUrl, uniquePrefix } from '../support/redis';
import { describeAttemptStore } from './attempt-store.contract';

/** The attempt stores' contract on Redis (the in-process store's is a unit test), and what only Redis has: keys and TTLs. */

const openRedis = async () => {
  const prefix = uniquePrefix('attempts');
  const redis = await RedisProjectionStore.connect(testRedisUrl()!, prefix, 5, 'test-log');
  return { prefix, redis, store: new RedisAttemptStore(redis), close: () => redis.close() };
};

describeWithRedis('attempt store', () => {
  describeAttemptStore('Redis', openRedis);

  it('names no email nor address in its keys, keeps one group under one hash tag, and lets each count expire', async () => {
    const { prefix, store, close } = await openRedis();
    const client = createClient({ url: testRedisUrl()! });
    await client.connect();
    try {
      const allowance = { attempts: 1, firstDelayMs: 2_000, maxDelayMs: 60_000 };
      const attempt = {
        group: 'sign-in 10.1.2.3',
        counts: [
          { key: 'account ada@example.com', allowance },
          { key: 'address', allowance },
        ],
      };
      expect(await store.take(attempt, Date.now())).toBe(0);
      const keys = await client.keys(`${prefix}*`);
      expect(keys).toHaveLength(2);
      for (const key of keys) {
        expect(key).not.toMatch(/ada|example|10\.1\.2\.3/);
        // the wait (2 s) plus the cap (1 min): then it would start afresh anyway
        const ttl = await client.pTTL(key);
        expect(ttl).toBeGreaterThan(61_000);
        expect(ttl).toBeLessThanOrEqual(62_001);
      }
      expect(new Set(keys.map((key) => /\{[^}]*\}/.exec(key)![0])).size).toBe(1);
    } finally {
      await client.close();
      await close();
    }
  });

  it('keeps its counts, and the other live counts no log holds, through a rebuild of the read models', async () => {
    const { redis, store, close } = await openRedis();
    const client = createClient({ url: testRedisUrl()! });
    await client.connect();
    try {
      const attempt = {
        group: 'sign-in 10.1.2.3',
        counts: [{ key: 'account ada@example.com', allowance: { attempts: 1, firstDelayMs: 60_000, maxDelayMs: 600_000 } }],
      };
      const now = Date.now();
      expect(await store.take(attempt, now)).toBe(0);
      const rate = redis.rateLimitKeys('org-1', 'key-1');
      const live = [rate.requests, rate.tokens, redis.breakerKey('host-1', 'model-1'), `${redis.org('org-1').tag}:sticky:m:c`];
      for (const key of live) await client.set(key, '1', { PX: 60_000 });
      const readModel = redis.org('org-1').ledger;
      await client.hSet(readModel, 'granted', '5');

      await redis.reset();

      expect(await client.exists(readModel)).toBe(0);
      for (const key of live) expect(await client.exists(key)).toBe(1);
      // Still throttled: the rebuild gave the sign-in no allowance back.
      expect(await store.take(attempt, now + 1)).toBeGreaterThan(59_000);
    } finally {
      await client.close();
      await close();
    }
  });
});
