import fc from 'fast-check';
import type { RecordedEvent } from '../../src/eventstore/event-store';
import {
  type Alert,
  alertsStateOf,
  type AlertsState,
  dueAlerts,
  evolveAlerts,
  initialAlertsState,
  savedAlertsState,
} from '../../src/alerts/alerts.decisions';
import { type AlertsSnapshot, alertsSnapshotPieces } from '../../src/alerts/alerts-snapshot';

/**
 * The alert follower's saved state: folding a log's first events, saving the state and reading it
 * back, then folding the rest, gives the state (and the alerts, ids and moments) folding the whole
 * log gives, at every checkpoint. No store, no file.
 */

const C = 1_000_000_000;
const START = Date.UTC(2026, 0, 27, 9); // a Tuesday: the log crosses weeks and a month's end
const HOUR = 3_600_000;
const ORGS = ['org-a', 'org-b', 'org-c'];
const KEYS = ['key-1', 'key-2', 'key-3', 'key-4'];
const RESETS = ['never', 'daily', 'weekly', 'monthly'];

/**
 * A log of `length` events drawn from `seed`: grants, settings (turned on, changed, off), keys and
 * their limits, settlements over five weeks (some landing late), refunds, test alerts, and the
 * deliveries of the alerts it fires (claims, failures, ends) at their streams' revisions.
 */
function drawnLog(seed: number, length: number): RecordedEvent[] {
  let s = seed >>> 0;
  const random = () => {
    // mulberry32
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const scratch = initialAlertsState();
  const events: RecordedEvent[] = [];
  const revisions = new Map<string, number>();
  const undelivered: Alert[] = [];
  let now = START;
  const append = (streamId: string, type: string, data: object) => {
    const revision = (revisions.get(streamId) ?? -1) + 1;
    revisions.set(streamId, revision);
    const event: RecordedEvent = { streamId, revision, position: events.length + 1, recordedAt: now, type, data };
    events.push(event);
    undelivered.push(...evolveAlerts(scratch, event));
  };
  const keyOrg = new Map(KEYS.map((keyId, i) => [keyId, ORGS[i % ORGS.length]]));
  const limit = () => (random() < 0.2 ? null : { amount: Math.round((2 + random() * 8) * C), reset: pick(RESETS) });
  for (const orgId of ORGS)
    append(`credits-${orgId}`, 'CreditsGranted', { orgId, grantId: 'g', amount: 30 * C, reason: 'r', grantedAt: now });
  for (const [keyId, orgId] of keyOrg) {
    append(`apikey-${keyId}`, 'ApiKeyCreated', {
      keyId,
      orgId,
      name: keyId,
      hash: keyId,
      prefix: 'p',
      createdAt: now,
      limit: limit(),
    });
  }
  while (events.length < length) {
    now += Math.round(random() * 2 * HOUR);
    const orgId = pick(ORGS);
    const keyId = pick(KEYS);
    const roll = random();
    if (roll < 0.45) {
      // Now and then a settlement recorded after later ones (a long request), in an earlier period.
      const settledAt = random() < 0.1 ? now - Math.round(random() * 30 * HOUR) : now;
      append(`reservation-${events.length}`, 'ReservationSettled', {
        orgId: keyOrg.get(keyId),
        keyId,
        reservationId: `r${events.length}`,
        amount: Math.round(random() * 1.5 * C),
        settledAt,
      });
    } else if (roll < 0.52) {
      append(`credits-${orgId}`, 'CreditsGranted', {
        orgId,
        grantId: 'g',
        amount: Math.round(random() * 10 * C),
        reason: 'r',
        grantedAt: now,
      });
    } else if (roll < 0.57) {
      const refund = random() < 0.7;
      append(`credits-${orgId}`, 'CreditNoteIssued', {
        orgId: refund ? keyOrg.get(keyId) : orgId,
        kind: refund ? 'refund' : 'adjustment',
        keyId: refund ? keyId : null,
        amount: Math.round((refund ? 1 : random() < 0.5 ? -2 : 2) * random() * C),
        issuedAt: now,
      });
    } else if (roll < 0.62) {
      append(`alerts-${orgId}`, 'AlertsConfigured', {
        orgId,
        url: `http://${orgId}.test/hook`,
        balanceBelow: random() < 0.8 ? Math.round((5 + random() * 20) * C) : null,
        daySpendAbove: random() < 0.8 ? Math.round((1 + random() * 5) * C) : null,
        keyLimits: random() < 0.8,
        by: 'u',
        configuredAt: now,
      });
      if (random() < 0.5)
        append(`alerts-${orgId}`, 'AlertsSecretIssued', { orgId, secretId: `s${events.length}`, by: 'u', issuedAt: now });
    } else if (roll < 0.64) {
      append(`alerts-${orgId}`, 'AlertsTurnedOff', { orgId, by: 'u', turnedOffAt: now });
    } else if (roll < 0.67) {
      append(`apikey-${keyId}`, 'ApiKeyUpdated', {
        keyId,
        orgId: keyOrg.get(keyId),
        hash: keyId,
        changes: { limit: limit() },
        updatedAt: now,
      });
    } else if (roll < 0.72) {
      append(`alerts-${orgId}`, 'AlertTestRequested', { orgId, by: 'u', requestedAt: now });
    } else if (undelivered.length > 0) {
      // A step of an alert's delivery: claimed, then failed (tried again), delivered or given up.
      const alert = undelivered[Math.floor(random() * undelivered.length)];
      const stream = `alert-${alert.id}`;
      const base = { alertId: alert.id, orgId: alert.orgId };
      const attempt = Math.floor(((revisions.get(stream) ?? -1) + 1) / 2) + 1;
      if (((revisions.get(stream) ?? -1) + 1) % 2 === 0) {
        append(stream, 'AlertClaimed', { ...base, instance: 'i', attempt, claimedAt: now, leaseUntil: now + 5_000 });
      } else {
        const end = random();
        if (end < 0.5) {
          append(stream, 'AlertAttemptFailed', {
            ...base,
            attempt: attempt - 1,
            status: 500,
            reason: 'status',
            failedAt: now,
            nextAttemptAt: now + 60_000,
          });
        } else {
          append(stream, end < 0.85 ? 'AlertDelivered' : 'AlertAbandoned', {
            ...base,
            attempt: attempt - 1,
            status: 200,
            deliveredAt: now,
            attempts: attempt - 1,
            reason: 'refused',
            abandonedAt: now,
          });
          undelivered.splice(undelivered.indexOf(alert), 1);
        }
      }
    }
  }
  return events.slice(0, length);
}

/** The state through its file's text: saved in slices of `sliceSize` entries, parsed back. */
async function throughFile(
  state: AlertsState,
  position: number,
  events: RecordedEvent[],
  sliceSize: number,
): Promise<AlertsState> {
  const last = events[position - 1];
  const snapshot: AlertsSnapshot = {
    version: 1,
    logId: 'log-1',
    position,
    last: { streamId: last.streamId, revision: last.revision },
    ...savedAlertsState(state),
  };
  const pieces = await alertsSnapshotPieces(snapshot, sliceSize, async () => undefined);
  const parsed = JSON.parse(pieces.join('')) as AlertsSnapshot;
  expect(parsed).toMatchObject({ version: 1, logId: 'log-1', position, last: snapshot.last });
  return alertsStateOf(parsed);
}

/** Equal, and its maps in the same order (pending alerts are tried in that order). */
const expectSameState = (actual: AlertsState, expected: AlertsState) =>
  expect(savedAlertsState(actual)).toStrictEqual(savedAlertsState(expected));

it('a saved state plus the events after its checkpoint is the whole log folded: same state, same alerts, wherever the checkpoint falls', async () => {
  const seen = { fired: 0, pendingSaved: 0, claimedSaved: 0, types: new Set<string>() };
  await fc.assert(
    fc.asyncProperty(
      fc.integer(),
      fc.integer({ min: 1, max: 4 }),
      fc.integer({ min: 1, max: 7 }),
      async (seed, sliceSize, checkpointEvery) => {
        const events = drawnLog(seed, 300);
        const whole = initialAlertsState();
        const firedWhole = events.map((event) => evolveAlerts(whole, event));
        const before = initialAlertsState();
        let folded = 0;
        for (let position = 1; position < events.length; position += checkpointEvery) {
          for (; folded < position; folded++) evolveAlerts(before, events[folded]);
          const restored = await throughFile(before, position, events, sliceSize);
          expectSameState(restored, before);
          seen.pendingSaved += restored.pending.size;
          seen.claimedSaved += [...restored.pending.values()].filter((p) => p.attempts > 0).length;

          const firedAfter = events.slice(position).map((event) => evolveAlerts(restored, event));
          expect(firedAfter).toStrictEqual(firedWhole.slice(position));
          expectSameState(restored, whole);
          // And so the same alerts due, in the same order (here at the log's last moment).
          const at = events[events.length - 1].recordedAt;
          expect(dueAlerts(restored, at)).toStrictEqual(dueAlerts(whole, at));
        }
        for (const fired of firedWhole.flat()) seen.types.add(fired.type);
        seen.fired += firedWhole.flat().length;
      },
    ),
    { numRuns: 12 },
  );
  // The logs drawn fired every kind of alert, and checkpoints fell while alerts were pending and claimed.
  expect([...seen.types].sort()).toEqual(['balance.below', 'key.limit', 'spend.daily', 'test']);
  expect(seen.fired).toBeGreaterThan(100);
  expect(seen.pendingSaved).toBeGreaterThan(100);
  expect(seen.claimedSaved).toBeGreaterThan(10);
});

it('its pieces parse back to the snapshot, however the entries are sliced, and each slice is its own piece', async () => {
  const state = initialAlertsState();
  for (const event of drawnLog(7, 200)) evolveAlerts(state, event);
  const snapshot: AlertsSnapshot = {
    version: 1,
    logId: 'l',
    position: 200,
    last: { streamId: 's', revision: 3 },
    ...savedAlertsState(state),
  };
  let pauses = 0;
  const pieces = await alertsSnapshotPieces(snapshot, 2, async () => void pauses++);
  expect(JSON.parse(pieces.join(''))).toStrictEqual(JSON.parse(JSON.stringify(snapshot)));
  const entries = snapshot.orgs.length + snapshot.keys.length + snapshot.pending.length;
  expect(Math.max(...pieces.map((p) => p.length))).toBeLessThan(JSON.stringify(snapshot).length / 2);
  expect(pauses).toBeGreaterThanOrEqual(Math.floor(entries / 2) - 3);
  const empty = { ...snapshot, orgs: [], keys: [], pending: [] };
  expect(JSON.parse((await alertsSnapshotPieces(empty)).join(''))).toStrictEqual(empty);
});
