import type { RecordedEvent } from '../eventstore/event-store';
import type {
  LimitReset,
  MemberAdded,
  MemberKeyAccessSet,
  MemberRemoved,
  OrganizationCreated,
  OrganizationRateLimitsSet,
} from '../identity/identity.events';
import { hasBillingRights } from '../keys/api-key/api-key.decider';
import type { ApiKeyCreated, ApiKeyRevoked, ApiKeyUpdated, KeyChanges } from '../keys/api-key/api-key.events';
import { keySpendChangeOf, periodsOf } from '../ledger/key-limit';
import type {
  CreditNoteIssued,
  CreditsGranted,
  CreditsReserved,
  ReservationExpired,
  ReservationProgress,
  ReservationReleased,
  ReservationSettled,
  RequestRefused,
} from '../ledger/ledger.events';
import { dayOf, type RequestLogEntry } from './read-models';
import { keySpendField, type ReadModelWrites, type StoredKey } from './writes';

/**
 * The read models as folds of the log: for each slice, what each event it reads writes (in the
 * vocabulary of writes.ts), and nothing else: no reads, no I/O. The in-process store, the Redis
 * store, a rebuild and the audit all apply these, so an event means the same everywhere.
 */

export type ProjectedEvent =
  | CreditsGranted
  | CreditNoteIssued
  | CreditsReserved
  | ReservationProgress
  | ReservationSettled
  | ReservationReleased
  | ReservationExpired
  | RequestRefused
  | OrganizationCreated
  | MemberAdded
  | MemberRemoved
  | MemberKeyAccessSet
  | OrganizationRateLimitsSet
  | ApiKeyCreated
  | ApiKeyUpdated
  | ApiKeyRevoked;

type EventOf<T extends ProjectedEvent['type']> = Extract<ProjectedEvent, { type: T }>;

/** A slice of the read models: the writes each event it reads implies. */
export type Fold = { [T in ProjectedEvent['type']]?: (event: EventOf<T>, writes: ReadModelWrites) => void };

type Resolution = ReservationSettled | ReservationReleased | ReservationExpired;
type Logged = Resolution | RequestRefused;

/**
 * The UTC day of a charge and the key-limit periods it counts in, worked out once per day: a replay
 * meets the same day thousands of times in a row, and dates are the dearest part of a fold.
 */
const calendar = { day: Number.NaN, name: '', periods: {} as Readonly<Record<LimitReset, string>> };
function calendarOf(time: number): typeof calendar {
  const day = Math.floor(time / 86_400_000);
  if (day !== calendar.day) {
    calendar.day = day;
    calendar.name = dayOf(time);
    calendar.periods = periodsOf(time);
  }
  return calendar;
}

/** When a resolved or refused request ended. */
function endedAt(event: Logged): number {
  switch (event.type) {
    case 'ReservationSettled':
      return event.data.settledAt;
    case 'ReservationReleased':
      return event.data.releasedAt;
    case 'ReservationExpired':
      return event.data.expiredAt;
    case 'RequestRefused':
      return event.data.refusedAt;
  }
}

/** A reservation resolved: what it held returns, to the organization and to its key, and it leaves the expiry index. */
function resolved({ data }: Resolution, w: ReadModelWrites): void {
  w.release('ledger', 'reserved', 'open', data.reservationId);
  w.release('keyOpen', data.keyId, 'open', data.reservationId);
  w.set('open', data.reservationId, undefined);
  w.unschedule(data.orgId, data.reservationId);
}

/**
 * Balance and ledger totals (granted, spent, held by recorded reservations), and the open
 * reservations: what each holds, what they hold together per key, when each expires. A refund
 * is taken off what was spent (spent is net of refunds), an adjustment added to what was granted
 * (signed): available = granted − spent − held, as the credit-note contract's balance rule says.
 */
export const ledgerFold: Fold = {
  CreditsGranted: ({ data }, w) => w.add('ledger', 'granted', data.amount),
  CreditNoteIssued: ({ data }, w) => {
    if (data.kind === 'refund') w.add('ledger', 'spent', -data.amount);
    else w.add('ledger', 'granted', data.amount);
  },
  CreditsReserved: ({ data }, w) => {
    w.clearPendingHold(data.reservationId);
    w.add('ledger', 'reserved', data.amount);
    w.add('keyOpen', data.keyId, data.amount);
    w.set('open', data.reservationId, data.amount);
    w.schedule(data.orgId, data.reservationId, data.expiresAt);
  },
  ReservationSettled: (event, w) => {
    resolved(event, w);
    if (event.data.amount > 0) w.add('ledger', 'spent', event.data.amount);
  },
  ReservationReleased: resolved,
  ReservationExpired: resolved,
};

/** A charge or a refund moves its key's spend, all time and per period, as the ledger's key-limit rule says. */
function keySpendMoved(event: ReservationSettled | CreditNoteIssued, w: ReadModelWrites): void {
  const change = keySpendChangeOf(event);
  if (change === null) return;
  w.add('keySpend', change.keyId, change.amount);
  const periods = calendarOf(change.at).periods;
  for (const reset of change.resets) w.add('keyPeriodSpend', keySpendField(change.keyId, periods[reset]), change.amount);
}

/** A request made with a key ended: when the key was last used. */
const used = (event: Logged, w: ReadModelWrites) => w.raise('keyLastUsed', event.data.keyId, endedAt(event));

const NOTHING_CLEARED: ReadonlyArray<keyof StoredKey> = [];

/** A key record's fields as an update leaves them: those it sets, and those it clears. */
function keyChangesOf(changes: KeyChanges): { fields: Partial<StoredKey>; cleared: Array<keyof StoredKey> } {
  const fields: Partial<StoredKey> = {};
  const cleared: Array<keyof StoredKey> = [];
  if (changes.limit !== undefined) {
    if (changes.limit === null) cleared.push('limit');
    else fields.limit = changes.limit;
  }
  if (changes.name !== undefined) fields.name = changes.name;
  if (changes.rateLimits !== undefined) {
    if (changes.rateLimits === null) cleared.push('rateLimits');
    else fields.rateLimits = changes.rateLimits;
  }
  if (changes.expiresAt !== undefined) {
    if (changes.expiresAt === null) cleared.push('expiresAt');
    else fields.expiresAt = changes.expiresAt;
  }
  if (changes.disabled !== undefined) {
    if (changes.disabled) fields.disabled = true;
    else cleared.push('disabled');
  }
  return { fields, cleared };
}

/** Keys: their records (by hash, and the organization's list), their spend all time and per period, their last use. */
export const keysFold: Fold = {
  ApiKeyCreated: ({ data }, w) => {
    w.set('keys', data.keyId, data.hash);
    // The billing rights asked and who made the key stay in the log: the record holds only the rights that count.
    const { billing: _asked, createdBy: _maker, ...record } = data;
    w.update('keyRecords', data.hash, hasBillingRights(data) ? { ...record, billingRights: true } : record, NOTHING_CLEARED);
  },
  ApiKeyUpdated: ({ data }, w) => {
    const { fields, cleared } = keyChangesOf(data.changes);
    w.update('keyRecords', data.hash, fields, cleared);
  },
  ApiKeyRevoked: ({ data }, w) => w.update('keyRecords', data.hash, { revokedAt: data.revokedAt }, NOTHING_CLEARED),
  ReservationSettled: (event, w) => {
    used(event, w);
    keySpendMoved(event, w);
  },
  CreditNoteIssued: keySpendMoved,
  // A stream still delivering: its key is in use.
  ReservationProgress: ({ data }, w) => w.raise('keyLastUsed', data.keyId, data.recordedAt),
  ReservationReleased: used,
  ReservationExpired: used,
  RequestRefused: used,
};

/** Organizations (their record and default rate limits), their members, and each user's organizations. */
export const organizationsFold: Fold = {
  OrganizationCreated: ({ data }, w) =>
    w.set('organization', 'profile', { orgId: data.orgId, name: data.name, createdAt: data.createdAt }),
  OrganizationRateLimitsSet: ({ data }, w) => w.set('organization', 'rateLimits', data.rateLimits ?? undefined),
  MemberAdded: ({ data }, w) => {
    w.set('members', data.userId, { userId: data.userId, email: data.email ?? null, role: data.role, addedAt: data.addedAt });
    w.set('keyManagers', data.userId, data.manageKeys === true || undefined);
    w.include('userOrganizations', data.userId, data.orgId);
  },
  MemberRemoved: ({ data }, w) => {
    w.set('members', data.userId, undefined);
    w.set('keyManagers', data.userId, undefined);
    w.exclude('userOrganizations', data.userId, data.orgId);
  },
  MemberKeyAccessSet: ({ data }, w) => w.set('keyManagers', data.userId, data.manageKeys || undefined),
};

/** What the request log shows of a resolved reservation or a refusal. Built field by field: this runs per event in a replay. */
export function requestLogEntryOf(event: Logged): RequestLogEntry {
  const d = event.data;
  const entry: RequestLogEntry = {
    requestId: d.requestId,
    reservationId: null,
    time: 0,
    surface: d.surface,
    model: d.model,
    host: null,
    keyId: d.keyId,
    inputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    outputTokens: 0,
    cost: 0,
    latencyMs: null,
    status: 'expired',
  };
  if (d.omittedTools !== undefined) entry.omittedTools = d.omittedTools;
  switch (event.type) {
    case 'ReservationSettled':
      entry.reservationId = event.data.reservationId;
      entry.time = event.data.settledAt;
      entry.host = event.data.host;
      entry.inputTokens = event.data.inputTokens;
      // Absent from settlements written before the cache's classes.
      entry.cacheReadTokens = event.data.cacheReadTokens ?? 0;
      entry.cacheWriteTokens = (event.data.cacheWriteTokens ?? 0) + (event.data.cacheWrite1hTokens ?? 0);
      entry.outputTokens = event.data.outputTokens;
      if (event.data.hostedToolUses !== undefined) entry.hostedToolUses = event.data.hostedToolUses;
      entry.cost = event.data.amount;
      entry.latencyMs = event.data.latencyMs;
      entry.status = event.data.status;
      if (event.data.upstreamId !== undefined) entry.upstreamId = event.data.upstreamId;
      if (event.data.attempts !== undefined) entry.attempts = event.data.attempts;
      if (event.data.catalogueVersion !== undefined) entry.catalogueVersion = event.data.catalogueVersion;
      if (event.data.estimated !== undefined) entry.estimated = event.data.estimated;
      break;
    case 'ReservationReleased':
      entry.reservationId = event.data.reservationId;
      entry.time = event.data.releasedAt;
      entry.host = event.data.host;
      entry.latencyMs = event.data.latencyMs;
      entry.status = event.data.status;
      if (event.data.attempts !== undefined) entry.attempts = event.data.attempts;
      break;
    case 'ReservationExpired':
      entry.reservationId = event.data.reservationId;
      entry.time = event.data.expiredAt;
      break;
    case 'RequestRefused':
      entry.time = event.data.refusedAt;
      entry.latencyMs = event.data.latencyMs;
      entry.status = event.data.status;
      break;
  }
  return entry;
}

const logged = (event: Logged, w: ReadModelWrites) => w.push(requestLogEntryOf(event));

/** The request log: every resolved reservation and every refusal, the newest kept. */
export const requestLogFold: Fold = {
  ReservationSettled: logged,
  ReservationReleased: logged,
  ReservationExpired: logged,
  RequestRefused: logged,
};

/** What the refunds of each generation (by reservation id) returned: the request log's entries are shown with it. */
export const refundsFold: Fold = {
  CreditNoteIssued: ({ data }, w) => {
    if (data.kind === 'refund' && data.reservationId !== null) w.add('refunded', data.reservationId, data.amount);
  },
};

/**
 * Spend per UTC day (not bounded by the request log's retention), net of refunds as the ledger's `spent`
 * is, so the days sum to it: a charge on the day it settled, a refund off the day it was issued (the day
 * the FOCUS export's Credit row falls on). An adjustment is not spend (`granted` holds it).
 */
export const dailySpendFold: Fold = {
  ReservationSettled: ({ data }, w) => {
    if (data.amount > 0) w.add('daily', calendarOf(data.settledAt).name, data.amount);
  },
  CreditNoteIssued: ({ data }, w) => {
    if (data.kind === 'refund') w.add('daily', calendarOf(data.issuedAt).name, -data.amount);
  },
};

const FOLDS: readonly Fold[] = [ledgerFold, keysFold, organizationsFold, requestLogFold, refundsFold, dailySpendFold];

type Handler = (event: ProjectedEvent, writes: ReadModelWrites) => void;

/** Each event type's handlers across the slices, looked up once per event. */
const HANDLERS = new Map<string, Handler[]>();
for (const fold of FOLDS) {
  for (const [type, handler] of Object.entries(fold) as Array<[string, Handler]>) {
    HANDLERS.set(type, [...(HANDLERS.get(type) ?? []), handler]);
  }
}

/**
 * Applies one recorded event to a store's read models, through every slice that reads it, under
 * the one guard: the event's organization must not have it already.
 */
export function foldEvent(recorded: RecordedEvent, writes: ReadModelWrites): void {
  const handlers = HANDLERS.get(recorded.type);
  if (handlers === undefined) return;
  const event = recorded as unknown as ProjectedEvent;
  if (!writes.begin(event.data.orgId, recorded.position, event.type === 'OrganizationCreated')) return;
  for (const handle of handlers) handle(event, writes);
}
