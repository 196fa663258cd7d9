import { MemoryProjectionStore } from '../../src/projections/memory-projection-store';
import { RedisProjectionStore } from '../../src/projections/redis-projection-store';
import {
  describeProjectionStore,
  describeRedisFollowersSharing,
  describeRedisReadModelsLost,
} from '../support/projection-store-contract';
import { describeWithRedis, testRedisUrl, uniquePrefix } from '../support/redis';

describeProjectionStore('in-process', async () => new MemoryProjectionStore(5));
describeProjectionStore(
  'Redis',
  async () => RedisProjectionStore.connect(testRedisUrl()!, uniquePrefix('projections'), 5, 'test-log'),
  Boolean(testRedisUrl()),
);

describeWithRedis('Redis', () =>
  describeRedisReadModelsLost(
    'Redis',
    () => ({ url: testRedisUrl()!, cluster: false }),
    () => ({}),
  ),
);

describeWithRedis('Redis', () => describeRedisFollowersSharing('Redis', () => ({ url: testRedisUrl()!, cluster: false })));
