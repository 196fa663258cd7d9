import type { Decider } from '../eventstore/command-handler';
import {
  CREDIT_NOTE_REASONS,
  CreditNoteIssued,
  CreditNoteReason,
  CreditsGranted,
  CreditsReserved,
  HostAttempt,
  MAX_ATTEMPTS,
  RequestFacts,
  RequestOutcome,
  ReservationEvent,
  ReservationExpired,
  ReservationProgress,
  ReservationReleased,
  ReservationSettled,
  RequestRefused,
  settledCharge,
  TOKEN_CLASSES,
  TokenClass,
} from './ledger.events';
import { HOSTED_TOOL_CLASSES } from '../canonical/canonical';
import {
  chargeFor,
  formatCredits,
  HostedToolCounts,
  HostedToolPrices,
  isNanoAmount,
  isTokenCount,
  MAX_NANO,
  TokenPrices,
  TokenUsage,
} from './money';

/** A rule of the ledger was broken; `code` says which, the message says it for people. */
export class LedgerRuleError extends Error {
  constructor(
    readonly code:
      | 'invalid_amount'
      | 'invalid_usage'
      | 'invalid_omitted_tools'
      | 'invalid_attempts'
      | 'reservation_exists'
      | 'reservation_not_found'
      | 'already_resolved'
      | 'not_expired'
      | 'balance_overflow'
      | 'organization_not_found'
      | 'grant_conflict'
      | 'invalid_credit_note'
      | 'generation_not_found'
      | 'refund_exceeds_charge'
      | 'insufficient_balance'
      | 'credit_note_conflict',
    message: string,
  ) {
    super(message);
    this.name = 'LedgerRuleError';
  }
}

// ---------------------------------------------------------------------------------------------
// The credit account of an organization: grants, each made once per grant id, and credit notes
// (refunds of generations, adjustments of the balance), each issued once per idempotency key.

export interface CreditAccount {
  /** Σ grants + Σ credit notes (signed): what the account has been credited, bounded by MAX_NANO. */
  granted: number;
  /** The grants made, by grant id: a grant asked again (a retry) is answered with the one made. */
  grants: ReadonlyMap<string, CreditsGranted['data']>;
  /** The credit notes issued, by idempotency key: a note asked again is answered with the one issued. */
  creditNotes: ReadonlyMap<string, CreditNoteIssued['data']>;
  /** What the refunds of each generation (by reservation id) have returned so far. */
  refunded: ReadonlyMap<string, number>;
}

export type CreditAccountEvent = CreditsGranted | CreditNoteIssued;

export const initialCreditAccount = (): CreditAccount => ({
  granted: 0,
  grants: new Map(),
  creditNotes: new Map(),
  refunded: new Map(),
});

export function evolveCreditAccount(state: CreditAccount, event: CreditAccountEvent): CreditAccount {
  if (event.type === 'CreditsGranted') {
    return {
      ...state,
      granted: state.granted + event.data.amount,
      grants: new Map(state.grants).set(event.data.grantId, event.data),
    };
  }
  const note = event.data;
  return {
    ...state,
    granted: state.granted + note.amount,
    creditNotes: new Map(state.creditNotes).set(note.idempotencyKey, note),
    refunded:
      note.reservationId === null
        ? state.refunded
        : new Map(state.refunded).set(note.reservationId, (state.refunded.get(note.reservationId) ?? 0) + note.amount),
  };
}

export interface GrantCredits {
  type: 'GrantCredits';
  orgId: string;
  /** The caller's id for this grant: the same id again grants nothing more. */
  grantId: string;
  amount: number;
  reason: string;
  now: number;
}

/** The grant a grant id already made, if any. */
export const grantMade = (state: CreditAccount, grantId: string): CreditsGranted['data'] | undefined => state.grants.get(grantId);

/**
 * Grants `amount`, once per grant id: the same grant asked again decides nothing (it was made);
 * the same id with another amount is refused, since it cannot be both grants.
 */
export function decideGrant(command: GrantCredits, state: CreditAccount): CreditsGranted[] {
  if (!isNanoAmount(command.amount) || command.amount === 0) {
    throw new LedgerRuleError('invalid_amount', 'a grant must be a positive amount of credits');
  }
  const made = grantMade(state, command.grantId);
  if (made !== undefined) {
    if (made.amount === command.amount) return [];
    throw new LedgerRuleError(
      'grant_conflict',
      `grant ${command.grantId} was already made for ${formatCredits(made.amount)} credits, not ${formatCredits(command.amount)} credits: ` +
        'a grant id grants once (give a new id for another grant)',
    );
  }
  if (state.granted + command.amount > MAX_NANO) {
    throw new LedgerRuleError('balance_overflow', 'this grant would take the balance past what the ledger holds');
  }
  const { orgId, grantId, amount, reason, now } = command;
  return [{ type: 'CreditsGranted', data: { orgId, grantId, amount, reason, grantedAt: now } }];
}

/** A generation as a refund of it is decided: its organization, its key and what its settlement charged (0: none). */
export interface ChargedGeneration {
  orgId: string;
  keyId: string;
  charged: number;
}

/** An idempotency key as a caller gives it: up to 128 letters, digits and `_ . : -` (a ticket number, a UUID). */
export const IDEMPOTENCY_KEY = /^[\w.:-]{1,128}$/;
export const MAX_MEMO_LENGTH = 500;

export interface IssueCreditNote {
  type: 'IssueCreditNote';
  orgId: string;
  creditNoteId: string;
  idempotencyKey: string;
  kind: 'refund' | 'adjustment';
  /** The generation refunded (its reservation id); null for an adjustment. */
  reservationId: string | null;
  /** Nano-credits; null for a refund of all its generation's charge not yet refunded. */
  amount: number | null;
  reason: string;
  memo?: string;
  issuedBy: string;
  /** A refund's generation as its reservation stream holds it: null when there is none. */
  generation: ChargedGeneration | null;
  /** The organization's available balance as its read models show it: a debit may not take it below 0. */
  available: number;
  now: number;
}

/** The credit note an idempotency key already issued, if any. */
export const creditNoteIssued = (state: CreditAccount, idempotencyKey: string): CreditNoteIssued['data'] | undefined =>
  state.creditNotes.get(idempotencyKey);

const invalidNote = (message: string) => new LedgerRuleError('invalid_credit_note', message);

/**
 * Issues a credit note once per idempotency key: the same note asked again decides nothing (it was
 * issued); the same key for another note is refused. A refund returns at most what its generation
 * (one of this organization's) was charged, less its earlier refunds; an adjustment credits (+) or
 * debits (−) the balance, a debit never below what is available.
 */
export function decideCreditNote(command: IssueCreditNote, state: CreditAccount): CreditNoteIssued[] {
  const { kind, amount: asked, reservationId } = command;
  if (!(CREDIT_NOTE_REASONS as readonly string[]).includes(command.reason))
    throw invalidNote(`reason must be one of ${CREDIT_NOTE_REASONS.join(', ')}`);
  if (typeof command.idempotencyKey !== 'string' || !IDEMPOTENCY_KEY.test(command.idempotencyKey))
    throw invalidNote('the idempotency key must be 1 to 128 letters, digits, "_", ".", ":" or "-"');
  if (command.memo !== undefined && (typeof command.memo !== 'string' || command.memo.length > MAX_MEMO_LENGTH))
    throw invalidNote(`a memo is at most ${MAX_MEMO_LENGTH} characters`);
  if (kind !== 'refund' && kind !== 'adjustment') throw invalidNote("kind must be 'refund' or 'adjustment'");
  if (kind === 'refund' && asked !== null && !(isNanoAmount(asked) && asked > 0))
    throw new LedgerRuleError('invalid_amount', 'a refund must be a positive amount of credits');
  if (kind === 'adjustment' && !(asked !== null && Number.isSafeInteger(asked) && asked !== 0 && Math.abs(asked) <= MAX_NANO))
    throw new LedgerRuleError('invalid_amount', 'an adjustment must be a non-zero amount of credits (+ credits, − debits)');
  if ((kind === 'refund') !== (typeof reservationId === 'string' && reservationId !== ''))
    throw invalidNote('a refund names its generation; an adjustment names none');

  const issued = creditNoteIssued(state, command.idempotencyKey);
  if (issued !== undefined) {
    // A whole refund asked again (no amount) is the note it issued, whatever that came to.
    const sameAmount = asked === null || issued.amount === asked;
    if (issued.kind === kind && issued.reservationId === reservationId && sameAmount && issued.reason === command.reason)
      return [];
    throw new LedgerRuleError(
      'credit_note_conflict',
      `idempotency key ${command.idempotencyKey} already issued credit note ${issued.creditNoteId} ` +
        `(${issued.kind} of ${formatCredits(issued.amount)} credits, ${issued.reason}): give a new key for another note`,
    );
  }

  let keyId: string | null = null;
  let amount: number;
  if (kind === 'refund') {
    const generation = command.generation;
    // Another organization's generation is as unknown as one that never was.
    if (generation === null || generation.orgId !== command.orgId)
      throw new LedgerRuleError('generation_not_found', `no generation ${reservationId} in this organization`);
    const refunded = state.refunded.get(reservationId!) ?? 0;
    const left = generation.charged - refunded;
    amount = asked ?? left;
    if (amount > left || amount <= 0) {
      throw new LedgerRuleError(
        'refund_exceeds_charge',
        `generation ${reservationId} was charged ${formatCredits(generation.charged)} credits, ` +
          `${formatCredits(refunded)} already refunded: ` +
          (left === 0 ? 'nothing is left to refund' : `at most ${formatCredits(left)} credits can still be refunded`),
      );
    }
    keyId = generation.keyId;
  } else {
    amount = asked!;
    if (amount < 0 && -amount > command.available) {
      throw new LedgerRuleError(
        'insufficient_balance',
        `a debit of ${formatCredits(-amount)} credits is more than the ${formatCredits(Math.max(0, command.available))} credits available`,
      );
    }
  }
  if (state.granted + amount > MAX_NANO) {
    throw new LedgerRuleError('balance_overflow', 'this credit note would take the balance past what the ledger holds');
  }
  const data: CreditNoteIssued['data'] = {
    orgId: command.orgId,
    creditNoteId: command.creditNoteId,
    idempotencyKey: command.idempotencyKey,
    kind,
    reservationId: kind === 'refund' ? reservationId : null,
    keyId,
    amount,
    reason: command.reason as CreditNoteReason,
    issuedBy: command.issuedBy,
    issuedAt: command.now,
  };
  if (command.memo !== undefined && command.memo !== '') data.memo = command.memo;
  return [{ type: 'CreditNoteIssued', data }];
}

export type CreditAccountCommand = GrantCredits | IssueCreditNote;

export const creditAccountDecider: Decider<CreditAccountCommand, CreditAccount, CreditAccountEvent> = {
  decide: (command, state) => (command.type === 'GrantCredits' ? decideGrant(command, state) : decideCreditNote(command, state)),
  evolve: evolveCreditAccount,
  initialState: initialCreditAccount,
};

/** A generation's charge as its reservation stream's events give it (null: no such reservation). */
export function chargedGeneration(events: readonly ReservationEvent[]): ChargedGeneration | null {
  const reserved = events.find((e): e is CreditsReserved => e.type === 'CreditsReserved');
  if (reserved === undefined) return null;
  const settled = events.find((e): e is ReservationSettled => e.type === 'ReservationSettled');
  return { orgId: reserved.data.orgId, keyId: reserved.data.keyId, charged: settled?.data.amount ?? 0 };
}

// ---------------------------------------------------------------------------------------------
// A reservation: a pending charge, resolved exactly once (settled, released or expired).

/** A reservation's resolutions: each ends it. */
type Resolution = Exclude<ReservationEvent, CreditsReserved | ReservationProgress>['type'];

export type Reservation =
  | { status: 'none' }
  /** Open; `progress`: what its stream had delivered when last recorded, if it has been. */
  | { status: 'open'; reserved: CreditsReserved['data']; progress?: ReservationProgress['data'] }
  | { status: 'resolved'; reserved: CreditsReserved['data']; resolution: Resolution };

export const initialReservation = (): Reservation => ({ status: 'none' });

export function evolveReservation(state: Reservation, event: ReservationEvent): Reservation {
  if (event.type === 'CreditsReserved') return { status: 'open', reserved: event.data };
  if (state.status === 'none') return state;
  if (event.type === 'ReservationProgress') {
    return state.status === 'open' ? { status: 'open', reserved: state.reserved, progress: event.data } : state;
  }
  return { status: 'resolved', reserved: state.reserved, resolution: event.type };
}

export interface Reserve extends RequestFacts {
  type: 'Reserve';
  reservationId: string;
  orgId: string;
  amount: number;
  now: number;
  ttlMs: number;
  /** The catalogue version the request is priced with, when the catalogue was read from a file. */
  catalogueVersion?: string;
}

export interface Settle extends RequestOutcome {
  type: 'Settle';
  usage: TokenUsage;
  prices: TokenPrices;
  host: string;
  hostModel: string;
  /** Why some of the tokens are the gateway's own count, not the host's; absent when all are the host's. */
  usageFlag?: string;
  /** Which token classes are the gateway's own count; absent (or empty) when all are the host's. */
  estimated?: TokenClass[];
  /** The host's own id for its reply, when it gave one. */
  upstreamId?: string;
  now: number;
}

/** What a stream has delivered so far, as a cut would bill it (see ReservationProgress). */
export interface RecordProgress {
  type: 'RecordProgress';
  usage: TokenUsage;
  prices: TokenPrices;
  host: string;
  hostModel: string;
  usageFlag?: string;
  estimated?: TokenClass[];
  deliveredChars: number;
  now: number;
}

export interface Release extends RequestOutcome {
  type: 'Release';
  reason: string;
  host: string | null;
  now: number;
}

export interface Expire {
  type: 'Expire';
  now: number;
}

export type ReservationCommand = Reserve | RecordProgress | Settle | Release | Expire;

function openReservation(state: Reservation): CreditsReserved['data'] {
  if (state.status === 'none') throw new LedgerRuleError('reservation_not_found', 'no such reservation');
  if (state.status === 'resolved') {
    throw new LedgerRuleError('already_resolved', `reservation already resolved (${state.resolution})`);
  }
  return state.reserved;
}

// Events are built field by field, not by spreading: this runs on every request.
export function decideReservation(command: ReservationCommand, state: Reservation): ReservationEvent[] {
  switch (command.type) {
    case 'Reserve': {
      if (state.status !== 'none') {
        throw new LedgerRuleError('reservation_exists', `reservation ${command.reservationId} already exists`);
      }
      if (!isNanoAmount(command.amount)) {
        throw new LedgerRuleError('invalid_amount', 'a reservation must hold a non-negative amount');
      }
      const event: CreditsReserved = {
        type: 'CreditsReserved',
        data: {
          requestId: command.requestId,
          keyId: command.keyId,
          surface: command.surface,
          model: command.model,
          reservationId: command.reservationId,
          orgId: command.orgId,
          amount: command.amount,
          reservedAt: command.now,
          expiresAt: command.now + command.ttlMs,
        },
      };
      if (command.omittedTools !== undefined) {
        checkOmittedTools(command.omittedTools);
        event.data.omittedTools = command.omittedTools;
      }
      if (command.catalogueVersion !== undefined) event.data.catalogueVersion = command.catalogueVersion;
      return [event];
    }
    case 'RecordProgress': {
      const reserved = openReservation(state);
      const { usage, prices } = command;
      checkUsage(usage, prices);
      const event: ReservationProgress = {
        type: 'ReservationProgress',
        data: {
          ...requestOf(reserved),
          host: command.host,
          hostModel: command.hostModel,
          ...billedAt(usage, prices),
          deliveredChars: command.deliveredChars,
          recordedAt: command.now,
        },
      };
      if (command.usageFlag !== undefined) event.data.usageFlag = command.usageFlag;
      const estimated = checkedEstimated(command.estimated);
      if (estimated !== undefined) event.data.estimated = estimated;
      return [event];
    }
    case 'Settle': {
      const reserved = openReservation(state);
      const { usage, prices } = command;
      checkUsage(usage, prices);
      const billed = billedAt(usage, prices);
      const event: ReservationSettled = {
        type: 'ReservationSettled',
        data: {
          requestId: reserved.requestId,
          keyId: reserved.keyId,
          surface: reserved.surface,
          model: reserved.model,
          reservationId: reserved.reservationId,
          orgId: reserved.orgId,
          host: command.host,
          hostModel: command.hostModel,
          inputTokens: billed.inputTokens,
          cacheReadTokens: billed.cacheReadTokens,
          cacheWriteTokens: billed.cacheWriteTokens,
          cacheWrite1hTokens: billed.cacheWrite1hTokens,
          outputTokens: billed.outputTokens,
          prices: billed.prices,
          amount: chargeFor(usage, prices),
          held: reserved.amount,
          status: command.status,
          latencyMs: command.latencyMs,
          settledAt: command.now,
        },
      };
      if (billed.hostedToolUses !== undefined) event.data.hostedToolUses = billed.hostedToolUses;
      if (command.usageFlag !== undefined) event.data.usageFlag = command.usageFlag;
      const estimated = checkedEstimated(command.estimated);
      if (estimated !== undefined) event.data.estimated = estimated;
      if (command.upstreamId !== undefined) event.data.upstreamId = command.upstreamId;
      if (reserved.omittedTools !== undefined) event.data.omittedTools = reserved.omittedTools;
      if (command.attempts !== undefined) event.data.attempts = checkedAttempts(command.attempts);
      // Priced under the reservation's catalogue, whatever was reloaded since.
      if (reserved.catalogueVersion !== undefined) event.data.catalogueVersion = reserved.catalogueVersion;
      return [event];
    }
    case 'Release': {
      const reserved = openReservation(state);
      const event: ReservationReleased = {
        type: 'ReservationReleased',
        data: {
          ...requestOf(reserved),
          host: command.host,
          held: reserved.amount,
          reason: command.reason,
          status: command.status,
          latencyMs: command.latencyMs,
          releasedAt: command.now,
        },
      };
      if (reserved.omittedTools !== undefined) event.data.omittedTools = reserved.omittedTools;
      if (command.attempts !== undefined) event.data.attempts = checkedAttempts(command.attempts);
      return [event];
    }
    case 'Expire': {
      const reserved = openReservation(state);
      if (command.now < reserved.expiresAt) {
        throw new LedgerRuleError('not_expired', `reservation expires at ${new Date(reserved.expiresAt).toISOString()}`);
      }
      // A stream that recorded its progress and never ended (a crash) is billed what it had delivered.
      if (state.status === 'open' && state.progress !== undefined)
        return [interruptedSettlement(reserved, state.progress, command.now)];
      const event: ReservationExpired = {
        type: 'ReservationExpired',
        data: {
          ...requestOf(reserved),
          held: reserved.amount,
          expiredAt: command.now,
        },
      };
      if (reserved.omittedTools !== undefined) event.data.omittedTools = reserved.omittedTools;
      return [event];
    }
  }
}

/** What every ending of a reservation repeats of the request it held for. */
const requestOf = (reserved: CreditsReserved['data']) => ({
  requestId: reserved.requestId,
  keyId: reserved.keyId,
  surface: reserved.surface,
  model: reserved.model,
  reservationId: reserved.reservationId,
  orgId: reserved.orgId,
});

/**
 * Token counts by class and the prices they are billed at, as a settlement or a progress records
 * them; hosted-tool uses (the classes used, each with its price) only when there were any.
 */
function billedAt(usage: TokenUsage, prices: TokenPrices) {
  const billed: {
    inputTokens: number;
    cacheReadTokens: number;
    cacheWriteTokens: number;
    cacheWrite1hTokens: number;
    outputTokens: number;
    hostedToolUses?: HostedToolCounts;
    prices: TokenPrices;
  } = {
    inputTokens: usage.inputTokens,
    cacheReadTokens: usage.cacheReadTokens,
    cacheWriteTokens: usage.cacheWriteTokens,
    cacheWrite1hTokens: usage.cacheWrite1hTokens,
    outputTokens: usage.outputTokens,
    prices: {
      input: prices.input,
      cacheRead: prices.cacheRead,
      cacheWrite: prices.cacheWrite,
      cacheWrite1h: prices.cacheWrite1h,
      output: prices.output,
    },
  };
  if (usage.hostedToolUses === undefined) return billed;
  const uses: HostedToolCounts = {};
  const usePrices: HostedToolPrices = {};
  for (const toolClass of HOSTED_TOOL_CLASSES) {
    const n = usage.hostedToolUses?.[toolClass] ?? 0;
    if (n === 0) continue;
    uses[toolClass] = n;
    usePrices[toolClass] = prices.hostedToolUses![toolClass]!;
  }
  if (Object.keys(uses).length > 0) {
    billed.hostedToolUses = uses;
    billed.prices.hostedToolUses = usePrices;
  }
  return billed;
}

/** Hosted-tool uses: whole numbers ≥ 0 of known classes, each class used with a price. */
function checkHostedToolUses(usage: TokenUsage, prices: TokenPrices): void {
  const uses = usage.hostedToolUses;
  if (uses === undefined) return;
  for (const [toolClass, n] of Object.entries(uses)) {
    if (!(HOSTED_TOOL_CLASSES as readonly string[]).includes(toolClass) || !isTokenCount(n))
      throw new LedgerRuleError('invalid_usage', 'hosted-tool uses must be non-negative integers of a known class');
    const price = prices.hostedToolUses?.[toolClass as keyof HostedToolCounts];
    if (n > 0 && !isNanoAmount(price))
      throw new LedgerRuleError('invalid_usage', `${n} ${toolClass} uses have no price: the host's prices must include one`);
  }
}

function checkUsage(usage: TokenUsage, prices: TokenPrices): void {
  checkHostedToolUses(usage, prices);
  if (
    !isTokenCount(usage.inputTokens) ||
    !isTokenCount(usage.cacheReadTokens) ||
    !isTokenCount(usage.cacheWriteTokens) ||
    !isTokenCount(usage.cacheWrite1hTokens) ||
    !isTokenCount(usage.outputTokens)
  ) {
    throw new LedgerRuleError('invalid_usage', 'token counts must be non-negative integers');
  }
  if (
    !isNanoAmount(prices.input) ||
    !isNanoAmount(prices.cacheRead) ||
    !isNanoAmount(prices.cacheWrite) ||
    !isNanoAmount(prices.cacheWrite1h) ||
    !isNanoAmount(prices.output)
  ) {
    throw new LedgerRuleError('invalid_usage', 'prices must be non-negative integers');
  }
}

/** The classes a count of the gateway's own names, each once in TOKEN_CLASSES' order; undefined for none. */
function checkedEstimated(classes: TokenClass[] | undefined): TokenClass[] | undefined {
  if (classes === undefined || classes.length === 0) return undefined;
  if (!Array.isArray(classes) || !classes.every((c) => (TOKEN_CLASSES as readonly string[]).includes(c)))
    throw new LedgerRuleError('invalid_usage', `estimated classes must be among ${TOKEN_CLASSES.join(', ')}`);
  return TOKEN_CLASSES.filter((c) => classes.includes(c));
}

/** Hosted tools' types as the request log keeps them: a few short names, none empty. */
export const MAX_OMITTED_TOOLS = 16;
export const MAX_TOOL_TYPE_LENGTH = 64;

const ATTEMPT_TEXT = /^[\w.:-]{1,128}$/;

/** A request's attempts as an event may carry them: at most MAX_ATTEMPTS, each field a bounded name or number (a copy: only those fields). */
function checkedAttempts(attempts: HostAttempt[]): HostAttempt[] {
  const name = (v: unknown) => typeof v === 'string' && ATTEMPT_TEXT.test(v);
  const ok =
    Array.isArray(attempts) &&
    attempts.length <= MAX_ATTEMPTS &&
    attempts.every(
      (a) =>
        name(a.host) &&
        (a.credential === null || name(a.credential)) &&
        (a.status === null || (Number.isSafeInteger(a.status) && a.status >= 100 && a.status <= 599)) &&
        name(a.reason) &&
        Number.isSafeInteger(a.durationMs) &&
        a.durationMs >= 0,
    );
  if (!ok)
    throw new LedgerRuleError('invalid_attempts', `attempts must be at most ${MAX_ATTEMPTS} host calls, each named and timed`);
  return attempts.map(({ host, credential, status, reason, durationMs }) => ({ host, credential, status, reason, durationMs }));
}

function checkOmittedTools(types: string[]): void {
  if (
    !Array.isArray(types) ||
    types.length === 0 ||
    types.length > MAX_OMITTED_TOOLS ||
    !types.every((t) => typeof t === 'string' && t.length > 0 && t.length <= MAX_TOOL_TYPE_LENGTH)
  ) {
    throw new LedgerRuleError('invalid_omitted_tools', `omitted tools must be 1 to ${MAX_OMITTED_TOOLS} tool types`);
  }
}

/**
 * The settlement of a reservation that expired with its stream's progress recorded: what the last
 * progress says was delivered, at its host's prices, never more than was held. Output delivered
 * after that progress (at most one interval's) goes unbilled.
 */
function interruptedSettlement(
  reserved: CreditsReserved['data'],
  progress: ReservationProgress['data'],
  now: number,
): ReservationSettled {
  const data: ReservationSettled['data'] = {
    ...requestOf(reserved),
    host: progress.host,
    hostModel: progress.hostModel,
    inputTokens: progress.inputTokens,
    cacheReadTokens: progress.cacheReadTokens,
    cacheWriteTokens: progress.cacheWriteTokens,
    cacheWrite1hTokens: progress.cacheWrite1hTokens,
    outputTokens: progress.outputTokens,
    prices: { ...progress.prices },
    ...(progress.hostedToolUses === undefined ? {} : { hostedToolUses: progress.hostedToolUses }),
    amount: 0,
    held: reserved.amount,
    status: 'interrupted',
    latencyMs: progress.recordedAt - reserved.reservedAt,
    settledAt: now,
    interrupted: { progressAt: progress.recordedAt, deliveredChars: progress.deliveredChars },
  };
  if (progress.usageFlag !== undefined) data.usageFlag = progress.usageFlag;
  if (progress.estimated !== undefined) data.estimated = progress.estimated;
  if (reserved.omittedTools !== undefined) data.omittedTools = reserved.omittedTools;
  if (reserved.catalogueVersion !== undefined) data.catalogueVersion = reserved.catalogueVersion;
  data.amount = settledCharge(data);
  return { type: 'ReservationSettled', data };
}

export const reservationDecider: Decider<ReservationCommand, Reservation, ReservationEvent> = {
  decide: decideReservation,
  evolve: evolveReservation,
  initialState: initialReservation,
};

// ---------------------------------------------------------------------------------------------
// A refusal: a request turned away before any reservation. It holds and charges nothing.

export interface Refuse extends RequestFacts, RequestOutcome {
  type: 'Refuse';
  refusalId: string;
  orgId: string;
  reason: string;
  now: number;
}

export function decideRefusal(command: Refuse): RequestRefused[] {
  return [
    {
      type: 'RequestRefused',
      data: {
        requestId: command.requestId,
        keyId: command.keyId,
        surface: command.surface,
        model: command.model,
        refusalId: command.refusalId,
        orgId: command.orgId,
        status: command.status,
        reason: command.reason,
        latencyMs: command.latencyMs,
        refusedAt: command.now,
      },
    },
  ];
}
