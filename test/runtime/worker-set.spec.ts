import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { createClient } from 'redis';
import request from 'supertest';
import type { CreditsReserved, ReservationSettled } from '../../src/ledger/ledger.events';
import { settledCharge } from '../../src/ledger/ledger.events';
import type { RedisProjectionStore } from '../../src/projections/redis-projection-store';
import { APPLY } from '../../src/projections/redis-scripts';
import { FakeUpstream, startFakeUpstream } from '../support/fake-upstream';
import { serviceEnv, TEST_MODELS } from '../support/gateway';
import { createKey } from '../support/keys';
import { operatorTool, operatorToolJson } from '../support/operator-tool';
import { Child, eventually, ROOT, startNode } from '../support/processes';
import { raceForCredit } from '../support/credit-race';
import { describeWithRedis, testRedisUrl } from '../support/redis';
import { fundedOrganization, openTestRuntime, TestRuntime } from '../support/runtime';
import { openCountingStream } from '../support/streams';
import { tempDir } from '../support/temp';

/**
 * WORKERS=2: the gateway as a primary and two worker processes from dist/, sharing the port, the
 * SQLite log and the read models in Redis. Both serve; a balance is never overdrawn across them; a
 * worker SIGKILLed mid-burst is restarted and nothing is lost or billed twice; the metrics are the
 * set's; a reload reaches both; SIGTERM drains both.
 */

const M = TEST_MODELS;
// Short reservations, swept often: the holds of a killed worker's requests expire within the test
// (the timeout long enough that a loaded machine does not turn slow replies into 504s).
const TIMING = { REQUEST_TIMEOUT_MS: '5000', RESERVATION_TTL_MS: '5500', PENDING_HOLD_MS: '2500', SWEEP_INTERVAL_MS: '50' };
const MAIN = join(ROOT, 'dist/src/main.js');

interface WorkerSet {
  primary: Child;
  base: string;
  pids: number[];
}

/** The set started from dist/ with `env`, once the primary says every worker serves. */
async function startWorkerSet(env: Record<string, string>): Promise<WorkerSet> {
  const primary = startNode(MAIN, [], env);
  let found: RegExpExecArray | null = null;
  await eventually(
    () => (found = /(\d+) workers serving on (http:\/\/\S+) \(pids ([\d, ]+);/.exec(primary.output())) !== null,
    30_000,
  );
  const [, , base, pids] = found!;
  return { primary, base, pids: pids.split(', ').map(Number) };
}

/** The primary and every worker it named, killed at once (a test's end, whatever state it left them in). */
function killWorkerSet(set: WorkerSet | undefined): void {
  set?.primary.process.kill('SIGKILL');
  for (const pid of set?.pids ?? []) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

const ask = (base: string, key: string, signal?: AbortSignal) =>
  fetch(`${base}/api/v1/chat/completions`, {
    method: 'POST',
    signal,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: M.gpt.slug, max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] }),
  });

/** A request's status and the worker that answered it. */
const answered = (base: string, key: string) =>
  ask(base, key, AbortSignal.timeout(15_000)).then(
    async (r) => (
      await r.text(),
      { status: r.status, worker: Number(r.headers.get('x-gateway-worker')), id: r.headers.get('x-request-id')! }
    ),
    // A connection cut (its worker killed): 0; no answer at all within 15 s: -1.
    (error: Error) => ({ status: error.name === 'TimeoutError' ? -1 : 0, worker: 0, id: '' }),
  );

/** As `answered`, on a connection of its own (the pool's may all be to one worker): which worker accepts it is the primary's turn. */
const answeredOnNewConnection = (base: string, key: string) =>
  new Promise<{ status: number; worker: number }>((resolve, reject) => {
    const body = JSON.stringify({ model: M.gpt.slug, max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] });
    const req = httpRequest(
      `${base}/api/v1/chat/completions`,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, worker: Number(res.headers['x-gateway-worker']) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });

/** The sum of a counter's samples in Prometheus's text, those whose labels contain `labels`. */
const counterSum = (text: string, name: string, labels = '') =>
  text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && l.includes(labels))
    .reduce((n, l) => n + Number(l.split(' ').pop()), 0);

describeWithRedis('WORKERS=2: one gateway of two processes', () => {
  let fake: FakeUpstream;
  let t: TestRuntime;
  let env: Record<string, string>;
  let set: WorkerSet;
  let key: string;
  let served = 0;

  beforeAll(async () => {
    fake = await startFakeUpstream();
    t = await openTestRuntime({ redis: true, env: TIMING });
    env = { ...serviceEnv(t, fake, TIMING), WORKERS: '2' };
    const orgId = await fundedOrganization(t.runtime, 100_000_000_000);
    key = (await createKey(t.runtime, orgId, 'set')).secret;
    // In Redis before any worker is asked (the workers follow the log on their own time).
    await t.runtime.projector.catchUp();
    set = await startWorkerSet(env);
  }, 60_000);
  afterAll(async () => {
    killWorkerSet(set);
    await fake.close();
    await t.cleanup();
  });

  it('writes the primary pid to gateway.pid, and both workers serve (each reply names its worker)', async () => {
    expect(readFileSync(join(env.DATA_DIR, 'gateway.pid'), 'utf8').split('\n')[0]).toBe(String(set.primary.process.pid));
    expect(set.pids).toHaveLength(2);
    fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' }, firstByteDelayMs: 50 });
    const replies = await Promise.all(Array.from({ length: 40 }, () => answered(set.base, key)));
    served += 40;
    expect(replies.map((r) => r.status)).toEqual(Array(40).fill(200));
    expect(new Set(replies.map((r) => r.worker))).toEqual(new Set(set.pids));
  });

  it('60 requests against credit for exactly 20 held at once: 20 served, 40 refused, over both workers; ledger audit clean', async () => {
    fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
    const probe = await answered(set.base, key);
    served += 1;
    await t.runtime.projector.catchUp();
    const events = await t.runtime.events.readAll(0, 100_000);
    const amount = (
      events.find((e) => e.type === 'CreditsReserved' && (e.data as CreditsReserved['data']).requestId === probe.id)!
        .data as CreditsReserved['data']
    ).amount;
    const orgId = await fundedOrganization(t.runtime, 20 * amount + amount - 1);
    const { secret } = await createKey(t.runtime, orgId, 'racing');
    // In Redis before any worker is asked (the workers follow the log on their own time).
    await t.runtime.projector.catchUp();
    const replies = await raceForCredit(fake, M.gpt.hostModel, 60, () => answered(set.base, secret));
    served += 20;
    expect(replies.filter((r) => r.status === 200)).toHaveLength(20);
    expect(replies.filter((r) => r.status === 402)).toHaveLength(40);
    expect(new Set(replies.map((r) => r.worker))).toEqual(new Set(set.pids));
    await t.runtime.projector.catchUp();
    const balance = await t.runtime.projections.balance(orgId);
    expect(balance.reserved).toBe(0);
    expect(balance.granted - balance.spent).toBeGreaterThanOrEqual(0);
    expect(await operatorToolJson(env, ['ledger', 'audit'])).toMatchObject({ clean: true, differences: [] });
  });

  it('/metrics answers for the whole set, whichever worker answers', async () => {
    const scrapes = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const r = await fetch(`${set.base}/metrics`);
        return { worker: Number(r.headers.get('x-gateway-worker')), text: await r.text() };
      }),
    );
    expect(new Set(scrapes.map((s) => s.worker))).toEqual(new Set(set.pids));
    for (const s of scrapes) expect(counterSum(s.text, 'gateway_requests_total', 'status="200"')).toBe(served);
    // Each worker's process metrics apart (labelled by its place in the set), not summed into one.
    for (const s of scrapes) {
      const rss = s.text.split('\n').filter((l) => l.startsWith('process_resident_memory_bytes'));
      expect(rss.map((l) => /worker="(\d+)"/.exec(l)?.[1]).sort()).toEqual(['1', '2']);
      expect(s.text).toContain('\ngateway_read_model_store_up 1\n');
    }
  });

  it('a session signed in on one worker is good on the other', async () => {
    const agent = request.agent(set.base);
    await agent.post('/dashboard/api/signup').send({ email: 'set@example.com', password: 'correct horse battery' }).expect(202);
    const signin = await agent
      .post('/dashboard/api/signin')
      .send({ email: 'set@example.com', password: 'correct horse battery' })
      .expect(200);
    const cookie = String(signin.headers['set-cookie']).split(';')[0];
    const sessions = await Promise.all(
      Array.from({ length: 10 }, () => fetch(`${set.base}/dashboard/api/session`, { headers: { cookie } })),
    );
    expect(sessions.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(new Set(sessions.map((r) => Number(r.headers.get('x-gateway-worker'))))).toEqual(new Set(set.pids));
  });

  it("refuses an instance with in-process read models on the set's data directory (exit 1, naming the set), and the set serves on", async () => {
    const beside = startNode(MAIN, [], { ...env, WORKERS: '1', REDIS_URL: '', PORT: '0', SIMULATED_HOST_PORT: 'off' });
    expect(await beside.exited()).toBe(1);
    expect(beside.output()).toMatch(
      /gateway instances with read models in Redis \(REDIS_URL, or a WORKERS set\) are already serving from /,
    );
    expect((await answered(set.base, key)).status).toBe(200);
  });

  it('`catalogue reload` (SIGHUP to the pid in gateway.pid) reaches both workers', async () => {
    const before = (set.primary.output().match(/catalogue reloaded from/g) ?? []).length;
    const run = await operatorTool(env, ['catalogue', 'reload']);
    expect(run.code).toBe(0);
    await eventually(() => (set.primary.output().match(/catalogue reloaded from/g) ?? []).length === before + 2);
    const reloads = set.primary
      .output()
      .split('\n')
      .filter((l) => l.includes('catalogue reloaded from'))
      .slice(before);
    expect(new Set(reloads.map((l) => (JSON.parse(l) as { pid: number }).pid))).toEqual(new Set(set.pids));
  });

  it('a worker SIGKILLed mid-burst is restarted; nothing lost or billed twice: spent is the sum of the charges, audit clean', async () => {
    const orgId = await fundedOrganization(t.runtime, 100_000_000_000);
    const { secret } = await createKey(t.runtime, orgId, 'burst');
    // In Redis before any worker is asked (the workers follow the log on their own time).
    await t.runtime.projector.catchUp();
    fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello there.' }, firstByteDelayMs: 100 });
    const [doomed, survivor] = set.pids;
    const replies: Array<{ status: number; worker: number; id: string }> = [];
    // 20 clients, each sending request after request; the doomed worker is killed once 60 are answered.
    let killed = false;
    const client = async () => {
      while (replies.length < 300) {
        const reply = await answered(set.base, secret);
        replies.push(reply);
        if (!killed && replies.length >= 60) {
          killed = true;
          process.kill(doomed, 'SIGKILL');
        }
      }
    };
    const clients = Array.from({ length: 20 }, client);
    const restartedPid = eventually(
      () => new RegExp(`worker \\d \\(pid ${doomed}\\) died \\(killed by SIGKILL\\)`).test(set.primary.output()),
      20_000,
    )
      .then(() => eventually(() => /worker \d \(pid (\d+)\) serving again/.test(set.primary.output()), 20_000))
      .then(() => Number(/worker \d \(pid (\d+)\) serving again/.exec(set.primary.output())![1]));
    await Promise.all(clients);
    const replacement = await restartedPid;
    expect(set.pids).not.toContain(replacement);
    // The replacement serves.
    const after = await Promise.all(Array.from({ length: 20 }, () => answeredOnNewConnection(set.base, secret)));
    expect(after.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(new Set(after.map((r) => r.worker))).toEqual(new Set([survivor, replacement]));
    set.pids = [survivor, replacement];

    const ok = replies.filter((r) => r.status === 200);
    // Some requests were on the killed worker (their connections cut), the rest served. A connection
    // the primary was handing to the worker as it died stays open unanswered (node:cluster keeps its
    // copy of the socket until the worker acknowledges it): the client's timeout ends it (-1).
    expect(replies.some((r) => r.status === 0)).toBe(true);
    expect(replies.filter((r) => r.status !== 200 && r.status !== 0 && r.status !== -1)).toEqual([]);
    // The killed worker's holds expire (swept by the other workers), then everything is resolved.
    await eventually(async () => {
      await t.runtime.projector.catchUp();
      const b = await t.runtime.projections.balance(orgId);
      return b.reserved === 0 && b.pending === 0;
    }, 20_000);
    const events = (await t.runtime.events.readAll(0, 1_000_000)).filter((e) => (e.data as { orgId?: string }).orgId === orgId);
    const settlements = events.filter((e) => e.type === 'ReservationSettled').map((e) => e.data as ReservationSettled['data']);
    // Every request answered 200 was settled exactly once.
    for (const r of ok) expect(settlements.filter((s) => s.requestId === r.id)).toHaveLength(1);
    expect(new Set(settlements.map((s) => s.requestId)).size).toBe(settlements.length);
    const balance = await t.runtime.projections.balance(orgId);
    expect(balance.spent).toBe(settlements.reduce((n, s) => n + settledCharge(s), 0));
    expect(await operatorToolJson(env, ['ledger', 'audit'])).toMatchObject({ clean: true, differences: [] });
  }, 60_000);

  it('SIGTERM drains both workers: streams in flight on either complete, exit 0, gateway.pid removed', async () => {
    fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'one two three four five six' }, chunkDelayMs: 100 });
    const streams = await Promise.all(Array.from({ length: 10 }, () => openCountingStream(set.base, key, M.gpt.slug)));
    set.primary.process.kill('SIGTERM');
    const endings = await Promise.all(streams.map((s) => s.ended));
    expect(endings).toEqual(Array(10).fill('completed'));
    expect(await set.primary.exited()).toBe(0);
    expect(set.primary.output()).toContain('model gateway stopped (every worker drained)');
    expect(set.primary.output().match(/model gateway stopped \(event log closed\)/g)).toHaveLength(2);
    expect(existsSync(join(env.DATA_DIR, 'gateway.pid'))).toBe(false);
    expect(await operatorToolJson(env, ['ledger', 'audit'])).toMatchObject({ clean: true, differences: [] });
  });
});

/**
 * The positions of the log's events an APPLY script (EVALSHA or EVAL, as MONITOR prints it) carries
 * for the organizations under `prefix`: ARGV is, for each event, its position, its creation flag and
 * how many arguments its writes take, then those.
 */
function appliedPositions(line: string, prefix: string, applySha: string): number[] {
  const words = [...line.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]);
  const [command, script, keyCount] = words;
  const isApply =
    (command.toUpperCase() === 'EVALSHA' && script === applySha) ||
    (command.toUpperCase() === 'EVAL' && script.includes('unknown read-model write'));
  const keys = words.slice(3, 3 + Number(keyCount));
  if (!isApply || !keys[0]?.startsWith(`${prefix}{org:`)) return [];
  const args = words.slice(3 + Number(keyCount));
  const positions: number[] = [];
  for (let i = 0; i < args.length; i += 3 + Number(args[i + 2])) positions.push(Number(args[i]));
  return positions;
}

describeWithRedis('WORKERS=2: each event is applied to the read models once for the set', () => {
  let fake: FakeUpstream;
  let t: TestRuntime;
  let set: WorkerSet;

  afterAll(async () => {
    killWorkerSet(set);
    await fake?.close();
    await t?.cleanup();
  });

  it("a worker reading the other worker's events from the log skips those the other has applied: no event sent to Redis twice", async () => {
    fake = await startFakeUpstream();
    // Followers wake on their own appends (the longest poll: none within the test): each worker reads the
    // other's events when its next request appends, after the other has applied them (requests one at a time).
    const quiet = { ...TIMING, LOG_POLL_MS: '10000' };
    t = await openTestRuntime({ redis: true, env: quiet });
    const env: Record<string, string> = { ...serviceEnv(t, fake, quiet), WORKERS: '2' };
    const orgId = await fundedOrganization(t.runtime, 100_000_000_000);
    const key = (await createKey(t.runtime, orgId, 'set')).secret;
    await t.runtime.projector.catchUp();
    set = await startWorkerSet(env);
    fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });

    const applySha = createHash('sha1').update(APPLY).digest('hex');
    // This test's own runtime follows the log too: only the workers' connections are counted.
    const runtimeClient = (await (t.runtime.projections as RedisProjectionStore).client.clientInfo()).addr;
    const senders = new Map<number, Set<string>>();
    const monitor = createClient({ url: testRedisUrl()! });
    await monitor.connect();
    try {
      await monitor.monitor((line: string) => {
        const client = /\[\d+ ([^\]]+)\]/.exec(line)?.[1] ?? '';
        if (client === runtimeClient) return;
        for (const position of appliedPositions(line, env.REDIS_PREFIX, applySha)) {
          const from = senders.get(position) ?? new Set<string>();
          senders.set(position, from.add(client));
        }
      });
      const before = await t.runtime.events.headPosition();
      const workers = new Set<number>();
      // One at a time, each on a connection of its own: the primary hands them to the workers in turn.
      for (let i = 0; i < 12; i++) {
        const reply = await answeredOnNewConnection(set.base, key);
        expect(reply.status).toBe(200);
        workers.add(reply.worker);
      }
      expect(workers).toEqual(new Set(set.pids));
      const head = await t.runtime.events.headPosition();
      // Every event of the requests reached Redis (each reply waited for its own)…
      await eventually(() => [...senders.keys()].some((p) => p >= head));
      const ours = [...senders].filter(([position]) => position > before);
      expect(ours.length).toBeGreaterThanOrEqual(24);
      // …from both workers' connections, and each from one of them only.
      expect(new Set(ours.flatMap(([, from]) => [...from])).size).toBe(2);
      expect(ours.filter(([, from]) => from.size > 1).map(([position]) => position)).toEqual([]);
    } finally {
      await monitor.close();
    }
    expect(await operatorToolJson(env, ['ledger', 'audit'])).toMatchObject({ clean: true, differences: [] });
  }, 60_000);
});

/** GET /health/ready on a connection of its own (which worker accepts it is the primary's turn): its status, body and worker. */
const readyOnNewConnection = (base: string) =>
  new Promise<{ status: number; body: { ready: boolean; reasons: string[] }; worker: number }>((resolve, reject) => {
    const req = httpRequest(`${base}/health/ready`, { agent: false }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () =>
        resolve({ status: res.statusCode!, body: JSON.parse(text), worker: Number(res.headers['x-gateway-worker']) }),
      );
    });
    req.on('error', reject);
    req.end();
  });

describeWithRedis('WORKERS=2: ready only once every worker serves', () => {
  let fake: FakeUpstream;
  let t: TestRuntime;
  let set: WorkerSet | undefined;

  afterAll(async () => {
    killWorkerSet(set);
    await fake?.close();
    await t?.cleanup();
  });

  it('while the second worker is still starting, the first serves but answers /health/ready 503 (1 of 2 serve); once both serve, both answer 200', async () => {
    fake = await startFakeUpstream();
    t = await openTestRuntime({ redis: true, env: TIMING });
    // Worker 2 is held, whole, just before it listens, until the test lets it go (SIGUSR2).
    const env: Record<string, string> = {
      ...serviceEnv(t, fake, TIMING),
      WORKERS: '2',
      NODE_OPTIONS: `--require ${join(ROOT, 'test/support/workers/hold-listen.js')}`,
      HOLD_WORKER_INDEX: '2',
    };
    const orgId = await fundedOrganization(t.runtime, 100_000_000_000);
    const key = (await createKey(t.runtime, orgId, 'set')).secret;
    await t.runtime.projector.catchUp();
    const primary = startNode(MAIN, [], env);
    set = { primary, base: '', pids: [] };
    const held = Number(/\(pid (\d+)\)/.exec(await primary.waitForLine('held worker 2 (pid ', 30_000))![1]);
    set.pids.push(held);
    let listening: RegExpExecArray | null = null;
    await eventually(
      () => (listening = /"pid":(\d+)[^\n]*model gateway listening on (http:\/\/[\d.:]+)/.exec(primary.output())) !== null,
      30_000,
    );
    const [, first, base] = listening!;
    set.pids.push(Number(first));

    // The first worker serves every connection (the other does not listen), and says the set is not ready.
    fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
    expect(await answeredOnNewConnection(base, key)).toEqual({ status: 200, worker: Number(first) });
    const starting = await readyOnNewConnection(base);
    expect(starting).toEqual({
      status: 503,
      body: { ready: false, reasons: ['starting: 1 of 2 workers of the set serve'] },
      worker: Number(first),
    });
    expect(primary.output()).not.toMatch(/workers serving on/);

    process.kill(held, 'SIGUSR2');
    await eventually(() => /2 workers serving on/.test(primary.output()), 30_000);
    // The primary's word reaches the first worker over its channel: ready from then on.
    await eventually(async () => (await readyOnNewConnection(base)).status === 200, 10_000);
    const answers = await Promise.all(Array.from({ length: 8 }, () => readyOnNewConnection(base)));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(new Set(answers.map((a) => a.worker))).toEqual(new Set([Number(first), held]));
  }, 90_000);
});

describe('WORKERS=2 without REDIS_URL', () => {
  it('is refused at start, saying why', async () => {
    const dir = tempDir('refused-set');
    try {
      const primary = startNode(MAIN, [], {
        WORKERS: '2',
        REDIS_URL: '',
        PORT: '0',
        SIMULATED_HOST_PORT: 'off',
        DATA_DIR: dir.path,
      });
      expect(await primary.exited()).toBe(1);
      expect(primary.output()).toMatch(
        /configuration: WORKERS needs REDIS_URL \(here 2 workers\): workers with in-process read models/,
      );
      expect(primary.output()).not.toMatch(/listening/);
    } finally {
      dir.cleanup();
    }
  });
});
