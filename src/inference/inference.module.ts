import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import type { Config } from '../config/config';
import { HostTransport } from '../hosts/transport';
import { KeyPools } from '../routing/key-pool';
import { routingProviders } from '../routing/routing.providers';
import { CONFIG, READ_MODELS } from '../runtime/runtime.module';
import { BilledRequests } from './billed-request';
import { CountTokensHandler } from './count-tokens.handler';
import { InFlightSettlements, OpenRequests } from './in-flight';
import { InferenceHandler } from './inference.handler';
import { RequestRecord } from './request-record';

/**
 * The inference use case: its command handler, the token-count query's handler, the billed-request
 * shell and the transport to hosts they call. Every module that dispatches InferenceCommand or CountTokensQuery (the API
 * surfaces, the dashboard's playground) imports this.
 * Needs the runtime's services and the catalogue (global modules).
 */
@Module({
  imports: [CqrsModule],
  providers: [
    {
      provide: HostTransport,
      inject: [CONFIG],
      useFactory: (config: Config) =>
        new HostTransport({
          firstByteMs: config.hostFirstByteTimeoutMs,
          replyMs: config.requestTimeoutMs,
          idleMs: config.requestTimeoutMs,
        }),
    },
    RequestRecord,
    InFlightSettlements,
    OpenRequests,
    BilledRequests,
    InferenceHandler,
    CountTokensHandler,
    ...routingProviders(READ_MODELS),
  ],
  // The embeddings use case calls hosts through the same transport (one pool per origin), and is
  // admitted, settled and recorded by the same shell (one refusal budget for every use case), its
  // credentials leased from the same key pools, and ended at the shutdown's grace period's end as
  // inference is (one set of requests to end).
  exports: [HostTransport, BilledRequests, KeyPools, OpenRequests],
})
export class InferenceModule {}
