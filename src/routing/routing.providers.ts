import { Logger, type Provider } from '@nestjs/common';
import type { ReadModelStore } from '../projections/projection-store';
import { RedisProjectionStore } from '../projections/redis-projection-store';
import { KeyPools } from './key-pool';
import { MemoryStickyRoutes, RedisStickyRoutes, StickyRoutes } from './sticky';

/** The sticky routes' store: in Redis beside the read models when they are there, else in this process. */
export const STICKY_ROUTES = Symbol('StickyRoutes');
/** Measured host health (HostHealthReader), when a provider gives it: `sort` by latency or throughput reads it. */
export const HOST_HEALTH = Symbol('HostHealth');

/**
 * What routing keeps between requests: the key pools' use, and which host served each conversation
 * (`readModels`: the token of the read models' store, whose Redis the sticky routes share).
 */
export const routingProviders = (readModels: symbol): Provider[] => [
  {
    provide: KeyPools,
    useFactory: () => {
      const logger = new Logger('KeyPools');
      return new KeyPools((line) => logger.warn(line));
    },
  },
  {
    provide: STICKY_ROUTES,
    inject: [readModels],
    useFactory: (store: ReadModelStore): StickyRoutes =>
      store instanceof RedisProjectionStore ? new RedisStickyRoutes(store) : new MemoryStickyRoutes(),
  },
];
