import type { RecordedEvent } from '../../src/eventstore/event-store';
import type { LimitReset } from '../../src/identity/identity.events';
import { periodOf } from '../../src/ledger/key-limit';
import { keysFold, type ProjectedEvent } from '../../src/projections/folds';
import type { ReadModelWrites } from '../../src/projections/writes';
import fc from 'fast-check';
import {
  type Alert,
  alertBody,
  attemptOutcome,
  dueAlerts,
  evolveAlerts,
  initialAlertsState,
} from '../../src/alerts/alerts.decisions';

/** Which alerts fire when, given the log's events in order: no store, no clock. */

const C = 1_000_000_000; // one credit in nano-credits
const DAY = Date.UTC(2026, 10, 26, 12);
const ORG = 'org-1';

function log() {
  const state = initialAlertsState();
  let position = 0;
  const revisions = new Map<string, number>();
  const apply = (streamId: string, type: string, data: object): Alert[] => {
    const revision = (revisions.get(streamId) ?? -1) + 1;
    revisions.set(streamId, revision);
    const event: RecordedEvent = { streamId, revision, position: ++position, recordedAt: 0, type, data };
    return evolveAlerts(state, event);
  };
  return {
    state,
    grant: (amount: number, at = DAY) =>
      apply(`credits-${ORG}`, 'CreditsGranted', { orgId: ORG, grantId: 'g', amount, reason: 'r', grantedAt: at }),
    settle: (amount: number, at = DAY, keyId = 'key-1') =>
      apply(`reservation-${position}`, 'ReservationSettled', {
        orgId: ORG,
        keyId,
        reservationId: `r${position}`,
        amount,
        settledAt: at,
      }),
    creditNote: (amount: number, kind: 'refund' | 'adjustment' = 'adjustment', keyId: string | null = null, at = DAY) =>
      apply(`credits-${ORG}`, 'CreditNoteIssued', { orgId: ORG, kind, keyId, amount, issuedAt: at }),
    configure: (settings: { balanceBelow?: number; daySpendAbove?: number; keyLimits?: boolean }, at = DAY) =>
      apply(`alerts-${ORG}`, 'AlertsConfigured', {
        orgId: ORG,
        url: 'http://receiver.test/hook',
        balanceBelow: settings.balanceBelow ?? null,
        daySpendAbove: settings.daySpendAbove ?? null,
        keyLimits: settings.keyLimits ?? false,
        by: 'u',
        configuredAt: at,
      }),
    key: (limit: { amount: number; reset: string } | undefined, keyId = 'key-1') =>
      apply(`apikey-${keyId}`, 'ApiKeyCreated', {
        keyId,
        orgId: ORG,
        name: 'k',
        hash: 'h',
        prefix: 'p',
        createdAt: DAY,
        ...(limit ? { limit } : {}),
      }),
    limit: (limit: { amount: number; reset: string } | null, keyId = 'key-1') =>
      apply(`apikey-${keyId}`, 'ApiKeyUpdated', { keyId, orgId: ORG, hash: 'h', changes: { limit }, updatedAt: DAY }),
    apply,
  };
}

const types = (alerts: Alert[]) => alerts.map((a) => a.type);

describe('balance below a threshold', () => {
  it('fires once when a charge takes the balance below, not on the charges after, and again after a grant re-arms it', () => {
    const l = log();
    l.grant(10 * C);
    l.configure({ balanceBelow: 5 * C });
    expect(l.settle(4 * C)).toEqual([]); // 6 left
    const crossed = l.settle(2 * C); // 4 left
    expect(crossed).toHaveLength(1);
    expect(crossed[0]).toMatchObject({ type: 'balance.below', orgId: ORG, data: { balance: '4', threshold: '5' } });
    expect(l.settle(1 * C)).toEqual([]);
    expect(l.settle(1 * C)).toEqual([]);
    expect(l.grant(3 * C)).toEqual([]); // 5: at the threshold, re-armed
    expect(types(l.settle(1))).toEqual(['balance.below']);
  });

  it('a credit note raising the balance re-arms it; an adjustment debiting it below fires', () => {
    const l = log();
    l.grant(10 * C);
    l.configure({ balanceBelow: 5 * C });
    expect(types(l.settle(6 * C))).toEqual(['balance.below']);
    expect(l.creditNote(2 * C, 'refund', 'key-1')).toEqual([]); // 6
    expect(types(l.creditNote(-2 * C))).toEqual(['balance.below']); // 4
  });

  it('a balance already below when the threshold is set is not told until it has risen and fallen again', () => {
    const l = log();
    l.grant(2 * C);
    l.configure({ balanceBelow: 5 * C });
    expect(l.settle(1 * C)).toEqual([]);
    l.grant(10 * C);
    expect(types(l.settle(8 * C))).toEqual(['balance.below']);
  });

  it('nothing fires for an organization without settings, and nothing before they are set', () => {
    const l = log();
    l.grant(10 * C);
    expect(l.settle(9 * C)).toEqual([]);
  });
});

describe("a key's limit", () => {
  it('fires at 80 % and at 100 %, each once a period', () => {
    const l = log();
    l.grant(1_000 * C);
    l.configure({ keyLimits: true });
    l.key({ amount: 10 * C, reset: 'never' });
    expect(l.settle(7 * C)).toEqual([]);
    const eighty = l.settle(1 * C);
    expect(eighty.map((a) => a.data)).toEqual([{ key_id: 'key-1', percent: 80, spent: '8', limit: '10', period: 'all' }]);
    expect(l.settle(1 * C)).toEqual([]);
    expect(l.settle(1 * C).map((a) => a.data.percent)).toEqual([100]);
    expect(l.settle(1 * C)).toEqual([]);
  });

  it('a charge jumping past both tells the highest; a daily limit starts afresh each UTC day', () => {
    const l = log();
    l.grant(1_000 * C);
    l.configure({ keyLimits: true });
    l.key({ amount: 10 * C, reset: 'daily' });
    expect(l.settle(12 * C).map((a) => a.data.percent)).toEqual([100]);
    expect(l.settle(9 * C, DAY + 86_400_000).map((a) => a.data.percent)).toEqual([80]);
  });

  it('80 % is exact: one nano-credit short does not fire', () => {
    const l = log();
    l.grant(1_000 * C);
    l.configure({ keyLimits: true });
    l.key({ amount: 10 * C + 1, reset: 'never' }); // 80 % = 8.0000000008
    expect(l.settle(8 * C)).toEqual([]);
    expect(l.settle(1).map((a) => a.data.percent)).toEqual([80]);
  });

  it('off unless the organization asks for it; a refund below re-arms the level', () => {
    const l = log();
    l.grant(1_000 * C);
    l.configure({ keyLimits: false });
    l.key({ amount: 10 * C, reset: 'never' });
    expect(l.settle(9 * C)).toEqual([]);
    l.configure({ keyLimits: true });
    expect(l.settle(0)).toEqual([]);
    l.creditNote(2 * C, 'refund', 'key-1'); // 7 spent
    expect(l.settle(1 * C).map((a) => a.data.percent)).toEqual([80]);
  });

  it('a key without a limit, or whose limit was removed, never fires', () => {
    const l = log();
    l.grant(1_000 * C);
    l.configure({ keyLimits: true });
    l.key(undefined);
    expect(l.settle(100 * C)).toEqual([]);
    l.limit({ amount: 1_000 * C, reset: 'never' });
    l.limit(null);
    expect(l.settle(900 * C)).toEqual([]);
  });
});

describe("a key's spend, counted as the ledger counts it", () => {
  it.each(['daily', 'weekly', 'monthly'] as const)(
    'a refund leaves a %s limit counting the charge: the 100 %% alert still fires when the key reaches its limit',
    (reset) => {
      const l = log();
      l.grant(1 * C);
      l.configure({ keyLimits: true });
      l.key({ amount: 100_000, reset }); // 0.0001
      expect(l.settle(90_000).map((a) => a.data.percent)).toEqual([80]);
      expect(l.creditNote(30_000, 'refund', 'key-1')).toEqual([]);
      // GET /key's limit_usage is 0.000101 here, and admission refuses the next request.
      const full = l.settle(11_000);
      expect(full.map((a) => a.data)).toEqual([
        { key_id: 'key-1', percent: 100, spent: '0.000101', limit: '0.0001', period: periodOf(reset, DAY) },
      ]);
    },
  );

  it('a refund comes off a limit that never resets, and re-arms its level', () => {
    const l = log();
    l.grant(1 * C);
    l.configure({ keyLimits: true });
    l.key({ amount: 100_000, reset: 'never' });
    expect(l.settle(90_000).map((a) => a.data.percent)).toEqual([80]);
    l.creditNote(30_000, 'refund', 'key-1'); // 60 %
    expect(l.settle(11_000)).toEqual([]); // 71 %
    expect(l.settle(9_000).map((a) => a.data.percent)).toEqual([80]);
  });

  /** The key's spend per period as the ledger's keys fold writes it. */
  class KeyPeriodSpend implements ReadModelWrites {
    readonly spent = new Map<string, number>();
    begin = () => true;
    add(table: string, field: string, by: number) {
      if (table === 'keyPeriodSpend') this.spent.set(field, (this.spent.get(field) ?? 0) + by);
    }
    release() {}
    raise() {}
    set() {}
    push() {}
    clearPendingHold() {}
    update() {}
    include() {}
    exclude() {}
    schedule() {}
    unschedule() {}
  }

  it('whatever the charges, refunds and days, the alerts count each period as the ledger does', () => {
    const HOUR = 3_600_000;
    const step = fc.record({
      refund: fc.boolean(),
      amount: fc.integer({ min: 1, max: 5_000 }),
      hoursLater: fc.integer({ min: 0, max: 60 }),
    });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const l = log();
        const ledger = new KeyPeriodSpend();
        const fold = (type: 'ReservationSettled' | 'CreditNoteIssued', data: object) => {
          const handle = keysFold[type] as (event: ProjectedEvent, w: ReadModelWrites) => void;
          handle({ type, data } as ProjectedEvent, ledger);
        };
        l.key({ amount: 1_000_000, reset: 'never' });
        let at = DAY;
        let charged = 0;
        for (const { refund, amount, hoursLater } of steps) {
          at += hoursLater * HOUR;
          if (refund && charged >= amount) {
            charged -= amount;
            l.creditNote(amount, 'refund', 'key-1', at);
            fold('CreditNoteIssued', { orgId: ORG, kind: 'refund', keyId: 'key-1', amount, issuedAt: at });
          } else if (!refund) {
            charged += amount;
            l.settle(amount, at);
            fold('ReservationSettled', { orgId: ORG, keyId: 'key-1', reservationId: 'r', amount, settledAt: at });
          }
        }
        const counted = l.state.keys.get('key-1')?.spent;
        for (const reset of ['never', 'daily', 'weekly', 'monthly'] as LimitReset[]) {
          const period = periodOf(reset, at);
          const alerts = counted?.[reset].period === period ? counted[reset].amount : 0;
          expect(alerts).toBe(ledger.spent.get(`key-1|${period}`) ?? 0);
        }
      }),
    );
  });
});

describe("a day's spend", () => {
  it('fires once a UTC day, when the day’s settled charges rise above the amount', () => {
    const l = log();
    l.grant(1_000 * C);
    l.configure({ daySpendAbove: 5 * C });
    expect(l.settle(5 * C)).toEqual([]); // at, not above
    const above = l.settle(1);
    expect(above.map((a) => a.data)).toEqual([{ day: '2026-11-26', spent: '5.000000001', threshold: '5' }]);
    expect(l.settle(5 * C)).toEqual([]);
    const nextDay = Date.UTC(2026, 10, 27, 0, 0, 1);
    expect(l.settle(4 * C, nextDay)).toEqual([]);
    expect(types(l.settle(2 * C, nextDay))).toEqual(['spend.daily']);
    // A settlement of the day before, landing late, counts in no day followed.
    expect(l.settle(100 * C, DAY)).toEqual([]);
  });
});

describe('ids and deliveries', () => {
  it("an alert's id is its triggering event's position and its kind; one event may fire several", () => {
    const l = log();
    l.grant(10 * C);
    l.configure({ balanceBelow: 5 * C, daySpendAbove: 5 * C, keyLimits: true });
    l.key({ amount: 6 * C, reset: 'never' });
    const fired = l.settle(6 * C); // position 4
    expect(fired.map((a) => a.id)).toEqual(['al_4_balance', 'al_4_key', 'al_4_spend']);
  });

  it('a pending alert is due until claimed, again when its claim lapses or its backoff ends, and gone once delivered', () => {
    const l = log();
    l.grant(10 * C);
    l.configure({ balanceBelow: 5 * C });
    const [alert] = l.settle(6 * C);
    const stream = `alert-${alert.id}`;
    expect(dueAlerts(l.state, 0).map((p) => p.alert.id)).toEqual([alert.id]);
    l.apply(stream, 'AlertClaimed', {
      alertId: alert.id,
      orgId: ORG,
      instance: 'a',
      attempt: 1,
      claimedAt: 0,
      leaseUntil: 1_000,
    });
    expect(dueAlerts(l.state, 999)).toEqual([]);
    expect(dueAlerts(l.state, 1_000).map((p) => [p.attempts, p.revision])).toEqual([[1, 0]]);
    l.apply(stream, 'AlertAttemptFailed', {
      alertId: alert.id,
      orgId: ORG,
      attempt: 1,
      status: 500,
      reason: 'status',
      failedAt: 10,
      nextAttemptAt: 5_000,
    });
    expect(dueAlerts(l.state, 4_999)).toEqual([]);
    expect(dueAlerts(l.state, 5_000)).toHaveLength(1);
    l.apply(stream, 'AlertDelivered', { alertId: alert.id, orgId: ORG, attempt: 2, status: 200, deliveredAt: 6_000 });
    expect(dueAlerts(l.state, 10_000)).toEqual([]);
  });

  it('a test alert fires only for an organization with settings', () => {
    const l = log();
    expect(l.apply(`alerts-${ORG}`, 'AlertTestRequested', { orgId: ORG, by: 'u', requestedAt: DAY })).toEqual([]);
    l.configure({});
    expect(types(l.apply(`alerts-${ORG}`, 'AlertTestRequested', { orgId: ORG, by: 'u', requestedAt: DAY }))).toEqual(['test']);
  });

  it('the body says the type, the time it fired and the organization', () => {
    const body = alertBody({ id: 'al_1_test', orgId: ORG, type: 'test', at: DAY, data: { message: 'm' } });
    expect(JSON.parse(body)).toEqual({
      type: 'test',
      timestamp: '2026-11-26T12:00:00.000Z',
      data: { org_id: ORG, message: 'm' },
    });
  });
});

describe('attempt outcomes', () => {
  const policy = { maxAttempts: 4, baseDelayMs: 1_000, maxDelayMs: 3_000 };
  it('2xx delivers; 5xx, 408, 429, timeouts and lost connections back off exponentially with jitter, capped', () => {
    expect(attemptOutcome({ status: 204 }, 1, policy, 0, 0.5)).toEqual({ kind: 'delivered', status: 204 });
    expect(attemptOutcome({ status: 503 }, 1, policy, 0, 0)).toMatchObject({ kind: 'retry', nextAttemptAt: 500 });
    expect(attemptOutcome({ status: 429 }, 2, policy, 0, 1)).toMatchObject({ kind: 'retry', nextAttemptAt: 2_000 });
    expect(attemptOutcome({ failure: 'timeout' }, 3, policy, 100, 1)).toEqual({
      kind: 'retry',
      status: null,
      reason: 'timeout',
      nextAttemptAt: 3_100,
    });
    expect(attemptOutcome({ status: 408 }, 3, policy, 0, 0.5)).toMatchObject({ kind: 'retry', nextAttemptAt: 2_250 });
  });
  it('gives up at once on a destination alerts may not reach (a loopback, private or link-local address): trying again would not change it', () => {
    expect(attemptOutcome({ failure: 'forbidden' }, 1, policy, 0, 0.5)).toEqual({
      kind: 'abandon',
      status: null,
      reason: 'forbidden_destination',
    });
  });
  it('gives up on the last attempt, and at once on another 4xx', () => {
    expect(attemptOutcome({ failure: 'connection' }, 4, policy, 0, 0.5)).toEqual({
      kind: 'abandon',
      status: null,
      reason: 'attempts_exhausted',
    });
    expect(attemptOutcome({ status: 410 }, 1, policy, 0, 0.5)).toEqual({ kind: 'abandon', status: 410, reason: 'refused' });
  });
});
