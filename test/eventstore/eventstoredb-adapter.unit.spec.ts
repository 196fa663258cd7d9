import { EventStoreDBClient, jsonEvent } from '@eventstore/db-client';
import { AppendOutcomeUnknownError, WrongExpectedRevisionError } from '../../src/eventstore/event-store';
import { EventStoreDbEventStore, LOG_IDENTITY_STREAM, WRITE_PROBE_STREAM } from '../../src/eventstore/eventstoredb-event-store';
import { EventStorePositionError } from '../../src/eventstore/eventstoredb-positions';
import { SimulatedEventStoreDb } from '../support/simulated-eventstoredb';
import { describeEventStoreContract } from './event-store.contract';

const credentials = { username: 'ops', password: 'secret' };
const over = (server: SimulatedEventStoreDb) =>
  EventStoreDbEventStore.withClient(server, { appendCredentials: credentials, retryDelaysMs: [0, 0, 0] });
const ev = (n: number) => ({ type: 'Happened', data: { n } });
const numbers = (events: Array<{ data: unknown }>) => events.map((e) => (e.data as { n: number }).n);

// The whole contract, over a server that refuses any position that is not an event's exact one.
let contractServer: SimulatedEventStoreDb | null = null;
describeEventStoreContract('EventStoreDB adapter over a simulated server', async () => {
  contractServer = new SimulatedEventStoreDb();
  return over(contractServer);
});
afterEach(() => {
  if (contractServer) expect(contractServer.invalidPositions).toEqual([]);
  contractServer = null;
});

describe('EventStoreDB adapter (simulated server)', () => {
  let server: SimulatedEventStoreDb;
  let store: EventStoreDbEventStore;
  beforeEach(() => {
    server = new SimulatedEventStoreDb();
    store = over(server);
  });
  afterEach(async () => {
    await store.close();
    expect(server.invalidPositions).toEqual([]);
  });

  it('reads on from a checkpoint minus one (the in-process read models at start-up) and from a number from another log', async () => {
    await store.append('a', [ev(1)], 'no_stream');
    server.systemEvent();
    await store.append('a', [ev(2), ev(3)], 0);
    const [first, second, third] = await store.readStream('a');
    // A new process knows none of these positions.
    const fresh = over(server);
    expect(numbers(await fresh.readAll(second.position - 1, 1))).toEqual([2]);
    expect(numbers(await fresh.readAll(third.position - 1, 10))).toEqual([3]);
    expect(numbers(await fresh.readAll(first.position + 1, 10))).toEqual([2, 3]);
    // The SQLite log numbers its events 1, 2, 3...: a checkpoint from it is below every position here.
    expect(numbers(await fresh.readAll(3, 10))).toEqual([1, 2, 3]);
    expect(await fresh.readAll(third.position + 1, 10)).toEqual([]);
    await fresh.close();
  });

  it('identifies the log once: every process on it (two at once on a new log) reads the same identity; another server is another log', async () => {
    const other = over(server);
    const [mine, theirs] = await Promise.all([store.logId(), other.logId()]);
    expect(theirs).toBe(mine);
    expect((await store.readStream(LOG_IDENTITY_STREAM)).map((e) => e.type)).toEqual(['LogIdentified']);
    expect(await over(server).logId()).toBe(mine);
    const elsewhere = over(new SimulatedEventStoreDb());
    expect(await elsewhere.logId()).not.toBe(mine);
    await Promise.all([other.close(), elsewhere.close()]);
  });

  it('resumes from a position it has seen without searching for it', async () => {
    await store.append('a', [ev(1), ev(2)], 'no_stream');
    const [first] = await store.readAll(0, 1);
    const before = server.reads.all;
    expect(numbers(await store.readAll(first.position, 10))).toEqual([2]);
    expect(server.reads.all - before).toBe(1);
  });

  it('subscribes from a number that is no event position, in a new process too', async () => {
    await store.append('a', [ev(1), ev(2)], 'no_stream');
    const [, second] = await store.readStream('a');
    const fresh = over(server);
    const abort = new AbortController();
    const seen: number[] = [];
    const done = (async () => {
      for await (const batch of fresh.subscribe(second.position - 1, abort.signal)) {
        seen.push(...numbers(batch));
        if (seen.length >= 2) abort.abort();
      }
    })();
    await store.append('a', [ev(3)], 1);
    await done;
    expect(seen).toEqual([2, 3]);
    await fresh.close();
  });

  it('answers a several-event append with its last event position, not the one the server reports', async () => {
    const result = await store.append('a', [ev(1), ev(2), ev(3)], 'no_stream');
    const read = await store.readStream('a');
    expect(result).toEqual({ nextExpectedRevision: 2, position: read[2].position });
    expect(read[0].position).not.toBe(read[2].position);
  });

  it('sends an append whose reply was lost again with the same ids, and the server writes it once', async () => {
    server.faults.push('unknown-after-commit');
    const result = await store.append('a', [ev(1), ev(2)], 'no_stream');
    expect(server.appends).toHaveLength(2);
    expect(server.appends[1].ids).toEqual(server.appends[0].ids);
    expect(new Set(server.appends[0].ids).size).toBe(2);
    const read = await store.readStream('a');
    expect(numbers(read)).toEqual([1, 2]);
    // The repeat is answered without a position: the last event's is read back.
    expect(result).toEqual({ nextExpectedRevision: 1, position: read[1].position });
  });

  it('sends an append that never arrived again, and writes it once', async () => {
    await store.append('a', [ev(1)], 'no_stream');
    server.faults.push('unknown-before-commit', 'unknown-before-commit');
    const result = await store.append('a', [ev(2)], 0);
    expect(server.appends.slice(1).map((a) => a.ids)).toEqual([
      server.appends[1].ids,
      server.appends[1].ids,
      server.appends[1].ids,
    ]);
    const read = await store.readStream('a');
    expect(numbers(read)).toEqual([1, 2]);
    expect(result.position).toBe(read[1].position);
  });

  it('gives up on an outcome that stays unknown with AppendOutcomeUnknownError, every try with the same ids', async () => {
    server.faults.push('unknown-before-commit', 'unknown-before-commit', 'unknown-before-commit', 'unknown-before-commit');
    await expect(store.append('a', [ev(1)], 'no_stream')).rejects.toBeInstanceOf(AppendOutcomeUnknownError);
    expect(server.appends).toHaveLength(4);
    expect(new Set(server.appends.map((a) => a.ids[0])).size).toBe(1);
    expect(await store.readStream('a')).toEqual([]);
  });

  it('gives two appends of alike events different ids: both are written', async () => {
    await store.append('a', [ev(1)], 'no_stream');
    await store.append('a', [ev(1)], 0);
    expect(numbers(await store.readStream('a'))).toEqual([1, 1]);
    expect(server.appends[0].ids).not.toEqual(server.appends[1].ids);
  });

  it('does not send again what the server refused', async () => {
    await store.append('a', [ev(1)], 'no_stream');
    await expect(store.append('a', [ev(2)], 'no_stream')).rejects.toMatchObject({ actual: 0 });
    await expect(store.append('a', [ev(2)], 'no_stream')).rejects.toBeInstanceOf(WrongExpectedRevisionError);
    server.faults.push('access-denied');
    await expect(store.append('a', [ev(2)], 0)).rejects.toThrow('access denied');
    server.faults.push('too-large');
    await expect(store.append('a', [ev(2)], 0)).rejects.toThrow("larger than EventStoreDB's maximum append size (1048576 bytes");
    expect(server.appends).toHaveLength(5);
  });

  it('takes no appends after one failed for a reason of the server, until a probe (one write of its own) or an append goes through', async () => {
    const probes = () => server.appends.filter((a) => a.streamId === WRITE_PROBE_STREAM).length;
    await store.append('a', [ev(1)], 'no_stream');
    expect(await store.appendFailure()).toBeNull();
    expect(probes()).toBe(0);

    // The server does not answer: the append's outcome stays unknown after its retries.
    server.faults.push(...Array(4).fill('unknown-before-commit'));
    await expect(store.append('a', [ev(2)], 0)).rejects.toBeInstanceOf(AppendOutcomeUnknownError);
    server.faults.push('unknown-before-commit');
    expect((await store.appendFailure())?.message).toContain('connection lost');
    expect(await store.appendFailure()).toBeNull();
    expect(probes()).toBe(2);
    // Only the probe that went through wrote: one event, in the probe's stream, read by no fold.
    expect(server.log.filter((e) => e.streamId === WRITE_PROBE_STREAM).map((e) => e.type)).toEqual(['WriteProbed']);

    // Credentials that may not write: the probe's write is refused too; an append that goes through clears it.
    server.faults.push('access-denied', 'access-denied');
    await expect(store.append('a', [ev(2)], 0)).rejects.toThrow('access denied');
    expect((await store.appendFailure())?.message).toBe('access denied');
    expect(probes()).toBe(3);
    await store.append('a', [ev(2)], 0);
    expect(await store.appendFailure()).toBeNull();
    expect(probes()).toBe(3);
  });

  it("counts an append's own refusal (a conflict, too large) as no failure of the server", async () => {
    await store.append('a', [ev(1)], 'no_stream');
    await expect(store.append('a', [ev(2)], 'no_stream')).rejects.toBeInstanceOf(WrongExpectedRevisionError);
    server.faults.push('too-large');
    await expect(store.append('a', [ev(2)], 0)).rejects.toThrow('maximum append size');
    expect(await store.appendFailure()).toBeNull();
    expect(server.appends.filter((a) => a.streamId === WRITE_PROBE_STREAM)).toEqual([]);
  });

  it('sends credentials with every append: client 6.2.1 then makes one call per append, not a batch append', async () => {
    await store.append('a', [ev(1)], 'no_stream');
    await store.append('b', [ev(2)], 'any');
    expect(server.appends.map((a) => a.credentials)).toEqual([credentials, credentials]);
  });

  it('refuses events whose position is missing (zero-filled by the client) or not commit == prepare', async () => {
    await store.append('a', [ev(1)], 'no_stream');
    server.positions = 'zeros';
    await expect(store.readStream('a')).rejects.toBeInstanceOf(EventStorePositionError);
    await expect(store.headPosition()).rejects.toThrow('sent no position');
    server.positions = 'transaction';
    await expect(store.readAll(0, 10)).rejects.toThrow('differs from prepare position');
  });

  it('closes within its deadline even when the client waits for a call that never ends', async () => {
    let disposing = false;
    const stuck = EventStoreDbEventStore.withClient(
      { ...server, dispose: () => ((disposing = true), new Promise<void>(() => undefined)) },
      { appendCredentials: credentials, closeDeadlineMs: 50 },
    );
    await expect(stuck.close()).resolves.toBeUndefined();
    expect(disposing).toBe(true);
  });

  it('refuses to read after a number that is not a safe integer ≥ 0', async () => {
    await expect(store.readAll(-1, 10)).rejects.toThrow(RangeError);
    await expect(store.readAll(1.5, 10)).rejects.toThrow(RangeError);
  });
});

describe('@eventstore/db-client 6.2.1 append paths', () => {
  /** A client whose transport is replaced: it records which path an append takes, and the server supports batch append. */
  function instrumented() {
    const client = EventStoreDBClient.connectionString('esdb://localhost:2113?tls=false');
    const paths: string[] = [];
    const internals = client as unknown as {
      supports: () => Promise<boolean>;
      execute: (client: unknown, name: string) => Promise<unknown>;
      GRPCStreamCreator: () => () => Promise<never>;
    };
    internals.supports = async () => true;
    internals.execute = async (_client, name) => {
      paths.push(`call:${name}`);
      return { success: true, nextExpectedRevision: 0n, position: { commit: 10n, prepare: 10n } };
    };
    internals.GRPCStreamCreator = () => async () => {
      paths.push('batch');
      throw new Error('batch append');
    };
    return { client, paths };
  }

  it('makes one call per append when credentials are given, even if the server offers batch append', async () => {
    const { client, paths } = instrumented();
    await client.appendToStream('s', jsonEvent({ type: 'T', data: {} }), { credentials });
    expect(paths).toEqual(['call:appendToStream']);
    await client.dispose();
  });

  it('uses batch append without them (the path the adapter keeps clear of)', async () => {
    const { client, paths } = instrumented();
    await expect(client.appendToStream('s', jsonEvent({ type: 'T', data: {} }))).rejects.toThrow('batch append');
    expect(paths).toEqual(['batch']);
    await client.dispose();
  });
});
