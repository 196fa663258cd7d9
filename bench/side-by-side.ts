/**
 * Two gateways under load at the same moment, round after round: this checkout's and another
 * build's (BENCH_BASELINE_DIR; without it, this checkout twice: the noise floor), each at
 * SIDE_CONNECTIONS connections in a closed loop on the same upstream. On a machine shared with other
 * jobs, builds measured one after the other meet different moments of it; measured together they
 * meet the same one. Which of the two started first still weighs (up to a tenth here, either way):
 * the run is made twice, the other build started first, then this one, and the figure is the
 * geometric mean of the two passes' medians. SIDE_ENV (JSON) adds variables to this checkout's
 * gateway alone, to compare two settings of one build (`{"LOG_LEVEL":"silent"}`). BENCH_PROMPT=agent
 * sends agent-sized requests; BENCH_ROUNDS (6 a pass) and BENCH_THROUGHPUT_SECONDS (3) size the run.
 */
import { resolve } from 'node:path';
import { throughput, type Target } from './gateway/load';
import { cleanUp, describeCheckout, type Gateway, ROOT, setting, startGateway, startUpstream } from './gateway/processes';
import { AGENT, chat } from './gateway/prompts';

const ROUNDS = setting('BENCH_ROUNDS', 6);
const SECONDS = setting('BENCH_THROUGHPUT_SECONDS', 3);
const CONNECTIONS = setting('SIDE_CONNECTIONS', 25);
const OTHER = process.env.BENCH_BASELINE_DIR ? resolve(process.env.BENCH_BASELINE_DIR) : ROOT;
const SETTINGS = JSON.parse(process.env.SIDE_ENV ?? '{}') as Record<string, string>;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ratio = (x: number) => `×${x.toFixed(3)}`;

function target(name: string, gateway: Gateway): Target {
  return {
    key: name,
    label: name,
    origin: `http://127.0.0.1:${gateway.port}`,
    path: '/api/v1/chat/completions',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.secret}` },
    body: chat(gateway.model, 16),
  };
}

/** One pass: both gateways started (`thisFirst`: this checkout's first), loaded together; the rounds' ratios, this / other. */
async function pass(thisFirst: boolean): Promise<{ cpu: number[]; rps: number[] }> {
  const fast = await startUpstream('upstream', { firstTokenMs: 0, tokensPerSecond: 0 });
  const slow = await startUpstream('slow upstream', { firstTokenMs: 0, tokensPerSecond: 2 });
  const start = (mine: boolean) =>
    mine
      ? startGateway(fast, slow, { name: 'this checkout', root: ROOT, env: SETTINGS })
      : startGateway(fast, slow, { name: 'other build', root: OTHER });
  const first = await start(thisFirst);
  const second = await start(!thisFirst);
  const [other, mine] = thisFirst ? [second, first] : [first, second];
  const targets = [target('other', other), target('this', mine)];
  const pids = [other.child.pid, mine.child.pid];
  console.log(`\n${thisFirst ? 'This checkout' : 'The other build'} started first.\n`);
  console.log('| round | other: requests/s | CPU ms/request | this: requests/s | CPU ms/request | CPU this / other |');
  console.log('| ---: | ---: | ---: | ---: | ---: | ---: |');
  const cpu: number[] = [];
  const rps: number[] = [];
  try {
    for (let round = 0; round <= ROUNDS; round++) {
      // Round 0 warms both up and is not counted.
      const [a, b] = await Promise.all(targets.map((t, i) => throughput(t, CONNECTIONS, 500, SECONDS * 1000, [pids[i]])));
      for (const run of [a, b]) if (run.errors > 0) throw new Error(`a request failed: ${run.firstError}`);
      if (round === 0) continue;
      cpu.push(b.cpuMsPerRequest[0] / a.cpuMsPerRequest[0]);
      rps.push(b.rps / a.rps);
      console.log(
        `| ${round} | ${a.rps.toFixed(0)} | ${a.cpuMsPerRequest[0].toFixed(3)} | ${b.rps.toFixed(0)} | ${b.cpuMsPerRequest[0].toFixed(3)} | ${ratio(cpu[cpu.length - 1])} |`,
      );
    }
  } finally {
    await cleanUp();
  }
  return { cpu, rps };
}

async function main(): Promise<void> {
  console.log(
    `# Side by side: this checkout (${describeCheckout(ROOT)}${Object.keys(SETTINGS).length > 0 ? `, with ${JSON.stringify(SETTINGS)}` : ''}) ` +
      `against ${OTHER === ROOT ? 'itself (the noise floor)' : `${OTHER} (${describeCheckout(OTHER)})`}, ` +
      `${CONNECTIONS} connections each, at once, ${ROUNDS} rounds of ${SECONDS} s a pass${AGENT ? ', agent-sized requests' : ''}`,
  );
  const otherFirst = await pass(false);
  const thisFirst = await pass(true);
  const [a, b] = [median(otherFirst.cpu), median(thisFirst.cpu)];
  const all = [...otherFirst.cpu, ...thisFirst.cpu].sort((x, y) => x - y);
  console.log(
    `\nCPU per request, this / other: ${ratio(Math.sqrt(a * b))} (the geometric mean of ${ratio(a)}, the other build started ` +
      `first, and ${ratio(b)}, this one first; rounds ${ratio(all[0])} … ${ratio(all[all.length - 1])}); requests/s ` +
      `${ratio(Math.sqrt(median(otherFirst.rps) * median(thisFirst.rps)))}.`,
  );
}

main().catch(async (error: unknown) => {
  console.error(error);
  process.exitCode = 1;
  await cleanUp();
});
