import { DynamicModule, Global, Module } from '@nestjs/common';
import { IdentityService } from '../identity/identity.service';
import { LedgerService } from '../ledger/ledger.service';
import { Projector } from '../projections/projector';
import type { Runtime } from './runtime';

export const EVENTS = Symbol('EventStore');
/** The read side of the read models (`ReadModels`): what every route and page reads through. */
export const READ_MODELS = Symbol('ReadModels');
export const CONFIG = Symbol('Config');
export const RATE_LIMITS = Symbol('RateLimitStore');
/** The dashboard's attempt limits (`AttemptStore`). */
export const ATTEMPTS = Symbol('AttemptStore');
/** Hosts' circuit breakers and measured health (`HostRouting`). */
export const ROUTING = Symbol('HostRouting');

/** Makes the runtime (opened before Nest starts, shared with the operator tool) injectable. */
@Global()
@Module({})
export class RuntimeModule {
  static forRuntime(runtime: Runtime): DynamicModule {
    const providers = [
      { provide: CONFIG, useValue: runtime.config },
      { provide: EVENTS, useValue: runtime.events },
      { provide: READ_MODELS, useValue: runtime.projections },
      { provide: LedgerService, useValue: runtime.ledger },
      { provide: IdentityService, useValue: runtime.identity },
      { provide: Projector, useValue: runtime.projector },
      { provide: RATE_LIMITS, useValue: runtime.rateLimits },
      { provide: ATTEMPTS, useValue: runtime.attempts },
      { provide: ROUTING, useValue: runtime.routing },
    ];
    return { module: RuntimeModule, providers, exports: providers };
  }
}
