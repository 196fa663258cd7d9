import { Logger } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { HostError } from '../canonical/canonical';
import type { CatalogueModel, ModelHost } from '../catalogue/catalogue';
import { HOST_KINDS } from '../hosts/hosts';
import { HostTransport } from '../hosts/transport';
import type { ApiError } from '../http/api-error';
import { insufficientCredits, Refusal } from '../inference/admission';
import { Admitted, BilledRequests, HostsCalled, WholeReplyUseCase } from '../inference/billed-request';
import { TokenUsage, uncachedUsage } from '../ledger/money';
import { EmbeddingsCommand, EmbeddingsInput, EmbeddingsResult } from './embeddings.command';
import {
  billedEmbeddingTokens,
  EmbeddingsPlan,
  EmbeddingsReply,
  embeddingsReplyOf,
  planEmbeddings,
} from './embeddings.decisions';

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

  /** The hosts in turn: the first reply, or the failure that ended the attempt (the last host's, or one not worth another host). */
  async call({ plan }: Admitted<EmbeddingsPlan>): Promise<HostsCalled<EmbeddingsReply>> {
    for (let index = 0; ; index++) {
      const { served, upstream } = plan.calls[index];
      const started = performance.now();
      const upstreamMs = () => Math.round(performance.now() - started);
      try {
        const answer = await this.transport.callForJson(HOST_KINDS[served.host.kind], served.host, upstream);
        return { kind: 'replied', served, fallback: index > 0, upstreamMs: upstreamMs(), reply: embeddingsReplyOf(answer) };
      } catch (error) {
        const failure = error instanceof HostError ? error : new HostError('connection', (error as Error).message);
        if (!failure.retryable || index === plan.calls.length - 1) {
          return { kind: 'failed', served, fallback: index > 0, upstreamMs: upstreamMs(), error: failure };
        }
        this.logger.warn(`host ${served.host.id} failed to embed (${failure.message}); trying the next`);
      }
    }
  }

  /** The input tokens billed: the host's count when believable, else the estimate. */
  usage({ plan, requestId }: Admitted<EmbeddingsPlan>, served: ModelHost, reply: EmbeddingsReply): TokenUsage {
    const billed = billedEmbeddingTokens(reply, plan);
    if (!billed.counted) {
      this.logger.warn(`host ${served.host.id} reported no usable token count for ${requestId}; billing the estimate`);
    }
    return uncachedUsage(billed.tokens, 0);
  }
}
