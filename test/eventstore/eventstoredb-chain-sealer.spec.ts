import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { auditLedger } from '../../src/audit/ledger-audit';
import { canonicalJson, chainGenesis, chainLinkOf } from '../../src/eventstore/event-chain';
import type { RecordedEvent } from '../../src/eventstore/event-store';
import { CHAIN_SEALED, ChainSealed, ChainSealer, chainStreamOf } from '../../src/eventstore/eventstoredb-chain-sealer';
import { EventStoreDbEventStore } from '../../src/eventstore/eventstoredb-event-store';
import { chainOrgOf, LEDGER_CHAIN, orgChainHead } from '../../src/ledger/ledger-chain';
import { exportLedger } from '../../src/ledger-export/ledger-export';
import { EsdbServer } from '../support/esdb-server/server';
import { operatorTool } from '../support/operator-tool';
import { eventually } from '../support/processes';
import { fundedOrganization, openTestRuntime, TestRuntime } from '../support/runtime';
import { tempDir } from '../support/temp';

/**
 * The ledger's hash chains on EventStoreDB, sealed after the fact by the sealer every gateway
 * instance runs: over real gRPC against the in-memory protocol server of test/support/esdb-server,
 * with records of the server's own between ours.
 */

const prices = {
  input: 3_000_000_000,
  cacheRead: 300_000_000,
  cacheWrite: 3_750_000_000,
  cacheWrite1h: 6_000_000_000,
  output: 15_000_000_000,
};
const HELD = 50_000_000;

/** A request of `orgId`: its reservation, then its settlement at 1,000 in + `output` out (charges that recompute). */
function request(orgId: string, id: string, output: number) {
  const facts = { requestId: `q-${id}`, keyId: 'k', surface: 'chat', model: 'm', reservationId: id, orgId };
  return {
    reserved: { type: 'CreditsReserved', data: { ...facts, amount: HELD, reservedAt: 1, expiresAt: 9e12 } },
    settled: {
      type: 'ReservationSettled',
      data: {
        ...facts,
        host: 'h',
        hostModel: 'hm',
        status: 'ok',
        latencyMs: 7,
        inputTokens: 1_000,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        cacheWrite1hTokens: 0,
        outputTokens: output,
        prices,
        amount: 3_000_000 + output * 15_000,
        held: HELD,
        settledAt: 2,
      },
    },
  };
}

let server: EsdbServer;
const opened: EventStoreDbEventStore[] = [];
const connect = async (options: { sealedWithinMs?: number } = {}) => {
  const store = await EventStoreDbEventStore.connect(server.url, { chain: LEDGER_CHAIN, ...options });
  opened.push(store);
  return store;
};
beforeEach(async () => {
  server = await EsdbServer.start({ systemEventEvery: 3 });
});
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
  await server.close();
});

/** Requests of two organizations appended concurrently on streams of their own, as instances do. */
async function appendRequests(store: EventStoreDbEventStore, orgs: string[], count: number, tag: string): Promise<void> {
  const requests = Array.from({ length: count }, (_, i) => request(orgs[i % orgs.length], `${tag}${i}`, 100 * (i + 1)));
  await Promise.all(requests.map((r, i) => store.append(`reservation-${tag}${i}`, [r.reserved], 'no_stream')));
  await Promise.all(requests.map((r, i) => store.append(`reservation-${tag}${i}`, [r.settled], 0)));
}

async function sealAll(sealer: ChainSealer): Promise<void> {
  while (!(await sealer.sealRound()).caughtUp);
}

/** Each organization's links as the SQLite log's writer computes them at commit (chainLinkOf, from canonical data). */
function writerLinks(events: RecordedEvent[]): Map<number, string> {
  const heads = new Map<string, string>();
  const links = new Map<number, string>();
  for (const e of events) {
    const orgId = chainOrgOf(e);
    if (orgId === null) continue;
    const link = chainLinkOf(
      heads.get(orgId) ?? chainGenesis(orgId),
      e.streamId,
      e.revision,
      e.type,
      canonicalJson(e.data),
      e.recordedAt,
    );
    heads.set(orgId, link);
    links.set(e.position, link);
  }
  return links;
}

async function chainStream(store: EventStoreDbEventStore, orgId: string): Promise<ChainSealed[]> {
  return (await store.readStream(chainStreamOf(orgId))).map((e) => {
    expect(e.type).toBe(CHAIN_SEALED);
    return e.data as ChainSealed;
  });
}

describe('the EventStoreDB chain sealer', () => {
  it('seals every ledger event with the link the SQLite writer computes, and chainHead reads it from the chain stream', async () => {
    const store = await connect();
    await store.append(
      'credits-a',
      [{ type: 'CreditsGranted', data: { orgId: 'a', amount: 1_000_000_000, grantId: 'g1' } }],
      'no_stream',
    );
    await appendRequests(store, ['a', 'b'], 10, 'r');
    // Before sealing: no links, and no head in a chain stream.
    expect((await store.readAll(0, 1000, { chainLinks: true })).some((e) => e.chainLink !== undefined)).toBe(false);
    expect(await store.chainHead!('a')).toBeNull();

    const sealer = new ChainSealer(store, LEDGER_CHAIN, { batchLimit: 7 });
    await sealAll(sealer);
    const events = await store.readAll(0, 1000, { chainLinks: true });
    const chained = events.filter((e) => chainOrgOf(e) !== null);
    expect(chained).toHaveLength(21);
    const expected = writerLinks(events);
    for (const e of chained) expect(e.chainLink).toBe(expected.get(e.position));
    expect(sealer.counts.sealed).toBe(21);
    // Only readers that ask for the links (the audit, the export) pay for reading the chain streams.
    expect((await store.readAll(0, 1000)).some((e) => e.chainLink !== undefined)).toBe(false);

    const lastOfA = chained.filter((e) => chainOrgOf(e) === 'a').pop()!;
    expect(await store.chainHead!('a')).toEqual({ head: lastOfA.chainLink, position: lastOfA.position, events: 11 });
    // orgChainHead takes the sealed head: no scan of the log (which would not read the chain streams).
    const readAll = jest.spyOn(store, 'readAll');
    expect(await orgChainHead(store, 'a')).toMatchObject({ head: lastOfA.chainLink, events: 11 });
    expect(readAll).not.toHaveBeenCalled();

    // Read in small batches, from anywhere: the same links are joined.
    const paged: RecordedEvent[] = [];
    for (let after = chained[4].position; ;) {
      const batch = await store.readAll(after, 3, { chainLinks: true });
      if (batch.length === 0) break;
      paged.push(...batch);
      after = batch[batch.length - 1].position;
    }
    for (const e of paged) if (chainOrgOf(e) !== null) expect(e.chainLink).toBe(expected.get(e.position));
    // One chain's links only: the other chains' streams are not read.
    const streamReads = jest.spyOn(store, 'readStreamFrom');
    const onlyA = await store.readAll(0, 1000, { chainLinks: 'a' });
    expect(onlyA.filter((e) => e.chainLink !== undefined).map((e) => chainOrgOf(e))).toEqual(Array(11).fill('a'));
    expect(new Set(streamReads.mock.calls.map(([id]) => id))).toEqual(new Set([chainStreamOf('a')]));
    streamReads.mockRestore();
    // Two readers at once, from different places: each gets every link.
    const [whole, tail] = await Promise.all([
      store.readAll(0, 1000, { chainLinks: true }),
      store.readAll(chained[9].position, 1000, { chainLinks: true }),
    ]);
    for (const e of [...whole, ...tail]) if (chainOrgOf(e) !== null) expect(e.chainLink).toBe(expected.get(e.position));
  });

  it('two sealers racing on one log make one chain: the loser re-reads the winner and goes on from its head', async () => {
    const [one, two] = [await connect(), await connect()];
    const a = new ChainSealer(one, LEDGER_CHAIN);
    const b = new ChainSealer(two, LEDGER_CHAIN);
    await appendRequests(one, ['a'], 3, 'x');
    // b seals and keeps the chain's revision; a, started after, has nothing to seal, then seals what follows.
    await sealAll(b);
    await sealAll(a);
    await appendRequests(one, ['a'], 3, 'y');
    await sealAll(a);
    // b's append expects the revision a moved past: it loses, re-reads a's batch and finds its links there.
    await sealAll(b);
    expect(b.counts.racesLost).toBe(1);
    // Both at once, with appends going on.
    await Promise.all([
      appendRequests(two, ['a', 'b'], 8, 'z'),
      (async () => {
        for (let i = 0; i < 5; i++) await Promise.all([a.sealRound(), b.sealRound()]);
      })(),
    ]);
    await Promise.all([sealAll(a), sealAll(b)]);

    const events = await one.readAll(0, 1000, { chainLinks: true });
    const expected = writerLinks(events);
    const chained = events.filter((e) => chainOrgOf(e) !== null);
    for (const e of chained) expect(e.chainLink).toBe(expected.get(e.position));
    // Every event linked exactly once, across both sealers' batches, in log order.
    for (const orgId of ['a', 'b']) {
      const positions = (await chainStream(one, orgId)).flatMap((batch) => batch.links.map((l) => l.position));
      expect(positions).toEqual(chained.filter((e) => chainOrgOf(e) === orgId).map((e) => e.position));
    }
    expect(a.counts.sealed + b.counts.sealed).toBe(chained.length);
    expect(a.counts.mismatches + b.counts.mismatches).toBe(0);
  });

  it('resumes after a restart from where the chain streams say everything was sealed, not from the start of the log', async () => {
    const store = await connect();
    await appendRequests(store, ['a', 'b'], 6, 'r');
    const first = new ChainSealer(store, LEDGER_CHAIN);
    await sealAll(first);
    const sealedThrough = await store.headPosition();
    await appendRequests(store, ['a', 'b'], 4, 's');

    const restarted = await connect();
    const again = new ChainSealer(restarted, LEDGER_CHAIN);
    const reads = jest.spyOn(restarted, 'readAll');
    await sealAll(again);
    // Its first read starts after the newest batch's sealedThrough: past the first six requests.
    expect(reads.mock.calls[0][0]).toBeGreaterThan(0);
    expect(reads.mock.calls[0][0]).toBeLessThanOrEqual(sealedThrough);
    expect(again.counts.sealed).toBe(8);
    const events = await restarted.readAll(0, 1000, { chainLinks: true });
    const expected = writerLinks(events);
    for (const e of events) if (chainOrgOf(e) !== null) expect(e.chainLink).toBe(expected.get(e.position));
  });

  it('a sealer dying between two chains of a round leaves the second to whoever resumes, and nothing sealed twice', async () => {
    const store = await connect();
    // a's chain starts first in the log, so a round seals it first.
    await store.append('credits-a', [{ type: 'CreditsGranted', data: { orgId: 'a', amount: 1, grantId: 'g' } }], 'no_stream');
    await appendRequests(store, ['a', 'b'], 6, 'r');
    // Chain b's append fails as a process killed there would leave it: chain a sealed, b not.
    const dying = new ChainSealer(
      {
        readAll: (after, limit) => store.readAll(after, limit),
        readStreamFrom: (id, from, limit) => store.readStreamFrom(id, from, limit),
        lastOfStream: (id) => store.lastOfStream(id),
        lastOfType: (type) => store.lastOfType(type),
        append: (id, events, expected) =>
          id === chainStreamOf('b') ? Promise.reject(new Error('killed')) : store.append(id, events, expected),
      },
      LEDGER_CHAIN,
    );
    await expect(dying.sealRound()).rejects.toThrow('killed');
    expect(await store.chainHead!('a')).toMatchObject({ events: 7 });
    expect(await store.chainHead!('b')).toBeNull();

    const resumed = new ChainSealer(await connect(), LEDGER_CHAIN);
    await sealAll(resumed);
    expect(resumed.counts.sealed).toBe(6);
    expect(await store.chainHead!('b')).toMatchObject({ events: 6 });
    const events = await store.readAll(0, 1000, { chainLinks: true });
    const expected = writerLinks(events);
    for (const e of events) if (chainOrgOf(e) !== null) expect(e.chainLink).toBe(expected.get(e.position));
    expect((await chainStream(store, 'a')).flatMap((batch) => batch.links)).toHaveLength(7);
  });
});

describe('the ledger on EventStoreDB, sealed by the gateway in the background', () => {
  let t: TestRuntime;
  afterEach(async () => t?.cleanup());

  it('seals within the bound; the export verifies with ledger verify; the audit names events edited or removed after sealing', async () => {
    t = await openTestRuntime({ sweep: true, env: { EVENTSTORE_URL: server.url } });
    const { runtime } = t;
    const orgId = await fundedOrganization(runtime, 1_000_000_000);
    const requests = Array.from({ length: 6 }, (_, i) => request(orgId, `r${i}`, 100 * (i + 1)));
    await Promise.all(requests.map((r, i) => runtime.events.append(`reservation-r${i}`, [r.reserved], 'no_stream')));
    const lastAppended = Date.now();
    await Promise.all(requests.map((r, i) => runtime.events.append(`reservation-r${i}`, [r.settled], 0)));
    await eventually(async () => (await runtime.events.chainHead!(orgId))?.events === 13, 15_000);
    const sealDelay = Date.now() - lastAppended;
    expect(sealDelay).toBeLessThan(runtime.events.chainSealedWithinMs!);
    await runtime.projector.catchUp();

    const clean = await auditLedger(runtime.events, runtime.projections);
    expect(clean.differences).toEqual([]);
    expect(clean.chains).toMatchObject({ stamped: true, pending: 0 });

    // The export carries the sealed links, and the standalone verifier checks them against the sealed head.
    const lines: string[] = [];
    for await (const line of exportLedger(runtime.events, orgId)) lines.push(line);
    const head = (await runtime.events.chainHead!(orgId))!;
    expect(JSON.parse(lines[lines.length - 1])).toMatchObject({ head: head.head, events: 13 });
    const dir = tempDir('esdb-chain');
    try {
      const file = join(dir.path, 'export.ndjson');
      writeFileSync(file, `${lines.join('\n')}\n`);
      const verified = await operatorTool({ PATH: process.env.PATH ?? '' }, [
        '--json',
        'ledger',
        'verify',
        file,
        '--head',
        head.head,
      ]);
      expect(verified.code).toBe(0);
      expect(JSON.parse(verified.stdout)).toMatchObject({ verified: true, events: 13 });
    } finally {
      dir.cleanup();
    }

    // Edited in the server's store after sealing: the audit names that event, and only it.
    const stored = server.log.events.find((e) => e.streamId === 'reservation-r2' && e.type === 'ReservationSettled')!;
    const data = JSON.parse(Buffer.from(stored.data).toString('utf8'));
    stored.data = Buffer.from(JSON.stringify({ ...data, model: 'cheaper' }));
    const edited = await auditLedger(runtime.events, runtime.projections);
    const position = Number(stored.position);
    expect(edited.differences).toEqual([
      expect.stringMatching(new RegExp(`^event ${position} \\(ReservationSettled\\): chain of organization ${orgId}: link`)),
    ]);
    stored.data = Buffer.from(JSON.stringify(data));
    expect((await auditLedger(runtime.events, runtime.projections)).differences).toEqual([]);

    // Removed after sealing: one in the middle breaks its successor's link; the last leaves its chain
    // stream sealing more events than the log holds.
    const settlements = server.log.events.filter((e) => e.type === 'ReservationSettled');
    const [middle, last] = [settlements[1], settlements[settlements.length - 1]];
    const successor = settlements[2];
    server.log.remove(middle.position);
    server.log.remove(last.position);
    const removed = (await auditLedger(runtime.events, runtime.projections)).differences;
    expect(removed).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          new RegExp(`^event ${successor.position} \\(ReservationSettled\\): chain of organization ${orgId}: link`),
        ),
        `chain of organization ${orgId}: its stream seals 13 events through position ${last.position}, the log holds 11 (removed after sealing)`,
      ]),
    );
  }, 30_000);

  it('reports a ledger event with no link as pending within the bound, and as a difference past it (no sealer running)', async () => {
    // A one-shot tool's runtime: no sealer.
    t = await openTestRuntime({ env: { EVENTSTORE_URL: server.url } });
    const orgId = await fundedOrganization(t.runtime, 1_000_000_000);
    const within = await auditLedger(await connect({ sealedWithinMs: 60_000 }), t.runtime.projections);
    expect(within.differences).toEqual([]);
    expect(within.chains).toMatchObject({ stamped: true, sealedWithinMs: 60_000, pending: 1 });
    const past = await auditLedger(await connect({ sealedWithinMs: 0 }), t.runtime.projections);
    expect(past.differences).toEqual([
      expect.stringMatching(new RegExp(`\\(CreditsGranted\\): chain of organization ${orgId}: not sealed, recorded`)),
    ]);
    expect(past.chains.pending).toBe(0);
  });
});
