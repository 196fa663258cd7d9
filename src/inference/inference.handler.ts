import { Inject, Logger, Optional } from '@nestjs/common';
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
import { failed, GATEWAY, GEN_AI, usageAttributes } from '../observability/span-attributes';
import { HostAttempt, MAX_ATTEMPTS } from '../ledger/ledger.events';
import { attemptReason, circuitOpen, hostAtFault, hostAttempt } from '../routing/attempts';
import { credentialOutcome, CredentialLease, KeyPools } from '../routing/key-pool';
import type { HostHealthReader } from '../routing/plan';
import type { Conversation } from '../routing/preferences';
import type { HostRouting } from '../routing/routing';
import { HOST_HEALTH, STICKY_ROUTES } from '../routing/routing.providers';
import type { StickyRoutes } from '../routing/sticky';
import { CONFIG, ROUTING } from '../runtime/runtime.module';
import { ledgerPositionHeader } from '../read-your-writes/ledger-position';
import { AdmissionPlan, insufficientCredits, planAdmission, PlannedRoute, Refusal } from './admission';
import {
  ABORT,
  ABORT_READING_ON,
  AttemptSignal,
  AttemptState,
  DEADLINE,
  Ending,
  HOST_COMPLETE,
  hostFailed,
  initialAttempt,
  attemptStep,
  SHUTDOWN,
} from './attempt';
import { Admitted, BilledRequests, BilledUseCase } from './billed-request';
import { InFlightSettlements, OpenRequests } from './in-flight';
import { InferenceCommand, InferenceInput, InferenceResult, OMITTED_BETAS_HEADER, PipelineEvent } from './inference.command';
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
    private readonly catalogue: Catalogue,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(ROUTING) private readonly routing: HostRouting,
    private readonly keyPools: KeyPools,
    @Inject(STICKY_ROUTES) private readonly sticky: StickyRoutes,
    private readonly open: OpenRequests,
    private readonly inFlight: InFlightSettlements,
    @Optional() @Inject(HOST_HEALTH) private readonly health?: HostHealthReader,
  ) {}

  async execute({ input }: InferenceCommand): Promise<InferenceResult> {
    const admitted = await this.requests.admit(input.surface, input, this);
    const { plan } = admitted;
    const omitted = plan.omittedTools ?? [];
    const omittedBetas = plan.omittedBetas ?? [];
    // A stream's headers leave before its settlement: they name its reservation's position (the
    // settlement's is in its last event); a whole reply's name its settlement's (see respond).
    const headers = {
      ...admitted.headers,
      ...(omitted.length > 0 ? { [OMITTED_TOOLS_HEADER]: omitted.join(', ') } : {}),
      ...(omittedBetas.length > 0 ? { [OMITTED_BETAS_HEADER]: omittedBetas.join(', ') } : {}),
      ...(plan.request.stream ? ledgerPositionHeader(admitted.ticket.position) : {}),
    };
    const result: InferenceResult = {
      requestId: input.requestId,
      headers: Object.keys(headers).length > 0 ? headers : undefined,
      model: plan.model,
      created: Math.floor(Date.now() / 1000),
      stream: plan.request.stream,
      // A `models` fallback that serves is the reply's model: the surfaces read it as they write.
      events: new Observable<PipelineEvent>((subscriber) =>
        this.run(admitted, subscriber, (model, omittedReasoning) => {
          result.model = model;
          result.omittedReasoning = omittedReasoning;
        }),
      ),
    };
    return result;
  }

  /**
   * Reads what routing needs — the fallback models, the hosts' key pools, the conversation's host
   * (a store that cannot be read only loses the stickiness) — and plans with it and the hosted-tools policy.
   */
  async plan(input: InferenceInput, catalogued: CatalogueModel | null, payer: { orgId: string }): Promise<RoutedPlan | Refusal> {
    const routing = input.routing;
    const fallbacks = (routing?.models ?? []).map((requested) => ({ requested, model: this.catalogue.find(requested) }));
    const models = catalogued ? [catalogued] : [];
    for (const f of fallbacks) if (f.model !== null) models.push(f.model);
    // Made only when a host has no credential left or every one cooling: most requests need neither.
    let out: Set<string> | undefined;
    let cooling: Set<string> | undefined;
    for (const model of models)
      for (const { host } of model.hosts) {
        const standing = this.keyPools.standing(host);
        if (standing === 'out') (out ??= new Set()).add(host.id);
        else if (standing === 'cooling') (cooling ??= new Set()).add(host.id);
      }
    // Stickiness chooses among hosts: with one, there is nothing to remember.
    const choices = models.reduce((hosts, model) => hosts + model.hosts.length, 0);
    const conversation = this.config.stickyRouting && choices > 1 ? (routing?.conversation() ?? null) : null;
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
    const format = input.request.original?.format;
    const plan = planAdmission(input.model, catalogued, input.request, {
      maxUses: this.config.hostedToolMaxUses,
      elsewhere: (types) => {
        const running = [...new Set(types.flatMap((type) => this.catalogue.modelsRunning(type, format)))];
        return running.length === 0 ? 'no model of this gateway runs it' : `models that run it: ${running.join(', ')}`;
      },
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
   * the deadline, the client's leaving and the end of the shutdown's grace period, and does what it
   * says (the same host again after a backoff, the next host, or the end). Each host call is asked
   * of its circuit first, recorded (`attempts`), and told to the circuit and the host's health when
   * it ends. The calls follow the plan's routes (a host of a model: another model's after a `models`
   * fallback), each on a credential leased from its host's key pool for that call. `serving` is told
   * each model called, and why its host goes without the reasoning asked for (null: it does not).
   * Returns the teardown (the client unsubscribing is an abort).
   */
  private run(
    admitted: Admitted<RoutedPlan>,
    subscriber: Subscriber<PipelineEvent>,
    serving: (model: CatalogueModel, omittedReasoning: string | null) => void,
  ): () => void {
    const { routes } = admitted.plan;
    const attempt = initialAttempt(
      routes.length,
      routes.map((r) => r.served.host.retry),
    );
    const facts = admitted.facts;
    const deadlineAt = performance.now() + this.config.requestTimeoutMs;
    const attempts: HostAttempt[] = [];
    let upstream: Subscription | null = null;
    let upstreamStarted = 0;
    // The host call in flight: when it began, when its first byte came, the credential it holds; null between calls.
    let current: { started: number; firstByte: number | null; lease: CredentialLease | null } | null = null;
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
      const route = routes[attempt.hostIndex];
      const progress = progressOf(attempt, this.limitsOf(admitted.plan, route));
      void this.requests.recordProgress(admitted, route.served, progress, attempt.deliveredChars).then(() => (recording = false));
    };
    const progress = admitted.plan.request.stream ? setInterval(recordProgress, this.config.progressIntervalMs) : undefined;
    /**
     * The call in flight has ended (`error`: how it failed, null: it served; `reason` for an ending
     * not the host's): its credential given back (a 429 rests it, a 401/403 takes it out), on the
     * record, and, when the host's doing, told to its circuit and health.
     */
    const callEnded = (error: HostError | null, reason?: 'client_abort' | 'shutdown' | 'deadline') => {
      if (current === null) return;
      const now = performance.now();
      const { started, firstByte, lease } = current;
      current = null;
      lease?.release(error ? credentialOutcome(error.status, error.retryAfterMs) : { kind: 'ok' });
      const { model, served } = routes[attempt.hostIndex];
      const outcome = reason ?? (error ? attemptReason(error) : 'ok');
      attempts.push(hostAttempt(served.host.id, lease?.credential.id ?? null, error?.status ?? null, outcome, now - started));
      if (reason !== undefined) return;
      this.routing.ended(served.host.id, model.slug, error !== null && hostAtFault(error), {
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
      forget?.();
      if (ending?.kind === 'abort') callEnded(null, 'client_abort');
      else if (ending?.kind === 'shutdown') callEnded(null, 'shutdown');
      else if (ending?.kind === 'timeout') callEnded(null, 'deadline');
      // Every host passed over: no call to time.
      if (facts && upstreamStarted > 0) facts.upstreamMs = Math.round(performance.now() - upstreamStarted);
      if (callSpan) {
        if (ending?.kind === 'complete' && attempt.usage) callSpan.setAttributes(usageAttributes(attempt.usage));
        if (ending?.kind === 'failed') failed(callSpan, ending.error.message);
        else callSpan.end();
      }
      if (ending === null) return;
      if (ending.kind === 'complete') this.remember(admitted.plan, routes[attempt.hostIndex]);
      // Inside the host's callbacks: nothing thrown may escape (see abandon).
      try {
        this.requests.end(admitted, this.ended(admitted.plan, attempt, ending, attempts), subscriber);
      } catch (error) {
        this.requests.abandon(admitted, routes[attempt.hostIndex].served, error, subscriber);
      }
      // Its settlement is now tracked in its own right (requests.end): what waited for the reading follows it.
      if (readingOn) readingOn.done(facts?.settled !== readingOn.read ? facts?.settled : undefined);
    };
    /**
     * A request whose client left while its host is read on: the shutdown, and its log line (written
     * once it is settled, to say what it was billed), wait for it until its settlement.
     */
    let readingOn: { read: Promise<void>; done: (settled?: Promise<void>) => void } | undefined;
    const signal = (input: AttemptSignal) => {
      const action = attemptStep(attempt, input);
      if (action === 'end') end();
      else if (action === 'read_on') {
        let done: (settled?: Promise<void>) => void = () => undefined;
        const read = new Promise<void>((resolve) => (done = resolve));
        readingOn = { read, done };
        void this.inFlight.track(read);
        if (facts) facts.settled = read;
      }
    };
    /** A host failed before it could serve (or was passed over): the same host again, the next, or the end. */
    const hostFailedWith = (error: HostError) => {
      const failedHost = routes[attempt.hostIndex].served.host;
      const another = this.keyPools.anotherCredential(failedHost, error, attempt.switched);
      const action = attemptStep(attempt, hostFailed(error, deadlineAt - performance.now(), Math.random(), another));
      if (action === 'end') return end();
      if (action === 'ignore') return;
      if (callSpan) failed(callSpan, error.message);
      callSpan = undefined;
      if (action === 'other_credential') {
        this.logger.warn(`host ${failedHost.id} refused its credential (${error.message}); calling it with another of its pool`);
        call();
      } else if (action === 'retry_host') {
        this.logger.warn(`host ${failedHost.id} failed before output (${error.message}); again in ${attempt.retryDelayMs} ms`);
        backoff = setTimeout(call, attempt.retryDelayMs);
      } else {
        this.logger.warn(`host ${failedHost.id} failed before output (${error.message}); trying the next`);
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
    /** Calls the current route's host, once its circuit (for that route's model) lets it; passes it over while the circuit is open. */
    const call = () => {
      const route = routes[attempt.hostIndex];
      const { host } = route.served;
      void this.routing.admit(host.id, route.model.slug).then((allowed) => {
        // Ended while its circuit was asked (the client gone, the deadline).
        if (attempt.ending !== null) return;
        if (allowed) return dispatch(route);
        attempts.push(hostAttempt(host.id, null, null, 'circuit_open', 0));
        hostFailedWith(circuitOpen(host.id));
      });
    };
    const dispatch = ({ model, served, request }: PlannedRoute) => {
      serving(model, HOST_KINDS[served.host.kind].omittedReasoning?.(request, served.model, served.host.settings) ?? null);
      if (facts) facts.model = model.slug;
      upstreamStarted = performance.now();
      const lease = this.keyPools.lease(served.host);
      current = { started: upstreamStarted, firstByte: null, lease };
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
            [GATEWAY.attempt]: attempts.length + 1,
            [ATTR_SERVER_ADDRESS]: new URL(served.host.baseUrl).hostname,
          },
          SpanKind.CLIENT,
        );
        traceHeaders = traced.tracing.headersOf(traced.context, callSpan);
      }
      // Every credential taken out since the plan was made: the host fails as one refusing its key would.
      if (!lease) return host.error(new HostError('status', `host ${served.host.id} has no credential left`, 401));
      upstream = this.transport
        .call(HOST_KINDS[served.host.kind], lease.credential.endpoint, served.model, request, traceHeaders)
        .subscribe(host);
    };
    const deadline = setTimeout(signal, this.config.requestTimeoutMs, DEADLINE);
    // Still open when the shutdown's grace period ends: ended then. Past it already: ended at once, no host called.
    const forget = this.open.whileOpen(() => signal(SHUTDOWN));
    if (forget === null) signal(SHUTDOWN);
    else call();
    // The client leaving: a reasoning model's host call is read to its end, since its hidden
    // reasoning is charged by the host whether or not it is delivered (and a cut after the last text
    // would otherwise bill the text alone); any other is cut, and billed for what it delivered.
    return () => signal(current !== null && routes[attempt.hostIndex].model.reasoning ? ABORT_READING_ON : ABORT);
  }

  /** The conversation's next request goes to the host that served this one, while its cache lives (a failure to store it is logged). */
  private remember(plan: RoutedPlan, route: PlannedRoute): void {
    if (!plan.conversation) return;
    this.sticky
      .remember(plan.orgId, plan.conversation, route.model.slug, route.served.host.id)
      .catch((error: Error) => this.logger.warn(`sticky route not stored: ${error.message}`));
  }

  /** The attempt has ended: the host that served last, and what it delivered billed or released. */
  private ended(plan: RoutedPlan, attempt: AttemptState, ending: Ending, attempts: HostAttempt[]): CallEnded {
    const route = plan.routes[attempt.hostIndex];
    const settlement = settlementFor(ending, attempt, this.limitsOf(plan, route));
    return {
      served: route.served,
      fallback: attempt.hostIndex > 0,
      ending,
      settlement,
      upstreamId: attempt.upstreamId,
      attempts: attempts.slice(0, MAX_ATTEMPTS),
    };
  }

  /** What the usage of a request on this plan, served by `route`, is checked against. */
  private limitsOf(plan: AdmissionPlan, route: PlannedRoute) {
    return usageLimits(route.model.contextLength, plan.estimate.inputTokens, route.request);
  }
}
