/**
 * Instructions a request: `npm run bench:instructions` (needs Debian's `valgrind`; 3 to 6 minutes a
 * gateway measured, about an hour for the defaults with a baseline). The CPU time the other benches
 * read moves with the machine's other jobs by tens of per cent; the instructions a gateway executes
 * do not (its own decisions, when to collect garbage, where to commit, still spread runs: see
 * docs/benchmarks.md). Each gateway runs under callgrind
 * (`--separate-threads=yes`), started as `npm start` runs it on the gateway bench's upstream; it is
 * warmed with BENCH_WARMUP requests (8,000: with a few hundred, TurboFan was still compiling, in
 * threads of its own, while the requests measured ran unoptimized code), its counters are zeroed,
 * BENCH_REQUESTS (3,000) chat completions are sent, BENCH_CONCURRENCY at a time (a comma list:
 * 1,50), and the counters dumped. User space only: system calls and the kernel's part of the wakes
 * (writev, fsync, epoll) are not counted, so this is a floor of the CPU, not all of it.
 *
 * With BENCH_BASELINE_DIR (a built checkout), that build is measured in the same way, alternating
 * with this one round by round (BENCH_ROUNDS, 2), and the table shows their ratio.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Pool } from 'undici';
import { timed, type Target } from './gateway/load';
import { cleanUp, describeCheckout, ROOT, setting, startGateway, startUpstream, tempDir } from './gateway/processes';
import { chat } from './gateway/prompts';

const WARMUP = setting('BENCH_WARMUP', 8000);
const REQUESTS = setting('BENCH_REQUESTS', 3000);
const ROUNDS = setting('BENCH_ROUNDS', 2);
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '1,50').split(',').map(Number);
const BASELINE = process.env.BENCH_BASELINE_DIR ? resolve(process.env.BENCH_BASELINE_DIR) : null;

/** Thousands of instructions a request: every thread, the main thread (node's first), the others. */
interface Count {
  total: number;
  main: number;
  others: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** `n` requests, `concurrency` at a time. */
async function send(target: Target, n: number, concurrency: number): Promise<void> {
  const pool = new Pool(target.origin, { connections: concurrency, keepAliveTimeout: 600_000 });
  let left = n;
  const worker = async () => {
    while (left-- > 0) await timed(pool, target, false, false);
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    await pool.close();
  }
}

async function measure(root: string, concurrency: number): Promise<Count> {
  const dir = tempDir('mg-bench-callgrind-');
  // vgdb names its pipes after USER, LOGNAME and HOST: the gateway and callgrind_control must agree.
  process.env.USER ??= 'bench';
  process.env.LOGNAME ??= process.env.USER;
  const fast = await startUpstream('upstream', { firstTokenMs: 0, tokensPerSecond: 0 });
  const slow = await startUpstream('slow upstream', { firstTokenMs: 0, tokensPerSecond: 2 });
  const wrap = ['valgrind', '--tool=callgrind', '--separate-threads=yes', '-q', `--callgrind-out-file=${dir}/cg.%p`];
  const gateway = await startGateway(fast, slow, { name: `gateway (${root})`, root, wrap, readyMs: 300_000 });
  const control = (...args: string[]) =>
    execFileSync('callgrind_control', [...args, String(gateway.child.pid)], {
      env: { ...process.env, HOST: '127.0.0.1' },
      stdio: 'ignore',
    });
  const target: Target = {
    key: 'gateway',
    label: 'gateway',
    origin: `http://127.0.0.1:${gateway.port}`,
    path: '/api/v1/chat/completions',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.secret}` },
    body: chat(gateway.model, 16),
  };
  await send(target, WARMUP, concurrency);
  control('--zero');
  await send(target, REQUESTS, concurrency);
  control('--dump=measured');
  const count = counted(dir, gateway.child.pid);
  await cleanUp();
  return count;
}

/** The dump's files, one a thread (cg.<pid>.1-<thread>, node's main thread first), per request. */
function counted(dir: string, pid: number): Count {
  const threads = readdirSync(dir)
    .filter((file) => file.startsWith(`cg.${pid}.1-`))
    .sort()
    .map((file) => Number(/^summary: (\d+)$/m.exec(readFileSync(`${dir}/${file}`, 'utf8'))?.[1] ?? 0) / REQUESTS / 1000);
  if (threads.length === 0) throw new Error(`callgrind wrote no dump in ${dir}`);
  const total = threads.reduce((a, b) => a + b, 0);
  return { total, main: threads[0], others: total - threads[0] };
}

async function main(): Promise<void> {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('valgrind is not installed (Debian: apt-get install valgrind)');
  }
  const builds = [{ name: `this checkout (${describeCheckout(ROOT)})`, root: ROOT }];
  if (BASELINE) builds.push({ name: `baseline (${describeCheckout(BASELINE)})`, root: BASELINE });
  const counts = new Map<string, Count[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const concurrency of CONCURRENCY) {
      const order = round % 2 === 0 ? builds : [...builds].reverse();
      for (const build of order) {
        const count = await measure(build.root, concurrency);
        const key = `${build.root} ${concurrency}`;
        counts.set(key, [...(counts.get(key) ?? []), count]);
        console.log(
          `round ${round + 1}/${ROUNDS}, ${concurrency} at a time, ${build.name}: ${count.total.toFixed(0)} k instructions a request (main thread ${count.main.toFixed(0)})`,
        );
      }
    }
  }
  console.log(
    `\n### Instructions a request (thousands), medians of ${ROUNDS} rounds: ${WARMUP} warm-up requests, ${REQUESTS} measured\n`,
  );
  console.log('| build | at a time | all threads | main thread | other threads |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  const medianOf = (root: string, concurrency: number): Count => {
    const runs = counts.get(`${root} ${concurrency}`)!;
    return {
      total: median(runs.map((r) => r.total)),
      main: median(runs.map((r) => r.main)),
      others: median(runs.map((r) => r.others)),
    };
  };
  for (const concurrency of CONCURRENCY) {
    for (const build of builds) {
      const m = medianOf(build.root, concurrency);
      console.log(`| ${build.name} | ${concurrency} | ${m.total.toFixed(0)} | ${m.main.toFixed(0)} | ${m.others.toFixed(0)} |`);
    }
    if (BASELINE) {
      const [after, before] = [medianOf(ROOT, concurrency), medianOf(BASELINE, concurrency)];
      console.log(
        `| this / baseline | ${concurrency} | ×${(after.total / before.total).toFixed(3)} | ×${(after.main / before.main).toFixed(3)} | ×${(after.others / before.others).toFixed(3)} |`,
      );
    }
  }
}

main()
  .catch((error) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(() => cleanUp());
