import { Inject, Logger } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { Observable, type Observer, type Subscriber, type Subscription } from 'rxjs';
import { type CanonicalEvent, HostError } from '../canonical/canonical';
import { Catalogue, ModelHost } from '../catalogue/catalogue';
import type { Config } from '../config/config';
import { HOST_KINDS } from '../hosts/hosts';
import { HostTransport } from '../hosts/transport';
import { ApiError } from '../http/api-error';
import { invalidApiKey, ordinaryKey } from '../http/credentials';
import { IdentityService } from '../identity/identity.service';
import type { KeyRecord } from '../identity/key-lookup';
import { maskSecrets } from '../key-secret/key-secret';
import { LedgerService, ReservationTicket, Resolution } from '../ledger/ledger.service';
import type { TokenUsage } from '../ledger/money';
import { CONFIG, RATE_LIMITS } from '../runtime/runtime.module';
import { failed, GATEWAY, GEN_AI, usageAttributes } from '../observability/tracing';
import { SpanKind, type Span } from '@opentelemetry/api';
import { ATTR_SERVER_ADDRESS } from '@opentelemetry/semantic-conventions';
import type { RateLimitStore } from '../rate-limits/rate-limit-store';
import { rateLimited, rateLimitHeaders, totalTokens } from '../rate-limits/rate-limits';
import { AdmissionPlan, insufficientCredits, ledgerRefusal, planAdmission } from './admission';
import {
  ABORT,
  AttemptSignal,
  AttemptState,
  DEADLINE,
  HOST_COMPLETE,
  hostFailed,
  initialAttempt,
  attemptStep,
  UNRECORDED,
} from './attempt';
import type { RequestFacts } from '../observability/request-facts';
import { InferenceCommand, InferenceInput, InferenceResult, PipelineEvent } from './inference.command';
import { InFlightSettlements } from './in-flight';
import { RequestRecord } from './request-record';
import { usageLimits } from './usage-check';
import { billedOf, chargeNotRecorded, endingError, Settlement, settlementFor } from './settlement';

/** One admitted request, as its run needs it. */
interface Admitted {
  input: InferenceInput;
  plan: AdmissionPlan;
  ticket: ReservationTicket;
  /** performance.now() when the request arrived. */
  started: number;
  /** The key, when it has a tokens-per-minute limit: its billed tokens are counted against it. */
  tokensLimited: { orgId: string; keyId: string } | null;
}

/**
 * The inference use case's shell: authenticate, look the model up, ask the ledger to admit what
 * admission planned, then run the attempt and settle however it ends. What to do is decided by
 * the pure functions beside it (admission, attempt, settlement); this does the I/O.
 */
@CommandHandler(InferenceCommand)
export class InferenceHandler implements ICommandHandler<InferenceCommand, InferenceResult> {
  private readonly logger = new Logger('Inference');

  constructor(
    private readonly identity: IdentityService,
    private readonly ledger: LedgerService,
    private readonly catalogue: Catalogue,
    private readonly transport: HostTransport,
    private readonly record: RequestRecord,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(RATE_LIMITS) private readonly rateLimits: RateLimitStore,
    private readonly inFlight: InFlightSettlements,
  ) {}

  async execute({ input }: InferenceCommand): Promise<InferenceResult> {
    const started = performance.now();
    const facts = input.facts;
    if (facts) {
      facts.surface = input.surface;
      facts.requested = input.model.slice(0, 256);
      facts.started = started;
    }
    const apiKey = input.principal === undefined ? ordinaryKey(await this.identity.authenticate(input.apiKey)) : null;
    const key = input.principal ?? apiKey;
    if (!key) throw invalidApiKey();
    if (facts) {
      facts.orgId = key.orgId;
      facts.keyId = key.keyId;
    }
    // Admission, timed as a span of the request's trace when it has one.
    const span = facts?.trace?.tracing.child(facts.trace.context, 'admission');
    let admission: { admitted: Admitted; headers: Record<string, string> | undefined };
    try {
      admission = await this.admit(input, key, apiKey, started);
    } catch (error) {
      if (span) failed(span, (error as Error).message);
      throw error;
    }
    span?.end();
    const { admitted, headers } = admission;
    const { plan } = admitted;
    return {
      requestId: input.requestId,
      headers,
      model: plan.model,
      created: Math.floor(Date.now() / 1000),
      stream: plan.request.stream,
      events: new Observable<PipelineEvent>((subscriber) => this.run(admitted, subscriber)),
    };
  }

  /**
   * Rate limits, the model, the ledger: the admitted request and the headers its answers carry, or
   * the refusal thrown.
   */
  private async admit(
    input: InferenceInput,
    key: { orgId: string; keyId: string },
    apiKey: KeyRecord | null,
    started: number,
  ): Promise<{ admitted: Admitted; headers: Record<string, string> | undefined }> {
    const facts = input.facts;
    // Every request of a key with rate limits counts, whatever becomes of it, and every answer shows
    // them. The playground (a signed-in member, no key) has none.
    const limited = apiKey && (await this.rateLimits.check(apiKey.orgId, apiKey.keyId, apiKey.rateLimits, Date.now()));
    const headers = limited === null ? undefined : rateLimitHeaders(limited);
    if (limited && !limited.admitted) throw this.refuse(input, key, started, input.model, rateLimited(limited));
    const plan = planAdmission(input.model, this.catalogue.find(input.model), input.request);
    if (facts && plan.kind !== 'refuse') facts.model = plan.model.slug;
    if (plan.kind === 'refuse') throw this.refuse(input, key, started, plan.model, plan.error.withHeaders(headers));
    const admission = await this.ledger.admit({
      requestId: input.requestId,
      keyId: key.keyId,
      surface: input.surface,
      model: plan.model.slug,
      orgId: key.orgId,
      amount: plan.amount,
      keyLimit: apiKey?.limit,
    });
    if (!admission.admitted) {
      const refusal = ledgerRefusal(admission, apiKey?.limit, plan.amount, (available) =>
        insufficientCredits(available, plan.estimate, plan.prices),
      );
      throw this.refuse(input, key, started, plan.model.slug, refusal.withHeaders(headers));
    }
    const tokensLimited = limited?.tokens === undefined ? null : key;
    return { admitted: { input, plan, ticket: admission.ticket, started, tokensLimited }, headers };
  }

  /** A known organization's request turned away: in the request's facts, and its request log (within the budget). */
  private refuse(
    input: InferenceInput,
    key: { orgId: string; keyId: string },
    started: number,
    model: string,
    error: ApiError,
  ): ApiError {
    const request = { requestId: input.requestId, surface: input.surface, orgId: key.orgId, keyId: key.keyId };
    return this.record.refused(request, model, error, started, input.facts);
  }

  /**
   * One subscription to an admitted request: feeds the attempt the host's events, its failures,
   * the deadline, an unrecorded reservation and the client's leaving, and does what it says.
   * Returns the teardown (the client unsubscribing is an abort).
   */
  private run(admitted: Admitted, subscriber: Subscriber<PipelineEvent>): () => void {
    const { hosts, request } = admitted.plan;
    const attempt = initialAttempt(hosts.length);
    const facts = admitted.input.facts;
    let upstream: Subscription | null = null;
    let upstreamStarted = 0;
    // The current host call's span, when the request is traced.
    let callSpan: Span | undefined;
    const end = () => {
      clearTimeout(deadline);
      upstream?.unsubscribe();
      if (facts) facts.upstreamMs = Math.round(performance.now() - upstreamStarted);
      if (callSpan) {
        if (attempt.ending?.kind === 'complete' && attempt.usage) callSpan.setAttributes(usageAttributes(attempt.usage));
        if (attempt.ending?.kind === 'failed') failed(callSpan, attempt.ending.error.message);
        else callSpan.end();
      }
      this.end(admitted, attempt, subscriber);
    };
    const signal = (input: AttemptSignal) => {
      if (attemptStep(attempt, input) === 'end') end();
    };
    const host: Observer<CanonicalEvent> = {
      next: (event) => {
        if (attemptStep(attempt, event) === 'forward') {
          // The first output's time, once: one comparison per event after it.
          if (facts && facts.ttftMs === undefined && attempt.produced) {
            facts.ttftMs = Math.round(performance.now() - admitted.started);
          }
          subscriber.next(event);
        }
      },
      error: (failure: HostError) => {
        // An upstream's text may echo a key (ours or the host's): masked before it is logged, recorded or answered.
        const error = new HostError(failure.kind, maskSecrets(failure.message), failure.status, failure.beforeOutput);
        const action = attemptStep(attempt, hostFailed(error));
        if (action === 'next_host') {
          if (callSpan) failed(callSpan, error.message);
          this.logger.warn(
            `host ${hosts[attempt.hostIndex - 1].host.id} failed before output (${error.message}); trying the next`,
          );
          call();
        } else if (action === 'end') end();
      },
      complete: () => signal(HOST_COMPLETE),
    };
    const call = () => {
      const served = hosts[attempt.hostIndex];
      upstreamStarted = performance.now();
      const traced = facts?.trace;
      let traceHeaders: Record<string, string> | undefined;
      if (traced) {
        callSpan = traced.tracing.child(
          traced.context,
          `chat ${served.model}`,
          {
            [GEN_AI.operation]: 'chat',
            [GEN_AI.provider]: served.host.kind,
            [GEN_AI.requestModel]: served.model,
            [GEN_AI.maxTokens]: request.maxTokens ?? admitted.plan.model.maxOutputTokens,
            [GATEWAY.host]: served.host.id,
            [ATTR_SERVER_ADDRESS]: new URL(served.host.baseUrl).hostname,
          },
          SpanKind.CLIENT,
        );
        traceHeaders = traced.tracing.headersOf(traced.context, callSpan);
      }
      upstream = this.transport
        .call(HOST_KINDS[served.host.kind], served.host, served.model, request, traceHeaders)
        .subscribe(host);
    };
    const deadline = setTimeout(signal, this.config.requestTimeoutMs, DEADLINE);
    admitted.ticket.recorded.catch(() => signal(UNRECORDED));
    call();
    return () => signal(ABORT);
  }

  /**
   * The request's one ending: the ledger told (settled or released), then the client told — billed
   * and complete, or an error — once the log holds the ending and the read models show it, so a
   * reply is never served unbilled and a balance read after it includes it. A client gone is told
   * nothing; the ledger is told all the same. It runs inside the host's callbacks, where anything
   * thrown would end the process (rxjs rethrows it on a timer): an unexpected failure here ends
   * this request alone.
   */
  private end(admitted: Admitted, attempt: AttemptState, subscriber: Subscriber<PipelineEvent>): void {
    try {
      this.settleAndTell(admitted, attempt, subscriber);
    } catch (error) {
      const { requestId } = admitted.input;
      this.logger.error(`request ${requestId} could not be settled: ${(error as Error)?.message ?? String(error)}`);
      this.ledger
        .release(admitted.ticket, {
          reason: 'the settlement could not be decided',
          host: admitted.plan.hosts[attempt.hostIndex]?.host.id ?? null,
          status: 'internal_error',
          latencyMs: Math.round(performance.now() - admitted.started),
        })
        .catch((e: Error) => this.logger.error(`release of ${requestId} failed: ${e.message}`));
      subscriber.error(new ApiError('internal_error', 'the request could not be settled; nothing was billed'));
    }
  }

  private settleAndTell(admitted: Admitted, attempt: AttemptState, subscriber: Subscriber<PipelineEvent>): void {
    const ending = attempt.ending;
    if (ending === null) return;
    const { plan, input } = admitted;
    const served = plan.hosts[attempt.hostIndex];
    const limits = usageLimits(plan.model.contextLength, plan.estimate.inputTokens, plan.request);
    const settlement = settlementFor(ending, attempt, limits);
    if (settlement.action === 'settle' && settlement.flag !== null) {
      this.logger.warn(`request ${input.requestId}: usage of host ${served.host.id} not billed as reported: ${settlement.flag}`);
    }
    const latencyMs = Math.round(performance.now() - admitted.started);
    const facts = input.facts;
    if (facts) {
      facts.host = served.host.id;
      facts.fallback = attempt.hostIndex > 0;
      if (settlement.action !== 'none') facts.outcome = settlement.status;
      const error = endingError(ending, served.host.id, this.config.requestTimeoutMs);
      if (error) facts.error = error.message;
    }
    const resolved = this.traced(facts, 'settlement', this.resolveReservation(admitted, served, settlement, latencyMs));
    // A request whose client has gone is logged once its settlement is known.
    const settled = this.inFlight.track(resolved);
    if (facts) facts.settled = settled;
    if (ending.kind === 'abort') return void resolved.catch(() => undefined);
    resolved.then(
      (resolution) => {
        if (ending.kind === 'complete') {
          const billed = resolution && billedOf(resolution.event, served.host.id);
          if (billed) subscriber.next(billed);
          subscriber.complete();
          return;
        }
        const error = endingError(ending, served.host.id, this.config.requestTimeoutMs);
        if (error) subscriber.error(error);
      },
      () => {
        // A failed request's error stands (its hold expires unbilled); a complete one's reply is
        // withdrawn: it cannot be billed, so it is not served.
        if (ending.kind === 'complete') subscriber.error(chargeNotRecorded());
        else subscriber.error(endingError(ending, served.host.id, this.config.requestTimeoutMs) ?? chargeNotRecorded());
      },
    );
  }

  /** `work` as a child span of the request's trace, when it has one. */
  private traced<T>(facts: RequestFacts | undefined, name: string, work: Promise<T>): Promise<T> {
    const traced = facts?.trace;
    if (!traced) return work;
    const span = traced.tracing.child(traced.context, name);
    work.then(
      () => span.end(),
      (error: Error) => failed(span, error.message),
    );
    return work;
  }

  /** A settled request's billed tokens, counted against its key's tokens per minute (a failure is logged, not the request's). */
  private countTokens(key: { orgId: string; keyId: string }, usage: TokenUsage): void {
    this.rateLimits
      .spend(key.orgId, key.keyId, totalTokens(usage), Date.now())
      .catch((error: Error) => this.logger.warn(`tokens of key ${key.keyId} not counted for its rate limit: ${error.message}`));
  }

  /**
   * The one place a reservation is resolved: settled or released in the log, then awaited in the
   * read models (within a bound: a read model lagging past it delays no reply for longer). Rejects
   * when the log did not take it.
   */
  private async resolveReservation(
    admitted: Admitted,
    served: ModelHost,
    settlement: Settlement,
    latencyMs: number,
  ): Promise<Resolution | null> {
    const { ticket, input } = admitted;
    if (settlement.action === 'none') return null;
    let resolution: Resolution;
    try {
      if (settlement.action === 'release') {
        const { reason, status } = settlement;
        resolution = await this.ledger.release(ticket, { reason, host: served.host.id, status, latencyMs });
      } else {
        const { usage, status, flag } = settlement;
        const outcome = {
          usage,
          prices: served.prices,
          host: served.host.id,
          hostModel: served.model,
          status,
          latencyMs,
          ...(flag === null ? {} : { usageFlag: flag }),
        };
        resolution = await this.ledger.recordSettlement(ticket, outcome);
        if (admitted.tokensLimited) this.countTokens(admitted.tokensLimited, usage);
        if (input.facts && resolution.event.type === 'ReservationSettled') {
          input.facts.usage = usage;
          input.facts.cost = resolution.event.data.amount;
        }
      }
    } catch (error) {
      this.logger.error(`${settlement.action} of ${input.requestId} not recorded: ${(error as Error).message}`);
      throw error;
    }
    await this.record.shown(resolution, input.requestId);
    return resolution;
  }
}
