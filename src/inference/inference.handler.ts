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
import { CONFIG } from '../runtime/runtime.module';
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
   * the deadline and the client's leaving, and does what it says.
   * Returns the teardown (the client unsubscribing is an abort).
   */
  private run(admitted: Admitted<AdmissionPlan>, subscriber: Subscriber<PipelineEvent>): () => void {
    const { hosts, request } = admitted.plan;
    const attempt = initialAttempt(hosts.length);
    const facts = admitted.facts;
    let upstream: Subscription | null = null;
    let upstreamStarted = 0;
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
    const end = () => {
      clearTimeout(deadline);
      clearInterval(progress);
      upstream?.unsubscribe();
      if (facts) facts.upstreamMs = Math.round(performance.now() - upstreamStarted);
      if (callSpan) {
        if (attempt.ending?.kind === 'complete' && attempt.usage) callSpan.setAttributes(usageAttributes(attempt.usage));
        if (attempt.ending?.kind === 'failed') failed(callSpan, attempt.ending.error.message);
        else callSpan.end();
      }
      const ending = attempt.ending;
      if (ending === null) return;
      // Inside the host's callbacks: nothing thrown may escape (see abandon).
      try {
        this.requests.end(admitted, this.ended(admitted.plan, attempt, ending), subscriber);
      } catch (error) {
        this.requests.abandon(admitted, hosts[attempt.hostIndex], error, subscriber);
      }
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
      // The transport's failures hold no secret (it masks an upstream's text before raising it).
      error: (error: HostError) => {
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
    call();
    return () => signal(ABORT);
  }

  /** The attempt has ended: the host that served last, and what it delivered billed or released. */
  private ended(plan: AdmissionPlan, attempt: AttemptState, ending: Ending): CallEnded {
    const settlement = settlementFor(ending, attempt, this.limitsOf(plan));
    return {
      served: plan.hosts[attempt.hostIndex],
      fallback: attempt.hostIndex > 0,
      ending,
      settlement,
      upstreamId: attempt.upstreamId,
    };
  }

  /** What the usage of a request on this plan is checked against. */
  private limitsOf(plan: AdmissionPlan) {
    return usageLimits(plan.model.contextLength, plan.estimate.inputTokens, plan.request);
  }
}
