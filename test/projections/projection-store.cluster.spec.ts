import { RedisProjectionStore } from '../../src/projections/redis-projection-store';
import {
  describeProjectionStore,
  describeRedisFollowersSharing,
  describeRedisReadModelsLost,
} from '../support/projection-store-contract';
import { uniquePrefix } from '../support/redis';
import { describeWithRedisCluster, RedisCluster, startRedisCluster } from '../support/redis-cluster';

/** The read models' contract on a real Redis Cluster: every script's and MULTI's keys in one slot, scans over every master. */
describeWithRedisCluster('projection store', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  describeProjectionStore('Redis Cluster', async () =>
    RedisProjectionStore.connect(cluster.target, uniquePrefix('cluster-projections'), 5, 'test-log'),
  );
  describeRedisReadModelsLost(
    'Redis Cluster',
    () => cluster.target,
    () => cluster.env,
  );
  describeRedisFollowersSharing('Redis Cluster', () => cluster.target);
});
