import type { RecordedEvent } from '../eventstore/event-store';
import type { KeyLimit, LimitReset } from '../identity/identity.events';
import type { ApiKeyEvent } from '../keys/api-key/api-key.events';
import { type KeySpendChange, keySpendChangeOf, LIMIT_RESETS, periodOf, periodsOf } from '../ledger/key-limit';
import type { LedgerEvent } from '../ledger/ledger.events';
import { formatCredits } from '../ledger/money';
import type { AlertDeliveryEvent, AlertsSettingsEvent } from './alerts.events';

/**
 * Which alert fires when: a fold over the log, in log order, of the ledger's events (balances, keys'
 * and days' spend), the keys' limits and the organizations' alert settings, and of the deliveries'
 * own events (what is still to deliver). Pure: the same log gives every instance the same alerts
 * with the same ids (the triggering event's position and the alert's kind), at the same moments.
 *
 * An alert fires when a threshold is crossed, never again while it stays crossed:
 * - `balance.below`: a balance change (a settled charge, a debit) taking it from at or above the
 *   threshold to below; it re-arms once the balance is back at or above (a grant, a credit note).
 * - `key.limit`: a settled charge taking a key's spend in its limit's period to 80 % or to 100 % of
 *   the limit (the highest level reached, once per level and period; a refund below re-arms it). The
 *   spend moves as the ledger's read models move it (`keySpendChangeOf`): a refund only under a limit
 *   that never resets.
 * - `spend.daily`: a UTC day's settled charges rising above the amount, once that day.
 * Settings start from the moment they are set: a threshold already crossed then fires only after it re-arms.
 * Spend and balances count settled charges only (holds come and go with every request).
 */

type Followed = LedgerEvent | ApiKeyEvent | AlertsSettingsEvent | AlertDeliveryEvent;

export type AlertType = 'balance.below' | 'key.limit' | 'spend.daily' | 'test';

export interface Alert {
  /** The same on every instance and every replay: `al_<position>_<kind>`. */
  id: string;
  orgId: string;
  type: AlertType;
  /** When it fired: the time its triggering event carries (ms). */
  at: number;
  /** What the receiver is told, amounts as decimal credits. */
  data: Record<string, string | number>;
}

export interface AlertSettings {
  url: string;
  balanceBelow: number | null;
  daySpendAbove: number | null;
  keyLimits: boolean;
  /** Null until a secret is issued: nothing is delivered unsigned. */
  secretId: string | null;
}

interface OrgState {
  balance: number;
  settings: AlertSettings | null;
  /** The balance is below the threshold and that was told (or it was already below when set). */
  balanceAlerted: boolean;
  /** The UTC day (`2026-11-26`) whose spend is counted. */
  day: string;
  daySpend: number;
  dayAlerted: boolean;
}

interface KeyState {
  orgId: string;
  limit: KeyLimit | null;
  /** Settled spend in the current period of each kind of reset (a limit may change its reset). */
  spent: Record<LimitReset, { period: string; amount: number }>;
  /** The highest level (0, 80, 100) reached in `period`, of the key's limit. */
  reached: { period: string; level: number };
}

/** An alert still to deliver, and how its delivery stands (from its stream's events). */
export interface PendingAlert {
  alert: Alert;
  /** The revision of its stream's last event (-1: none): the expected revision of the next claim. */
  revision: number;
  /** Attempts made so far (failed ones, and claims that never recorded an end). */
  attempts: number;
  /** Not before this (ms): a failed attempt's backoff. */
  nextAttemptAt: number;
  /** A claim stands until then (ms). */
  leaseUntil: number;
}

export interface AlertsState {
  orgs: Map<string, OrgState>;
  keys: Map<string, KeyState>;
  pending: Map<string, PendingAlert>;
}

export const initialAlertsState = (): AlertsState => ({ orgs: new Map(), keys: new Map(), pending: new Map() });

/** The state as it is saved (alerts-snapshot.ts): each map as its entries, in its order (pending alerts are tried in it). */
export interface SavedAlertsState {
  orgs: Array<[string, OrgState]>;
  keys: Array<[string, KeyState]>;
  pending: Array<[string, PendingAlert]>;
}

/** The state's entries, sharing its objects: serialize them before the next event is applied. */
export const savedAlertsState = (state: AlertsState): SavedAlertsState => ({
  orgs: [...state.orgs],
  keys: [...state.keys],
  pending: [...state.pending],
});

/** The state `savedAlertsState` gave, once serialized and parsed back: equal to the one saved. */
export const alertsStateOf = (saved: SavedAlertsState): AlertsState => ({
  orgs: new Map(saved.orgs),
  keys: new Map(saved.keys),
  pending: new Map(saved.pending),
});

const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** The periods of each kind of reset `ms` falls in (remembered for the last UTC day asked: settlements come in time order, mostly). */
let remembered = { from: 0, to: 0, periods: {} as Record<LimitReset, string> };
function periodsAt(ms: number): Record<LimitReset, string> {
  if (ms < remembered.from || ms >= remembered.to) {
    const from = ms - (((ms % 86_400_000) + 86_400_000) % 86_400_000);
    remembered = { from, to: from + 86_400_000, periods: periodsOf(ms) };
  }
  return remembered.periods;
}

function org(state: AlertsState, orgId: string): OrgState {
  let o = state.orgs.get(orgId);
  if (!o) {
    o = { balance: 0, settings: null, balanceAlerted: false, day: '', daySpend: 0, dayAlerted: false };
    state.orgs.set(orgId, o);
  }
  return o;
}

function key(state: AlertsState, keyId: string, orgId: string): KeyState {
  let k = state.keys.get(keyId);
  if (!k) {
    const spent = Object.fromEntries(LIMIT_RESETS.map((r) => [r, { period: '', amount: 0 }])) as KeyState['spent'];
    k = { orgId, limit: null, spent, reached: { period: '', level: 0 } };
    state.keys.set(keyId, k);
  }
  return k;
}

/** The key's spend in its limit's period at `ms` (0 in a period not yet counted). */
function spentIn(k: KeyState, limit: KeyLimit, ms: number): { period: string; amount: number } {
  const period = periodsAt(ms)[limit.reset];
  const counted = k.spent[limit.reset];
  return { period, amount: counted.period === period ? counted.amount : 0 };
}

/** 0, 80 or 100: the level of the limit `spent` has reached (exact: amounts are safe integers, their products need not be). */
function levelOf(spent: number, limit: number): number {
  if (spent >= limit) return 100;
  return BigInt(spent) * 5n >= BigInt(limit) * 4n ? 80 : 0;
}

const credits = formatCredits;

/** After a balance change: the alert if it crossed below; re-armed if it is back at or above. */
function balanceChanged(o: OrgState, orgId: string, fire: (a: Omit<Alert, 'id'>, kind: string) => void, at: number): void {
  const threshold = o.settings?.balanceBelow ?? null;
  if (threshold === null) return;
  if (o.balance >= threshold) o.balanceAlerted = false;
  else if (!o.balanceAlerted) {
    o.balanceAlerted = true;
    fire({ orgId, type: 'balance.below', at, data: { balance: credits(o.balance), threshold: credits(threshold) } }, 'balance');
  }
}

/** A key's level after its spend changed: an alert if it rose (and the organization wants them); lowered silently. */
function keySpendChanged(
  state: AlertsState,
  keyId: string,
  k: KeyState,
  at: number,
  fire: (a: Omit<Alert, 'id'>, kind: string) => void,
): void {
  if (!k.limit) return;
  const { period, amount } = spentIn(k, k.limit, at);
  const level = levelOf(amount, k.limit.amount);
  const before = k.reached.period === period ? k.reached.level : 0;
  k.reached = { period, level };
  if (level > before && state.orgs.get(k.orgId)?.settings?.keyLimits) {
    fire(
      {
        orgId: k.orgId,
        type: 'key.limit',
        at,
        data: { key_id: keyId, percent: level, spent: credits(amount), limit: credits(k.limit.amount), period },
      },
      'key',
    );
  }
}

/** A key's spend moved as the ledger's read models move it (the same rule: `keySpendChangeOf`), then its level. */
function keySpendMoved(
  state: AlertsState,
  change: KeySpendChange,
  orgId: string,
  fire: (a: Omit<Alert, 'id'>, kind: string) => void,
): void {
  const k = key(state, change.keyId, orgId);
  const periods = periodsAt(change.at);
  for (const reset of change.resets) {
    const period = periods[reset];
    const counted = k.spent[reset];
    // A change landing after a later one began a new period counts in its own, no longer followed.
    if (period > counted.period) k.spent[reset] = { period, amount: change.amount };
    else if (period === counted.period) counted.amount += change.amount;
  }
  keySpendChanged(state, change.keyId, k, change.at, fire);
}

/**
 * Applies one recorded event (in log order) to `state`, and returns the alerts it fires. Delivery events
 * move an alert's delivery on, or end it (delivered, abandoned).
 */
export function evolveAlerts(state: AlertsState, recorded: RecordedEvent): Alert[] {
  const fired: Alert[] = [];
  const fire = (alert: Omit<Alert, 'id'>, kind: string) => {
    const full = { id: `al_${recorded.position}_${kind}`, ...alert };
    fired.push(full);
    state.pending.set(full.id, { alert: full, revision: -1, attempts: 0, nextAttemptAt: 0, leaseUntil: 0 });
  };
  const event = recorded as unknown as Followed;
  switch (event.type) {
    case 'CreditsGranted': {
      const o = org(state, event.data.orgId);
      o.balance += event.data.amount;
      balanceChanged(o, event.data.orgId, fire, event.data.grantedAt);
      break;
    }
    case 'CreditNoteIssued': {
      const d = event.data;
      const o = org(state, d.orgId);
      o.balance += d.amount;
      const change = keySpendChangeOf(event);
      if (change !== null) keySpendMoved(state, change, d.orgId, fire);
      balanceChanged(o, d.orgId, fire, d.issuedAt);
      break;
    }
    case 'ReservationSettled': {
      const d = event.data;
      const o = org(state, d.orgId);
      o.balance -= d.amount;
      balanceChanged(o, d.orgId, fire, d.settledAt);
      const change = keySpendChangeOf(event);
      if (change !== null) keySpendMoved(state, change, d.orgId, fire);
      const day = periodsAt(d.settledAt).daily.slice(2);
      if (day > o.day) Object.assign(o, { day, daySpend: 0, dayAlerted: false });
      if (day === o.day) {
        o.daySpend += d.amount;
        const threshold = o.settings?.daySpendAbove ?? null;
        if (threshold !== null && o.daySpend > threshold && !o.dayAlerted) {
          o.dayAlerted = true;
          fire(
            {
              orgId: d.orgId,
              type: 'spend.daily',
              at: d.settledAt,
              data: { day, spent: credits(o.daySpend), threshold: credits(threshold) },
            },
            'spend',
          );
        }
      }
      break;
    }
    case 'ApiKeyCreated':
      key(state, event.data.keyId, event.data.orgId).limit = event.data.limit ?? null;
      break;
    case 'ApiKeyUpdated': {
      const limit = event.data.changes.limit;
      if (limit === undefined) break;
      const k = key(state, event.data.keyId, event.data.orgId);
      k.limit = limit;
      // A new limit: its level as spent so far, told at the next charge that raises it.
      if (limit)
        k.reached = {
          period: periodOf(limit.reset, event.data.updatedAt),
          level: levelOf(spentIn(k, limit, event.data.updatedAt).amount, limit.amount),
        };
      break;
    }
    case 'AlertsConfigured': {
      const d = event.data;
      const o = org(state, d.orgId);
      o.settings = {
        url: d.url,
        balanceBelow: d.balanceBelow,
        daySpendAbove: d.daySpendAbove,
        keyLimits: d.keyLimits,
        secretId: o.settings?.secretId ?? null,
      };
      // Crossing only: what is already crossed when set is not told.
      o.balanceAlerted = d.balanceBelow !== null && o.balance < d.balanceBelow;
      const day = dayOf(d.configuredAt);
      if (day > o.day) Object.assign(o, { day, daySpend: 0 });
      o.dayAlerted = d.daySpendAbove !== null && o.day === day && o.daySpend > d.daySpendAbove;
      break;
    }
    case 'AlertsSecretIssued': {
      const o = org(state, event.data.orgId);
      if (o.settings) o.settings.secretId = event.data.secretId;
      break;
    }
    case 'AlertsTurnedOff':
      org(state, event.data.orgId).settings = null;
      break;
    case 'AlertTestRequested':
      if (state.orgs.get(event.data.orgId)?.settings) {
        fire({ orgId: event.data.orgId, type: 'test', at: event.data.requestedAt, data: { message: 'a test alert' } }, 'test');
      }
      break;
    case 'AlertClaimed':
    case 'AlertAttemptFailed':
    case 'AlertDelivered':
    case 'AlertAbandoned': {
      const pending = state.pending.get(event.data.alertId);
      if (!pending) break;
      pending.revision = recorded.revision;
      if (event.type === 'AlertClaimed') {
        pending.attempts = event.data.attempt;
        pending.leaseUntil = event.data.leaseUntil;
      } else if (event.type === 'AlertAttemptFailed') {
        pending.leaseUntil = 0;
        pending.nextAttemptAt = event.data.nextAttemptAt;
      } else state.pending.delete(event.data.alertId);
      break;
    }
  }
  return fired;
}

/** How the delivery worker retries: the attempts' bound and the backoff between them. */
export interface RetryPolicy {
  maxAttempts: number;
  /** The first backoff (ms); each next one doubles, up to `maxDelayMs`, and a random 50–100 % of it is waited. */
  baseDelayMs: number;
  maxDelayMs: number;
}

/** What an attempt's end means: delivered, try again, or give up. */
export type AttemptOutcome =
  | { kind: 'delivered'; status: number }
  | { kind: 'retry'; status: number | null; reason: 'status' | 'timeout' | 'connection'; nextAttemptAt: number }
  | { kind: 'abandon'; status: number | null; reason: 'attempts_exhausted' | 'refused' | 'forbidden_destination' };

/**
 * 2xx delivers; 408, 429, 5xx, a timeout or no connection retry (within the bound); any other status
 * is refused for good, and so is a destination alerts may not reach (`forbidden`: see webhook-destinations.ts).
 */
export function attemptOutcome(
  answer: { status: number } | { failure: 'timeout' | 'connection' | 'forbidden' },
  attempt: number,
  policy: RetryPolicy,
  now: number,
  random: number,
): AttemptOutcome {
  const status = 'status' in answer ? answer.status : null;
  if ('failure' in answer && answer.failure === 'forbidden') return { kind: 'abandon', status, reason: 'forbidden_destination' };
  if (status !== null && status >= 200 && status < 300) return { kind: 'delivered', status };
  if (status !== null && status < 500 && status !== 408 && status !== 429) return { kind: 'abandon', status, reason: 'refused' };
  if (attempt >= policy.maxAttempts) return { kind: 'abandon', status, reason: 'attempts_exhausted' };
  const delay = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return {
    kind: 'retry',
    status,
    reason: status !== null ? 'status' : (answer as { failure: 'timeout' | 'connection' }).failure,
    nextAttemptAt: now + Math.round(delay * (0.5 + random / 2)),
  };
}

/** Alerts an instance may claim at `now`: no claim standing, their backoff over. */
export const dueAlerts = (state: AlertsState, now: number): PendingAlert[] =>
  [...state.pending.values()].filter((p) => p.leaseUntil <= now && p.nextAttemptAt <= now);

/** The body a receiver gets (Standard Webhooks' shape: type, timestamp, data). */
export const alertBody = (alert: Alert): string =>
  JSON.stringify({ type: alert.type, timestamp: new Date(alert.at).toISOString(), data: { org_id: alert.orgId, ...alert.data } });
