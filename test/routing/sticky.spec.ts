import { RedisProjectionStore } from '../../src/projections/redis-projection-store';
import { RedisStickyRoutes } from '../../src/routing/sticky';
import { describeWithRedis, testRedisUrl, uniquePrefix } from '../support/redis';

/** Sticky routes in Redis: what another instance reads, and how often this one writes them. */
describeWithRedis('sticky routes in Redis', () => {
  let store: RedisProjectionStore;
  beforeAll(async () => {
    store = await RedisProjectionStore.connect(testRedisUrl()!, uniquePrefix('sticky'), 5, 'test-log');
  });
  afterAll(async () => {
    await store.reset();
    await store.close();
  });

  it("writes a conversation's route again to the same host at most every tenth of its lifetime, at once to another host", async () => {
    let now = 1_000_000;
    const routes = new RedisStickyRoutes(store, () => now);
    const other = new RedisStickyRoutes(store);
    const conversation = { key: 'conversation-1', ttlMs: 300_000 };
    const ttl = () => store.client.pTTL(`${store.org('org-1').tag}:sticky:test/m:conversation-1`);

    await routes.remember('org-1', conversation, 'test/m', 'host-a');
    expect(await other.hostsOf('org-1', conversation, ['test/m', 'test/none'])).toEqual(new Map([['test/m', 'host-a']]));
    // The same host within 30 s: not written (the lifetime left goes on falling).
    await store.client.pExpire(`${store.org('org-1').tag}:sticky:test/m:conversation-1`, 200_000);
    now += 29_999;
    await routes.remember('org-1', conversation, 'test/m', 'host-a');
    expect(await ttl()).toBeLessThanOrEqual(200_000);
    // 30 s after the last write: written again, for the whole lifetime.
    now += 1;
    await routes.remember('org-1', conversation, 'test/m', 'host-a');
    expect(await ttl()).toBeGreaterThan(290_000);
    // Another host: written at once.
    now += 1;
    await routes.remember('org-1', conversation, 'test/m', 'host-b');
    expect(await other.hostsOf('org-1', conversation, ['test/m'])).toEqual(new Map([['test/m', 'host-b']]));
  });
});
