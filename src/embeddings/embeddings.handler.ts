import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Logger } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { HostError } from '../canonical/canonical';
import type { CatalogueModel, ModelHost } from '../catalogue/catalogue';
import { HOST_KINDS } from '../hosts/hosts';
import { HostTransport } from '../hosts/transport';
import type { ApiError } from '../http/api-error';
import { insufficientCredits, Refusal } from '../inference/admission';
import { Admitted, BilledRequests, HostsCalled, WholeReplyUseCase } from '../inference/billed-request';
import type { Config } from '../config/config';
import type { HostAttempt, TokenClass } from '../ledger/ledger.events';
import { uncachedUsage } from '../ledger/money';
import { attemptReason, circuitOpen, hostAtFault, hostAttempt } from '../routing/attempts';
import { credentialOutcome, KeyPools } from '../routing/key-pool';
import { retryDecision } from '../routing/retry';
import type { HostRouting } from '../routing/routing';
import { CONFIG, ROUTING } from '../runtime/runtime.module';
import { EmbeddingsCommand, EmbeddingsInput, EmbeddingsResult } from './embeddings.command';
import {
  billedEmbeddingTokens,
  EmbeddingsPlan,
  EmbeddingsReply,
  embeddingsReplyOf,
  planEmbeddings,
} from './embeddings.decisions';

/** An embedding call's health sample: its error counts; it streams nothing, so no first byte nor throughput is measured. */
const NOT_MEASURED = { firstByteMs: null, outputTokens: 0, generationMs: 0 };

/**
 * The embeddings use case: its plan (which hosts, what to hold for the estimated input), its call
 * (JSON, the hosts in turn: the next when one fails as inference falls back) and the reply's usage
 * checked before it is billed. The billed-request shell does the rest, as for inference.
 */
@CommandHandler(EmbeddingsCommand)
export class EmbeddingsHandler
  implements
    ICommandHandler<EmbeddingsCommand, EmbeddingsResult>,
    WholeReplyUseCase<EmbeddingsInput, EmbeddingsPlan, EmbeddingsReply>
{
  private readonly logger = new Logger('Embeddings');

  constructor(
    private readonly requests: BilledRequests,
    private readonly transport: HostTransport,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(ROUTING) private readonly routing: HostRouting,
    private readonly keyPools: KeyPools,
  ) {}

  async execute({ input }: EmbeddingsCommand): Promise<EmbeddingsResult> {
    const { request, reply, billed } = await this.requests.serve('embeddings', input, this);
    return { model: request.plan.model, reply, billed, headers: request.headers };
  }

  plan(input: EmbeddingsInput, catalogued: CatalogueModel | null): EmbeddingsPlan | Refusal {
    return planEmbeddings(input.model, catalogued, input.body);
  }

  insufficient(plan: EmbeddingsPlan, available: number): ApiError {
    return insufficientCredits(available, { inputTokens: plan.inputTokens, outputTokens: 0 }, plan.prices);
  }

  /**
   * The hosts in turn, each asked of its circuit first and called again after a backoff while its
   * failure is transient and its retries last: the first reply, or the failure that ended the
   * attempt (the last host's, or one not worth another host). Every call on the record. `shutdown`
   * aborted (the end of the shutdown's grace period): the call in flight or the backoff given up,
   * ended as `shutdown`; aborted already: no host called.
   */
  async call({ plan, started }: Admitted<EmbeddingsPlan>, shutdown: AbortSignal): Promise<HostsCalled<EmbeddingsReply>> {
    const model = plan.model.slug;
    const deadlineAt = started + this.config.requestTimeoutMs;
    const attempts: HostAttempt[] = [];
    // The last failure of a host that was called: what ends a request whose last host is passed over.
    let calledFailure: HostError | null = null;
    let retried = 0;
    // Times the current host was called again at once with another credential of its pool.
    let switched = 0;
    for (let index = 0; ;) {
      const { served, upstream } = plan.calls[index];
      const callStarted = performance.now();
      const upstreamMs = () => Math.round(performance.now() - callStarted);
      const last = index === plan.calls.length - 1;
      const fallback = index > 0;
      let failure: HostError;
      const admitted = await this.routing.admit(served.host.id, model);
      // Ended while its circuit was asked (or in the backoff before): no host called again.
      if (shutdown.aborted) return { kind: 'shutdown', served, fallback, upstreamMs: 0, attempts };
      if (!admitted) {
        attempts.push(hostAttempt(served.host.id, null, null, 'circuit_open', 0));
        failure = circuitOpen(served.host.id);
      } else {
        // A credential of the host's pool for this call, as inference leases one (none left: as a host refusing its key).
        const lease = this.keyPools.lease(served.host);
        try {
          if (!lease) throw new HostError('status', `host ${served.host.id} has no credential left`, 401);
          const { endpoint } = lease.credential;
          const answer = await this.transport.callForJson(
            HOST_KINDS[served.host.kind],
            endpoint,
            upstream(endpoint.apiKey),
            shutdown,
          );
          lease.release({ kind: 'ok' });
          attempts.push(hostAttempt(served.host.id, lease.credential.id, null, 'ok', performance.now() - callStarted));
          this.routing.ended(served.host.id, model, false, NOT_MEASURED);
          const reply = embeddingsReplyOf(answer);
          return { kind: 'replied', served, fallback, upstreamMs: upstreamMs(), reply, attempts };
        } catch (error) {
          if (shutdown.aborted) {
            // Given up by the shutdown, not failed by the host: its credential given back as served, its circuit told nothing.
            lease?.release({ kind: 'ok' });
            attempts.push(
              hostAttempt(served.host.id, lease?.credential.id ?? null, null, 'shutdown', performance.now() - callStarted),
            );
            return { kind: 'shutdown', served, fallback, upstreamMs: upstreamMs(), attempts };
          }
          failure = error instanceof HostError ? error : new HostError('connection', (error as Error).message);
          calledFailure = failure;
          lease?.release(credentialOutcome(failure.status, failure.retryAfterMs));
          attempts.push(
            hostAttempt(
              served.host.id,
              lease?.credential.id ?? null,
              failure.status,
              attemptReason(failure),
              performance.now() - callStarted,
            ),
          );
          this.routing.ended(served.host.id, model, hostAtFault(failure), NOT_MEASURED);
        }
      }
      if (this.keyPools.anotherCredential(served.host, failure, switched)) {
        this.logger.warn(
          `host ${served.host.id} refused its credential (${failure.message}); calling it with another of its pool`,
        );
        switched += 1;
        continue;
      }
      const again = retryDecision(served.host.retry, failure, retried, deadlineAt - performance.now(), Math.random());
      if (again.retry) {
        this.logger.warn(`host ${served.host.id} failed to embed (${failure.message}); again in ${again.delayMs} ms`);
        retried += 1;
        // The shutdown ends the wait (the circuit's answer then sees it).
        await sleep(again.delayMs, undefined, { signal: shutdown }).catch(() => undefined);
        continue;
      }
      if (!failure.retryable || last) {
        const error = failure.kind === 'circuit_open' ? (calledFailure ?? failure) : failure;
        return { kind: 'failed', served, fallback, upstreamMs: upstreamMs(), error, attempts };
      }
      this.logger.warn(`host ${served.host.id} failed to embed (${failure.message}); trying the next`);
      index += 1;
      retried = 0;
      switched = 0;
    }
  }

  /** The input tokens billed: the host's count when believable, else the estimate. */
  usage({ plan, requestId }: Admitted<EmbeddingsPlan>, served: ModelHost, reply: EmbeddingsReply) {
    const billed = billedEmbeddingTokens(reply, plan);
    if (!billed.counted) {
      this.logger.warn(`host ${served.host.id} reported no usable token count for ${requestId}; billing the estimate`);
    }
    // The output class is none, not counted by anyone: only the input can be the gateway's estimate.
    return { usage: uncachedUsage(billed.tokens, 0), estimated: billed.counted ? [] : (['input'] as TokenClass[]) };
  }
}
