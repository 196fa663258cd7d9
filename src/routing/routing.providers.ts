import { Logger, type Provider } from '@nestjs/common';
import type { ReadModelStore } from '../projections/projection-store';
import { RedisProjectionStore } from '../projections/redis-projection-store';
import { READ_MODELS } from '../runtime/runtime.module';
import { KeyPools } from './key-pool';
import { MemoryStickyRoutes, RedisStickyRoutes, StickyRoutes } from './sticky';

/** The sticky routes' store: in Redis beside the read models when they are there, else in this process. */
export const STICKY_ROUTES = Symbol('StickyRoutes');
/** Measured host health (HostHealthReader), when a provider gives it: `sort` by latency or throughput reads it. */
export const HOST_HEALTH = Symbol('HostHealth');

/** What routing keeps between requests: the key pools' use, and which host served each conversation. */
export const ROUTING_PROVIDERS: Provider[] = [
  {
    provide: KeyPools,
    useFactory: () => {
      const logger = new Logger('KeyPools');
      return new KeyPools((line) => logger.warn(line));
    },
  },
  {
    provide: STICKY_ROUTES,
    inject: [READ_MODELS],
    useFactory: (store: ReadModelStore): StickyRoutes =>
      store instanceof RedisProjectionStore ? new RedisStickyRoutes(store) : new MemoryStickyRoutes(),
  },
];
