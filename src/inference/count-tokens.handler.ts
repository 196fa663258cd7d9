import { Logger } from '@nestjs/common';
import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { HostError } from '../canonical/canonical';
import { Catalogue } from '../catalogue/catalogue';
import { HostTransport } from '../hosts/transport';
import { ordinaryKey } from '../http/credentials';
import { IdentityService } from '../identity/identity.service';
import { CountTokensQuery, TokenCount } from './count-tokens.query';
import { providerFailure } from './settlement';
import { planTokenCount, tokenCountOf } from './token-count';

/**
 * Counting tokens, the shell: authenticate, look the model up, then ask the hosts that count in
 * turn (the next one when one fails before answering, as inference falls back) or answer the
 * estimate. What to do is decided by planTokenCount.
 */
@QueryHandler(CountTokensQuery)
export class CountTokensHandler implements IQueryHandler<CountTokensQuery, TokenCount> {
  private readonly logger = new Logger('CountTokens');

  constructor(
    private readonly identity: IdentityService,
    private readonly catalogue: Catalogue,
    private readonly transport: HostTransport,
  ) {}

  async execute({ input }: CountTokensQuery): Promise<TokenCount> {
    ordinaryKey(await this.identity.authenticate(input.apiKey));
    const plan = planTokenCount(input.model, this.catalogue.find(input.model), input.body, input.request);
    if (plan.kind === 'refuse') throw plan.error;
    if (plan.kind === 'estimate') return { inputTokens: plan.inputTokens, counted: null };
    for (let index = 0; ; index++) {
      const { served, kind, upstream } = plan.calls[index];
      try {
        const counted = tokenCountOf(await this.transport.callForJson(kind, served.host, upstream));
        return { inputTokens: counted.input_tokens, counted };
      } catch (error) {
        const failure = error as HostError;
        if (!failure.retryable || index === plan.calls.length - 1) throw providerFailure(failure, served.host.id);
        this.logger.warn(`host ${served.host.id} failed to count tokens (${failure.message}); trying the next`);
      }
    }
  }
}
