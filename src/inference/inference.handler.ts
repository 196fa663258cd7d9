import { Inject, Logger, Optional } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { SpanKind, type Span } from '@opentelemetry/api';
import { ATTR_SERVER_ADDRESS } from '@opentelemetry/semantic-conventions';
import { Observable, type Observer, type Subscriber, type Subscription } from 'rxjs';
import { type CanonicalEvent, HostError } from '../canonical/canonical';
import { Catalogue } from '../catalogue/catalogue';
import { OMITTED_TOOLS_HEADER } from '../canonical/hosted-tools';
import type { CatalogueModel } from '../catalogue/catalogue';
import type { Config } from '../config/config';
import { HOST_KINDS } from '../hosts/hosts';
import { HostTransport } from '../hosts/transport';
import type { ApiError } from '../http/api-error';
import { failed, GATEWAY, GEN_AI, usageAttributes } from '../observability/tracing';
import { CONFIG } from '../runtime/runtime.module';
import { credentialOutcome, CredentialLease, KeyPools } from '../routing/key-pool';
import type { HostHealthReader } from '../routing/plan';
import type { Conversation } from '../routing/preferences';
import { HOST_HEALTH, STICKY_ROUTES } from '../routing/routing.providers';
import type { StickyRoutes } from '../routing/sticky';
import { AdmissionPlan, insufficientCredits, planAdmission, PlannedRoute, Refusal } from './admission';
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

/** An admission plan with what its routing remembers afterwards: who pays, and the conversation it continues. */
export interface RoutedPlan extends AdmissionPlan {
  orgId: string;
  conversation: Conversation | null;
}

/**
 * The inference use case (every chat surface): its plan (admission: the model's hosts, the capped
 * request, what to hold), its call (the attempt: the hosts in turn, streamed or whole, under one
 * deadline) and its settle decision (what the attempt delivered). The billed-request shell does
 * the rest: authenticate, rate limits, the ledger's hold, settle or release, the record.
 */
@CommandHandler(InferenceCommand)
export class InferenceHandler
  implements ICommandHandler<InferenceCommand, InferenceResult>, BilledUseCase<InferenceInput, RoutedPlan>
{
  private readonly logger = new Logger('Inference');

  constructor(
    private readonly requests: BilledRequests,
    private readonly transport: HostTransport,
    @Inject(CONFIG) private readonly config: Config,
    private readonly catalogue: Catalogue,
    private readonly keyPools: KeyPools,
    @Inject(STICKY_ROUTES) private readonly sticky: StickyRoutes,
    @Optional() @Inject(HOST_HEALTH) private readonly health?: HostHealthReader,
  ) {}

  async execute({ input }: InferenceCommand): Promise<InferenceResult> {
    const omitted = input.request.omittedTools ?? [];
    if (omitted.length > 0 && input.facts) input.facts.omittedTools = omitted;
    const admitted = await this.requests.admit(
      input.surface,
      omitted.length > 0 ? { ...input, omittedTools: omitted } : input,
      this,
    );
    const { plan } = admitted;
    const result: InferenceResult = {
      requestId: input.requestId,
      headers: omitted.length > 0 ? { ...admitted.headers, [OMITTED_TOOLS_HEADER]: omitted.join(', ') } : admitted.headers,
      model: plan.model,
      created: Math.floor(Date.now() / 1000),
      stream: plan.request.stream,
      // A `models` fallback that serves is the reply's model: the surfaces read it as they write.
      events: new Observable<PipelineEvent>((subscriber) => this.run(admitted, subscriber, (model) => (result.model = model))),
    };
    return result;
  }

  /**
   * Reads what routing needs — the fallback models, the hosts' key pools, the conversation's host
   * (a store that cannot be read only loses the stickiness) — and plans with it.
   */
  async plan(input: InferenceInput, catalogued: CatalogueModel | null, payer: { orgId: string }): Promise<RoutedPlan | Refusal> {
    const routing = input.routing;
    const fallbacks = (routing?.models ?? []).map((requested) => ({ requested, model: this.catalogue.find(requested) }));
    const models = [catalogued, ...fallbacks.map((f) => f.model)].filter((m): m is CatalogueModel => m !== null);
    const out = new Set<string>();
    const cooling = new Set<string>();
    for (const { host } of models.flatMap((m) => m.hosts)) {
      const standing = this.keyPools.standing(host);
      if (standing === 'out') out.add(host.id);
      else if (standing === 'cooling') cooling.add(host.id);
    }
    const conversation = this.config.stickyRouting ? (routing?.conversation ?? null) : null;
    const sticky = conversation
      ? await this.sticky
          .hostsOf(
            payer.orgId,
            conversation,
            models.map((m) => m.slug),
          )
          .catch((error: Error) => {
            this.logger.warn(`sticky routes not read (${error.message}): routing without them`);
            return undefined;
          })
      : undefined;
    const plan = planAdmission(input.model, catalogued, input.request, {
      preferences: routing?.provider ?? { allowFallbacks: true },
      fallbacks,
      context: { out, cooling, sticky, health: this.health },
    });
    return plan.kind === 'refuse' ? plan : { ...plan, orgId: payer.orgId, conversation };
  }

  insufficient(plan: RoutedPlan, available: number): ApiError {
    return insufficientCredits(available, plan.estimate, plan.prices);
  }

  /**
   * One subscription to an admitted request: feeds the attempt the host's events, its failures,
   * the deadline and the client's leaving, and does what it says.
   * Returns the teardown (the client unsubscribing is an abort).
   */
  private run(
    admitted: Admitted<RoutedPlan>,
    subscriber: Subscriber<PipelineEvent>,
    serving: (model: CatalogueModel) => void,
  ): () => void {
    const { routes } = admitted.plan;
    const attempt = initialAttempt(routes.length);
    // The credential of the host being called, held until its call ends.
    let lease: CredentialLease | null = null;
    const released = (error?: HostError) => {
      lease?.release(error ? credentialOutcome(error.status, error.retryAfterMs) : { kind: 'ok' });
      lease = null;
    };
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
      const route = routes[attempt.hostIndex];
      const progress = progressOf(attempt, this.limitsOf(admitted.plan, route));
      void this.requests.recordProgress(admitted, route.served, progress, attempt.deliveredChars).then(() => (recording = false));
    };
    const progress = admitted.plan.request.stream ? setInterval(recordProgress, this.config.progressIntervalMs) : undefined;
    const end = () => {
      clearTimeout(deadline);
      clearInterval(progress);
      upstream?.unsubscribe();
      released(attempt.ending?.kind === 'failed' ? attempt.ending.error : undefined);
      if (facts) facts.upstreamMs = Math.round(performance.now() - upstreamStarted);
      if (callSpan) {
        if (attempt.ending?.kind === 'complete' && attempt.usage) callSpan.setAttributes(usageAttributes(attempt.usage));
        if (attempt.ending?.kind === 'failed') failed(callSpan, attempt.ending.error.message);
        else callSpan.end();
      }
      const ending = attempt.ending;
      if (ending === null) return;
      if (ending.kind === 'complete') this.remember(admitted.plan, routes[attempt.hostIndex]);
      // Inside the host's callbacks: nothing thrown may escape (see abandon).
      try {
        this.requests.end(admitted, this.ended(admitted.plan, attempt, ending), subscriber);
      } catch (error) {
        this.requests.abandon(admitted, routes[attempt.hostIndex].served, error, subscriber);
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
        released(error);
        const action = attemptStep(attempt, hostFailed(error));
        if (action === 'next_host') {
          if (callSpan) failed(callSpan, error.message);
          this.logger.warn(
            `host ${routes[attempt.hostIndex - 1].served.host.id} failed before output (${error.message}); trying the next`,
          );
          call();
        } else if (action === 'end') end();
      },
      complete: () => signal(HOST_COMPLETE),
    };
    const call = () => {
      const { model, served, request } = routes[attempt.hostIndex];
      serving(model);
      if (facts) facts.model = model.slug;
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
            [GEN_AI.maxTokens]: request.maxTokens ?? model.maxOutputTokens,
            [GATEWAY.host]: served.host.id,
            [ATTR_SERVER_ADDRESS]: new URL(served.host.baseUrl).hostname,
          },
          SpanKind.CLIENT,
        );
        traceHeaders = traced.tracing.headersOf(traced.context, callSpan);
      }
      lease = this.keyPools.lease(served.host);
      // Every credential taken out since the plan was made: the host fails as one refusing its key would.
      if (!lease) return host.error(new HostError('status', `host ${served.host.id} has no credential left`, 401));
      upstream = this.transport
        .call(HOST_KINDS[served.host.kind], lease.credential.endpoint, served.model, request, traceHeaders)
        .subscribe(host);
    };
    const deadline = setTimeout(signal, this.config.requestTimeoutMs, DEADLINE);
    call();
    return () => signal(ABORT);
  }

  /** The conversation's next request goes to the host that served this one, while its cache lives (a failure to store it is logged). */
  private remember(plan: RoutedPlan, route: PlannedRoute): void {
    if (!plan.conversation) return;
    this.sticky
      .remember(plan.orgId, plan.conversation, route.model.slug, route.served.host.id)
      .catch((error: Error) => this.logger.warn(`sticky route not stored: ${error.message}`));
  }

  /** The attempt has ended: the host that served last, and what it delivered billed or released. */
  private ended(plan: AdmissionPlan, attempt: AttemptState, ending: Ending): CallEnded {
    const route = plan.routes[attempt.hostIndex];
    const settlement = settlementFor(ending, attempt, this.limitsOf(plan, route));
    return {
      served: route.served,
      fallback: attempt.hostIndex > 0,
      ending,
      settlement,
      upstreamId: attempt.upstreamId,
    };
  }

  /** What the usage of a request on this plan, served by `route`, is checked against. */
  private limitsOf(plan: AdmissionPlan, route: PlannedRoute) {
    return usageLimits(route.model.contextLength, plan.estimate.inputTokens, route.request);
  }
}
