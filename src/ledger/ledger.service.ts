import { randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { handleCommand, readStreamState } from '../eventstore/command-handler';
import { AppendOutcomeUnknownError, EventStore, WrongExpectedRevisionError } from '../eventstore/event-store';
import { organizationDecider } from '../identity/organization.decider';
import { organizationStream } from '../identity/identity.events';
import type { KeyLimit } from '../identity/identity.events';
import { maskSecrets } from '../key-secret/key-secret';
import { CatalogueLoaded, catalogueStream } from './catalogue-loaded';
import type { CreditHolds } from './credit-holds';
import { keyHold } from './key-limit';
import {
  chargedGeneration,
  creditAccountDecider,
  creditNoteIssued,
  grantMade,
  decideRefusal,
  LedgerRuleError,
  Refuse,
  Release,
  RecordProgress,
  Reserve,
  Reservation,
  ReservationCommand,
  reservationDecider,
  Settle,
} from './ledger.decider';
import {
  CreditNoteIssued,
  CreditsGranted,
  RequestFacts,
  RequestRefused,
  ReservationEvent,
  creditsStream,
  refusalStream,
  reservationStream,
} from './ledger.events';

export type Clock = () => number;

/** The settlement's command (on every request: members set one by one, no spread objects). */
function settleCommand(s: Omit<Settle, 'type' | 'now'>, now: number): Settle {
  const command: Settle = {
    type: 'Settle',
    usage: s.usage,
    prices: s.prices,
    host: s.host,
    hostModel: s.hostModel,
    status: s.status,
    latencyMs: s.latencyMs,
    now,
  };
  if (s.usageFlag !== undefined) command.usageFlag = s.usageFlag;
  if (s.estimated !== undefined) command.estimated = s.estimated;
  if (s.upstreamId !== undefined) command.upstreamId = s.upstreamId;
  if (s.attempts !== undefined) command.attempts = s.attempts;
  return command;
}

export interface LedgerSettings {
  /** A reservation never resolved (a crash) expires after this long. */
  reservationTtlMs: number;
  /** A hold whose reservation event never reached the log is undone after this long. */
  pendingHoldMs: number;
  /**
   * Resolves once the read models hold everything in the log when it was called (bounded; never
   * rejects): credits granted a moment ago by another process (the operator tool, another worker)
   * may not be in them yet. Absent: they are taken as they are.
   */
  caughtUp?: () => Promise<void>;
}

/** An admitted reservation as its request holds it: enough to settle without reading the log. */
export interface ReservationTicket {
  reservationId: string;
  orgId: string;
  amount: number;
  state: Reservation;
  revision: number;
  /** The reservation event's position in the log (a read model at it shows the hold). */
  position: number;
  /** The progress being written, if any: a resolution waits for it, so as to append after it. */
  progress: Promise<void> | null;
}

/**
 * The reservation event could not be written (the log refused it, or its outcome is unknown):
 * the request must not go on, since nothing it delivered could be billed.
 */
export class ReservationNotRecordedError extends Error {
  constructor(cause: unknown) {
    super(`the reservation could not be recorded: ${(cause as Error)?.message ?? String(cause)}`);
    this.name = 'ReservationNotRecordedError';
  }
}

export type Admission =
  { admitted: true; ticket: ReservationTicket } | { admitted: false; available: number; keyRemaining?: number };

/** What a request asks the ledger to hold for it. */
export type AdmissionRequest = RequestFacts & { orgId: string; amount: number; keyLimit?: KeyLimit; catalogueVersion?: string };

/** A grant as the log holds it; `alreadyGranted`: its id had granted before, and nothing more was granted now. */
export interface Granted {
  grant: CreditsGranted['data'];
  alreadyGranted: boolean;
}

/** A credit note as the log holds it; `alreadyIssued`: its idempotency key had issued it before, and nothing more was issued now. */
export interface IssuedCreditNote {
  note: CreditNoteIssued['data'];
  alreadyIssued: boolean;
  /** The log position of its credits stream after it: read models include the note once they reach it. */
  position: number;
}

/** A credit note as a caller asks for it (see IssueCreditNote). */
export interface CreditNoteRequest {
  orgId: string;
  idempotencyKey: string;
  kind: 'refund' | 'adjustment';
  reservationId: string | null;
  /** Nano-credits; null for a refund of all its generation's charge not yet refunded. */
  amount: number | null;
  reason: string;
  memo?: string;
  issuedBy: string;
}

/** A reservation's ending as the log holds it: the event, and its position (read models include it once they reach it). */
export interface Resolution {
  event: ReservationEvent;
  position: number;
}

/**
 * The ledger's commands, each run by the event-sourced command handler (read the stream, fold
 * it, decide, append with the revision read). The request path is the exception, measured and
 * kept lean: admission is the projection store's atomic hold and an append to a stream it has
 * just named; a settlement appends with the revision its ticket holds. The event log stays the truth.
 */
export class LedgerService {
  constructor(
    private readonly events: EventStore,
    private readonly holds: CreditHolds,
    private readonly settings: LedgerSettings,
    private readonly clock: Clock = Date.now,
    // Time-ordered (UUID v7): each new reservation stream lands at the end of the log's index,
    // where its pages are cached, not on a random page (random ids made every commit slower as the log grew).
    private readonly newId: () => string = uuidv7,
  ) {}

  /**
   * Grants `amount` credits to an organization, once per `grantId`: a grant retried with its id
   * (after a timeout, a lost reply) grants nothing more and answers the grant made.
   */
  async grant(orgId: string, amount: number, reason: string, grantId: string = randomUUID()): Promise<Granted> {
    const { state: organization } = await readStreamState(this.events, organizationStream(orgId), organizationDecider);
    if (!organization.exists) throw new LedgerRuleError('organization_not_found', `no organization ${orgId}`);
    // The operator's reason is stored: a secret pasted into it is masked first.
    const command = { type: 'GrantCredits' as const, orgId, grantId, amount, reason: maskSecrets(reason), now: this.clock() };
    const { events, state } = await handleCommand(this.events, creditsStream(orgId), creditAccountDecider, command, {
      retries: Infinity,
    });
    if (events.length > 0) return { grant: (events[0] as CreditsGranted).data, alreadyGranted: false };
    return { grant: grantMade(state, grantId)!, alreadyGranted: true };
  }

  /**
   * Issues a credit note (a refund of one generation, or an adjustment of the balance), once per
   * idempotency key: asked again with its key, it issues nothing more and answers the note issued.
   * The decider holds the rules; this reads what they weigh: the generation's charge from its
   * reservation stream, and (for a debit) the available balance from the read models.
   */
  /** The note an idempotency key issued for the organization before, or null. */
  async creditNoteIssuedWith(orgId: string, idempotencyKey: string): Promise<IssuedCreditNote | null> {
    const { state, position } = await readStreamState(this.events, creditsStream(orgId), creditAccountDecider);
    const note = creditNoteIssued(state, idempotencyKey);
    return note ? { note, alreadyIssued: true, position } : null;
  }

  async issueCreditNote(request: CreditNoteRequest): Promise<IssuedCreditNote> {
    const { orgId, reservationId } = request;
    const { state: organization } = await readStreamState(this.events, organizationStream(orgId), organizationDecider);
    if (!organization.exists) throw new LedgerRuleError('organization_not_found', `no organization ${orgId}`);
    const generation =
      request.kind === 'refund' && typeof reservationId === 'string' && reservationId !== ''
        ? chargedGeneration((await this.events.readStream(reservationStream(reservationId))) as unknown as ReservationEvent[])
        : null;
    const balance = await this.holds.balance(orgId);
    const command = {
      type: 'IssueCreditNote' as const,
      orgId,
      creditNoteId: randomUUID(),
      idempotencyKey: request.idempotencyKey,
      kind: request.kind,
      // As asked: the decider refuses an adjustment that names a generation (dropping it would hide the mistake).
      reservationId,
      amount: request.amount,
      reason: request.reason,
      // The memo is stored: a secret pasted into it is masked first.
      ...(request.memo === undefined ? {} : { memo: maskSecrets(request.memo) }),
      issuedBy: request.issuedBy,
      generation,
      available: balance.granted - balance.spent - balance.reserved - balance.pending,
      now: this.clock(),
    };
    const { events, state, position } = await handleCommand(this.events, creditsStream(orgId), creditAccountDecider, command, {
      retries: Infinity,
    });
    if (events.length > 0) return { note: (events[0] as CreditNoteIssued).data, alreadyIssued: false, position };
    return { note: creditNoteIssued(state, request.idempotencyKey)!, alreadyIssued: true, position };
  }

  /**
   * Admits a request if the organization's available balance covers `amount`: the atomic hold,
   * then the reservation event, durable in the log before this resolves, so that nothing a host
   * delivers can outlive a crash without its reservation. Rejects with ReservationNotRecordedError
   * when the log did not take the event. Refused for the balance, it asks once more once the read
   * models have caught up with the log (`caughtUp`); an admitted request never waits for that.
   */
  admit(request: AdmissionRequest): Promise<Admission> {
    return this.tryAdmit(request, this.settings.caughtUp);
  }

  /** One try at admission; `caughtUp`, when given, lets a refusal for the balance try again once it has run (once). */
  private async tryAdmit(request: AdmissionRequest, caughtUp: (() => Promise<void>) | undefined): Promise<Admission> {
    const reservationId = this.newId();
    const now = this.clock();
    const none = reservationDecider.initialState();
    const reserve: Reserve = {
      type: 'Reserve',
      reservationId,
      orgId: request.orgId,
      amount: request.amount,
      requestId: request.requestId,
      keyId: request.keyId,
      surface: request.surface,
      model: request.model,
      ttlMs: this.settings.reservationTtlMs,
      now,
    };
    if (request.omittedTools !== undefined) reserve.omittedTools = request.omittedTools;
    if (request.catalogueVersion !== undefined) reserve.catalogueVersion = request.catalogueVersion;
    const [event] = reservationDecider.decide(reserve, none);
    const admission = await this.holds.hold(
      request.orgId,
      reservationId,
      request.amount,
      now + this.settings.pendingHoldMs,
      keyHold(request.keyId, request.keyLimit, now),
    );
    if (!admission.admitted) {
      // The balance the read models show did not cover it: they may not hold yet what another process
      // granted a moment ago. Once they hold the log as it is now, the hold is asked for again, once:
      // the refusal held nothing, so that second answer alone decides, atomically as the first would
      // have. A key's limit (checked after the balance, see CreditHolds.hold) is left as it is.
      if (admission.keyRemaining !== undefined || caughtUp === undefined) return admission;
      await caughtUp();
      return this.tryAdmit(request, undefined);
    }
    let position: number;
    try {
      // In the log before the host is called, without waiting for the disk: a reservation lost with
      // the machine (and all after it: the log stays a prefix) would only have been released; the
      // settlement's append, which waits for the disk, takes it there first.
      ({ position } = await this.events.append(reservationStream(reservationId), [event], 'no_stream', 'log'));
    } catch (error) {
      // An append that may have landed keeps its hold: if the event is in the log, applying it
      // turns the hold into a recorded reservation (which expires unless settled); if not, the
      // hold is swept after pendingHoldMs. Dropping it could let the balance be spent twice.
      if (!(error instanceof AppendOutcomeUnknownError)) await this.holds.dropHold(request.orgId, reservationId);
      throw new ReservationNotRecordedError(error);
    }
    return {
      admitted: true,
      ticket: {
        reservationId,
        orgId: request.orgId,
        amount: request.amount,
        state: reservationDecider.evolve(none, event),
        revision: 0,
        position,
        progress: null,
      },
    };
  }

  /**
   * Puts a catalogue version's prices in the log, once: a version already there (written by
   * another instance, or before a restart) is left as it is.
   */
  async recordCatalogue(loaded: CatalogueLoaded['data']): Promise<void> {
    const event: CatalogueLoaded = { type: 'CatalogueLoaded', data: loaded };
    try {
      await this.events.append(catalogueStream(loaded.version), [event], 'no_stream');
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
    }
  }

  /** Settles the reservation at the charge its usage gives; resolves once the settlement is in the log. */
  async recordSettlement(ticket: ReservationTicket, settlement: Omit<Settle, 'type' | 'now'>): Promise<Resolution> {
    return this.resolve(ticket, settleCommand(settlement, this.clock()));
  }

  /**
   * Records what the reservation's stream has delivered so far; resolves once it is in the log. One
   * at a time per reservation: a caller skips a record while the last is being written.
   */
  async recordProgress(ticket: ReservationTicket, progress: Omit<RecordProgress, 'type' | 'now'>): Promise<void> {
    const [event] = reservationDecider.decide({ type: 'RecordProgress', ...progress, now: this.clock() }, ticket.state);
    const written = this.events.append(reservationStream(ticket.reservationId), [event], ticket.revision).then((result) => {
      ticket.revision = result.nextExpectedRevision;
      ticket.state = reservationDecider.evolve(ticket.state, event);
    });
    const settled: Promise<void> = written.then(
      () => undefined,
      () => undefined,
    );
    ticket.progress = settled;
    void settled.then(() => {
      if (ticket.progress === settled) ticket.progress = null;
    });
    await written;
  }

  /** Releases the reservation's hold in full; resolves once the release is in the log. */
  async release(ticket: ReservationTicket, release: Omit<Release, 'type' | 'now'>): Promise<Resolution> {
    const { reason, host, status, latencyMs, attempts } = release;
    return this.resolve(ticket, {
      type: 'Release',
      reason,
      host,
      status,
      latencyMs,
      ...(attempts === undefined ? {} : { attempts }),
      now: this.clock(),
    });
  }

  /** Records a request turned away before any reservation, for the request log; nothing is held or charged. */
  async refuse(refusal: Omit<Refuse, 'type' | 'refusalId' | 'now'>): Promise<RequestRefused> {
    const refusalId = this.newId();
    const [event] = decideRefusal({ ...refusal, type: 'Refuse', refusalId, now: this.clock() });
    await this.events.append(refusalStream(refusalId), [event], 'no_stream');
    return event;
  }

  /** Expires a reservation past its expiry; a no-op (false) if another instance resolved it first. */
  async expire(reservationId: string): Promise<boolean> {
    try {
      await handleCommand(this.events, reservationStream(reservationId), reservationDecider, {
        type: 'Expire',
        now: this.clock(),
      });
      return true;
    } catch (error) {
      if (error instanceof LedgerRuleError || error instanceof WrongExpectedRevisionError) return false;
      throw error;
    }
  }

  /** Expires every reservation past its expiry; whichever instance notices first wins. */
  async expireDue(limit = 500): Promise<number> {
    const due = await this.holds.expiredReservations(this.clock(), limit);
    const results = await Promise.all(due.map((r) => this.expire(r.reservationId)));
    return results.filter(Boolean).length;
  }

  /**
   * Settles or releases exactly once: appended with the revision the ticket holds, with no read
   * (the request path); if the stream moved (another instance expired it), the command is run
   * again on what the stream holds, once.
   */
  private async resolve(ticket: ReservationTicket, command: ReservationCommand): Promise<Resolution> {
    if (ticket.progress) await ticket.progress;
    const [decided] = reservationDecider.decide(command, ticket.state);
    try {
      const { position } = await this.events.append(reservationStream(ticket.reservationId), [decided], ticket.revision);
      return { event: decided, position };
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
      const { events, position } = await handleCommand(
        this.events,
        reservationStream(ticket.reservationId),
        reservationDecider,
        command,
      );
      return { event: events[0], position };
    }
  }
}
