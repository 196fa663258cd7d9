/**
 * Ledger benchmarks: `npm run bench:ledger`. Each figure is measured side by side with its
 * baseline in the same run, and printed as a median over rounds.
 *
 *   BENCH_EVENTS (default 1,000,000) sets the size of the log for the rebuild and start-up figures.
 *   REDIS_URL (default redis://127.0.0.1:6379) adds the Redis rows when a Redis answers.
 *   BENCH_BASELINE_DIR (a built checkout) adds its ledger beside this one's in the one-request-at-a-time rows.
 */
import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'redis';
import { loadConfig } from '../src/config/config';
import { SqliteEventStore } from '../src/eventstore/sqlite-event-store';
import { LEDGER_CHAIN } from '../src/ledger/ledger-chain';
import { LedgerService } from '../src/ledger/ledger.service';
import { uncachedUsage } from '../src/ledger/money';
import { MemoryProjectionStore } from '../src/projections/memory-projection-store';
import type { ProjectionStore } from '../src/projections/projection-store';
import { foldLog, Projector, rebuildProjections } from '../src/projections/projector';
import { RedisProjectionStore } from '../src/projections/redis-projection-store';
import { openRuntime } from '../src/runtime/runtime';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const PREFIX = `mgbench:${randomUUID().slice(0, 8)}:`;
const ROUNDS = 3;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const percentile = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

function tempDir(): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), 'mg-bench-'));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

async function redisAvailable(): Promise<boolean> {
  const client = createClient({ url: REDIS_URL, socket: { reconnectStrategy: false, connectTimeout: 1000 } });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.ping();
    return true;
  } catch {
    return false;
  } finally {
    if (client.isOpen) await client.close();
  }
}

const settlement = {
  usage: uncachedUsage(1200, 300),
  prices: { input: 150_000_000, cacheRead: 75_000_000, cacheWrite: 150_000_000, cacheWrite1h: 150_000_000, output: 600_000_000 },
  host: 'bench',
  hostModel: 'bench-1',
  status: 'ok',
  latencyMs: 10,
};

/** The ledger's parts, of this checkout or of another one's build (BENCH_BASELINE_DIR), to run side by side. */
interface LedgerBuild {
  SqliteEventStore: typeof SqliteEventStore;
  Projector: typeof Projector;
  LedgerService: typeof LedgerService;
  MemoryProjectionStore: typeof MemoryProjectionStore;
  LEDGER_CHAIN: typeof LEDGER_CHAIN;
}
const thisBuild: LedgerBuild = { SqliteEventStore, Projector, LedgerService, MemoryProjectionStore, LEDGER_CHAIN };

function builtAt(checkout: string): LedgerBuild {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- another build's modules, found at run time
  const load = (module: string) => require(join(checkout, 'dist', 'src', module)) as Record<string, unknown>;
  return {
    SqliteEventStore: load('eventstore/sqlite-event-store').SqliteEventStore as typeof SqliteEventStore,
    Projector: load('projections/projector').Projector as typeof Projector,
    LedgerService: load('ledger/ledger.service').LedgerService as typeof LedgerService,
    MemoryProjectionStore: load('projections/memory-projection-store').MemoryProjectionStore as typeof MemoryProjectionStore,
    LEDGER_CHAIN: load('ledger/ledger-chain').LEDGER_CHAIN as typeof LEDGER_CHAIN,
  };
}

/** A store, a ledger on it and a funded organization. */
async function ledgerFixture(
  file: string,
  projections: ProjectionStore,
  groupCommit: boolean,
  chained: boolean,
  build: LedgerBuild = thisBuild,
  commitAloneHere = false,
) {
  // The service's log stamps the ledger's hash chain; `chained: false` is the log before it.
  // `commitAloneHere`: an append made alone is committed on this thread, as the service does for a request answered alone.
  const events = new build.SqliteEventStore(file, {
    groupCommit,
    ...(chained ? { chain: build.LEDGER_CHAIN } : {}),
    ...(commitAloneHere ? { commitAloneHere: () => true } : {}),
  });
  const projector = new build.Projector(events, projections, 1000);
  await projector.start();
  const ledger = new build.LedgerService(events, projections, { reservationTtlMs: 900_000, pendingHoldMs: 60_000 });
  const orgId = randomUUID();
  await events.append(
    `org-${orgId}`,
    [{ type: 'OrganizationCreated', data: { orgId, name: 'bench', createdAt: 0 } }],
    'no_stream',
  );
  await ledger.grant(orgId, 9_000_000_000_000_000, 'bench');
  await projector.catchUp();
  return {
    ledger,
    orgId,
    projector,
    close: async () => {
      await projector.stop();
      await events.close();
    },
  };
}

/** One bench request: admitted, then settled (each append durable); the settlement's resolution. */
async function reserveAndSettle(f: Awaited<ReturnType<typeof ledgerFixture>>, requestId: string) {
  const admission = await f.ledger.admit({
    requestId,
    keyId: 'k',
    surface: 'bench',
    model: 'm',
    orgId: f.orgId,
    amount: 1_000_000,
  });
  if (!admission.admitted) throw new Error('bench organization ran out of credit');
  return f.ledger.recordSettlement(admission.ticket, settlement);
}

/** Requests per second of reserve + settle (two durable events each) at a fixed concurrency. */
async function throughput(
  groupCommit: boolean,
  projections: ProjectionStore,
  requests: number,
  concurrency: number,
  chained = true,
): Promise<number> {
  const dir = tempDir();
  const f = await ledgerFixture(join(dir.path, 'events.sqlite'), projections, groupCommit, chained);
  let next = 0;
  const worker = async () => {
    while (next < requests) {
      const i = next++;
      await reserveAndSettle(f, `b${i}`);
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - start) / 1000;
  await f.close();
  await projections.reset();
  dir.cleanup();
  return requests / seconds;
}

/** This process's CPU time so far, in microseconds (every thread: the writer's included). */
const cpuMicros = () => {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
};

/** The main thread's CPU time so far, in microseconds (Linux: its /proc entry; elsewhere NaN). */
function mainThreadMicros(): number {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000; // utime + stime, in ticks of 10 ms
  } catch {
    return NaN;
  }
}

/**
 * One request at a time, as one connection's requests: reserve (durable), settle (durable), then
 * wait for the settlement to be visible in the read models, as a reply does. Latencies in ms and
 * CPU µs per request.
 */
async function sequential(
  requests: number,
  build: LedgerBuild,
  commitAloneHere: boolean,
): Promise<{ latencies: number[]; cpu: number; mainCpu: number }> {
  const dir = tempDir();
  const f = await ledgerFixture(
    join(dir.path, 'events.sqlite'),
    new build.MemoryProjectionStore(1000),
    true,
    true,
    build,
    commitAloneHere,
  );
  const latencies: number[] = [];
  let cpu = 0;
  let mainCpu = 0;
  for (let i = -200; i < requests; i++) {
    if (i === 0) {
      cpu = cpuMicros();
      mainCpu = mainThreadMicros();
    }
    const start = performance.now();
    const { position } = await reserveAndSettle(f, `s${i}`);
    await f.projector.waitFor(position);
    if (i >= 0) latencies.push(performance.now() - start);
  }
  cpu = (cpuMicros() - cpu) / requests;
  mainCpu = (mainThreadMicros() - mainCpu) / requests;
  await f.close();
  dir.cleanup();
  return { latencies, cpu, mainCpu };
}

/** The floor under `sequential`: two bare SQLite commits in a row (WAL, synchronous = FULL, so each fsyncs), in ms. */
function twoCommits(requests: number): number[] {
  const dir = tempDir();
  const db = new Database(join(dir.path, 'floor.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE events (position INTEGER PRIMARY KEY AUTOINCREMENT, data TEXT NOT NULL)');
  const insert = db.prepare('INSERT INTO events (data) VALUES (?)');
  const data = JSON.stringify(settlement);
  const latencies: number[] = [];
  for (let i = 0; i < requests; i++) {
    const start = performance.now();
    insert.run(data);
    insert.run(data);
    latencies.push(performance.now() - start);
  }
  db.close();
  dir.cleanup();
  return latencies;
}

/** Latency of the admission decision alone (the atomic hold), one at a time, in milliseconds. */
async function admissionLatencies(projections: ProjectionStore, samples: number): Promise<number[]> {
  const orgId = randomUUID();
  await projections.apply([
    {
      type: 'OrganizationCreated',
      data: { orgId, name: 'b', createdAt: 0 },
      streamId: 's',
      revision: 0,
      position: 1,
      recordedAt: 0,
    },
    {
      type: 'CreditsGranted',
      data: { orgId, grantId: 'g', amount: 9e15, reason: 'b', grantedAt: 0 },
      streamId: 's',
      revision: 1,
      position: 2,
      recordedAt: 0,
    },
  ]);
  const latencies: number[] = [];
  for (let i = 0; i < samples; i++) {
    const id = `h${i}`;
    const start = performance.now();
    const admission = await projections.hold(orgId, id, 1_000_000, Date.now() + 60_000, { keyId: 'bench' });
    latencies.push(performance.now() - start);
    if (!admission.admitted) throw new Error('not admitted');
    await projections.dropHold(orgId, id);
  }
  await projections.reset();
  return latencies;
}

/** Writes a realistic log of about `count` events: organizations, keys, grants, reserve/settle pairs. */
async function writeLog(file: string, count: number): Promise<void> {
  const store = new SqliteEventStore(file);
  const orgs = Array.from({ length: 100 }, () => randomUUID());
  let written = 0;
  for (const orgId of orgs) {
    await store.append(
      `org-${orgId}`,
      [{ type: 'OrganizationCreated', data: { orgId, name: 'org', createdAt: 0 } }],
      'no_stream',
    );
    await store.append(
      `credits-${orgId}`,
      [{ type: 'CreditsGranted', data: { orgId, grantId: randomUUID(), amount: 9e13, reason: 'bench', grantedAt: 0 } }],
      'no_stream',
    );
    written += 2;
  }
  let i = 0;
  while (written < count) {
    const appends: Array<Promise<unknown>> = [];
    for (let j = 0; j < 2000 && written < count; j++, i++) {
      const orgId = orgs[i % orgs.length];
      const reservationId = randomUUID();
      const facts = { requestId: `r${i}`, keyId: 'k', surface: 'chat-completions', model: 'vendor/model', reservationId, orgId };
      const reserved = { type: 'CreditsReserved', data: { ...facts, amount: 2_000_000, reservedAt: i, expiresAt: i + 900_000 } };
      const settled = {
        type: 'ReservationSettled',
        data: {
          ...facts,
          host: 'h',
          hostModel: 'hm',
          ...settlement.usage,
          prices: settlement.prices,
          amount: 360_000,
          held: 2_000_000,
          status: 'ok',
          latencyMs: 800,
          settledAt: i,
        },
      };
      appends.push(store.append(`reservation-${reservationId}`, [reserved, settled], 'no_stream'));
      written += 2;
    }
    await Promise.all(appends);
  }
  await store.close();
}

async function main(): Promise<void> {
  const withRedis = await redisAvailable();
  // Read models of a log of their own, except those rebuilt from the large log (then started from at start-up).
  const redisStore = (logId = 'bench') => RedisProjectionStore.connect(REDIS_URL, PREFIX, 1000, logId);
  const lines: string[] = [];
  const row = (...cells: string[]) => {
    const line = `| ${cells.join(' | ')} |`;
    lines.push(line);
    console.log(line);
  };
  console.log(
    `ledger benchmarks: node ${process.version}, ${ROUNDS} rounds, median shown; Redis ${withRedis ? REDIS_URL : 'not available'}\n`,
  );

  // 1. Throughput: group commit against one commit per append, alternating, same run.
  row('reserve + settle on one process (SQLite, in-process read models)', 'requests/s', 'ledger events/s');
  row('---', '---:', '---:');
  const grouped: number[] = [];
  const unchained: number[] = [];
  const single: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    single.push(await throughput(false, new MemoryProjectionStore(1000), 3_000, 64));
    grouped.push(await throughput(true, new MemoryProjectionStore(1000), 30_000, 256));
    unchained.push(await throughput(true, new MemoryProjectionStore(1000), 30_000, 256, false));
  }
  row('baseline: one commit per append', fmt(median(single)), fmt(median(single) * 2));
  row('group commit (default, hash chain stamped)', fmt(median(grouped)), fmt(median(grouped) * 2));
  row('group commit, no hash chain (before it)', fmt(median(unchained)), fmt(median(unchained) * 2));
  if (withRedis) {
    const redisRuns: number[] = [];
    for (let r = 0; r < ROUNDS; r++) redisRuns.push(await throughput(true, await redisStore(), 20_000, 256));
    row('group commit, Redis read models', fmt(median(redisRuns)), fmt(median(redisRuns) * 2));
  }
  console.log(`\ngroup commit / one commit per append: ${(median(grouped) / median(single)).toFixed(1)}×`);
  console.log(`with the hash chain / without: ${(median(grouped) / median(unchained)).toFixed(3)}×\n`);

  // 2. One request at a time: what the ledger adds to the two fsyncs it cannot do without.
  const baselineDir = process.env.BENCH_BASELINE_DIR;
  // The service commits a request's events on its main thread while no other request is being answered.
  const builds: Array<[string, LedgerBuild, boolean]> = [
    ['this checkout, committed on this thread (a request alone)', thisBuild, true],
    ['this checkout, committed by the writer thread', thisBuild, false],
  ];
  if (baselineDir) builds.push([`baseline (${baselineDir})`, builtAt(baselineDir), false]);
  row(
    'one request at a time: reserve, settle, visible (in-process read models), 2,000 in sequence',
    'p50 ms',
    'p99 ms',
    'CPU µs/request',
    'of which main thread',
  );
  row('---', '---:', '---:', '---:', '---:');
  const floors: number[][] = [];
  const runs = builds.map(() => [] as Array<{ latencies: number[]; cpu: number; mainCpu: number }>);
  for (let r = 0; r < ROUNDS; r++) {
    floors.push(twoCommits(2_000));
    // Alternating, the first to go changing each round.
    for (let k = 0; k < builds.length; k++) {
      const b = (k + r) % builds.length;
      runs[b].push(await sequential(2_000, builds[b][1], builds[b][2]));
    }
  }
  const p = (latencies: number[][], q: number) => median(latencies.map((run) => percentile(run, q)));
  row('floor: two bare SQLite commits with fsync, in this thread', p(floors, 50).toFixed(3), p(floors, 99).toFixed(3), '–', '–');
  for (let b = 0; b < builds.length; b++) {
    const latencies = runs[b].map((run) => run.latencies);
    row(
      `the ledger, ${builds[b][0]}`,
      p(latencies, 50).toFixed(3),
      p(latencies, 99).toFixed(3),
      fmt(median(runs[b].map((run) => run.cpu))),
      fmt(median(runs[b].map((run) => run.mainCpu))),
    );
  }
  console.log(
    `\nthe ledger beyond the floor, p50: +${(
      p(
        runs[0].map((run) => run.latencies),
        50,
      ) - p(floors, 50)
    ).toFixed(3)} ms\n`,
  );

  // 3. Admission latency (the atomic hold).
  row('admission (atomic hold), 20,000 in sequence', 'p50 ms', 'p99 ms');
  row('---', '---:', '---:');
  const memory = await admissionLatencies(new MemoryProjectionStore(1000), 20_000);
  row('in-process', percentile(memory, 50).toFixed(4), percentile(memory, 99).toFixed(4));
  if (withRedis) {
    const store = await redisStore();
    const redis = await admissionLatencies(store, 20_000);
    await store.close();
    row('Redis (Lua script, loopback)', percentile(redis, 50).toFixed(3), percentile(redis, 99).toFixed(3));
  }
  console.log('');

  // 4 and 5. Rebuild and start-up over a large log.
  const dir = tempDir();
  const file = join(dir.path, 'events.sqlite');
  const writing = performance.now();
  await writeLog(file, EVENTS);
  console.log(`(wrote a log of ${fmt(EVENTS)} events in ${((performance.now() - writing) / 1000).toFixed(1)} s)\n`);
  const events = new SqliteEventStore(file);

  row(`rebuild from ${fmt(EVENTS)} events`, 'seconds', 'events/s');
  row('---', '---:', '---:');
  const folds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const start = performance.now();
    await foldLog(events, 1000);
    folds.push((performance.now() - start) / 1000);
  }
  row('in-process read models (fold of the log)', median(folds).toFixed(2), fmt(EVENTS / median(folds)));
  if (withRedis) {
    const store = await redisStore(await events.logId());
    const runs: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const start = performance.now();
      await rebuildProjections(events, store, 1000);
      runs.push((performance.now() - start) / 1000);
    }
    row('Redis read models (drop, fold, write)', median(runs).toFixed(2), fmt(EVENTS / median(runs)));
    await store.close();
  }
  await events.close();
  console.log('');

  row(`start-up with ${fmt(EVENTS)} events in the log`, 'seconds until read models are current');
  row('---', '---:');
  const snapshot = join(dir.path, 'read-models.snapshot.json');
  const startup = async (env: Record<string, string>, fresh = false) => {
    const runs: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      if (fresh) rmSync(snapshot, { force: true });
      const start = performance.now();
      const runtime = await openRuntime(loadConfig({ DATA_DIR: dir.path, ...env }));
      await runtime.projector.catchUp(120_000);
      runs.push((performance.now() - start) / 1000);
      await runtime.close();
    }
    return median(runs);
  };
  row(
    'baseline: in-process read models, no saved state (replays the whole log)',
    (await startup({ REDIS_URL: '' }, true)).toFixed(3),
  );
  row('in-process read models from their saved state (replays only newer events)', (await startup({ REDIS_URL: '' })).toFixed(3));
  if (withRedis) {
    row('Redis read models with a checkpoint (no replay)', (await startup({ REDIS_URL, REDIS_PREFIX: PREFIX })).toFixed(3));
    const store = await redisStore();
    await store.reset();
    await store.close();
  }
  dir.cleanup();
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
