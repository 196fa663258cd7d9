import { Inject, Logger } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { HostError } from '../canonical/canonical';
import { Catalogue } from '../catalogue/catalogue';
import { HOST_KINDS } from '../hosts/hosts';
import { HostTransport } from '../hosts/transport';
import { ApiError } from '../http/api-error';
import { ordinaryKey } from '../http/credentials';
import { IdentityService } from '../identity/identity.service';
import type { KeyRecord } from '../identity/key-lookup';
import { insufficientCredits, ledgerRefusal } from '../inference/admission';
import { RequestRecord } from '../inference/request-record';
import { billedOf, chargeNotRecorded, providerFailure } from '../inference/settlement';
import { LedgerService, ReservationTicket, Resolution } from '../ledger/ledger.service';
import { uncachedUsage } from '../ledger/money';
import type { RateLimitStore } from '../rate-limits/rate-limit-store';
import { rateLimited, rateLimitHeaders } from '../rate-limits/rate-limits';
import { RATE_LIMITS } from '../runtime/runtime.module';
import { EmbeddingsCommand, EmbeddingsInput, EmbeddingsResult } from './embeddings.command';
import { billedEmbeddingTokens, EmbeddingsPlan, embeddingsReplyOf, planEmbeddings } from './embeddings.decisions';

/**
 * Embeddings, the shell: authenticate, look the model up, ask the ledger to admit what the plan
 * holds, call the hosts in turn (the next when one fails as the pipeline's fallback does), then
 * settle from the reply's usage or release the hold. Same ledger calls and request log as inference.
 */
@CommandHandler(EmbeddingsCommand)
export class EmbeddingsHandler implements ICommandHandler<EmbeddingsCommand, EmbeddingsResult> {
  private readonly logger = new Logger('Embeddings');

  constructor(
    private readonly identity: IdentityService,
    private readonly ledger: LedgerService,
    private readonly catalogue: Catalogue,
    private readonly transport: HostTransport,
    private readonly record: RequestRecord,
    @Inject(RATE_LIMITS) private readonly rateLimits: RateLimitStore,
  ) {}

  async execute({ input }: EmbeddingsCommand): Promise<EmbeddingsResult> {
    const started = performance.now();
    const facts = input.facts;
    if (facts) {
      facts.surface = 'embeddings';
      facts.requested = input.model.slice(0, 256);
      facts.started = started;
    }
    const key = ordinaryKey(await this.identity.authenticate(input.apiKey));
    if (facts) {
      facts.orgId = key.orgId;
      facts.keyId = key.keyId;
    }
    // As inference: every request of a key with rate limits counts, and every answer shows them.
    const limited = await this.rateLimits.check(key.orgId, key.keyId, key.rateLimits, Date.now());
    if (limited && !limited.admitted) throw this.refuse(input, key, started, input.model, rateLimited(limited));
    const headers = limited === null ? undefined : rateLimitHeaders(limited);
    try {
      return { ...(await this.serve(input, key, started, limited?.tokens !== undefined)), headers };
    } catch (error) {
      throw error instanceof ApiError ? error.withHeaders(headers) : error;
    }
  }

  /** The admitted key's request: planned, reserved, called, settled (its tokens counted when `tokensLimited`). */
  private async serve(
    input: EmbeddingsInput,
    key: KeyRecord,
    started: number,
    tokensLimited: boolean,
  ): Promise<EmbeddingsResult> {
    const plan = planEmbeddings(input.model, this.catalogue.find(input.model), input.body);
    if (plan.kind === 'refuse') throw this.refuse(input, key, started, plan.model, plan.error);
    const facts = input.facts;
    if (facts) facts.model = plan.model.slug;
    const admission = await this.ledger.admit({
      requestId: input.requestId,
      keyId: key.keyId,
      surface: 'embeddings',
      model: plan.model.slug,
      orgId: key.orgId,
      amount: plan.amount,
      keyLimit: key.limit,
    });
    if (!admission.admitted) {
      const estimate = { inputTokens: plan.inputTokens, outputTokens: 0 };
      const refusal = ledgerRefusal(admission, key.limit, plan.amount, (available) =>
        insufficientCredits(available, estimate, plan.prices),
      );
      throw this.refuse(input, key, started, plan.model.slug, refusal);
    }
    const { ticket } = admission;
    // The call runs while the reservation is written; nothing is answered before it is in the log.
    const [outcome, recorded] = await Promise.all([
      this.call(plan),
      ticket.recorded.then(
        () => true,
        () => false,
      ),
    ]);
    if (!recorded) throw new ApiError('internal_error', 'the reservation could not be recorded; nothing was billed');
    const latencyMs = Math.round(performance.now() - started);
    if (facts) {
      facts.host = outcome.kind === 'failed' ? outcome.hostId : outcome.served.host.id;
      facts.upstreamMs = outcome.upstreamMs;
      if (outcome.fallback) facts.fallback = true;
    }
    if (outcome.kind === 'failed') {
      this.release(ticket, outcome.error, outcome.hostId, latencyMs);
      const failure = providerFailure(outcome.error, outcome.hostId);
      if (facts) {
        facts.outcome = outcome.error.kind === 'timeout' ? 'provider_timeout' : 'provider_error';
        facts.error = failure.message;
      }
      throw failure;
    }
    const { served, reply } = outcome;
    const billedTokens = billedEmbeddingTokens(reply, plan);
    if (!billedTokens.counted) {
      this.logger.warn(`host ${served.host.id} reported no usable token count for ${input.requestId}; billing the estimate`);
    }
    // As every reply: answered once the settlement is in the log and the read models show it.
    let resolution: Resolution;
    try {
      resolution = await this.ledger.recordSettlement(ticket, {
        usage: uncachedUsage(billedTokens.tokens, 0),
        prices: served.prices,
        host: served.host.id,
        hostModel: served.model,
        status: 'ok',
        latencyMs,
      });
    } catch (error) {
      this.logger.error(`settlement of ${input.requestId} not recorded: ${(error as Error).message}`);
      throw chargeNotRecorded();
    }
    if (tokensLimited) {
      this.rateLimits
        .spend(key.orgId, key.keyId, billedTokens.tokens, Date.now())
        .catch((error: Error) => this.logger.warn(`tokens of key ${key.keyId} not counted for its rate limit: ${error.message}`));
    }
    await this.record.shown(resolution, input.requestId);
    const billed = billedOf(resolution.event, served.host.id);
    if (!billed) throw new ApiError('internal_error', 'the request could not be settled');
    if (facts && resolution.event.type === 'ReservationSettled') {
      facts.outcome = 'ok';
      facts.usage = uncachedUsage(billedTokens.tokens, 0);
      facts.cost = resolution.event.data.amount;
    }
    return { model: plan.model, reply, billed };
  }

  /** The hosts in turn: the first reply, or the failure that ended the attempt (the last host's, or one not worth another host). */
  private async call(plan: EmbeddingsPlan) {
    for (let index = 0; ; index++) {
      const { served, upstream } = plan.calls[index];
      const started = performance.now();
      const timing = () => ({ upstreamMs: Math.round(performance.now() - started), fallback: index > 0 });
      try {
        const answer = await this.transport.callForJson(HOST_KINDS[served.host.kind], served.host, upstream);
        return { kind: 'replied' as const, served, reply: embeddingsReplyOf(answer), ...timing() };
      } catch (error) {
        const failure = error instanceof HostError ? error : new HostError('connection', (error as Error).message);
        if (!failure.retryable || index === plan.calls.length - 1) {
          return { kind: 'failed' as const, error: failure, hostId: served.host.id, ...timing() };
        }
        this.logger.warn(`host ${served.host.id} failed to embed (${failure.message}); trying the next`);
      }
    }
  }

  /** Nothing was delivered: the whole hold returns. */
  private release(ticket: ReservationTicket, error: HostError, hostId: string, latencyMs: number): void {
    const status = error.kind === 'timeout' ? 'provider_timeout' : 'provider_error';
    this.ledger
      .release(ticket, { reason: error.message, host: hostId, status, latencyMs })
      .catch((e: Error) => this.logger.error(`release of ${ticket.reservationId} failed: ${e.message}`));
  }

  /** A known organization's request turned away: its request log shows it too (within the budget). */
  private refuse(
    input: EmbeddingsInput,
    key: { orgId: string; keyId: string },
    started: number,
    model: string,
    error: ApiError,
  ): ApiError {
    const request = { requestId: input.requestId, surface: 'embeddings' as const, orgId: key.orgId, keyId: key.keyId };
    return this.record.refused(request, model, error, started, input.facts);
  }
}
