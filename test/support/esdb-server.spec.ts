import { randomUUID } from 'node:crypto';
import {
  AccessDeniedError,
  BACKWARDS,
  DeadlineExceededError,
  END,
  EventStoreDBClient,
  FORWARDS,
  MaxAppendSizeExceededError,
  NO_STREAM,
  NotLeaderError,
  Position,
  ResolvedEvent,
  StreamNotFoundError,
  WrongExpectedVersionError,
  excludeSystemEvents,
  jsonEvent,
  streamNameFilter,
} from '@eventstore/db-client';
import { EsdbCluster } from './esdb-server/cluster';
import { TestCertificates, testCertificates } from './esdb-server/certificates';
import { EsdbServer } from './esdb-server/server';

/** What the protocol server answers, seen through the official client (6.2.1) over gRPC. */
describe('EventStoreDB protocol server', () => {
  let server: EsdbServer;
  let client: EventStoreDBClient;
  const stream = () => `s-${randomUUID()}`;
  const ev = (n: number) => jsonEvent({ type: 'Happened', data: { n } });
  const all = async <E>(read: AsyncIterable<E>): Promise<E[]> => {
    const items: E[] = [];
    for await (const item of read) items.push(item);
    return items;
  };
  const positionOf = (resolved: ResolvedEvent): Position => resolved.event!.position!;

  beforeEach(async () => {
    server = await EsdbServer.start();
    client = EventStoreDBClient.connectionString(server.url);
  });
  afterEach(async () => {
    await client.dispose();
    await server.close();
  });

  it('appends with each kind of expected revision and answers a wrong one as the server does (current and expected)', async () => {
    const s = stream();
    const first = await client.appendToStream(s, [ev(1), ev(2)], { expectedRevision: NO_STREAM });
    expect(first).toMatchObject({ success: true, nextExpectedRevision: 1n });
    expect(first.position!.commit).toBe(first.position!.prepare);
    await client.appendToStream(s, ev(3), { expectedRevision: 1n });
    await client.appendToStream(s, ev(4), { expectedRevision: 'stream_exists' });
    await client.appendToStream(s, ev(5), { expectedRevision: 'any' });
    await expect(client.appendToStream(s, ev(6), { expectedRevision: 2n })).rejects.toMatchObject({
      constructor: WrongExpectedVersionError,
      streamName: s,
      actualVersion: 4n,
      expectedVersion: 2n,
    });
    await expect(client.appendToStream(stream(), ev(1), { expectedRevision: 'stream_exists' })).rejects.toMatchObject({
      actualVersion: 'no_stream',
      expectedVersion: 'stream_exists',
    });
    const events = await all(client.readStream(s));
    expect(events.map((e) => e.event!.revision)).toEqual([0n, 1n, 2n, 3n, 4n]);
  });

  it('writes an append sent again with the same event ids once (idempotent), and refuses a partial match', async () => {
    const s = stream();
    const events = [ev(1), ev(2)];
    await client.appendToStream(s, events, { expectedRevision: NO_STREAM });
    const again = await client.appendToStream(s, events, { expectedRevision: NO_STREAM });
    expect(again).toMatchObject({ success: true, nextExpectedRevision: 1n });
    await expect(client.appendToStream(s, [events[0], ev(3)], { expectedRevision: NO_STREAM })).rejects.toBeInstanceOf(
      WrongExpectedVersionError,
    );
    expect(await all(client.readStream(s))).toHaveLength(2);
  });

  it('refuses an append over MaxAppendSize (1 MiB), and writes nothing of it', async () => {
    const s = stream();
    const error = await client
      .appendToStream(s, jsonEvent({ type: 'Big', data: { text: 'x'.repeat(1_100_000) } }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MaxAppendSizeExceededError);
    expect((error as MaxAppendSizeExceededError).maxAppendSize).toBe(1_048_576);
    await expect(all(client.readStream(s))).rejects.toBeInstanceOf(StreamNotFoundError);
  });

  it('reads a stream forwards and backwards from a revision', async () => {
    const s = stream();
    await client.appendToStream(s, [ev(0), ev(1), ev(2), ev(3)]);
    const revisions = (read: ResolvedEvent[]) => read.map((e) => e.event!.revision);
    expect(revisions(await all(client.readStream(s, { fromRevision: 1n, maxCount: 2 })))).toEqual([1n, 2n]);
    expect(revisions(await all(client.readStream(s, { direction: BACKWARDS, fromRevision: END })))).toEqual([3n, 2n, 1n, 0n]);
    expect(revisions(await all(client.readStream(s, { direction: BACKWARDS, fromRevision: 2n, maxCount: 2 })))).toEqual([2n, 1n]);
  });

  it('keeps stream metadata ($$name): reads of the stream honour $maxCount and $maxAge; $all still holds what they hide', async () => {
    const s = stream();
    expect(await client.getStreamMetadata(s)).toEqual({ streamName: s });
    await client.appendToStream(s, [ev(0), ev(1), ev(2), ev(3)]);
    await client.setStreamMetadata(s, { maxCount: 2 });
    expect((await client.getStreamMetadata(s)).metadata).toEqual({ maxCount: 2 });
    const revisions = (read: ResolvedEvent[]) => read.map((e) => e.event!.revision);
    expect(revisions(await all(client.readStream(s)))).toEqual([2n, 3n]);
    expect(revisions(await all(client.readStream(s, { direction: BACKWARDS, fromRevision: END })))).toEqual([3n, 2n]);
    // A newer metadata event replaces the last: the events older than a second are gone from reads of
    // the stream, which still exists (a read finds nothing; appends go on after its last revision).
    server.log.stream(s).forEach((event) => (event.created -= 5_000n * 10_000n));
    await client.setStreamMetadata(s, { maxAge: 1 });
    expect((await client.getStreamMetadata(s)).metadata).toEqual({ maxAge: 1 });
    expect(await all(client.readStream(s))).toEqual([]);
    await expect(client.appendToStream(s, ev(4), { expectedRevision: NO_STREAM })).rejects.toMatchObject({ actualVersion: 3n });
    await client.appendToStream(s, ev(4), { expectedRevision: 3n });
    expect(revisions(await all(client.readStream(s)))).toEqual([4n]);
    const inAll = (await all(client.readAll())).filter((e) => e.event?.streamId === s);
    expect(inAll).toHaveLength(5);
  });

  it('reads $all from exact positions only, forwards (from the event on) and backwards (before it), its own records among ours', async () => {
    const s = stream();
    server.writeSystemEvent();
    await client.appendToStream(s, [ev(1), ev(2), ev(3)]);
    const log = await all(client.readAll());
    expect(log.some((e) => e.event!.type.startsWith('$'))).toBe(true);
    const ours = log.filter((e) => e.event!.streamId === s);
    const middle = positionOf(ours[1]);
    const forwards = await all(client.readAll({ fromPosition: middle, maxCount: 2 }));
    expect(forwards.map((e) => e.event!.revision)).toEqual([1n, 2n]);
    const backwards = await all(client.readAll({ fromPosition: middle, direction: BACKWARDS, maxCount: 1 }));
    expect(backwards.map((e) => e.event!.revision)).toEqual([0n]);
    const head = await all(client.readAll({ fromPosition: END, direction: BACKWARDS, maxCount: 1 }));
    expect(positionOf(head[0])).toEqual(positionOf(ours[2]));
    // One byte into a record: the server refuses it.
    const inside = { commit: middle.commit + 1n, prepare: middle.prepare + 1n };
    await expect(all(client.readAll({ fromPosition: inside, direction: FORWARDS }))).rejects.toThrow('invalid position');
  });

  it('subscribes to $all after a position with a filter: checkpoints while it searches, caught up, then live', async () => {
    const s = stream();
    await client.appendToStream(s, [ev(1), ev(2)]);
    for (let i = 0; i < 40; i++) server.writeSystemEvent();
    const [first] = await all(client.readStream(s, { maxCount: 1 }));
    const checkpoints: Position[] = [];
    const subscription = client.subscribeToAll({
      fromPosition: positionOf(first),
      filter: excludeSystemEvents({ checkpointReached: (_s, position) => void checkpoints.push(position) }),
    });
    const caughtUp = new Promise((resolve) => subscription.once('caughtUp', resolve));
    const seen: number[] = [];
    const done = (async () => {
      for await (const { event } of subscription) {
        seen.push((event!.data as { n: number }).n);
        if (seen.length === 2) break;
      }
    })();
    await caughtUp;
    await client.appendToStream(s, ev(3));
    await done;
    expect(seen).toEqual([2, 3]);
    // A window of 32 events looked at: one checkpoint among the 41 after the start.
    expect(checkpoints).toHaveLength(1);
    await subscription.unsubscribe();
  });

  it('filters a subscription by stream name prefix', async () => {
    const prefix = `only-${randomUUID()}`;
    const subscription = client.subscribeToAll({ fromPosition: END, filter: streamNameFilter({ prefixes: [prefix] }) });
    const seen: string[] = [];
    const done = (async () => {
      for await (const { event } of subscription) {
        seen.push(event!.streamId);
        if (seen.length === 1) break;
      }
    })();
    await new Promise((resolve) => subscription.once('caughtUp', resolve));
    await client.appendToStream(stream(), ev(1));
    await client.appendToStream(`${prefix}-a`, ev(2));
    await done;
    expect(seen).toEqual([`${prefix}-a`]);
    await subscription.unsubscribe();
  });

  it('answers gossip (one node, the leader) and server features', async () => {
    const cluster = EventStoreDBClient.connectionString(`esdb+discover://127.0.0.1:${server.endpoint.port}?tls=false`);
    try {
      await cluster.appendToStream(stream(), ev(1));
    } finally {
      await cluster.dispose();
    }
    const features = await (client as unknown as { capabilities: Promise<{ serverVersion: string }> }).capabilities;
    expect(features.serverVersion).toBe('24.10.0');
  });

  it('faults: a stalled call fails at its deadline; not-leader names the leader; a dropped connection is reconnected', async () => {
    const quick = EventStoreDBClient.connectionString(`${server.url}&defaultDeadline=300`);
    try {
      server.failNext('append', 'stall');
      await expect(quick.appendToStream(stream(), ev(1))).rejects.toBeInstanceOf(DeadlineExceededError);
      server.failNext('append', 'not-leader');
      await expect(quick.appendToStream(stream(), ev(1))).rejects.toMatchObject({
        constructor: NotLeaderError,
        leader: { address: '127.0.0.1', port: server.endpoint.port },
      });
      server.failNext('append', 'drop');
      await expect(quick.appendToStream(stream(), ev(1))).rejects.toThrow();
      const s = stream();
      server.failNext('append', 'drop-after-commit');
      await expect(quick.appendToStream(s, ev(1), { expectedRevision: NO_STREAM })).rejects.toThrow();
      // Written before the drop: the same event again is recognised.
      expect(await all(quick.readStream(s))).toHaveLength(1);
    } finally {
      await quick.dispose();
    }
  });

  it('restarts with its data or empty', async () => {
    const s = stream();
    await client.appendToStream(s, ev(1));
    // The first call after a restart may meet the closed connection (the client reconnects then), as with a real server.
    const readAfterRestart = () => all(client.readStream(s)).catch(() => all(client.readStream(s)));
    await server.restart();
    expect(await readAfterRestart()).toHaveLength(1);
    await server.restart({ empty: true });
    await expect(readAfterRestart()).rejects.toBeInstanceOf(StreamNotFoundError);
  });
});

describe('EventStoreDB protocol server, secure', () => {
  let certificates: TestCertificates;
  let server: EsdbServer;
  beforeAll(async () => {
    certificates = testCertificates();
    server = await EsdbServer.start({
      tls: certificates,
      users: {
        admin: { password: 'changeit', groups: ['$admins'] },
        writer: { password: 'w', groups: [] },
      },
    });
  });
  afterAll(async () => {
    await server.close();
    certificates.cleanup();
  });
  const connect = (user: string) =>
    EventStoreDBClient.connectionString(`esdb://${user}@localhost:${server.endpoint.port}?tlsCAFile=${certificates.caFile}`);

  it('takes basic authentication over TLS: $all for admins, user streams for any user, nothing for a wrong password', async () => {
    const admin = connect('admin:changeit');
    const writer = connect('writer:w');
    const wrong = connect('admin:nope');
    try {
      const s = `secure-${randomUUID()}`;
      await writer.appendToStream(s, jsonEvent({ type: 'Happened', data: {} }));
      // Read to the end: client 6.2.1 cannot dispose of a read left early (see the adapter's eventsOf).
      const read = async (c: EventStoreDBClient) => {
        const events = [];
        for await (const e of c.readAll({ maxCount: 1 })) events.push(e);
        return events;
      };
      expect(await read(admin)).toHaveLength(1);
      await expect(read(writer)).rejects.toBeInstanceOf(AccessDeniedError);
      // A user stream's metadata is any signed-in user's to write (its default $mw); a system stream's, admins' only.
      await writer.setStreamMetadata(s, { maxAge: 3600 });
      expect((await writer.getStreamMetadata(s)).metadata).toEqual({ maxAge: 3600 });
      await expect(writer.appendToStream('$system-thing', jsonEvent({ type: 'Happened', data: {} }))).rejects.toBeInstanceOf(
        AccessDeniedError,
      );
      await expect(wrong.appendToStream(s, jsonEvent({ type: 'Happened', data: {} }))).rejects.toThrow();
    } finally {
      await Promise.all([admin.dispose(), writer.dispose(), wrong.dispose()]);
    }
  });
});

describe('EventStoreDB protocol server, three nodes', () => {
  it('leads the client to the leader through gossip, and to the new one after a leader change', async () => {
    const cluster = await EsdbCluster.start(3);
    const client = EventStoreDBClient.connectionString(cluster.url);
    try {
      const s = `cluster-${randomUUID()}`;
      await client.appendToStream(s, jsonEvent({ type: 'Happened', data: { n: 1 } }), { expectedRevision: NO_STREAM });
      expect(cluster.nodes[0].calls.append).toBe(1);
      await cluster.switchLeader(1);
      // The first call after the change meets the dropped connection; the client rediscovers.
      await client
        .appendToStream(s, jsonEvent({ type: 'Happened', data: { n: 2 } }), { expectedRevision: 0n })
        .catch(() => undefined);
      await client.appendToStream(s, jsonEvent({ type: 'Happened', data: { n: 3 } }), { expectedRevision: 'any' });
      expect(cluster.nodes[1].calls.append).toBeGreaterThanOrEqual(1);
      const read = [];
      for await (const e of client.readStream(s)) read.push(e);
      expect(read.length).toBeGreaterThanOrEqual(2);
      // A follower asked for the leader says where it is.
      const follower = EventStoreDBClient.connectionString(`esdb://127.0.0.1:${cluster.nodes[2].endpoint.port}?tls=false`);
      try {
        await expect(
          follower.appendToStream(s, jsonEvent({ type: 'Happened', data: {} }), { requiresLeader: true }),
        ).rejects.toMatchObject({ constructor: NotLeaderError, leader: { port: cluster.nodes[1].endpoint.port } });
      } finally {
        await follower.dispose();
      }
    } finally {
      await client.dispose();
      await cluster.close();
    }
  });
});
