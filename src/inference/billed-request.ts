import { Inject, Injectable, Logger } from '@nestjs/common';
import type { HostError } from '../canonical/canonical';
import { billedPrices, Catalogue, CatalogueModel, ModelHost } from '../catalogue/catalogue';
import type { Config } from '../config/config';
import { ApiError } from '../http/api-error';
import { maskSecrets } from '../key-secret/key-secret';
import { invalidApiKey, ordinaryKey } from '../http/credentials';
import { IdentityService } from '../identity/identity.service';
import { MAX_OMITTED_TOOLS, MAX_TOOL_TYPE_LENGTH } from '../ledger/ledger.decider';
import { LedgerService, ReservationNotRecordedError, ReservationTicket, Resolution } from '../ledger/ledger.service';
import type { HostAttempt, TokenClass } from '../ledger/ledger.events';
import type { TokenUsage } from '../ledger/money';
import type { RequestFacts } from '../observability/request-facts';
import { failed } from '../observability/span-attributes';
import type { RateLimitStore } from '../rate-limits/rate-limit-store';
import { rateLimited, rateLimitHeaders, totalTokens } from '../rate-limits/rate-limits';
import { CONFIG, RATE_LIMITS } from '../runtime/runtime.module';
import { ledgerRefusal, Refusal, reservationNotRecorded } from './admission';
import type { Ending } from './attempt';
import { CatalogueVersions } from './catalogue-versions';
import { describeEnding, describeRefusal } from './facts';
import { InFlightSettlements, OpenRequests } from './in-flight';
import type { Billed, InferenceCaller, SurfaceName } from './inference.command';
import { RequestRecord } from './request-record';
import type { CheckedUsage } from './usage-check';
import { ledgerPositionHeader } from '../read-your-writes/ledger-position';
import { answerAtEnd, billedOf, CallEnded, nothingDelivered, Settlement } from './settlement';

/**
 * The billed-request shell: what every use case that bills does around its own work, written
 * once. Authenticate, apply the key's rate limits, admit what the use case planned (the ledger's
 * hold), and, once the use case's call has ended, settle or release the hold, record it, and
 * tell the client. A use case brings its plan (which model, what to hold), its call to hosts and
 * its settle decision; the rules are the pure functions beside this (admission, settlement).
 */

/** What every billed request carries: who pays, the model asked for (a slug or UUID), its id, its facts (absent: not logged). */
export type BilledAsk = InferenceCaller & {
  model: string;
  requestId: string;
  facts?: RequestFacts;
};

/** What a use case's plan says to the ledger: the model serving and the nano-credits to hold. */
export interface BilledPlan {
  kind: 'reserve';
  model: CatalogueModel;
  amount: number;
  /** The hosted tools left out of the call (see OMITTED_TOOLS_HEADER), recorded with the request; absent when none. */
  omittedTools?: string[];
  /** The betas left out of the call (see OMITTED_BETAS_HEADER), named in the request's log line; absent when none. */
  omittedBetas?: string[];
}

/** A use case that bills, as the shell admits it. */
export interface BilledUseCase<Ask extends BilledAsk, Plan extends BilledPlan> {
  /**
   * Given what the catalogue found for the model asked for and who pays: what to hold and call, or
   * why not. Decided by pure functions; a use case may first read what routing needs (a promise then).
   */
  plan(
    ask: Ask,
    catalogued: CatalogueModel | null,
    payer: { orgId: string; keyId: string },
  ): Plan | Refusal | Promise<Plan | Refusal>;
  /** The 402 for a balance (`available`, nano-credits) below the plan's hold: the use case's own count of what it could afford. */
  insufficient(plan: Plan, available: number): ApiError;
}

/** A use case answered in one piece (JSON): a plan, a call to its hosts in turn, and the reply's usage. */
export interface WholeReplyUseCase<Ask extends BilledAsk, Plan extends BilledPlan, Reply> extends BilledUseCase<Ask, Plan> {
  /**
   * Calls the plan's hosts in turn; resolves (never rejects) with the reply, or the failure that
   * ended the attempt. `shutdown` aborted (the end of the shutdown's grace period, before the call or
   * during it): the call given up, resolving as `shutdown`.
   */
  call(request: Admitted<Plan>, shutdown: AbortSignal): Promise<HostsCalled<Reply>>;
  /** The tokens to bill for a host's reply: its count when believable, else the estimate (`estimated`: the classes that are). */
  usage(request: Admitted<Plan>, served: ModelHost, reply: Reply): { usage: TokenUsage; estimated: TokenClass[] };
}

/**
 * A call to a plan's hosts in turn, ended: the reply of the host that served, the failure that ended
 * the attempt, or the shutdown's (still open at its grace period's end: the call in flight given up;
 * `served`, the host it was on, or would have been).
 */
export type HostsCalled<Reply> = {
  served: ModelHost;
  fallback: boolean;
  upstreamMs: number;
  /** Every host call on the way, in order (recorded with the settlement or release). */
  attempts?: HostAttempt[];
} & ({ kind: 'replied'; reply: Reply } | { kind: 'failed'; error: HostError } | { kind: 'shutdown' });

/** An admitted request: its hold taken, to be settled or released exactly once (`end`). */
export interface Admitted<Plan extends BilledPlan> {
  requestId: string;
  facts: RequestFacts | undefined;
  plan: Plan;
  ticket: ReservationTicket;
  /** performance.now() when the request arrived. */
  started: number;
  /** The key, when it has a tokens-per-minute limit: its billed tokens are counted against it. */
  tokensLimited: { orgId: string; keyId: string } | null;
  /** Headers every answer to the request carries (a key's rate limits). */
  headers: Record<string, string> | undefined;
}

/** Whoever hears a request's ending: what was billed, then completion; or an error. */
export interface Listener {
  next(billed: Billed): void;
  complete(): void;
  error(error: ApiError): void;
}

/** A request answered in one piece, settled: its reply and what was billed for it. */
export interface WholeReply<Plan extends BilledPlan, Reply> {
  request: Admitted<Plan>;
  reply: Reply;
  billed: Billed;
}

const COMPLETE: Ending = { kind: 'complete' };
const SHUT_DOWN = { kind: 'shutdown' } as const;

@Injectable()
export class BilledRequests {
  private readonly logger = new Logger('Billing');
  private readonly catalogueVersions: CatalogueVersions;

  constructor(
    private readonly identity: IdentityService,
    private readonly ledger: LedgerService,
    private readonly catalogue: Catalogue,
    private readonly record: RequestRecord,
    private readonly inFlight: InFlightSettlements,
    private readonly open: OpenRequests,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(RATE_LIMITS) private readonly rateLimits: RateLimitStore,
  ) {
    this.catalogueVersions = new CatalogueVersions(ledger, catalogue);
  }

  /**
   * Authenticate (an API key, or a principal already authenticated), the key's rate limits, the
   * use case's plan, the ledger's hold: the admitted request, or the refusal thrown (recorded,
   * carrying the rate-limit headers).
   */
  async admit<Ask extends BilledAsk, Plan extends BilledPlan>(
    surface: SurfaceName,
    ask: Ask,
    useCase: BilledUseCase<Ask, Plan>,
  ): Promise<Admitted<Plan>> {
    const started = performance.now();
    const facts = ask.facts;
    if (facts) {
      facts.surface = surface;
      facts.requested = ask.model.slice(0, 256);
    }
    const apiKey = ask.principal === undefined ? ordinaryKey(await this.identity.authenticate(ask.apiKey)) : null;
    const key = ask.principal ?? apiKey;
    if (!key) throw invalidApiKey();
    if (facts) {
      facts.orgId = key.orgId;
      facts.keyId = key.keyId;
    }
    // Admission, timed as a span of the request's trace when it has one.
    const span = facts?.trace?.tracing.child(facts.trace.context, 'admission');
    try {
      // Every request of a key with rate limits counts, whatever becomes of it, and every answer
      // shows them. The playground (a signed-in member, no key) has none.
      const limited = apiKey && (await this.rateLimits.check(apiKey.orgId, apiKey.keyId, apiKey.rateLimits, Date.now()));
      const headers = limited === null ? undefined : rateLimitHeaders(limited);
      if (limited && !limited.admitted) throw this.refuse(surface, ask, key, started, ask.model, rateLimited(limited));
      // The version read in the same tick as the model is found: the request is priced with that version.
      const priced = this.catalogueVersions.current();
      const plan = await useCase.plan(ask, this.catalogue.find(ask.model), key);
      if (plan.kind === 'refuse') throw this.refuse(surface, ask, key, started, plan.model, plan.error.withHeaders(headers));
      if (facts) facts.model = plan.model.slug;
      const omitted = plan.omittedTools;
      if (facts && omitted !== undefined) facts.omittedTools = omitted;
      if (facts && plan.omittedBetas !== undefined) facts.omittedBetas = plan.omittedBetas;
      const unrecorded = priced?.recording ? await priced.recording : null;
      if (unrecorded !== null) {
        // A reservation names a version whose prices are in the log, or is not made.
        this.logger.error(`request ${ask.requestId}: catalogue version ${priced!.version} not recorded: ${unrecorded.message}`);
        throw reservationNotRecorded().withHeaders(headers);
      }
      const admission = await this.ledger
        .admit({
          requestId: ask.requestId,
          keyId: key.keyId,
          surface,
          model: plan.model.slug,
          // Client-named types (a hosted tool's prefix and any tail): bounded and masked for the log.
          ...(omitted === undefined
            ? {}
            : {
                omittedTools: omitted.slice(0, MAX_OMITTED_TOOLS).map((type) => maskSecrets(type.slice(0, MAX_TOOL_TYPE_LENGTH))),
              }),
          orgId: key.orgId,
          amount: plan.amount,
          keyLimit: apiKey?.limit,
          ...(priced === null ? {} : { catalogueVersion: priced.version }),
        })
        .catch((error: unknown) => {
          if (!(error instanceof ReservationNotRecordedError)) throw error;
          // The host is called only once the reservation is durable: without it, nothing goes on.
          this.logger.error(`request ${ask.requestId}: ${error.message}`);
          throw reservationNotRecorded().withHeaders(headers);
        });
      if (!admission.admitted) {
        const refusal = ledgerRefusal(admission, apiKey?.limit, plan.amount, (available) =>
          useCase.insufficient(plan, available),
        );
        throw this.refuse(surface, ask, key, started, plan.model.slug, refusal.withHeaders(headers));
      }
      span?.end();
      const tokensLimited = limited?.tokens === undefined ? null : key;
      return { requestId: ask.requestId, facts, plan, ticket: admission.ticket, started, tokensLimited, headers };
    } catch (error) {
      if (span) failed(span, (error as Error).message);
      throw error;
    }
  }

  /**
   * A use case answered in one piece: admitted (its reservation in the log), its hosts called,
   * then settled from the reply's usage or released. Errors after admission carry the rate-limit
   * headers. Still calling when the shutdown's grace period ends: the call given up and the hold
   * released as `shutdown`, answered 503; past it already: the same, no host called.
   */
  async serve<Ask extends BilledAsk, Plan extends BilledPlan, Reply>(
    surface: SurfaceName,
    ask: Ask,
    useCase: WholeReplyUseCase<Ask, Plan, Reply>,
  ): Promise<WholeReply<Plan, Reply>> {
    const request = await this.admit(surface, ask, useCase);
    const shutdown = new AbortController();
    // Ended by the shutdown, the request's ending is tracked once its call has given up: the shutdown waits till then.
    let endingTracked = (): void => undefined;
    const forget = this.open.whileOpen(() => {
      shutdown.abort();
      return new Promise<void>((resolve) => (endingTracked = resolve));
    });
    if (forget === null) shutdown.abort();
    try {
      const called = await useCase.call(request, shutdown.signal);
      forget?.();
      if (request.facts) request.facts.upstreamMs = called.upstreamMs;
      const ending = new Promise<Billed | null>((resolve, reject) => {
        let charged: Billed | null = null;
        const listener: Listener = { next: (b) => (charged = b), complete: () => resolve(charged), error: reject };
        try {
          this.end(request, this.wholeEnded(request, useCase, called), listener);
        } catch (error) {
          this.abandon(request, called.served, error, listener);
        }
      });
      endingTracked();
      const billed = await ending;
      if (called.kind !== 'replied' || billed === null) throw new ApiError('internal_error', 'the request could not be settled');
      return { request, reply: called.reply, billed };
    } catch (error) {
      throw error instanceof ApiError ? error.withHeaders(request.headers) : error;
    } finally {
      forget?.();
      endingTracked();
    }
  }

  /**
   * How a call answered in one piece ended, and what to record: the reply's usage billed, or (nothing
   * delivered: a failure, or the shutdown) the hold released.
   */
  private wholeEnded<Ask extends BilledAsk, Plan extends BilledPlan, Reply>(
    request: Admitted<Plan>,
    useCase: WholeReplyUseCase<Ask, Plan, Reply>,
    called: HostsCalled<Reply>,
  ): CallEnded {
    const { served, fallback, attempts } = called;
    if (called.kind !== 'replied') {
      const ending = called.kind === 'failed' ? ({ kind: 'failed', error: called.error } as const) : SHUT_DOWN;
      return { served, fallback, ending, settlement: nothingDelivered(ending), attempts };
    }
    const { usage, estimated } = useCase.usage(request, served, called.reply);
    const settlement = { action: 'settle', status: 'ok', usage, flag: null, estimated } as const;
    return { served, fallback, ending: COMPLETE, settlement, attempts };
  }

  /**
   * The request's one ending: the ledger told (settled or released), then the client told — billed
   * and complete, or an error — once the log holds the ending and the read models show it, so a
   * reply is never served unbilled and a balance read after it includes it. A client gone is told
   * nothing; the ledger is told all the same. What the request's log line, metrics and trace show
   * of it is filled in once the ledger has answered.
   */
  end(request: Admitted<BilledPlan>, ended: CallEnded, listener: Listener): void {
    const { served, settlement } = ended;
    if (settlement.action === 'settle' && settlement.flag !== null) {
      this.logger.warn(
        `request ${request.requestId}: usage of host ${served.host.id} not billed as reported: ${settlement.flag}`,
      );
    }
    const latencyMs = Math.round(performance.now() - request.started);
    const resolved = this.traced(
      request.facts,
      'settlement',
      this.resolve(request, served, settlement, latencyMs, ended.upstreamId ?? null, ended.attempts),
    );
    const told = resolved.then(
      (resolution) => this.tell(request, ended, resolution, listener),
      () => this.tell(request, ended, undefined, listener),
    );
    // A request whose client has gone is logged once its settlement is known.
    const settled = this.inFlight.track(told);
    if (request.facts) request.facts.settled = settled;
  }

  /**
   * Records in the log what a stream has delivered so far (its tokens as a cut now would bill
   * them, at the serving host's prices), for its reservation's expiry to bill if the request never
   * ends (a crash). Resolves once written; a failure is logged, not the request's: its settlement
   * will meet the same log.
   */
  recordProgress(
    request: Admitted<BilledPlan>,
    served: ModelHost,
    progress: CheckedUsage,
    deliveredChars: number,
  ): Promise<void> {
    const { usage, flag, estimated } = progress;
    return this.ledger
      .recordProgress(request.ticket, {
        usage,
        // A cut at this moment bills these tokens as a settlement would: at the band their prompt is in.
        prices: billedPrices(served, usage),
        host: served.host.id,
        hostModel: served.model,
        deliveredChars,
        ...(flag === null ? {} : { usageFlag: flag }),
        ...(estimated.length === 0 ? {} : { estimated }),
      })
      .catch((error: Error) => this.logger.warn(`progress of ${request.requestId} not recorded: ${error.message}`));
  }

  /**
   * An unexpected failure deciding a request's ending (a bug) ends that request alone: its hold
   * released, the client told. A use case whose call ends inside a host's callbacks must not let it
   * escape: rxjs would rethrow it on a timer and end the process.
   */
  abandon(request: Admitted<BilledPlan>, served: ModelHost | undefined, error: unknown, listener: Listener): void {
    const { requestId } = request;
    this.logger.error(`request ${requestId} could not be settled: ${(error as Error)?.message ?? String(error)}`);
    this.ledger
      .release(request.ticket, {
        reason: 'the settlement could not be decided',
        host: served?.host.id ?? null,
        status: 'internal_error',
        latencyMs: Math.round(performance.now() - request.started),
      })
      .catch((e: Error) => this.logger.error(`release of ${requestId} failed: ${e.message}`));
    listener.error(new ApiError('internal_error', 'the request could not be settled; nothing was billed'));
  }

  /** A known organization's request turned away: in its facts, and its request log (within the budget). */
  private refuse(
    surface: SurfaceName,
    ask: BilledAsk,
    key: { orgId: string; keyId: string },
    started: number,
    model: string,
    error: ApiError,
  ): ApiError {
    if (ask.facts) describeRefusal(ask.facts, error);
    const request = { requestId: ask.requestId, surface, orgId: key.orgId, keyId: key.keyId };
    return this.record.refused(request, model, error, started);
  }

  /** The ledger has answered (`resolution`; undefined: the log did not take it): the facts filled in, the client told. */
  private tell(request: Admitted<BilledPlan>, ended: CallEnded, resolution: Resolution | undefined, listener: Listener): void {
    const { served, ending } = ended;
    const error = answerAtEnd(ending, served.host.id, this.config.requestTimeoutMs, resolution !== undefined);
    if (request.facts) describeEnding(request.facts, ended, error, resolution ?? null);
    if (ending.kind === 'abort') return;
    // A failure answered whole names its release's position, as a reply names its settlement's.
    if (error) return listener.error(resolution ? error.withHeaders(ledgerPositionHeader(resolution.position)) : error);
    const billed = resolution && billedOf(resolution.event, served.host.id, resolution.position);
    if (billed) listener.next(billed);
    listener.complete();
  }

  /**
   * The one place a reservation is resolved: settled (its tokens counted against the key's
   * tokens per minute) or released in the log, then awaited in the read models. Rejects when the
   * log did not take it.
   */
  private async resolve(
    request: Admitted<BilledPlan>,
    served: ModelHost,
    settlement: Settlement,
    latencyMs: number,
    upstreamId: string | null,
    attempts: HostAttempt[] | undefined,
  ): Promise<Resolution> {
    let resolution: Resolution;
    try {
      if (settlement.action === 'release') {
        const { reason, status } = settlement;
        resolution = await this.ledger.release(request.ticket, {
          reason,
          host: served.host.id,
          status,
          latencyMs,
          ...(attempts === undefined ? {} : { attempts }),
        });
      } else {
        const { usage, status, flag, estimated } = settlement;
        const outcome = {
          usage,
          // The serving host's prices, its long-context band's when the prompt it counted is above one.
          prices: billedPrices(served, usage),
          host: served.host.id,
          hostModel: served.model,
          status,
          latencyMs,
          ...(flag === null ? {} : { usageFlag: flag }),
          ...(estimated.length === 0 ? {} : { estimated }),
          // A host's text may hold a key (ours or its own): masked before it is recorded.
          ...(upstreamId === null ? {} : { upstreamId: maskSecrets(upstreamId) }),
          ...(attempts === undefined ? {} : { attempts }),
        };
        resolution = await this.ledger.recordSettlement(request.ticket, outcome);
        if (request.tokensLimited) this.countTokens(request.tokensLimited, usage);
      }
    } catch (error) {
      this.logger.error(`${settlement.action} of ${request.requestId} not recorded: ${(error as Error).message}`);
      throw error;
    }
    await this.record.shown(resolution, request.requestId);
    return resolution;
  }

  /** A settled request's billed tokens, counted against its key's tokens per minute (a failure is logged, not the request's). */
  private countTokens(key: { orgId: string; keyId: string }, usage: TokenUsage): void {
    this.rateLimits
      .spend(key.orgId, key.keyId, totalTokens(usage), Date.now())
      .catch((error: Error) => this.logger.warn(`tokens of key ${key.keyId} not counted for its rate limit: ${error.message}`));
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
}
