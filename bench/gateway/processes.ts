/**
 * The bench's child processes (upstreams, our gateway, the peer) and temporary directories, with
 * a clean-up that always runs: on success, on failure, on Ctrl-C, and (best effort, synchronous)
 * on any exit of the bench process.
 */
import { ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { createClient } from 'redis';
import { request } from 'undici';

/** The checkout's root, from dist/bench/gateway/ (compiled) or bench/gateway/ (sources). */
export const ROOT = resolve(__dirname, __dirname.includes(`${join('dist', 'bench')}`) ? '../../..' : '../..');

export interface Child {
  name: string;
  process: ChildProcess;
  pid: number;
  /** The last lines the child wrote (stdout and stderr), for error messages. */
  output(): string;
}

const children: Child[] = [];
const tempDirs: string[] = [];

export function tempDir(prefix: string): string {
  const path = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(path);
  return path;
}

function keepTail(child: ChildProcess): () => string {
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return () => tail;
}

export function launch(
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  options: { ipc?: boolean; cwd?: string; wrap?: string[] } = {},
): Child {
  const ipc = options.ipc ?? false;
  // A wrapper (valgrind) runs node itself: the child's pid is node's.
  const [command, ...wrapArgs] = [...(options.wrap ?? []), process.execPath];
  const process_ = spawn(command, [...wrapArgs, ...args], {
    cwd: options.cwd ?? ROOT,
    env,
    stdio: ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
  });
  if (process_.pid === undefined) throw new Error(`${name} did not start`);
  const child: Child = { name, process: process_, pid: process_.pid, output: keepTail(process_) };
  children.push(child);
  return child;
}

export const alive = (child: Child) => child.process.exitCode === null && child.process.signalCode === null;

export function exited(child: Child): Promise<void> {
  return alive(child) ? new Promise((done) => child.process.once('exit', () => done())) : Promise.resolve();
}

/** Waits for `ready` unless the child exits first or time runs out. */
export async function startedOrFailed<T>(child: Child, ready: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const failed = new Promise<never>((_, reject) => {
    child.process.once('exit', (code, signal) =>
      reject(new Error(`${child.name} exited (${signal ?? code}) before it was ready:\n${child.output()}`)),
    );
    timer = setTimeout(
      () => reject(new Error(`${child.name} was not ready within ${timeoutMs} ms:\n${child.output()}`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([ready, failed]);
  } finally {
    clearTimeout(timer);
  }
}

/** Stops every child (SIGTERM, then SIGKILL after a grace period) and removes the temp dirs. */
export async function cleanUp(graceMs = 3000): Promise<void> {
  await Promise.all(
    children.map(async (child) => {
      if (!alive(child)) return;
      child.process.kill('SIGTERM');
      const timer = setTimeout(() => alive(child) && child.process.kill('SIGKILL'), graceMs);
      await exited(child);
      clearTimeout(timer);
    }),
  );
  children.length = 0;
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Last resort when the bench exits without `cleanUp` (synchronous: only what `exit` allows). */
function cleanUpNow(): void {
  for (const child of children) if (alive(child)) child.process.kill('SIGKILL');
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
}
process.on('exit', cleanUpNow);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    process.stderr.write(`\n${signal}: stopping the bench's processes\n`);
    void cleanUp(1000).finally(() => process.exit(130));
  });
}

/** A bench's numeric setting from the environment: a positive number, else `fallback`. */
export function setting(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

/** Resident memory of a process, from /proc (Linux), in MiB: current (VmRSS) and peak (VmHWM). */
export function memoryMiB(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) / 1024;
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

/**
 * CPU time (user + system) a process and its live descendants have used, in ms, from /proc: a
 * gateway started with WORKERS > 1 is its primary and its workers (one process alone: itself).
 */
export function cpuMs(pid: number): number {
  return ownCpuMs(pid) + childrenOf(pid).reduce((sum, child) => sum + cpuMs(child), 0);
}

function ownCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of stat (utime, stime), counted from the state (field 3) here; clock ticks of 10 ms.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** A process's children, from each of its threads' /proc/<pid>/task/<tid>/children. */
function childrenOf(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((tid) => {
    try {
      return readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
    } catch {
      return []; // the thread ended meanwhile
    }
  });
}

/** The Redis server at REDIS_URL when it runs on this machine (its pid from INFO, checked in /proc), else null. */
export async function localRedisPid(): Promise<number | null> {
  const url = process.env.REDIS_URL;
  if (!url || !['127.0.0.1', 'localhost', '[::1]'].includes(new URL(url).hostname)) return null;
  const client = createClient({ url });
  try {
    await client.connect();
    const pid = Number(/^process_id:(\d+)/m.exec(await client.info('server'))?.[1]);
    return Number.isInteger(pid) && existsSync(`/proc/${pid}/stat`) ? pid : null;
  } catch {
    return null;
  } finally {
    await client.quit().catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------------

export interface Upstream {
  child: Child;
  port: number;
}

/** The simulated host in its own process (bench/gateway/upstream.ts). */
export async function startUpstream(name: string, options: { firstTokenMs: number; tokensPerSecond: number }): Promise<Upstream> {
  const child = launch(
    name,
    [
      join(__dirname, 'upstream.js'),
      '--first-token-ms',
      String(options.firstTokenMs),
      '--tokens-per-second',
      String(options.tokensPerSecond),
    ],
    process.env,
    { ipc: true },
  );
  const ready = new Promise<number>((done) => child.process.once('message', (message: { port: number }) => done(message.port)));
  const port = await startedOrFailed(child, ready, 15_000);
  return { child, port };
}

/** The reference: a bare pass-through to `upstream` (./pass-through.ts). */
export async function startPassThrough(upstream: Upstream): Promise<Upstream> {
  const child = launch('pass-through', [join(__dirname, 'pass-through.js'), `http://127.0.0.1:${upstream.port}`], process.env, {
    ipc: true,
  });
  const ready = new Promise<number>((done) => child.process.once('message', (message: { port: number }) => done(message.port)));
  const port = await startedOrFailed(child, ready, 15_000);
  return { child, port };
}

export interface Gateway {
  child: Child;
  port: number;
  /** An API key of a funded organization. */
  secret: string;
  /** Catalogue slugs: on the fast upstream, and on the slow (streams held open) one. */
  model: string;
  slowModel: string;
}

/** A checkout's package.json start script (`node [flags] dist/src/main.js`), as arguments after `node`. */
export function startArgs(root: string): string[] {
  const script = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const [node, ...args] = script.split(/\s+/);
  if (node !== 'node') throw new Error(`${join(root, 'package.json')}'s start script does not start with node: ${script}`);
  return args;
}

/** The commit a checkout is at (`git describe --always --dirty`), to name the builds compared. */
export function describeCheckout(root: string): string {
  try {
    return execFileSync('git', ['-C', root, 'describe', '--always', '--dirty'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return 'not a git checkout';
  }
}

/** The checkout's operator tool (`bin/model-gateway.js --json …`): its last line of output, parsed. */
export function operator(root: string, args: string[], env: NodeJS.ProcessEnv): Promise<Record<string, unknown>> {
  return new Promise((done, fail) =>
    execFile(
      process.execPath,
      [join(root, 'bin', 'model-gateway.js'), '--json', ...args],
      { cwd: root, env },
      (error, stdout, stderr) => {
        if (error) return fail(new Error(`model-gateway ${args.join(' ')} failed: ${stderr || error.message}`));
        try {
          done(JSON.parse(stdout.trim().split('\n').pop() ?? '') as Record<string, unknown>);
        } catch {
          fail(new Error(`model-gateway ${args.join(' ')} printed no JSON: ${stdout}`));
        }
      },
    ),
  );
}

/**
 * A gateway as `npm start` runs it, with its own data dir, a catalogue naming the two upstreams,
 * and a funded organization and key made with its operator tool. `root` is the checkout whose
 * build (dist/) runs: this one, or another (the bench's baseline). Every gateway is started with
 * this checkout's start-script flags, so that builds are compared under the same flags, plus
 * BENCH_GATEWAY_NODE_ARGS, node flags for the gateways alone (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
 */
export interface GatewayOptions {
  name: string;
  root: string;
  /** Added to the gateway's environment (e.g. LOG_LEVEL=silent). */
  env?: Record<string, string>;
  /** Added to the operator tool's `keys create` (e.g. a credit limit and rate limits on the bench key). */
  keyArgs?: string[];
  /** A command node runs under (`valgrind --tool=callgrind …`): the gateway is given `readyMs` to answer. */
  wrap?: string[];
  readyMs?: number;
  /**
   * The routing features on (the `routed` target): the fast model on two hosts (both the fast
   * upstream, under two ids), the first with a pool of three keys, each with its own retry policy.
   */
  routing?: boolean;
}

/** The key pool's variables in a routed gateway's environment (the simulated host takes any key). */
const POOL = ['BENCH_KEY_A', 'BENCH_KEY_B', 'BENCH_KEY_C'];

export async function startGateway(fast: Upstream, slow: Upstream, options: GatewayOptions): Promise<Gateway> {
  const model = (slug: string, ...hosts: string[]) => ({
    slug,
    id: randomUUID(),
    name: slug,
    contextLength: 32_768,
    maxOutputTokens: 100_000,
    hosts: hosts.map((host) => ({ host, model: 'sim-chat', pricing: { input: '0.10', output: '0.40' } })),
  });
  const fastUrl = `http://127.0.0.1:${fast.port}/v1`;
  const catalogue = options.routing
    ? {
        hosts: [
          {
            id: 'bench',
            kind: 'openai',
            baseUrl: fastUrl,
            apiKeyEnv: [POOL[0], { env: POOL[1], weight: 2 }, POOL[2]],
            retry: { attempts: 3, baseMs: 50, maxMs: 2000 },
          },
          { id: 'bench-2', kind: 'openai', baseUrl: fastUrl, retry: { attempts: 2, baseMs: 100, maxMs: 1000 } },
          { id: 'bench-slow', kind: 'openai', baseUrl: `http://127.0.0.1:${slow.port}/v1` },
        ],
        models: [model('bench/model', 'bench', 'bench-2'), model('bench/slow', 'bench-slow')],
      }
    : {
        hosts: [
          { id: 'bench', kind: 'openai', baseUrl: fastUrl },
          { id: 'bench-slow', kind: 'openai', baseUrl: `http://127.0.0.1:${slow.port}/v1` },
        ],
        models: [model('bench/model', 'bench'), model('bench/slow', 'bench-slow')],
      };
  const poolKeys = options.routing ? Object.fromEntries(POOL.map((name, i) => [name, `sk-bench-${i}`])) : {};
  const started = await startGatewayWith(catalogue, { ...options, env: { ...poolKeys, ...options.env } });
  return { ...started, model: 'bench/model', slowModel: 'bench/slow' };
}

/** A gateway as `npm start` runs it (see startGateway) on a catalogue of the caller's (the file's JSON). */
export async function startGatewayWith(
  catalogue: object,
  options: GatewayOptions,
): Promise<Omit<Gateway, 'model' | 'slowModel'>> {
  const { name, root } = options;
  const args = startArgs(ROOT);
  const main = args.find((arg) => !arg.startsWith('-'));
  if (main === undefined || !existsSync(join(root, main)))
    throw new Error(`${name}: ${join(root, main ?? 'dist/src/main.js')} does not exist (run \`npm run build\` in ${root})`);
  const dataDir = tempDir('mg-bench-gateway-');
  const cataloguePath = join(dataDir, 'catalogue.json');
  writeFileSync(cataloguePath, JSON.stringify(catalogue));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOST: '127.0.0.1',
    PORT: String(await freePort()),
    DATA_DIR: dataDir,
    SIMULATED_HOST_PORT: 'off',
    CATALOGUE_PATH: cataloguePath,
    NODE_ENV: 'production',
    // With REDIS_URL every gateway keeps its read models (and a routed one its circuits and sticky
    // routes) in Redis: each under a prefix of its own, as each has a log of its own.
    ...(process.env.REDIS_URL ? { REDIS_PREFIX: `${process.env.REDIS_PREFIX ?? 'mgbench:'}${basename(dataDir)}:` } : {}),
    ...options.env,
  };
  const { orgId } = (await operator(root, ['org', 'create', '--name', 'bench'], env)) as { orgId: string };
  await operator(root, ['credits', 'grant', '--org', orgId, '--amount', '1000000'], env);
  const { secret } = (await operator(
    root,
    ['keys', 'create', '--org', orgId, '--name', 'bench', ...(options.keyArgs ?? [])],
    env,
  )) as { secret: string };

  const nodeArgs = (process.env.BENCH_GATEWAY_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const child = launch(name, [...nodeArgs, ...args], env, { cwd: root, wrap: options.wrap });
  // Ready when it answers HTTP: builds differ in where (and whether) they log their start-up line.
  const port = Number(env.PORT);
  const ready = (async () => {
    while (alive(child)) {
      try {
        const { body } = await request(`http://127.0.0.1:${port}/api/v1/models`);
        await body.text();
        return port;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    return port;
  })();
  await startedOrFailed(child, ready, options.readyMs ?? 60_000);
  // Several workers: the first answers before the others listen; measured once the primary says they all serve.
  if (Number(env.WORKERS ?? 1) > 1)
    await startedOrFailed(
      child,
      (async () => {
        while (!child.output().includes(' workers serving on ')) await new Promise((r) => setTimeout(r, 100));
      })(),
      60_000,
    );
  return { child, port, secret };
}

export interface Peer {
  child: Child;
  port: number;
}

/** The peer, `@portkey-ai/gateway`, started as its package's bin does (build/start-server.js --port=N). */
export async function startPeer(): Promise<Peer> {
  const port = await freePort();
  const script = join(ROOT, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js');
  // --headless and NODE_ENV=production: no web UI or log-stream routes, just the gateway.
  const child = launch('peer (@portkey-ai/gateway)', [script, `--port=${port}`, '--headless'], {
    ...process.env,
    NODE_ENV: 'production',
  });
  const ready = (async () => {
    while (alive(child)) {
      try {
        const { statusCode, body } = await request(`http://127.0.0.1:${port}/`);
        await body.text();
        if (statusCode === 200) return port;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    return port;
  })();
  await startedOrFailed(child, ready, 30_000);
  return { child, port };
}
