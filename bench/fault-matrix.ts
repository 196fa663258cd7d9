/**
 * Fault matrix: `npm run bench:faults [-- --out FILE]` (not part of the tests; about a minute, well under five).
 *
 * The built gateway (dist/, started as `npm start` runs it) in processes of its own, on a SQLite
 * log and Redis read models, in front of a fake provider speaking the real wire formats on an
 * `openai` and an `anthropic` host (./fault-matrix/upstream.ts). A mixed load cycles through every
 * surface (chat completions, messages, Responses, native), whole and streamed, on both host kinds,
 * while a fault strikes:
 *
 *   sigkill      the gateway SIGKILLed twice under load and restarted on the same DATA_DIR; the
 *                holds of the killed processes expire (short RESERVATION_TTL_MS, SWEEP_INTERVAL_MS)
 *   redis        its Redis (a throwaway redis-server on a free port, so the machine's is untouched)
 *                SIGKILLed under load and started again empty
 *   disk-full    the log's DATA_DIR on a 64 MB tmpfs, filled under load, then freed (mounting takes
 *                root: without it the row says so and is skipped)
 *   disconnects  1,000 streams opened, each delivering text, then all their clients gone at once
 *
 * Each scenario has its own DATA_DIR, organization and key; the other rows' Redis is the one at
 * REDIS_URL (default redis://127.0.0.1:6379) under a key prefix of the run's own, removed at the
 * end. Each row ends once every reservation of its log is resolved, with what the clients got
 * (their own x-request-id on every request) beside what the log holds for the same requests, and
 * the operator tool's `ledger audit`. FAULTS_SCENARIOS (a comma list) runs some of them;
 * FAULTS_LOG_DIR keeps each gateway process's whole output there (LOG_LEVEL, default warn, sets how much).
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { closeSync, createWriteStream, mkdtempSync, openSync, rmdirSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { arch, cpus, loadavg, platform, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { Agent, request } from 'undici';
import { deliveredTokens, HOSTS, Kind, KINDS, kindName, Outcome, PRICES, send, slugOf } from './fault-matrix/clients';
import { auditLedger, Booked, openReservations, readLedger, redisAnswers, removeKeys } from './fault-matrix/ledger';
import { PACED_MODEL, SLOW_MODEL } from './fault-matrix/upstream';
import {
  alive,
  Child,
  cleanUp,
  describeCheckout,
  exited,
  freePort,
  launch,
  operator,
  ROOT,
  startArgs,
  startedOrFailed,
  tempDir,
} from './gateway/processes';

const SCENARIOS = ['sigkill', 'redis', 'disk-full', 'disconnects'] as const;
type Scenario = (typeof SCENARIOS)[number];

/** Clients of the mixed load, each sending its next request when the last has ended. */
const WORKERS = 24;
const DISCONNECTS = 1000;
/** Short holds, swept often, so that the killed processes' holds expire within the run. */
/**
 * Holds that expire within a row; and progress recorded every 100 ms (the least allowed), since the
 * load's streams last about 360 ms: at the default 2 s a crash would find none recorded.
 */
const SHORT_HOLDS = {
  REQUEST_TIMEOUT_MS: '2000',
  RESERVATION_TTL_MS: '2500',
  PENDING_HOLD_MS: '2500',
  SWEEP_INTERVAL_MS: '50',
  PROGRESS_INTERVAL_MS: '100',
};

const RUN = randomBytes(3).toString('hex');
/** Where each gateway process's output is written in full, when set. */
const LOG_DIR = process.env.FAULTS_LOG_DIR;
const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));
const progress = (line: string) => process.stderr.write(`${line}\n`);
const count = (n: number) => n.toLocaleString('en-US');
const credits = (nano: number) => (nano / 1e9).toFixed(6);

// --- processes ---------------------------------------------------------------------------------

interface Upstream {
  child: Child;
  port: number;
}

async function startUpstream(): Promise<Upstream> {
  const child = launch('fault-matrix upstream', [join(__dirname, 'fault-matrix', 'upstream.js')], process.env, { ipc: true });
  const ready = new Promise<number>((done) => child.process.once('message', (message: { port: number }) => done(message.port)));
  return { child, port: await startedOrFailed(child, ready, 15_000) };
}

/** The bench's catalogue: a model on each host kind at the same prices, paced, and slow for held-open streams. */
function writeCatalogue(path: string, upstream: Upstream): void {
  const baseUrl = `http://127.0.0.1:${upstream.port}/v1`;
  const model = (slug: string, host: string, hostModel: string) => ({
    slug,
    id: randomUUID(),
    name: slug,
    contextLength: 32_768,
    maxOutputTokens: 4096,
    hosts: [{ host, model: hostModel, pricing: PRICES }],
  });
  writeFileSync(
    path,
    JSON.stringify({
      hosts: HOSTS.map((kind) => ({ id: `fm-${kind}`, kind, baseUrl })),
      models: HOSTS.flatMap((kind) => [
        model(slugOf(kind), `fm-${kind}`, PACED_MODEL),
        model(slugOf(kind, true), `fm-${kind}`, SLOW_MODEL),
      ]),
    }),
  );
}

/** One scenario's gateway: its environment (its own DATA_DIR, port and Redis prefix), a funded key, and its current process. */
interface Gateway {
  env: NodeJS.ProcessEnv;
  origin: string;
  secret: string;
  process: Child | null;
}

async function prepareGateway(
  upstream: Upstream,
  scenario: Scenario,
  options: { dataDir?: string; redisUrl: string; env?: Record<string, string> },
): Promise<Gateway> {
  const dataDir = options.dataDir ?? tempDir(`mg-faults-${scenario}-`);
  const cataloguePath = join(tempDir(`mg-faults-catalogue-`), 'catalogue.json');
  writeCatalogue(cataloguePath, upstream);
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOST: '127.0.0.1',
    PORT: String(port),
    DATA_DIR: dataDir,
    EVENTSTORE_URL: '',
    REDIS_URL: options.redisUrl,
    REDIS_PREFIX: `mgbench:faults:${RUN}:${scenario}:`,
    CATALOGUE_PATH: cataloguePath,
    SIMULATED_HOST_PORT: 'off',
    NODE_ENV: 'production',
    LOG_LEVEL: process.env.LOG_LEVEL || 'warn',
    SHUTDOWN_GRACE_MS: '3000',
    ...options.env,
  };
  const { orgId } = (await operator(ROOT, ['org', 'create', '--name', `faults-${scenario}`], env)) as { orgId: string };
  await operator(ROOT, ['credits', 'grant', '--org', orgId, '--amount', '100000'], env);
  const { secret } = (await operator(ROOT, ['keys', 'create', '--org', orgId, '--name', 'faults'], env)) as { secret: string };
  return { env, origin: `http://127.0.0.1:${port}`, secret, process: null };
}

/** Starts (or starts again, on the same DATA_DIR and port) the gateway; resolves once `/health` answers. */
async function serve(gateway: Gateway, name: string): Promise<void> {
  const child = launch(name, startArgs(ROOT), gateway.env);
  gateway.process = child;
  if (LOG_DIR) {
    // Each process's log whole, to look into a row's findings (its request ids are the clients' own).
    const file = createWriteStream(join(LOG_DIR, `${basename(String(gateway.env.DATA_DIR))}-${child.pid}.log`));
    child.process.stdout?.pipe(file);
    child.process.stderr?.pipe(file);
  }
  const ready = (async () => {
    while (alive(child)) {
      try {
        const { statusCode, body } = await request(`${gateway.origin}/health`);
        await body.text();
        if (statusCode === 200) return;
      } catch {
        // not listening yet
      }
      await sleep(50);
    }
  })();
  await startedOrFailed(child, ready, 60_000);
}

/** Stops the gateway's process with `signal`; says how it ended (an exit code, or the signal). */
async function kill(gateway: Gateway, signal: 'SIGKILL' | 'SIGTERM'): Promise<string> {
  const child = gateway.process;
  if (!child) return 'not started';
  if (alive(child)) {
    child.process.kill(signal);
    const force = setTimeout(() => alive(child) && child.process.kill('SIGKILL'), 10_000);
    await exited(child);
    clearTimeout(force);
  }
  return child.process.signalCode ?? `exit ${child.process.exitCode}`;
}

const redisServers = new Set<ChildProcess>();
// Never outlive the bench, whatever ends it (processes.ts stops the node children the same way).
process.on('exit', () => redisServers.forEach((child) => child.kill('SIGKILL')));

/** A throwaway redis-server on `port`, keeping nothing on disk: it starts empty every time. */
async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  redisServers.add(child);
  child.once('exit', () => redisServers.delete(child));
  const deadline = Date.now() + 10_000;
  while (!(await redisAnswers(`redis://127.0.0.1:${port}`))) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`redis-server on port ${port} did not start`);
    await sleep(50);
  }
  return child;
}

async function stopRedis(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((done) => child.once('exit', () => done()));
  child.kill('SIGKILL');
  await gone;
}

const mounted = new Set<string>();
// Unmounted whatever ends the bench (Ctrl-C skips the row's own clean-up); lazily, as a killed gateway may hold a file open on it.
process.on('exit', () => mounted.forEach((path) => execFileSync('umount', ['--lazy', path], { stdio: 'ignore' })));

/** A tmpfs of `sizeMb` on a fresh directory (as test/support/small-disk.ts), or why it cannot be mounted. */
function mountSmallDisk(sizeMb: number): { path: string; fill(): void; free(): void; unmount(): void } | string {
  const path = mkdtempSync(join(tmpdir(), 'mg-faults-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m`, 'tmpfs', path], { stdio: 'pipe' });
  } catch (error) {
    rmdirSync(path);
    const { stderr, message } = error as { stderr?: Buffer; message: string };
    return stderr?.toString().trim() || message;
  }
  mounted.add(path);
  const filler = join(path, 'filler');
  return {
    path,
    fill() {
      const fd = openSync(filler, 'w');
      const chunk = Buffer.alloc(64 * 1024, 1);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      } finally {
        closeSync(fd);
      }
    },
    free: () => rmSync(filler, { force: true }),
    unmount() {
      execFileSync('umount', ['--lazy', path], { stdio: 'pipe' });
      mounted.delete(path);
      rmdirSync(path);
    },
  };
}

// --- load --------------------------------------------------------------------------------------

/** The mixed load: WORKERS clients in a closed loop, each request of the next kind in turn. */
class MixedLoad {
  readonly outcomes: Outcome[] = [];
  /** Attempts refused while no gateway listened. */
  refused = 0;
  private readonly agent = new Agent({ keepAliveTimeout: 1000, connect: { timeout: 2000 } });
  private running = true;
  private sent = 0;
  private readonly workers: Array<Promise<void>>;

  constructor(
    private readonly gateway: Gateway,
    private readonly tag: string,
  ) {
    this.workers = Array.from({ length: WORKERS }, () => this.work());
  }

  private async work(): Promise<void> {
    while (this.running) {
      const n = this.sent++;
      const kind = KINDS[n % KINDS.length];
      const outcome = await send(this.agent, {
        origin: this.gateway.origin,
        secret: this.gateway.secret,
        id: `fm-${RUN}-${this.tag}-${n}`,
        kind,
      });
      // No gateway listening (killed, restarting): not a request it received; try again shortly rather than spin.
      if (!outcome.refused) this.outcomes.push(outcome);
      else {
        this.refused += 1;
        await sleep(100);
      }
    }
  }

  async stop(): Promise<Outcome[]> {
    this.running = false;
    await Promise.all(this.workers);
    await this.agent.close();
    return this.outcomes;
  }
}

/** `count` streams on the slow model opened in waves, each left by its client once every stream has delivered text. */
async function disconnecting(gateway: Gateway, total: number): Promise<{ outcomes: Outcome[]; withText: number }> {
  const agent = new Agent({ keepAliveTimeout: 1000 });
  const streamed = KINDS.filter((k) => k.streamed);
  const controllers = Array.from({ length: total }, () => new AbortController());
  let withText = 0;
  let allDelivering: () => void = () => {};
  const delivering = new Promise<void>((done) => (allDelivering = done));
  const pending: Array<Promise<Outcome>> = [];
  for (let i = 0; i < total; i++) {
    if (i > 0 && i % 50 === 0) await sleep(20);
    pending.push(
      send(agent, {
        origin: gateway.origin,
        secret: gateway.secret,
        id: `fm-${RUN}-disconnects-${i}`,
        kind: streamed[i % streamed.length],
        slow: true,
        signal: controllers[i].signal,
        onText: () => {
          if (++withText === total) allDelivering();
        },
      }),
    );
  }
  await Promise.race([delivering, sleep(30_000)]);
  for (const c of controllers) c.abort();
  const outcomes = await Promise.all(pending);
  await agent.close();
  return { outcomes, withText };
}

// --- the row ------------------------------------------------------------------------------------

interface Row {
  scenario: string;
  cells: string[] | null;
  notes: string[];
}

const COLUMNS = [
  'scenario',
  'requests sent (reaching a gateway)',
  'statuses',
  'replies complete',
  'complete replies showing a cost (Σ credits)',
  'ledger charges for them (Σ credits)',
  'complete replies unbilled',
  'streams cut with text delivered',
  'cut streams unbilled (delivered tokens)',
  'cut streams billed: output tokens charged / delivered',
  'cut streams with text and no reservation',
  '401 for a valid key',
  '`ledger audit`',
];

const isCut = (o: Outcome) => o.kind.streamed && o.status === 200 && !o.complete && o.deliveredChars > 0;

function tally(outcomes: Outcome[], booked: Map<string, Booked>) {
  const byStatus = new Map<string, number>();
  for (const o of outcomes) {
    const key = o.status === null ? 'no answer' : String(o.status);
    byStatus.set(key, (byStatus.get(key) ?? 0) + 1);
  }
  const statuses = [...byStatus]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([status, n]) => `${status}: ${count(n)}`)
    .join(' · ');
  const complete = outcomes.filter((o) => o.complete);
  const costed = complete.filter((o) => o.costNano !== null);
  const shownNano = costed.reduce((n, o) => n + (o.costNano ?? 0), 0);
  const chargedFor = costed.filter((o) => booked.get(o.id)?.charged != null);
  const chargedNano = chargedFor.reduce((n, o) => n + (booked.get(o.id)?.charged ?? 0), 0);
  const differing = chargedFor.filter((o) => booked.get(o.id)?.charged !== o.costNano).length;
  const unbilledComplete = complete.filter((o) => booked.get(o.id)?.charged == null);
  const cut = outcomes.filter(isCut);
  const cutUnbilled = cut.filter((o) => booked.get(o.id)?.charged == null);
  const cutBilled = cut.filter((o) => booked.get(o.id)?.charged != null);
  const cutUnreserved = cut.filter((o) => !booked.get(o.id)?.reserved);
  const byKind = (list: Outcome[]) => {
    const kinds = new Map<string, number>();
    for (const o of list) kinds.set(kindName(o.kind), (kinds.get(kindName(o.kind)) ?? 0) + 1);
    return [...kinds]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, n]) => `${k} ${count(n)}`)
      .join(', ');
  };
  const notes: string[] = [];
  if (unbilledComplete.length > 0) notes.push(`complete replies unbilled, by kind: ${byKind(unbilledComplete)}`);
  if (cutUnbilled.length > 0) notes.push(`cut streams unbilled, by kind: ${byKind(cutUnbilled)}`);
  const completeWithError = complete.filter((o) => o.kind.streamed && o.errorEvent);
  if (completeWithError.length > 0)
    notes.push(
      `streams with an error event after their terminal event: ${count(completeWithError.length)} (${byKind(completeWithError)})`,
    );
  // Answers the README promises for none of these faults (a 401 for a valid key, a 500): what the first said.
  for (const status of [...byStatus.keys()].filter((s) => !['200', '503', 'no answer'].includes(s)).sort()) {
    const first = outcomes.find((o) => String(o.status) === status);
    notes.push(
      `${status}: ${count(byStatus.get(status) ?? 0)}, the first (${first ? kindName(first.kind) : ''}) answered ${first?.errorBody ?? ''}`,
    );
  }
  const costless = complete.length - costed.length;
  if (costless > 0)
    notes.push(`complete replies showing no cost: ${count(costless)} (${byKind(complete.filter((o) => o.costNano === null))})`);
  const cells = [
    count(outcomes.length),
    statuses,
    count(complete.length),
    `${count(costed.length)} (${credits(shownNano)})`,
    `${count(chargedFor.length)} charged (${credits(chargedNano)})${differing > 0 ? `, **${count(differing)} differ**` : ''}`,
    unbilledComplete.length === 0 ? '0' : `**${count(unbilledComplete.length)}**`,
    count(cut.length),
    `${count(cutUnbilled.length)} (${count(cutUnbilled.reduce((n, o) => n + deliveredTokens(o), 0))} tokens)`,
    `${count(cutBilled.length)}: ${count(cutBilled.reduce((n, o) => n + (booked.get(o.id)?.outputTokens ?? 0), 0))} / ` +
      `${count(cutBilled.reduce((n, o) => n + deliveredTokens(o), 0))}`,
    count(cutUnreserved.length),
    count(byStatus.get('401') ?? 0),
  ];
  return { cells, notes };
}

/** Waits until every reservation of the log is settled, released or expired (or `timeoutMs` passes). */
async function resolved(dataDir: string, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = openReservations(dataDir);
    if (open === 0 || Date.now() > deadline) return open;
    await sleep(250);
  }
}

async function finish(scenario: string, gateway: Gateway, outcomes: Outcome[], notes: string[]): Promise<Row> {
  const dataDir = String(gateway.env.DATA_DIR);
  const open = await resolved(dataDir, 60_000);
  if (open > 0) notes.push(`${count(open)} reservation(s) still unresolved after 60 s`);
  // A gateway that died by itself (an uncaught error) is part of the picture.
  const child = gateway.process;
  const diedEarly = child !== null && !alive(child);
  if (diedEarly)
    notes.push(`the gateway ended by itself (${await kill(gateway, 'SIGTERM')}): ${child.output().trim().slice(-300)}`);
  const audit = await auditLedger(gateway.env);
  if (!diedEarly) {
    const stopped = await kill(gateway, 'SIGTERM');
    if (stopped !== 'exit 0')
      notes.push(`SIGTERM at the end: ${stopped}; its last output: ${child?.output().trim().slice(-300)}`);
  }
  const { cells, notes: more } = tally(outcomes, readLedger(dataDir));
  return { scenario, cells: [scenario, ...cells, audit.summary], notes: [...notes, ...more] };
}

// --- scenarios ------------------------------------------------------------------------------------

async function sigkill(upstream: Upstream, redisUrl: string): Promise<Row> {
  const gateway = await prepareGateway(upstream, 'sigkill', { redisUrl, env: SHORT_HOLDS });
  await serve(gateway, 'gateway');
  const load = new MixedLoad(gateway, 'sigkill');
  const notes: string[] = [];
  for (const round of [1, 2]) {
    await sleep(4000);
    const before = load.outcomes.length;
    await kill(gateway, 'SIGKILL');
    progress(`  SIGKILL ${round} after ${count(before)} replies`);
    await sleep(300);
    await serve(gateway, `gateway (restart ${round})`);
  }
  await sleep(4000);
  const outcomes = await load.stop();
  notes.push(
    `killed twice, after 4 s of load each time, each time restarted on the same DATA_DIR and port; ${count(load.refused)} attempts refused while no gateway listened (not counted)`,
  );
  return finish('SIGKILL ×2 under load', gateway, outcomes, notes);
}

async function redisOutage(upstream: Upstream): Promise<Row> {
  const port = await freePort();
  const redisUrl = `redis://127.0.0.1:${port}`;
  let redis = await startRedis(port);
  try {
    const gateway = await prepareGateway(upstream, 'redis', { redisUrl });
    await serve(gateway, 'gateway');
    const load = new MixedLoad(gateway, 'redis');
    await sleep(2000);
    await stopRedis(redis);
    const stoppedAt = load.outcomes.length;
    await sleep(3000);
    redis = await startRedis(port);
    const backAt = load.outcomes.length;
    // Served again by itself: wait for a 200 after Redis is back, then load a while longer.
    const deadline = Date.now() + 30_000;
    while (!load.outcomes.slice(backAt).some((o) => o.status === 200) && Date.now() < deadline) await sleep(100);
    await sleep(2000);
    const outcomes = await load.stop();
    const during = outcomes.slice(stoppedAt, backAt);
    const after = outcomes.slice(backAt);
    const statuses = (list: Outcome[]) => {
      const m = new Map<string, number>();
      for (const o of list) m.set(String(o.status ?? 'none'), (m.get(String(o.status ?? 'none')) ?? 0) + 1);
      return [...m].map(([s, n]) => `${s}: ${count(n)}`).join(', ');
    };
    const notes = [
      `a throwaway redis-server, SIGKILLed after 2 s of load, started empty 3 s later`,
      `answers while Redis was away: ${statuses(during)}; after it was back: ${statuses(after)}`,
    ];
    return await finish('Redis stopped, started empty', gateway, outcomes, notes);
  } finally {
    await stopRedis(redis);
  }
}

async function diskFull(upstream: Upstream, redisUrl: string): Promise<Row> {
  const scenario = 'disk full (DATA_DIR on a tmpfs)';
  const disk = mountSmallDisk(64);
  if (typeof disk === 'string') {
    progress(`  skipped: mounting a tmpfs needs root (${disk})`);
    return { scenario, cells: null, notes: [`skipped: mounting a tmpfs needs root (${disk})`] };
  }
  try {
    const gateway = await prepareGateway(upstream, 'disk-full', { dataDir: disk.path, redisUrl, env: SHORT_HOLDS });
    await serve(gateway, 'gateway');
    const load = new MixedLoad(gateway, 'disk-full');
    await sleep(2000);
    disk.fill();
    const filledAt = load.outcomes.length;
    await sleep(4000);
    disk.free();
    const freedAt = load.outcomes.length;
    await sleep(3000);
    const outcomes = await load.stop();
    const whileFull = outcomes.slice(filledAt, freedAt);
    const complete = whileFull.filter((o) => o.complete).length;
    const notes = [
      `a 64 MB tmpfs filled after 2 s of load, freed 4 s later; while full: ${count(whileFull.length)} replies, ${count(complete)} complete`,
    ];
    return await finish(scenario, gateway, outcomes, notes);
  } finally {
    disk.free();
    disk.unmount();
  }
}

async function disconnects(upstream: Upstream, redisUrl: string): Promise<Row> {
  const gateway = await prepareGateway(upstream, 'disconnects', { redisUrl });
  await serve(gateway, 'gateway');
  const { outcomes, withText } = await disconnecting(gateway, DISCONNECTS);
  const notes = [
    `${count(DISCONNECTS)} streams (every surface, both host kinds) at 5 tokens/s; ${count(withText)} had delivered text when all their clients left at once`,
  ];
  return finish(`${count(DISCONNECTS)} clients leaving mid-stream`, gateway, outcomes, notes);
}

// --- main -----------------------------------------------------------------------------------------

function selected(): Scenario[] {
  const listed = process.env.FAULTS_SCENARIOS?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!listed || listed.length === 0) return [...SCENARIOS];
  const unknown = listed.filter((s) => !(SCENARIOS as readonly string[]).includes(s));
  if (unknown.length > 0)
    throw new Error(`FAULTS_SCENARIOS names ${unknown.join(', ')}; the scenarios are ${SCENARIOS.join(', ')}`);
  return SCENARIOS.filter((s) => listed.includes(s));
}

function outPath(): string | null {
  const at = process.argv.indexOf('--out');
  if (at < 0) return null;
  const path = process.argv[at + 1];
  if (!path) throw new Error('--out needs a file name');
  return path;
}

async function main(): Promise<void> {
  const started = Date.now();
  const out = outPath();
  const scenarios = selected();
  const loadAtStart = loadavg()[0];
  const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  let sharedRedis: ChildProcess | null = null;
  let rowsRedis = redisUrl;
  if (!(await redisAnswers(redisUrl))) {
    const port = await freePort();
    progress(`no Redis answers at ${redisUrl}: a throwaway redis-server on port ${port} instead`);
    sharedRedis = await startRedis(port);
    rowsRedis = `redis://127.0.0.1:${port}`;
  }

  const rows: Row[] = [];
  try {
    const upstream = await startUpstream();
    for (const scenario of scenarios) {
      progress(`${scenario}…`);
      const at = Date.now();
      rows.push(
        scenario === 'sigkill'
          ? await sigkill(upstream, rowsRedis)
          : scenario === 'redis'
            ? await redisOutage(upstream)
            : scenario === 'disk-full'
              ? await diskFull(upstream, rowsRedis)
              : await disconnects(upstream, rowsRedis),
      );
      progress(`  ${scenario} done in ${Math.round((Date.now() - at) / 1000)} s`);
    }
  } finally {
    const removed = await removeKeys(rowsRedis, `mgbench:faults:${RUN}:`).catch(() => 0);
    progress(`removed ${count(removed)} Redis key(s) under mgbench:faults:${RUN}:`);
    if (sharedRedis) await stopRedis(sharedRedis);
  }

  const lines = [
    `# Fault matrix: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${ROOT} at ${describeCheckout(ROOT)}`,
    '',
    `node ${process.version}, ${platform()} ${arch()}, ${cpus().length} × ${cpus()[0]?.model.trim() ?? 'CPU'}; ` +
      `SQLite log, Redis read models; a mixed load of ${WORKERS} clients over ${KINDS.length} kinds ` +
      `(${KINDS.filter((k: Kind) => !k.streamed).length} whole, ${KINDS.filter((k) => k.streamed).length} streamed: every surface on an openai and an anthropic host).`,
    '',
    `| ${COLUMNS.join(' | ')} |`,
    `| ${COLUMNS.map((_, i) => (i === 0 || i === 2 || i === COLUMNS.length - 1 ? '---' : '---:')).join(' | ')} |`,
    ...rows.map((row) =>
      row.cells
        ? `| ${row.cells.join(' | ')} |`
        : `| ${row.scenario} | ${COLUMNS.slice(1)
            .map(() => '–')
            .join(' | ')} |`,
    ),
    '',
    ...rows.flatMap((row) => row.notes.map((note) => `- ${row.scenario}: ${note}`)),
    '',
    '"Complete": a whole reply\'s JSON body read, or a stream\'s terminal event (`[DONE]`, `message_stop`, ' +
      '`response.completed`, `event: done`) received. "Showing a cost": its `cost` (chat completions, Responses), ' +
      '`cost_nano` (native), or its usage at the catalogue\'s prices (messages). "Charges": the `ReservationSettled` ' +
      'events of the same requests (by x-request-id) in the log. "Cut": a stream answered 200 that delivered text and ' +
      'never its terminal event; its tokens estimated from the delivered text, as the gateway counts (4 characters a token).',
    '',
    `Load average (1 min) at start ${loadAtStart.toFixed(2)}, at end ${loadavg()[0].toFixed(2)}; ${Math.round((Date.now() - started) / 1000)} s in all.`,
  ];
  const text = lines.join('\n');
  console.log(text);
  if (out) writeFileSync(out, `${text}\n`);
}

main()
  .then(
    () => cleanUp(),
    async (error: Error) => {
      process.stderr.write(`fault matrix failed: ${error.stack ?? error.message}\n`);
      process.exitCode = 1;
      await cleanUp();
    },
  )
  .finally(() => process.exit());
