import { Inject, Logger } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { Observable, type Observer, type Subscriber, type Subscription } from 'rxjs';
import { type CanonicalEvent, HostError } from '../canonical/canonical';
import { Catalogue, ModelHost } from '../catalogue/catalogue';
import type { Config } from '../config/config';
import { HOST_KINDS } from '../hosts/hosts';
import { HostTransport } from '../hosts/transport';
import { ApiError } from '../http/api-error';
import { invalidApiKey } from '../http/credentials';
import { IdentityService } from '../identity/identity.service';
import { maskSecrets } from '../key-secret/key-secret';
import { LedgerService, ReservationTicket } from '../ledger/ledger.service';
import { CONFIG } from '../runtime/runtime.module';
import { AdmissionPlan, insufficientCredits, planAdmission } from './admission';
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
import { InferenceCommand, InferenceInput, InferenceResult, PipelineEvent } from './inference.command';
import { RefusalBudget } from './refusal-budget';
import { billedOf, endingError, Settlement, settlementFor } from './settlement';

/** Refused requests recorded per organization and second, per instance (see RefusalBudget). */
const REFUSALS_RECORDED_PER_SECOND = 20;

/** One admitted request, as its run needs it. */
interface Admitted {
  input: InferenceInput;
  plan: AdmissionPlan;
  ticket: ReservationTicket;
  /** performance.now() when the request arrived. */
  started: number;
}

/**
 * The inference use case's shell: authenticate, look the model up, ask the ledger to admit what
 * admission planned, then run the attempt and settle however it ends. What to do is decided by
 * the pure functions beside it (admission, attempt, settlement); this does the I/O.
 */
@CommandHandler(InferenceCommand)
export class InferenceHandler implements ICommandHandler<InferenceCommand, InferenceResult> {
  private readonly logger = new Logger('Inference');
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
    const key = input.principal === undefined ? await this.identity.authenticate(input.apiKey) : input.principal;
    if (!key) throw invalidApiKey();
    const plan = planAdmission(input.model, this.catalogue.find(input.model), input.request);
    if (plan.kind === 'refuse') throw this.refuse(input, key, started, plan.model, plan.error);
    const admission = await this.ledger.admit({
      requestId: input.requestId,
      keyId: key.keyId,
      surface: input.surface,
      model: plan.model.slug,
      orgId: key.orgId,
      amount: plan.amount,
    });
    if (!admission.admitted) {
      throw this.refuse(
        input,
        key,
        started,
        plan.model.slug,
        insufficientCredits(admission.available, plan.estimate, plan.prices),
      );
    }
    const admitted: Admitted = { input, plan, ticket: admission.ticket, started };
    return {
      requestId: input.requestId,
      model: plan.model,
      created: Math.floor(Date.now() / 1000),
      stream: plan.request.stream,
      events: new Observable<PipelineEvent>((subscriber) => this.run(admitted, subscriber)),
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
      // What the client sent, as the log keeps it: a secret pasted into the model is masked.
      model: maskSecrets(model),
      status: error.code,
      reason: maskSecrets(error.message),
      latencyMs: Math.round(performance.now() - started),
    };
    this.ledger
      .refuse(refusal)
      .catch((e: Error) => this.logger.error(`refusal of ${input.requestId} not recorded: ${e.message}`));
    return error;
  }

  /**
   * One subscription to an admitted request: feeds the attempt the host's events, its failures,
   * the deadline, an unrecorded reservation and the client's leaving, and does what it says.
   * Returns the teardown (the client unsubscribing is an abort).
   */
  private run(admitted: Admitted, subscriber: Subscriber<PipelineEvent>): () => void {
    const { hosts, request } = admitted.plan;
    const attempt = initialAttempt(hosts.length);
    let upstream: Subscription | null = null;
    const end = () => {
      clearTimeout(deadline);
      upstream?.unsubscribe();
      this.end(admitted, attempt, subscriber);
    };
    const signal = (input: AttemptSignal) => {
      if (attemptStep(attempt, input) === 'end') end();
    };
    const host: Observer<CanonicalEvent> = {
      next: (event) => {
        if (attemptStep(attempt, event) === 'forward') subscriber.next(event);
      },
      error: (failure: HostError) => {
        // An upstream's text may echo a key (ours or the host's): masked before it is logged, recorded or answered.
        const error = new HostError(failure.kind, maskSecrets(failure.message), failure.status, failure.beforeOutput);
        const action = attemptStep(attempt, hostFailed(error));
        if (action === 'next_host') {
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
      upstream = this.transport.call(HOST_KINDS[served.host.kind], served.host, served.model, request).subscribe(host);
    };
    const deadline = setTimeout(signal, this.config.requestTimeoutMs, DEADLINE);
    admitted.ticket.recorded.catch(() => signal(UNRECORDED));
    call();
    return () => signal(ABORT);
  }

  /** The request's one ending: the ledger told (settled or released), the client told (billed and complete, or an error). */
  private end(admitted: Admitted, attempt: AttemptState, subscriber: Subscriber<PipelineEvent>): void {
    const ending = attempt.ending;
    if (ending === null) return;
    const served = admitted.plan.hosts[attempt.hostIndex];
    const settlement = settlementFor(ending, attempt, admitted.plan.estimate.inputTokens);
    const latencyMs = Math.round(performance.now() - admitted.started);
    const billed = this.resolveReservation(admitted, served, settlement, latencyMs);
    if (ending.kind === 'complete') {
      if (billed) subscriber.next(billed);
      subscriber.complete();
      return;
    }
    const error = endingError(ending, served.host.id, this.config.requestTimeoutMs);
    if (error) subscriber.error(error);
  }

  /**
   * The one place a reservation is resolved. A completed request's charge is a pure function of
   * its usage: it is reported at once (returned, to bill the client) while the ledger records
   * the same event; other endings settle or release in the background.
   */
  private resolveReservation(admitted: Admitted, served: ModelHost, settlement: Settlement, latencyMs: number) {
    const { ticket, input } = admitted;
    const logFailure = (error: Error) => this.logger.error(`settlement of ${input.requestId} failed: ${error.message}`);
    if (settlement.action === 'none') return null;
    if (settlement.action === 'release') {
      const { reason, status } = settlement;
      this.ledger.release(ticket, { reason, host: served.host.id, status, latencyMs }).catch(logFailure);
      return null;
    }
    const { usage, status } = settlement;
    const outcome = { usage, prices: served.prices, host: served.host.id, hostModel: served.model, status, latencyMs };
    if (status !== 'ok') {
      this.ledger.recordSettlement(ticket, outcome).catch(logFailure);
      return null;
    }
    const { event, appended } = this.ledger.startSettlement(ticket, outcome);
    appended.catch(logFailure);
    return billedOf(event, served.host.id);
  }
}
