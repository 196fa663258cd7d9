import { Logger } from '@nestjs/common';
import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { HostError } from '../canonical/canonical';
import { Catalogue } from '../catalogue/catalogue';
import { HostTransport } from '../hosts/transport';
import { ordinaryKey } from '../http/credentials';
import { IdentityService } from '../identity/identity.service';
import { CountTokensQuery, TokenCount } from './count-tokens.query';
import { OpenRequests } from './in-flight';
import { endedByShutdown, providerFailure } from './settlement';
import { planTokenCount, tokenCountOf } from './token-count';

/**
 * Counting tokens, the shell: authenticate, look the model up, then ask the hosts that count in
 * turn (the next one when one fails before answering, as inference falls back) or answer the
 * estimate. What to do is decided by planTokenCount. Still asking a host when the shutdown's grace
 * period ends: the call given up, answered a 503 (nothing is held: there is nothing to release).
 */
@QueryHandler(CountTokensQuery)
export class CountTokensHandler implements IQueryHandler<CountTokensQuery, TokenCount> {
  private readonly logger = new Logger('CountTokens');

  constructor(
    private readonly identity: IdentityService,
    private readonly catalogue: Catalogue,
    private readonly transport: HostTransport,
    private readonly open: OpenRequests,
  ) {}

  async execute({ input }: CountTokensQuery): Promise<TokenCount> {
    ordinaryKey(await this.identity.authenticate(input.apiKey));
    const plan = planTokenCount(input.model, this.catalogue.find(input.model), input.body, input.request);
    if (plan.kind === 'refuse') throw plan.error;
    if (plan.kind === 'estimate') return { inputTokens: plan.inputTokens, counted: null };
    // Past the grace period already: no host called.
    const shutdown = new AbortController();
    // Ended by the shutdown: its 503 is on its way once the call has given up (the shutdown waits till then).
    let givenUp = (): void => undefined;
    const forget = this.open.whileOpen(() => {
      shutdown.abort();
      return new Promise<void>((resolve) => (givenUp = resolve));
    });
    if (forget === null) throw endedByShutdown().as('shutdown');
    try {
      for (let index = 0; ; index++) {
        const { served, kind, upstream } = plan.calls[index];
        try {
          const counted = tokenCountOf(await this.transport.callForJson(kind, served.host, upstream, shutdown.signal));
          return { inputTokens: counted.input_tokens, counted };
        } catch (error) {
          if (shutdown.signal.aborted) throw endedByShutdown().as('shutdown');
          const failure = error as HostError;
          if (!failure.retryable || index === plan.calls.length - 1) throw providerFailure(failure, served.host.id);
          this.logger.warn(`host ${served.host.id} failed to count tokens (${failure.message}); trying the next`);
        }
      }
    } finally {
      forget();
      givenUp();
    }
  }
}
