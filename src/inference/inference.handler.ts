import { Inject, Logger } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { Observable, Subscription } from 'rxjs';
import { Catalogue, ModelHost } from '../catalogue/catalogue';
import type { Config } from '../config/config';
import { HOST_KINDS } from '../hosts/hosts';
import { HostTransport } from '../hosts/transport';
import { ApiError } from '../http/api-error';
import { IdentityService } from '../identity/identity.service';
import { ReservationTicket, LedgerService } from '../ledger/ledger.service';
import { chargeFor, formatCredits, TokenPrices, TokenUsage } from '../ledger/money';
import { CONFIG } from '../runtime/runtime.module';
import { CanonicalRequest, HostError } from '../canonical/canonical';
import { InferenceCommand, InferenceInput, InferenceResult, PipelineEvent } from './inference.command';
import { RefusalBudget } from './refusal-budget';
import { estimateInputTokens } from './tokens';

/** Refused requests recorded per organization and second, per instance (see RefusalBudget). */
const REFUSALS_RECORDED_PER_SECOND = 20;

/** The highest price among the hosts that may serve: a fallback must stay covered. */
const highestPrices = (hosts: ModelHost[]): TokenPrices => ({
  input: Math.max(...hosts.map((h) => h.prices.input)),
  output: Math.max(...hosts.map((h) => h.prices.output)),
});

type Ending =
  | { kind: 'complete' }
  | { kind: 'abort' }
  | { kind: 'timeout' }
  | { kind: 'failed'; error: HostError }
  /** The reservation event could not be written: nothing can be billed, so nothing is served. */
  | { kind: 'unrecorded' };

/**
 * The pipeline: authenticate, resolve the model, reserve, call the host (falling back to the
 * next while nothing was produced), and settle exactly once however the request ends.
 */
@CommandHandler(InferenceCommand)
export class InferenceHandler implements ICommandHandler<InferenceCommand, InferenceResult> {
  private readonly logger = new Logger('Pipeline');
  private readonly refusals = new RefusalBudget(REFUSALS_RECORDED_PER_SECOND);

  constructor(
    private readonly identity: IdentityService,
    private readonly ledger: LedgerService,
    private readonly catalogue: Catalogue,
    private readonly transport: HostTransport,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async execute({ input }: InferenceCommand): Promise<InferenceResult> {
    const started = performance.now();
    const key = input.principal ?? (input.apiKey === null ? null : await this.identity.authenticate(input.apiKey));
    if (!key) {
      throw new ApiError('invalid_api_key', input.apiKey === null ? 'missing API key' : 'invalid or revoked API key');
    }
    const model = this.catalogue.find(input.model);
    if (!model) {
      throw this.refuse(
        input,
        key,
        started,
        input.model,
        new ApiError('not_found', `model "${input.model}" is not in the catalogue (GET /api/v1/models lists them)`),
      );
    }
    const hosts = model.hosts.filter((h) => h.host.usable);
    if (hosts.length === 0) {
      throw this.refuse(
        input,
        key,
        started,
        model.slug,
        new ApiError('not_found', `model "${model.slug}" is not available here: none of its hosts is configured`),
      );
    }
    const maxTokens = input.request.maxTokens ?? model.maxOutputTokens;
    if (maxTokens > model.maxOutputTokens) {
      throw this.refuse(
        input,
        key,
        started,
        model.slug,
        new ApiError(
          'invalid_request',
          `the output token cap asked for (${maxTokens}) exceeds ${model.slug}'s limit of ${model.maxOutputTokens} output tokens`,
        ),
      );
    }
    const request: CanonicalRequest = { ...input.request, maxTokens };
    const estimate: TokenUsage = { inputTokens: estimateInputTokens(request), outputTokens: maxTokens };
    const prices = highestPrices(hosts);
    const admission = await this.ledger.admit({
      requestId: input.requestId,
      keyId: key.keyId,
      surface: input.surface,
      model: model.slug,
      orgId: key.orgId,
      amount: chargeFor(estimate, prices),
    });
    if (!admission.admitted)
      throw this.refuse(input, key, started, model.slug, insufficientCredits(admission.available, estimate, prices));
    return {
      requestId: input.requestId,
      model,
      created: Math.floor(Date.now() / 1000),
      stream: request.stream,
      events: this.run(input, request, hosts, admission.ticket, estimate.inputTokens, started),
    };
  }

  /** A known organization's request turned away: its request log shows it too (within the budget). */
  private refuse(
    input: InferenceInput,
    key: { orgId: string; keyId: string },
    started: number,
    model: string,
    error: ApiError,
  ): ApiError {
    if (!this.refusals.take(key.orgId, Date.now())) return error;
    const refusal = {
      requestId: input.requestId,
      keyId: key.keyId,
      surface: input.surface,
      orgId: key.orgId,
      model,
      status: error.code,
      reason: error.message,
      latencyMs: Math.round(performance.now() - started),
    };
    this.ledger
      .refuse(refusal)
      .catch((e: Error) => this.logger.error(`refusal of ${input.requestId} not recorded: ${e.message}`));
    return error;
  }

  private run(
    input: InferenceInput,
    request: CanonicalRequest,
    hosts: ModelHost[],
    ticket: ReservationTicket,
    estimatedInput: number,
    started: number,
  ): Observable<PipelineEvent> {
    return new Observable<PipelineEvent>((subscriber) => {
      let ended = false;
      let produced = false;
      let ready = false;
      let deliveredChars = 0;
      let usage: TokenUsage | null = null;
      let hostIndex = 0;
      let upstream: Subscription | null = null;

      const end = (ending: Ending) => {
        if (ended) return;
        ended = true;
        clearTimeout(deadline);
        upstream?.unsubscribe();
        const served = hosts[hostIndex];
        const outcome = {
          produced,
          usage: usage ?? { inputTokens: estimatedInput, outputTokens: Math.ceil(deliveredChars / 4) },
          latencyMs: Math.round(performance.now() - started),
        };
        const logFailure = (error: unknown) =>
          this.logger.error(`settlement of ${input.requestId} failed: ${(error as Error).message}`);
        if (ending.kind === 'complete') {
          // The charge is a pure function of the usage: report it now; the ledger records the same event.
          const { event, appended } = this.ledger.settleNow(ticket, {
            usage: outcome.usage,
            prices: served.prices,
            host: served.host.id,
            hostModel: served.model,
            status: 'ok',
            latencyMs: outcome.latencyMs,
          });
          appended.catch(logFailure);
          if (event.type === 'ReservationSettled') {
            const { inputTokens, outputTokens, amount } = event.data;
            subscriber.next({ type: 'billed', inputTokens, outputTokens, cost: amount, host: served.host.id });
          }
          subscriber.complete();
          return;
        }
        if (ending.kind === 'unrecorded') {
          subscriber.error(new ApiError('internal_error', 'the reservation could not be recorded; nothing was billed'));
          return;
        }
        this.settle(ticket, served, ending, outcome).catch(logFailure);
        if (ending.kind === 'timeout') {
          subscriber.error(
            new ApiError('provider_timeout', `the provider did not finish within ${this.config.requestTimeoutMs} ms`),
          );
        } else if (ending.kind === 'failed') {
          subscriber.error(providerFailure(ending.error, served));
        }
      };

      const callHost = () => {
        const served = hosts[hostIndex];
        upstream = this.transport.call(HOST_KINDS[served.host.kind], served.host, served.model, request).subscribe({
          next: (event) => {
            if (event.type === 'ready') {
              if (!ready) subscriber.next(event);
              ready = true;
              return;
            }
            if (event.type === 'text') {
              produced = true;
              deliveredChars += event.text.length;
            } else if (event.type === 'tool_call') {
              produced = true;
              deliveredChars += event.argumentsDelta.length + (event.name?.length ?? 0);
            } else if (event.type === 'usage') {
              usage = { inputTokens: event.inputTokens, outputTokens: event.outputTokens };
            }
            subscriber.next(event);
          },
          error: (error: HostError) => {
            if (!produced && error.retryable && hostIndex < hosts.length - 1) {
              this.logger.warn(`host ${served.host.id} failed before output (${error.message}); trying the next`);
              hostIndex += 1;
              callHost();
              return;
            }
            end({ kind: 'failed', error });
          },
          complete: () => end({ kind: 'complete' }),
        });
      };

      const deadline = setTimeout(() => end({ kind: 'timeout' }), this.config.requestTimeoutMs);
      ticket.recorded.catch(() => end({ kind: 'unrecorded' }));
      callHost();
      return () => end({ kind: 'abort' });
    });
  }

  /** Bills what was delivered on a request that did not complete, or releases the hold when nothing was. */
  private async settle(
    ticket: ReservationTicket,
    served: ModelHost,
    ending: Exclude<Ending, { kind: 'complete' } | { kind: 'unrecorded' }>,
    outcome: { produced: boolean; usage: TokenUsage; latencyMs: number },
  ): Promise<void> {
    const status =
      ending.kind === 'abort'
        ? 'client_abort'
        : ending.kind === 'timeout' || ending.error.kind === 'timeout'
          ? 'provider_timeout'
          : 'provider_error';
    if (!outcome.produced) {
      await this.ledger.release(ticket, {
        reason: ending.kind === 'failed' ? ending.error.message : status,
        host: served.host.id,
        status,
        latencyMs: outcome.latencyMs,
      });
      return;
    }
    await this.ledger.settle(ticket, {
      usage: outcome.usage,
      prices: served.prices,
      host: served.host.id,
      hostModel: served.model,
      status,
      latencyMs: outcome.latencyMs,
    });
  }
}

function insufficientCredits(available: number, estimate: TokenUsage, prices: TokenPrices): ApiError {
  const inputCost = chargeFor({ inputTokens: estimate.inputTokens, outputTokens: 0 }, prices);
  const affordable =
    prices.output === 0 ? estimate.outputTokens : Number((BigInt(available - inputCost) * 1_000_000n) / BigInt(prices.output));
  const balance = `${formatCredits(Math.max(0, available))} credits available`;
  return new ApiError(
    'insufficient_credits',
    affordable > 0
      ? `insufficient credits: ${balance}, enough for at most ${affordable} output tokens on this request (asked for ${estimate.outputTokens}); lower max_tokens or add credits`
      : `insufficient credits: ${balance}, not enough for this request's input; add credits`,
  );
}

function providerFailure(error: HostError, served: ModelHost): ApiError {
  if (error.kind === 'timeout') return new ApiError('provider_timeout', `provider ${served.host.id} did not answer in time`);
  // The upstream refused the request itself (not its own failure): the caller can fix it.
  if (error.kind === 'status' && (error.status === 400 || error.status === 413 || error.status === 422)) {
    return new ApiError('invalid_request', `provider ${served.host.id} rejected the request: ${error.message}`);
  }
  return new ApiError('provider_error', `provider ${served.host.id} failed: ${error.message}`);
}
