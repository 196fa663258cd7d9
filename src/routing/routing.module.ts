import { DynamicModule, Global, Module } from '@nestjs/common';
import type { HostHealthReader } from './plan';
import { HOST_HEALTH } from './routing.providers';

/**
 * Where measured host health comes from, for `sort` by latency or throughput: given to the
 * application (HOST_HEALTH); without it those sorts keep the catalogue's order.
 */
@Global()
@Module({})
export class RoutingModule {
  static forHealth(health: HostHealthReader | undefined): DynamicModule {
    const providers = health ? [{ provide: HOST_HEALTH, useValue: health }] : [];
    return { module: RoutingModule, providers, exports: providers };
  }
}
