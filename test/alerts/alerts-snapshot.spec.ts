import { copyFileSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { join } from 'node:path';
import type { EventStore, NewEvent, RecordedEvent } from '../../src/eventstore/event-store';
import { EventStoreDbEventStore } from '../../src/eventstore/eventstoredb-event-store';
import { SqliteEventStore } from '../../src/eventstore/sqlite-event-store';
import { evolveAlerts, initialAlertsState, savedAlertsState } from '../../src/alerts/alerts.decisions';
import { type AlertsSnapshot, AlertsSnapshotFile } from '../../src/alerts/alerts-snapshot';
import { AlertDelivery } from '../../src/alerts/delivery';
import { AlertSecrets } from '../../src/alerts/signing';
import { WebhookDestinations } from '../../src/alerts/webhook-destinations';
import { parseNetworks } from '../../src/config/networks';
import { STALE_SIDE_FILE_MS } from '../../src/projections/snapshot-file';
import { eventually } from '../support/processes';
import { SimulatedEventStoreDb } from '../support/simulated-eventstoredb';
import { describeWithSmallDisk, mountSmallDisk, type SmallDisk } from '../support/small-disk';
import { tempDir } from '../support/temp';
import { WebhookReceiver } from './webhook-receiver';

/**
 * The alert follower started from its saved state: it reads the log only after the checkpoint and
 * delivers what crosses after the restart once; a saved state that does not belong to the log as it
 * is (another log, a log restored or replaced, another version, a damaged file) is ignored and the
 * log folded from its start; a save that fails (a full disk) keeps the last one and stops nothing.
 */

const C = 1_000_000_000;
const ORG = 'org-1';

const dir = tempDir('alerts-snapshot');
let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await WebhookReceiver.start();
});
beforeEach(() => {
  receiver.received.length = 0;
});
/** Followers to stop and logs to close, however the test ended (an open log keeps the process alive). */
const toClose: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of toClose.splice(0).reverse()) await close().catch(() => undefined);
});
afterAll(async () => {
  await receiver.close();
  dir.cleanup();
});

let opened = 0;
function sqliteLog(file = join(dir.path, `events-${++opened}.sqlite`)): SqliteEventStore {
  const events = new SqliteEventStore(file, { pollIntervalMs: 10 });
  toClose.push(() => events.close());
  return events;
}

const grant = (amount: number): NewEvent => ({
  type: 'CreditsGranted',
  data: { orgId: ORG, grantId: 'g', amount, reason: 'r', grantedAt: Date.now() },
});
const settle = (amount: number): NewEvent => ({
  type: 'ReservationSettled',
  data: { orgId: ORG, keyId: 'key-1', reservationId: 'r', amount, settledAt: Date.now() },
});

/** An organization with 10 credits whose balance below 5 is told to the receiver, then `filler` grants and charges of 0. */
async function loggedOrganization(events: EventStore, filler: number): Promise<void> {
  await events.append(
    `alerts-${ORG}`,
    [
      {
        type: 'AlertsConfigured',
        data: {
          orgId: ORG,
          url: receiver.url,
          balanceBelow: 5 * C,
          daySpendAbove: null,
          keyLimits: false,
          by: 'u',
          configuredAt: Date.now(),
        },
      },
      { type: 'AlertsSecretIssued', data: { orgId: ORG, secretId: 's1', by: 'u', issuedAt: Date.now() } },
    ],
    'no_stream',
  );
  await events.append(`credits-${ORG}`, [grant(10 * C)], 'no_stream');
  await fill(events, filler);
}

/** `count` grants and charges of nothing, 50 to a stream. */
async function fill(events: EventStore, count: number, prefix = 'filler'): Promise<void> {
  for (let i = 0; i < count; i += 50) {
    const batch = Array.from({ length: Math.min(50, count - i) }, (_, j) => ((i + j) % 2 ? grant(0) : settle(0)));
    await events.append(`${prefix}-${i}`, batch, 'no_stream');
  }
}

/**
 * The log, with what the follower reads of it counted: where each subscription starts, how many events
 * it hands over, and the last one's position (folded once the follower is handed it: it folds a batch at once).
 */
function counted(events: EventStore) {
  const reads = { subscribedAfter: [] as number[], events: 0, last: 0 };
  const store = new Proxy(events, {
    get(target, property) {
      if (property === 'subscribe') {
        return async function* (after: number, signal: AbortSignal) {
          reads.subscribedAfter.push(after);
          for await (const batch of target.subscribe(after, signal)) {
            reads.events += batch.length;
            reads.last = batch[batch.length - 1].position;
            yield batch;
          }
        };
      }
      const value = Reflect.get(target, property) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store, reads };
}

function follower(events: EventStore, file: string, lines: string[] = [], everyMs = 600_000): AlertDelivery {
  const delivery = new AlertDelivery(
    events,
    AlertSecrets.fromEnvironment(dir.path, 'x'.repeat(40)),
    {
      attemptTimeoutMs: 2_000,
      retry: { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 100 },
      tickMs: 20,
      snapshot: { file, everyMs },
      // The receiver is on 127.0.0.1: a loopback address webhooks reach only where the operator allows it.
      destinations: new WebhookDestinations(parseNetworks('127.0.0.1')),
    },
    (line) => lines.push(line),
  );
  toClose.push(() => delivery.stop());
  return delivery;
}

const savedAt = (file: string) => (JSON.parse(readFileSync(file, 'utf8')) as AlertsSnapshot).position;

/** A follower started on `events`, stopped once it has folded the whole log: its state saved to `file`. */
async function savedThrough(events: EventStore, file: string): Promise<void> {
  const { store, reads } = counted(events);
  const delivery = follower(store, file);
  await delivery.start();
  const head = await events.headPosition();
  await eventually(() => reads.last === head);
  await delivery.stop();
  expect(savedAt(file)).toBe(head);
}

/** The alerts' deliveries recorded in the log. */
const delivered = async (events: EventStore) => (await events.readAll(0, 100_000)).filter((e) => e.type === 'AlertDelivered');

describe.each([
  ['the SQLite log', () => ({ events: sqliteLog(), again: (e: EventStore) => e, invalid: () => [] as unknown[] })],
  [
    'EventStoreDB (simulated server)',
    () => {
      const server = new SimulatedEventStoreDb();
      const over = () => {
        const events = EventStoreDbEventStore.withClient(server, {
          appendCredentials: { username: 'u', password: 'p' },
          retryDelaysMs: [],
        });
        toClose.push(() => events.close());
        return events;
      };
      // A restarted follower gets a new client, as a restarted gateway would.
      return { events: over(), again: () => over(), invalid: () => server.invalidPositions };
    },
  ],
])('on %s', (name, open) => {
  it('a restarted follower reads only the events after its saved checkpoint, and delivers the crossing after the restart once', async () => {
    const { events, again, invalid } = open();
    const file = join(dir.path, `${name}.alerts.snapshot.json`);
    await events.logId();
    await loggedOrganization(events, 400);
    const first = follower(events, file);
    await first.start();
    await events.append(
      `alerts-${ORG}`,
      [{ type: 'AlertTestRequested', data: { orgId: ORG, by: 'u', requestedAt: Date.now() } }],
      1,
    );
    await receiver.until((r) => r.length === 1);
    await eventually(async () => (await delivered(events)).length === 1);
    await first.stop();
    const checkpoint = savedAt(file);
    expect(checkpoint).toBeGreaterThan(400);

    // While it is down: a charge takes the balance below 5.
    await events.append('reservation-cross', [settle(6 * C)], 'no_stream');
    const restarted = again(events);
    const { store, reads } = counted(restarted);
    const lines: string[] = [];
    const second = follower(store, file, lines);
    await second.start();
    await receiver.until((r) => r.length === 2);
    await eventually(async () => (await delivered(restarted)).length === 2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await second.stop();

    expect(lines).toEqual([]);
    expect(reads.subscribedAfter).toEqual([checkpoint]);
    // The charge, and the crossing's claim and delivery: not the 400 and more before.
    expect(reads.events).toBeLessThan(10);
    expect(receiver.received.map((r) => JSON.parse(r.body).type)).toEqual(['test', 'balance.below']);
    expect(receiver.ids()).toHaveLength(2);
    expect(savedAt(file)).toBeGreaterThan(checkpoint);
    expect(invalid()).toEqual([]);
  });
});

describe('a saved state that is not of the log as it is now is ignored: the log is folded from its start', () => {
  /** The log's state folded whole, as a follower starting from nothing has it. */
  const foldedWhole = async (events: EventStore) => {
    const state = initialAlertsState();
    for (const event of await events.readAll(0, 100_000)) evolveAlerts(state, event);
    return savedAlertsState(state);
  };

  /** A follower's start on `events` with `file` (put back as it was after its stop): where it subscribed, and what it said. */
  async function started(events: EventStore, file: string) {
    const text = readFileSync(file, 'utf8');
    const { store, reads } = counted(events);
    const lines: string[] = [];
    const delivery = follower(store, file, lines);
    await delivery.start();
    await delivery.stop();
    writeFileSync(file, text);
    return { subscribedAfter: reads.subscribedAfter, lines };
  }

  it('of another log, even one holding the same events', async () => {
    const file = join(dir.path, 'other-log.json');
    const one = sqliteLog();
    await loggedOrganization(one, 50);
    await savedThrough(one, file);
    const other = sqliteLog();
    await loggedOrganization(other, 50);
    const loaded = await new AlertsSnapshotFile(file, await other.logId(), 0, () => {}).load(other);
    expect(loaded).toBeNull();
    const { subscribedAfter, lines } = await started(other, file);
    expect(subscribedAfter).toEqual([0]);
    expect(lines).toEqual([
      expect.stringMatching(/is not used \(the saved state is of another log .*\): folding the log from its start$/),
    ]);
    // Trusted on its own log, and equal to the whole log folded.
    const own = await new AlertsSnapshotFile(file, await one.logId(), 0, () => {}).load(one);
    expect(savedAlertsState(own!.state)).toStrictEqual(await foldedWhole(one));
  });

  it('of a log restored from an older backup: past its head, then with another event at the checkpoint', async () => {
    const logFile = join(dir.path, 'restored.sqlite');
    const backup = join(dir.path, 'restored.backup.sqlite');
    const file = join(dir.path, 'restored.json');
    let events = sqliteLog(logFile);
    await loggedOrganization(events, 0);
    await events.close();
    copyFileSync(logFile, backup);
    events = sqliteLog(logFile);
    await fill(events, 100);
    await savedThrough(events, file);
    const checkpoint = savedAt(file);
    await events.close();

    // The backup put back: the same log (its identity), without the events after it.
    for (const f of readdirSync(dir.path).filter((f) => f.startsWith('restored.sqlite'))) rmSync(join(dir.path, f));
    copyFileSync(backup, logFile);
    events = sqliteLog(logFile);
    let start = await started(events, file);
    expect(start.subscribedAfter).toEqual([0]);
    expect(start.lines).toEqual([expect.stringMatching(/\(checkpoint \d+ is past the log's head 3\)/)]);

    // Written on since: the checkpoint's position holds another event.
    await fill(events, checkpoint + 5, 'rewritten');
    start = await started(events, file);
    expect(start.subscribedAfter).toEqual([0]);
    expect(start.lines).toEqual([
      expect.stringMatching(/\(the log holds another event at checkpoint \d+ than the last one in the saved state\)/),
    ]);
  });

  it('of another version, incomplete, or damaged', async () => {
    const file = join(dir.path, 'versions.json');
    const events = sqliteLog();
    await loggedOrganization(events, 50);
    await savedThrough(events, file);
    const good = readFileSync(file, 'utf8');
    expect((await started(events, file)).subscribedAfter).not.toEqual([0]);

    const saved = JSON.parse(good) as AlertsSnapshot;
    const cases: Array<[string, string, RegExp]> = [
      ['another version', JSON.stringify({ ...saved, version: 0 }), /\(the saved state is of another version of the service\)/],
      ['cut short', good.slice(0, Math.floor(good.length / 2)), /\(.*JSON.*\)/],
      ['without its last event', JSON.stringify({ ...saved, last: undefined }), /\(incomplete\)/],
      ['without its alerts', JSON.stringify({ ...saved, pending: undefined }), /\(incomplete\)/],
      ['not an object', 'null', /\(incomplete\)/],
    ];
    for (const [what, text, reason] of cases) {
      writeFileSync(file, text);
      const start = await started(events, file);
      expect({ what, subscribedAfter: start.subscribedAfter }).toEqual({ what, subscribedAfter: [0] });
      expect(start.lines).toEqual([expect.stringMatching(reason)]);
    }
  });
});

describeWithSmallDisk('the saved state on a full disk', () => {
  let disk: SmallDisk;
  beforeAll(() => {
    disk = mountSmallDisk('alerts-snapshot', 1);
  });
  afterAll(() => disk?.unmount());

  it('a failed save leaves the last one and delivery goes on; with room again, it saves', async () => {
    const file = join(disk.path, 'alerts.snapshot.json');
    const events = sqliteLog();
    await loggedOrganization(events, 0);
    const lines: string[] = [];
    // Saved after every batch.
    const delivery = follower(events, file, lines, 0);
    await delivery.start();
    await eventually(async () => {
      try {
        return savedAt(file) === 3;
      } catch {
        return false;
      }
    });
    disk.fill();
    await events.append(
      `alerts-${ORG}`,
      [{ type: 'AlertTestRequested', data: { orgId: ORG, by: 'u', requestedAt: Date.now() } }],
      1,
    );
    await receiver.until((r) => r.length === 1);
    await eventually(async () => (await delivered(events)).length === 1);
    expect(savedAt(file)).toBe(3);
    expect(lines.length).toBeGreaterThan(0);
    expect(new Set(lines)).toEqual(
      new Set([
        'alerts: state not saved (ENOSPC: no space left on device, write): the next start folds the log from the last save',
      ]),
    );
    // Each failed save removes its side file (a save still writing has one while it lasts).
    await eventually(async () => readdirSync(disk.path).filter((f) => f.endsWith('.partial')).length === 0);

    disk.free();
    await delivery.stop();
    expect(savedAt(file)).toBeGreaterThan(3);
  });
});

it("the file holds the whole log's state as folded, the log's identity and the last event folded", async () => {
  const events = sqliteLog();
  await loggedOrganization(events, 10);
  const file = join(dir.path, 'plain.json');
  await savedThrough(events, file);
  const saved = JSON.parse(readFileSync(file, 'utf8')) as AlertsSnapshot;
  const state = initialAlertsState();
  const all: RecordedEvent[] = await events.readAll(0, 100);
  for (const event of all) evolveAlerts(state, event);
  expect({ orgs: saved.orgs, keys: saved.keys, pending: saved.pending }).toStrictEqual(
    JSON.parse(JSON.stringify(savedAlertsState(state))),
  );
  expect(saved).toMatchObject({
    version: 2,
    logId: await events.logId(),
    position: 13,
    last: { streamId: 'filler-0', revision: 9 },
  });
});

it('a start removes the side files of saves never finished (its writer killed), saying so, and keeps a fresh one', async () => {
  const events = sqliteLog();
  await loggedOrganization(events, 10);
  const file = join(dir.path, 'side-files.json');
  const stale = `${file}.0b5d.partial`;
  const fresh = `${file}.e91f.partial`;
  writeFileSync(stale, '{"version":1,"logId":');
  writeFileSync(fresh, '{"version":1,"logId":');
  const killedAt = (Date.now() - STALE_SIDE_FILE_MS - 60_000) / 1000;
  utimesSync(stale, killedAt, killedAt);
  const lines: string[] = [];
  await follower(events, file, lines).start();
  expect(lines).toEqual([
    expect.stringMatching(
      /side-files\.json: removed 1 side file\(s\) of saves never finished \(side-files\.json\.0b5d\.partial\)$/,
    ),
  ]);
  expect(readdirSync(dir.path).filter((name) => name.startsWith('side-files.json.'))).toEqual(['side-files.json.e91f.partial']);
});

it('folding a long log from its start, the follower lets the event loop turn between batches', async () => {
  const events = sqliteLog();
  await loggedOrganization(events, 5_000);
  const head = await events.headPosition();
  const { store, reads } = counted(events);
  await follower(store, join(dir.path, 'turns.json')).start();
  // Each turn of the event loop finds the follower further on, never the whole log folded in one.
  const seen: number[] = [];
  while (reads.last < head) {
    await nextTurn();
    seen.push(reads.last);
  }
  expect(seen.length).toBeGreaterThanOrEqual(4);
  expect(seen[0]).toBeLessThan(head);
});
