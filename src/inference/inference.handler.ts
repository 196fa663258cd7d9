import { Inject, Logger } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { SpanKind, type Span } from '@opentelemetry/api';
import { ATTR_SERVER_ADDRESS } from '@opentelemetry/semantic-conventions';
import { Observable, type Observer, type Subscriber, type Subscription } from 'rxjs';
import { type CanonicalEvent, HostError } from '../canonical/canonical';
import { OMITTED_TOOLS_HEADER } from '../canonical/hosted-tools';
import { Catalogue, type CatalogueModel } from '../catalogue/catalogue';
import type { Config } from '../config/config';
import { HOST_KINDS } from '../hosts/hosts';
import { HostTransport } from '../hosts/transport';
import type { ApiError } from '../http/api-error';
import { failed, GATEWAY, GEN_AI, usageAttributes } from '../observability/tracing';
import { HostAttempt, MAX_ATTEMPTS } from '../ledger/ledger.events';
import { attemptReason, circuitOpen, hostAtFault, hostAttempt } from '../routing/attempts';
import type { HostRouting } from '../routing/routing';
import { CONFIG, ROUTING } from '../runtime/runtime.module';
import { AdmissionPlan, insufficientCredits, planAdmission, Refusal } from './admission';
import {
  ABORT,
  AttemptSignal,
  AttemptState,
  DEADLINE,
  Ending,
  HOST_COMPLETE,
  hostFailed,
  initialAttempt,
  attemptStep,
} from './attempt';
import { Admitted, BilledRequests, BilledUseCase } from './billed-request';
import { InferenceCommand, InferenceInput, InferenceResult, PipelineEvent } from './inference.command';
import { CallEnded, progressOf, settlementFor } from './settlement';
import { usageLimits } from './usage-check';

/**
 * The inference use case (every chat surface): its plan (admission: the model's hosts, the capped
 * request, what to hold), its call (the attempt: the hosts in turn, streamed or whole, under one
 * deadline) and its settle decision (what the attempt delivered). The billed-request shell does
 * the rest: authenticate, rate limits, the ledger's hold, settle or release, the record.
 */
@CommandHandler(InferenceCommand)
export class InferenceHandler
  implements ICommandHandler<InferenceCommand, InferenceResult>, BilledUseCase<InferenceInput, AdmissionPlan>
{
  private readonly logger = new Logger('Inference');

  constructor(
    private readonly requests: BilledRequests,
    private readonly transport: HostTransport,
    private readonly catalogue: Catalogue,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(ROUTING) private readonly routing: HostRouting,
  ) {}

  async execute({ input }: InferenceCommand): Promise<InferenceResult> {
    const admitted = await this.requests.admit(input.surface, input, this);
    const { plan } = admitted;
    const omitted = plan.omittedTools ?? [];
    return {
      requestId: input.requestId,
      headers: omitted.length > 0 ? { ...admitted.headers, [OMITTED_TOOLS_HEADER]: omitted.join(', ') } : admitted.headers,
      model: plan.model,
      created: Math.floor(Date.now() / 1000),
      stream: plan.request.stream,
      events: new Observable<PipelineEvent>((subscriber) => this.run(admitted, subscriber)),
    };
  }

  plan(input: InferenceInput, catalogued: CatalogueModel | null): AdmissionPlan | Refusal {
    const format = input.request.original?.format;
    return planAdmission(input.model, catalogued, input.request, {
      maxUses: this.config.hostedToolMaxUses,
      elsewhere: (types) => {
        const models = [...new Set(types.flatMap((type) => this.catalogue.modelsRunning(type, format)))];
        return models.length === 0 ? 'no model of this gateway runs it' : `models that run it: ${models.join(', ')}`;
      },
    });
  }

  insufficient(plan: AdmissionPlan, available: number): ApiError {
    return insufficientCredits(available, plan.estimate, plan.prices);
  }

  /**
   * One subscription to an admitted request: feeds the attempt the host's events, its failures,
   * the deadline and the client's leaving, and does what it says (the same host again after a
   * backoff, the next host, or the end). Each host call is asked of its circuit first, recorded
   * (`attempts`), and told to the circuit and the host's health when it ends.
   * Returns the teardown (the client unsubscribing is an abort).
   */
  private run(admitted: Admitted<AdmissionPlan>, subscriber: Subscriber<PipelineEvent>): () => void {
    const { hosts, request } = admitted.plan;
    const model = admitted.plan.model.slug;
    const attempt = initialAttempt(
      hosts.length,
      hosts.map((h) => h.host.retry),
    );
    const facts = admitted.facts;
    const deadlineAt = performance.now() + this.config.requestTimeoutMs;
    const attempts: HostAttempt[] = [];
    let upstream: Subscription | null = null;
    let upstreamStarted = 0;
    // The host call in flight: when it began and when its first byte came; null between calls.
    let current: { started: number; firstByte: number | null } | null = null;
    let backoff: NodeJS.Timeout | undefined;
    // The current host call's span, when the request is traced.
    let callSpan: Span | undefined;
    // A stream records what it has delivered at intervals, so that a crash still bills it.
    let recorded = { chars: 0, usage: attempt.usage };
    let recording = false;
    const recordProgress = () => {
      if (!attempt.produced || attempt.ending !== null || recording) return;
      if (attempt.deliveredChars === recorded.chars && attempt.usage === recorded.usage) return;
      recorded = { chars: attempt.deliveredChars, usage: attempt.usage };
      recording = true;
      const progress = progressOf(attempt, this.limitsOf(admitted.plan));
      void this.requests
        .recordProgress(admitted, hosts[attempt.hostIndex], progress, attempt.deliveredChars)
        .then(() => (recording = false));
    };
    const progress = request.stream ? setInterval(recordProgress, this.config.progressIntervalMs) : undefined;
    /**
     * The call in flight has ended (`error`: how it failed, null: it served; `reason` for an ending
     * not the host's): on the record, and, when the host's doing, told to its circuit and health.
     */
    const callEnded = (error: HostError | null, reason?: 'client_abort' | 'deadline') => {
      if (current === null) return;
      const now = performance.now();
      const { started, firstByte } = current;
      current = null;
      const served = hosts[attempt.hostIndex];
      attempts.push(hostAttempt(served, error?.status ?? null, reason ?? (error ? attemptReason(error) : 'ok'), now - started));
      if (reason !== undefined) return;
      this.routing.ended(served.host.id, model, error !== null && hostAtFault(error), {
        firstByteMs: firstByte === null ? null : firstByte - started,
        outputTokens: error === null ? (attempt.usage?.outputTokens ?? 0) : 0,
        generationMs: firstByte === null ? 0 : now - firstByte,
      });
    };
    const end = () => {
      clearTimeout(deadline);
      clearTimeout(backoff);
      clearInterval(progress);
      upstream?.unsubscribe();
      const ending = attempt.ending;
      if (ending?.kind === 'abort') callEnded(null, 'client_abort');
      else if (ending?.kind === 'timeout') callEnded(null, 'deadline');
      // Every host passed over: no call to time.
      if (facts && upstreamStarted > 0) facts.upstreamMs = Math.round(performance.now() - upstreamStarted);
      if (callSpan) {
        if (ending?.kind === 'complete' && attempt.usage) callSpan.setAttributes(usageAttributes(attempt.usage));
        if (ending?.kind === 'failed') failed(callSpan, ending.error.message);
        else callSpan.end();
      }
      if (ending === null) return;
      // Inside the host's callbacks: nothing thrown may escape (see abandon).
      try {
        this.requests.end(admitted, this.ended(admitted.plan, attempt, ending, attempts), subscriber);
      } catch (error) {
        this.requests.abandon(admitted, hosts[attempt.hostIndex], error, subscriber);
      }
    };
    const signal = (input: AttemptSignal) => {
      if (attemptStep(attempt, input) === 'end') end();
    };
    /** A host failed before it could serve (or was passed over): the same host again, the next, or the end. */
    const hostFailedWith = (error: HostError) => {
      const failedHost = hosts[attempt.hostIndex].host.id;
      const action = attemptStep(attempt, hostFailed(error, deadlineAt - performance.now(), Math.random()));
      if (action === 'end') return end();
      if (action === 'ignore') return;
      if (callSpan) failed(callSpan, error.message);
      callSpan = undefined;
      if (action === 'retry_host') {
        this.logger.warn(`host ${failedHost} failed before output (${error.message}); again in ${attempt.retryDelayMs} ms`);
        backoff = setTimeout(call, attempt.retryDelayMs);
      } else {
        this.logger.warn(`host ${failedHost} failed before output (${error.message}); trying the next`);
        call();
      }
    };
    const host: Observer<CanonicalEvent> = {
      next: (event) => {
        if (event.type === 'ready' && current !== null && current.firstByte === null) current.firstByte = performance.now();
        if (attemptStep(attempt, event) === 'forward') {
          // The first output's time, once: one comparison per event after it.
          if (facts && facts.ttftMs === undefined && attempt.produced) {
            facts.ttftMs = Math.round(performance.now() - admitted.started);
          }
          subscriber.next(event);
        }
      },
      // The transport's failures hold no secret (it masks an upstream's text before raising it).
      error: (error: HostError) => {
        if (attempt.ending !== null) return;
        callEnded(error);
        hostFailedWith(error);
      },
      complete: () => {
        if (attempt.ending === null) callEnded(null);
        signal(HOST_COMPLETE);
      },
    };
    /** Calls the current host, once its circuit lets it; passes it over while its circuit is open. */
    const call = () => {
      const served = hosts[attempt.hostIndex];
      void this.routing.admit(served.host.id, model).then((allowed) => {
        // Ended while its circuit was asked (the client gone, the deadline).
        if (attempt.ending !== null) return;
        if (allowed) return dispatch(served);
        attempts.push(hostAttempt(served, null, 'circuit_open', 0));
        hostFailedWith(circuitOpen(served.host.id));
      });
    };
    const dispatch = (served: AdmissionPlan['hosts'][number]) => {
      upstreamStarted = performance.now();
      current = { started: upstreamStarted, firstByte: null };
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
            [GATEWAY.attempt]: attempts.length + 1,
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
    call();
    return () => signal(ABORT);
  }

  /** The attempt has ended: the host that served last, and what it delivered billed or released. */
  private ended(plan: AdmissionPlan, attempt: AttemptState, ending: Ending, attempts: HostAttempt[]): CallEnded {
    const settlement = settlementFor(ending, attempt, this.limitsOf(plan));
    return {
      served: plan.hosts[attempt.hostIndex],
      fallback: attempt.hostIndex > 0,
      ending,
      settlement,
      upstreamId: attempt.upstreamId,
      attempts: attempts.slice(0, MAX_ATTEMPTS),
    };
  }

  /** What the usage of a request on this plan is checked against. */
  private limitsOf(plan: AdmissionPlan) {
    return usageLimits(plan.model.contextLength, plan.estimate.inputTokens, plan.request);
  }
}
