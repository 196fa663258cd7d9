import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { AccessDeniedError, DeadlineExceededError, EventStoreDBClient, UnavailableError, jsonEvent } from '@eventstore/db-client';
import { EVENTSTORE_SCHEMES, parseEventStoreUrl } from '../../src/eventstore/eventstoredb-connection';
import { AppendOutcomeUnknownError, WrongExpectedRevisionError } from '../../src/eventstore/event-store';
import { EsdbClient, EventStoreDbEventStore, WRITE_PROBE_STREAM, eventsOf } from '../../src/eventstore/eventstoredb-event-store';
import { TestCertificates, testCertificates } from '../support/esdb-server/certificates';
import { EsdbServer } from '../support/esdb-server/server';
import { describeEventStoreContract } from './event-store.contract';

// Every run: the protocol server of test/support/esdb-server, in memory, over real gRPC, through
// the official client. With EVENTSTORE_URL set (docker-compose.yml starts a server; the CI
// workflow runs EventStoreDB and KurrentDB as service containers), the same against a real server.
const realUrl = process.env.EVENTSTORE_URL;
if (!realUrl) {
  process.stdout.write(
    'EventStoreDB contract suite against a real server skipped: set EVENTSTORE_URL (e.g. esdb://localhost:2113?tls=false) to run it.\n',
  );
}

let protocolServer: EsdbServer;
// A secure node: TLS (its CA given with tlsCAFile) and basic authentication, $all for admins only.
let secureServer: EsdbServer;
let certificates: TestCertificates;
beforeAll(async () => {
  // Records of the server's own between ours, as a real node writes them.
  protocolServer = await EsdbServer.start({ systemEventEvery: 3 });
  certificates = testCertificates();
  secureServer = await EsdbServer.start({
    systemEventEvery: 3,
    tls: certificates,
    users: { admin: { password: 'changeit', groups: ['$admins'] }, writer: { password: 'changeit', groups: [] } },
  });
});
afterAll(async () => {
  await protocolServer.close();
  await secureServer.close();
  certificates.cleanup();
});
const secureUrl = (user: string) =>
  `esdb://${user}@localhost:${secureServer.endpoint.port}?tlsCAFile=${encodeURIComponent(certificates.caFile)}`;

describeAgainstServer('the protocol server', () => protocolServer.url);
describeAgainstServer('the protocol server, secure', () => secureUrl('admin:changeit'));

describe('EventStoreDB adapter against a secure node, as a user who may not read $all', () => {
  it('appends to its own streams, and its reads of $all are refused: access denied, not an empty log', async () => {
    const store = await EventStoreDbEventStore.connect(secureUrl('writer:changeit'));
    try {
      const appended = await store.append(`esdb-${randomUUID()}`, [{ type: 'Happened', data: {} }], 'no_stream');
      expect(appended.nextExpectedRevision).toBe(0);
      await expect(store.readAll(0, 10)).rejects.toBeInstanceOf(AccessDeniedError);
    } finally {
      await store.close();
    }
  });
});
describeAgainstServer('a real server (EVENTSTORE_URL)', () => realUrl!, Boolean(realUrl));

function describeAgainstServer(name: string, serverUrl: () => string, enabled = true): void {
  describeEventStoreContract(`EventStoreDB, ${name}`, async () => EventStoreDbEventStore.connect(serverUrl()), enabled);
  describeAdapter(name, serverUrl, enabled);
}

function describeAdapter(name: string, serverUrl: () => string, enabled: boolean): void {
  (enabled ? describe : describe.skip)(`EventStoreDB adapter against ${name}`, () => {
    let url: string;
    beforeAll(() => {
      url = serverUrl();
    });
    const ev = (n: number) => ({ type: 'Happened', data: { n } });
    const stream = () => `esdb-${randomUUID()}`;

    it.each(Object.keys(EVENTSTORE_SCHEMES))('connects with EVENTSTORE_URL written as %s://', async (scheme) => {
      const connection = parseEventStoreUrl(url);
      // One host when discovering (the test server's name); the same credentials and options.
      const rewritten = connection.connectionString.replace(/^[a-z+]+:\/\/([^@]*@)?[^?]*/, (_all, user: string | undefined) => {
        const hosts = scheme.endsWith('+discover') ? connection.hosts.slice(0, 1) : connection.hosts;
        return `${scheme}://${user ?? ''}${hosts.map((h) => `${h.address}:${h.port}`).join(',')}`;
      });
      // DNS discovery needs gossip from a name that resolves to the cluster's nodes; a single node answers it too.
      const store = await EventStoreDbEventStore.connect(rewritten);
      try {
        const s = stream();
        const appended = await store.append(s, [ev(1)], 'no_stream');
        const [read] = await store.readStream(s);
        expect(read.position).toBe(appended.position);
      } finally {
        await store.close();
      }
    });

    it('reads a stream backwards in pages (newest first), and keeps a stream for a time ($maxAge, set once)', async () => {
      const store = await EventStoreDbEventStore.connect(url);
      try {
        const s = stream();
        expect(await store.readStreamBackwards(s, 10)).toEqual([]);
        await store.append(s, [ev(0), ev(1), ev(2), ev(3), ev(4)], 'no_stream');
        const revisions = (events: Array<{ revision: number }>) => events.map((e) => e.revision);
        expect(revisions(await store.readStreamBackwards(s, 2))).toEqual([4, 3]);
        expect(revisions(await store.readStreamBackwards(s, 2, 3))).toEqual([2, 1]);
        expect(revisions(await store.readStreamBackwards(s, 10, 1))).toEqual([0]);
        expect(await store.readStreamBackwards(s, 10, 0)).toEqual([]);
        const client = EventStoreDBClient.connectionString(parseEventStoreUrl(url).connectionString);
        try {
          await store.keepStreamFor(s, 3600);
          const first = await client.getStreamMetadata(s);
          expect(first.metadata).toEqual({ maxAge: 3600 });
          // Kept already: not written again (the metadata event is the same one).
          await store.keepStreamFor(s, 3600);
          expect((await client.getStreamMetadata(s)).metastreamRevision).toBe(first.metastreamRevision);
        } finally {
          await client.dispose();
        }
        expect(revisions(await store.readStreamBackwards(s, 10))).toEqual([4, 3, 2, 1, 0]);
      } finally {
        await store.close();
      }
    });

    it('ends a read left early whose call had completed: the client disposes at once', async () => {
      const client = EventStoreDBClient.connectionString(parseEventStoreUrl(url).connectionString);
      const s = stream();
      // More events than the read holds (16 waiting to be read, 16 to be transformed), so that the
      // call still buffers some when the reader stops; few enough that the call receives them all
      // and its status (grpc-js gives the status once every message is taken from the connection).
      await client.appendToStream(
        s,
        Array.from({ length: 40 }, (_, n) => jsonEvent({ type: 'Happened', data: { n } })),
      );
      const read = client.readStream(s);
      // The gRPC call pipes itself into the read; it reports its status once complete.
      const completed = new Promise((resolve) => read.once('pipe', (call) => (call as Readable).once('status', resolve)));
      await completed;
      for await (const _ of eventsOf(read)) break;
      let timer: NodeJS.Timeout | undefined;
      const outcome = await Promise.race([
        client.dispose().then(() => 'disposed'),
        new Promise((resolve) => (timer = setTimeout(() => resolve('still waiting for the read'), 5_000))),
      ]);
      clearTimeout(timer);
      expect(outcome).toBe('disposed');
    });

    it('leaves a read early without an error nobody hears when its call fails as it is cancelled', async () => {
      // As the client's read does when its call is cancelled, or its node goes away in a leader
      // change: an 'error' event on the read, while cancel() is awaited. Unheard, it ends the process.
      const read = new Readable({ objectMode: true, read: () => undefined }) as Readable & { cancel(): Promise<void> };
      read.push({ event: null });
      read.cancel = () =>
        new Promise<void>((resolve) =>
          setImmediate(() => {
            read.emit('error', new Error('1 CANCELLED: Call cancelled'));
            resolve();
          }),
        );
      for await (const _ of eventsOf(read as unknown as Parameters<typeof eventsOf>[0])) break;
      expect(read.listenerCount('error')).toBeGreaterThan(0);
    });

    it('sends an append whose reply was lost again with the same ids, and the server writes it once', async () => {
      const connection = parseEventStoreUrl(url);
      const real = EventStoreDBClient.connectionString(connection.connectionString);
      let lose = 0;
      // The server commits, then the reply is lost on the way back.
      const client: EsdbClient = {
        appendToStream: async (...args: Parameters<EsdbClient['appendToStream']>) => {
          const result = await real.appendToStream(...args);
          if (lose > 0) {
            lose -= 1;
            throw new DeadlineExceededError(undefined, 'reply lost');
          }
          return result;
        },
        readStream: real.readStream.bind(real),
        readAll: real.readAll.bind(real),
        subscribeToAll: real.subscribeToAll.bind(real),
        getStreamMetadata: real.getStreamMetadata.bind(real),
        setStreamMetadata: real.setStreamMetadata.bind(real),
        dispose: () => real.dispose(),
      };
      const store = EventStoreDbEventStore.withClient(client, {
        appendCredentials: connection.credentials ?? { username: 'insecure', password: 'insecure' },
        retryDelaysMs: [0],
      });
      try {
        const s = stream();
        lose = 1;
        const first = await store.append(s, [ev(1), ev(2)], 'no_stream');
        lose = 1;
        const second = await store.append(s, [ev(3)], 1);
        const read = await store.readStream(s);
        expect(read.map((e) => (e.data as { n: number }).n)).toEqual([1, 2, 3]);
        expect(first).toEqual({ nextExpectedRevision: 1, position: read[1].position });
        expect(second).toEqual({ nextExpectedRevision: 2, position: read[2].position });
      } finally {
        await store.close();
      }
    });

    it('takes no appends while none reaches the server; its probe, one event of its own the server takes, says when it does again', async () => {
      const connection = parseEventStoreUrl(url);
      const real = EventStoreDBClient.connectionString(connection.connectionString);
      let unreachable = true;
      // The server out of reach for appends (as when it is down or its disk is full), then back.
      const client: EsdbClient = {
        appendToStream: async (...args: Parameters<EsdbClient['appendToStream']>) => {
          if (unreachable) throw new UnavailableError(undefined, 'server unavailable');
          return real.appendToStream(...args);
        },
        readStream: real.readStream.bind(real),
        readAll: real.readAll.bind(real),
        subscribeToAll: real.subscribeToAll.bind(real),
        getStreamMetadata: real.getStreamMetadata.bind(real),
        setStreamMetadata: real.setStreamMetadata.bind(real),
        dispose: () => real.dispose(),
      };
      const store = EventStoreDbEventStore.withClient(client, {
        appendCredentials: connection.credentials ?? { username: 'insecure', password: 'insecure' },
        retryDelaysMs: [0],
      });
      try {
        await expect(store.append(stream(), [ev(1)], 'no_stream')).rejects.toBeInstanceOf(AppendOutcomeUnknownError);
        expect((await store.appendFailure())?.message).toContain('server unavailable');
        unreachable = false;
        expect(await store.appendFailure()).toBeNull();
        const [probe] = (await store.readStream(WRITE_PROBE_STREAM)).slice(-1);
        expect(probe.type).toBe('WriteProbed');
      } finally {
        await store.close();
      }
    });

    it('fails an append over the 1 MiB limit alone, while appends in flight beside it go through', async () => {
      const store = await EventStoreDbEventStore.connect(url);
      try {
        const streams = Array.from({ length: 20 }, stream);
        const big = store.append(stream(), [{ type: 'Big', data: { text: 'x'.repeat(1_100_000) } }], 'no_stream');
        const small = streams.map((s, i) => store.append(s, [ev(i)], 'no_stream'));
        const conflict = store.append(streams[0], [ev(99)], 5);
        // Every outcome awaited at once: the conflict settles before the large append does, and a
        // rejection with no handler yet fails the run.
        const [bigFailure, conflictFailure, results] = await Promise.all([
          big.then(
            () => null,
            (error: unknown) => error,
          ),
          conflict.then(
            () => null,
            (error: unknown) => error,
          ),
          Promise.allSettled(small),
        ]);
        expect(String(bigFailure)).toContain('maximum append size');
        expect(conflictFailure).toBeInstanceOf(WrongExpectedRevisionError);
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(20);
      } finally {
        await store.close();
      }
    });
  });
}
