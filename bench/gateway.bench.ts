/**
 * Gateway benchmarks: `npm run bench:gateway` (not part of the tests; about 14 minutes).
 *
 * One upstream (the built-in simulated host, answering at once) is measured in the same run
 * (1) directly, (2) through our gateway with billing on (as `npm start` runs it: every request
 * reserved and settled in the SQLite log), (3) through `@portkey-ai/gateway`, run locally as
 * the peer, and (4) through a bare pass-through (./gateway/pass-through.ts) as a reference for
 * what one more Node HTTP hop costs here. Each sits in a process of its own; this process only
 * generates load (./gateway/load.ts).
 * The targets alternate within each round, over 5 rounds (the machine's other jobs slow whole
 * stretches of a run: a median of five needs three of them slowed to move); the tables show medians of the rounds,
 * and "added" is the target's figure minus the direct figure of the same round.
 *
 *   (a) latency, non-streamed: one connection, 2,000 requests in sequence; and an open loop at
 *       500 requests/s for 5 s (after 100 unmeasured requests); time to first event of streamed
 *       requests, 2,000 in sequence (after 50 unmeasured ones), so that a round's p99 rests on
 *       its 20 slowest rather than its 5 slowest.
 *   (b) throughput: 50 connections, closed loop, 6 s (after 1 s of warm-up), with the CPU time
 *       the target's process and the upstream's spent per request.
 *   (c) memory: RSS of the gateway and of the peer holding 1,000 open streams (a second, slow
 *       upstream process paces 2 tokens/s so the streams stay open).
 *
 * The messages surface (POST /api/v1/messages) gets its rows when that route answers 200.
 * Smaller runs for a quick check: BENCH_ROUNDS, BENCH_SEQUENTIAL, BENCH_RATE_SECONDS,
 * BENCH_TTFB, BENCH_THROUGHPUT_SECONDS, BENCH_STREAMS.
 */
import { arch, cpus, loadavg, platform } from 'node:os';
import { Client } from 'undici';
import { fixedRate, Latencies, OpenStreams, openStreams, percentile, sequential, Target, throughput } from './gateway/load';
import {
  cleanUp,
  Gateway,
  memoryMiB,
  Peer,
  startGateway,
  startPassThrough,
  startPeer,
  startUpstream,
  Upstream,
} from './gateway/processes';

const env = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  return Number.isFinite(value) && value > 0 ? value : fallback;
};
const ROUNDS = env('BENCH_ROUNDS', 5);
const SEQUENTIAL = env('BENCH_SEQUENTIAL', 2000);
const RATE = 500;
const RATE_SECONDS = env('BENCH_RATE_SECONDS', 5);
const TTFB = env('BENCH_TTFB', 2000);
const CONNECTIONS = 50;
const THROUGHPUT_SECONDS = env('BENCH_THROUGHPUT_SECONDS', 6);
const STREAMS = env('BENCH_STREAMS', 1000);

const GOALS = { addedP50: 1, addedP99: 5, addedTtfb: 2, throughputRatio: 0.25, streamsMB: 400 };

const median = (xs: number[]) => {
  const sorted = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.floor(sorted.length / 2)];
};
const num = (n: number, digits: number) =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : 'n/a';
const signed = (n: number, digits: number) => (Number.isFinite(n) ? `${n >= 0 ? '+' : '−'}${num(Math.abs(n), digits)}` : 'n/a');
const mb = (mib: number) => (mib * 1024 * 1024) / 1e6;
const progress = (line: string) => process.stderr.write(`${line}\n`);

// --- targets ----------------------------------------------------------------------------------

const CHAT_MESSAGES = [{ role: 'user', content: 'Hello there, how are you?' }];
const json = (body: object) => JSON.stringify(body);
const chat = (model: string, maxTokens: number) => ({
  plain: json({ model, messages: CHAT_MESSAGES, max_tokens: maxTokens }),
  streamed: json({ model, messages: CHAT_MESSAGES, max_tokens: maxTokens, stream: true }),
});

function targets(fast: Upstream, slow: Upstream, gateway: Gateway, peer: Peer, passThrough: Upstream) {
  const peerHeaders = (upstream: Upstream) => ({
    'content-type': 'application/json',
    'x-portkey-provider': 'openai',
    'x-portkey-custom-host': `http://127.0.0.1:${upstream.port}/v1`,
    authorization: 'Bearer anything',
  });
  const gatewayOrigin = `http://127.0.0.1:${gateway.port}`;
  const gatewayHeaders = { 'content-type': 'application/json', authorization: `Bearer ${gateway.secret}` };
  const direct: Target = {
    key: 'direct',
    label: 'direct (upstream)',
    origin: `http://127.0.0.1:${fast.port}`,
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json' },
    body: chat('sim-chat', 16),
  };
  const reference: Target = {
    ...direct,
    key: 'reference',
    label: 'reference: bare pass-through (Fastify + undici, no logic)',
    origin: `http://127.0.0.1:${passThrough.port}`,
  };
  const ours: Target = {
    key: 'gateway',
    label: 'our gateway, chat completions (billing on)',
    origin: gatewayOrigin,
    path: '/api/v1/chat/completions',
    headers: gatewayHeaders,
    body: chat(gateway.model, 16),
  };
  const messages: Target = {
    key: 'messages',
    label: 'our gateway, messages (billing on)',
    origin: gatewayOrigin,
    path: '/api/v1/messages',
    headers: { 'content-type': 'application/json', 'x-api-key': gateway.secret, 'anthropic-version': '2023-06-01' },
    body: {
      plain: json({ model: gateway.model, max_tokens: 16, messages: [{ role: 'user', content: 'Hello' }] }),
      streamed: json({ model: gateway.model, max_tokens: 16, messages: [{ role: 'user', content: 'Hello' }], stream: true }),
    },
  };
  const portkey: Target = {
    key: 'peer',
    label: 'peer: @portkey-ai/gateway',
    origin: `http://127.0.0.1:${peer.port}`,
    path: '/v1/chat/completions',
    headers: peerHeaders(fast),
    body: chat('sim-chat', 16),
  };
  // The memory test: streams to the slow upstream (2 tokens/s, up to 1,000 tokens: they stay open).
  const oursSlow: Target = { ...ours, key: 'gateway-slow', body: chat(gateway.slowModel, 1000) };
  const portkeySlow: Target = { ...portkey, key: 'peer-slow', headers: peerHeaders(slow), body: chat('sim-chat', 1000) };
  return { direct, reference, ours, messages, portkey, oursSlow, portkeySlow };
}

/** One request; the status and the start of the body (to say why a target is left out). */
async function probe(target: Target, streamed = false): Promise<{ status: number; text: string }> {
  const client = new Client(target.origin);
  try {
    const response = await client.request({
      path: target.path,
      method: 'POST',
      headers: target.headers,
      body: streamed ? target.body.streamed : target.body.plain,
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
    });
    return { status: response.statusCode, text: (await response.body.text()).slice(0, 200) };
  } catch (error) {
    return { status: 0, text: (error as Error).message };
  } finally {
    await client.close();
  }
}

// --- rounds -----------------------------------------------------------------------------------

interface Row {
  p50: number[];
  p99: number[];
  addedP50: number[];
  addedP99: number[];
  errors: number;
  firstError: string | null;
  late: number[];
}

const newRow = (): Row => ({ p50: [], p99: [], addedP50: [], addedP99: [], errors: 0, firstError: null, late: [] });

/** Records one round of a latency scenario: each target's p50/p99, and its difference from direct. */
function record(rows: Map<string, Row>, results: Map<string, Latencies & { lateMs?: number }>, directKey: string) {
  const direct = results.get(directKey)!;
  const d50 = percentile(direct.ms, 50);
  const d99 = percentile(direct.ms, 99);
  for (const [key, result] of results) {
    const row = rows.get(key) ?? newRow();
    rows.set(key, row);
    const p50 = percentile(result.ms, 50);
    const p99 = percentile(result.ms, 99);
    row.p50.push(p50);
    row.p99.push(p99);
    row.addedP50.push(p50 - d50);
    row.addedP99.push(p99 - d99);
    row.errors += result.errors;
    row.firstError ??= result.firstError;
    if (result.lateMs !== undefined) row.late.push(result.lateMs);
  }
}

const rotate = <T>(xs: T[], by: number) => xs.map((_, i) => xs[(i + by) % xs.length]);
const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

async function main(): Promise<void> {
  const started = Date.now();
  const loadAtStart = loadavg()[0];
  console.log(
    `# Gateway bench: node ${process.version}, ${new Date().toISOString().slice(0, 10)}, ${platform()} ${arch()}, ` +
      `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'CPU'}, ${ROUNDS} rounds, medians shown\n`,
  );

  progress('starting the upstreams, our gateway and the peer…');
  const fast = await startUpstream('upstream', { firstTokenMs: 0, tokensPerSecond: 0 });
  const slow = await startUpstream('slow upstream', { firstTokenMs: 0, tokensPerSecond: 2 });
  const [gateway, peer, passThrough] = await Promise.all([startGateway(fast, slow), startPeer(), startPassThrough(fast)]);
  const t = targets(fast, slow, gateway, peer, passThrough);

  for (const target of [t.direct, t.reference, t.ours, t.portkey]) {
    for (const streamed of [false, true]) {
      const { status, text } = await probe(target, streamed);
      if (status !== 200)
        throw new Error(`${target.label} answered ${status} (${streamed ? 'streamed' : 'non-streamed'}): ${text}`);
    }
  }
  const messagesProbe = await probe(t.messages);
  const withMessages = messagesProbe.status === 200;
  const notes: string[] = [];
  if (!withMessages) {
    notes.push(
      `The messages surface (POST /api/v1/messages) answered ${messagesProbe.status || 'nothing'} ` +
        `(${messagesProbe.text.replace(/\s+/g, ' ').slice(0, 120)}): its rows are left out until it answers 200.`,
    );
  }
  const latencyTargets = withMessages
    ? [t.direct, t.reference, t.ours, t.messages, t.portkey]
    : [t.direct, t.reference, t.ours, t.portkey];
  const pids = new Map<string, number>([
    ['direct', fast.child.pid],
    ['reference', passThrough.child.pid],
    ['gateway', gateway.child.pid],
    ['messages', gateway.child.pid],
    ['peer', peer.child.pid],
  ]);
  const labels = new Map([...latencyTargets, t.oursSlow, t.portkeySlow].map((target) => [target.key, target.label]));

  const startRss = { gateway: memoryMiB(gateway.child.pid).rss, peer: memoryMiB(peer.child.pid).rss };
  progress('warming up (JIT, connections)…');
  for (const target of latencyTargets) {
    await sequential(target, 500, { streamed: false });
    await sequential(target, 50, { streamed: true });
    // Concurrent too: the first burst of each process opens its connections and compiles its
    // concurrent paths, which would otherwise land in round 1's open-loop tail.
    await throughput(target, CONNECTIONS, 0, 1000, []);
  }

  const seqRows = new Map<string, Row>();
  const rateRows = new Map<string, Row>();
  const ttfbRows = new Map<string, Row>();
  const throughputs = new Map<
    string,
    { rps: number[]; ratio: number[]; cpu: number[]; upstreamCpu: number[]; errors: number; firstError: string | null }
  >();
  const memory = new Map<string, OpenStreams[]>();

  for (let round = 0; round < ROUNDS; round++) {
    const order = rotate(latencyTargets, round);
    const tag = `round ${round + 1}/${ROUNDS}`;

    const seq = new Map<string, Latencies>();
    for (const target of order) {
      seq.set(target.key, await sequential(target, SEQUENTIAL, { streamed: false }));
      progress(`${tag} sequential   ${target.key.padEnd(9)} p50 ${num(percentile(seq.get(target.key)!.ms, 50), 3)} ms`);
    }
    record(seqRows, seq, 'direct');

    const rate = new Map<string, Latencies & { lateMs: number }>();
    for (const target of order) {
      await sequential(target, 100, { streamed: false });
      rate.set(target.key, await fixedRate(target, RATE, RATE_SECONDS * 1000));
      progress(`${tag} ${RATE} req/s  ${target.key.padEnd(9)} p50 ${num(percentile(rate.get(target.key)!.ms, 50), 3)} ms`);
    }
    record(rateRows, rate, 'direct');

    const ttfb = new Map<string, Latencies>();
    for (const target of order) {
      // As before the open loop: the target sat idle while the others ran, and its first requests
      // after a pause (idle-time GC, cold caches) would otherwise weigh on its p99.
      await sequential(target, 50, { streamed: true });
      ttfb.set(target.key, await sequential(target, TTFB, { streamed: true }));
      progress(`${tag} first event  ${target.key.padEnd(9)} p50 ${num(percentile(ttfb.get(target.key)!.ms, 50), 3)} ms`);
    }
    record(ttfbRows, ttfb, 'direct');

    const rps = new Map<string, { rps: number; cpuMsPerRequest: number[]; errors: number; firstError: string | null }>();
    for (const target of order) {
      rps.set(
        target.key,
        await throughput(target, CONNECTIONS, 1000, THROUGHPUT_SECONDS * 1000, [pids.get(target.key)!, fast.child.pid]),
      );
      progress(`${tag} throughput   ${target.key.padEnd(9)} ${num(rps.get(target.key)!.rps, 0)} req/s`);
      await sleep(500); // let settlements and GC after the burst finish before the next target
    }
    for (const [key, result] of rps) {
      const entry = throughputs.get(key) ?? { rps: [], ratio: [], cpu: [], upstreamCpu: [], errors: 0, firstError: null };
      throughputs.set(key, entry);
      entry.rps.push(result.rps);
      entry.cpu.push(result.cpuMsPerRequest[0]);
      entry.upstreamCpu.push(result.cpuMsPerRequest[1]);
      entry.ratio.push(result.rps / rps.get('direct')!.rps);
      entry.errors += result.errors;
      entry.firstError ??= result.firstError;
    }

    const memoryOrder: Array<[Target, number]> = rotate(
      [
        [t.oursSlow, gateway.child.pid],
        [t.portkeySlow, peer.child.pid],
      ],
      round,
    );
    for (const [target, pid] of memoryOrder) {
      const result = await openStreams(target, STREAMS, pid, {
        openTimeoutMs: 10_000,
        stallMs: 2500,
        holdMs: 1500,
        wave: 50,
        waveGapMs: 20,
      });
      const list = memory.get(target.key) ?? [];
      memory.set(target.key, list);
      list.push(result);
      progress(
        `${tag} ${STREAMS} streams ${target.key.padEnd(12)} ${result.opened} open, RSS ${num(mb(result.peakRssMiB), 0)} MB`,
      );
      await sleep(1500); // let the aborted streams settle
    }
  }

  // --- tables ---------------------------------------------------------------------------------

  const ourKeys = new Set(['gateway', 'messages', 'gateway-slow']);
  const verdict = (ok: boolean) => (ok ? 'met' : '**missed**');
  const lines: string[] = [];
  const latencyTable = (title: string, rows: Map<string, Row>, goal: (row: Row) => string, goalText: string) => {
    lines.push(`| ${title} | p50 ms | p99 ms | added p50 ms | added p99 ms | goal: ${goalText} |`);
    lines.push('| --- | ---: | ---: | ---: | ---: | --- |');
    for (const target of latencyTargets) {
      const row = rows.get(target.key);
      if (!row) continue;
      const isDirect = target.key === 'direct';
      const errors = row.errors > 0 ? ` (${row.errors} errors)` : '';
      lines.push(
        `| ${target.label}${errors} | ${num(median(row.p50), 3)} | ${num(median(row.p99), 3)} | ` +
          `${isDirect ? '–' : signed(median(row.addedP50), 3)} | ${isDirect ? '–' : signed(median(row.addedP99), 3)} | ` +
          `${ourKeys.has(target.key) ? goal(row) : ''} |`,
      );
    }
    lines.push('');
  };

  lines.push(`### Added latency against the upstream called directly (non-streamed, max_tokens 16)\n`);
  const fixedGoal = (row: Row) => verdict(median(row.addedP50) <= GOALS.addedP50 && median(row.addedP99) <= GOALS.addedP99);
  latencyTable(
    `one connection, ${num(SEQUENTIAL, 0)} requests in sequence`,
    seqRows,
    fixedGoal,
    `added p50 ≤ ${GOALS.addedP50} ms, p99 ≤ ${GOALS.addedP99} ms`,
  );
  latencyTable(
    `open loop, ${RATE} requests/s for ${RATE_SECONDS} s`,
    rateRows,
    fixedGoal,
    `added p50 ≤ ${GOALS.addedP50} ms, p99 ≤ ${GOALS.addedP99} ms`,
  );
  lines.push(`### Time to first event, streamed (\`stream: true\`), one connection, ${num(TTFB, 0)} requests in sequence\n`);
  latencyTable(
    'streamed: request sent → first `data:` chunk',
    ttfbRows,
    // The issue names no percentile for this goal, unlike the fixed rates' p50 and p99: read as the
    // median; the p99 is held to it too and shown, as the stricter reading earlier runs used.
    (row) => `p50 ${verdict(median(row.addedP50) <= GOALS.addedTtfb)}; p99 ${verdict(median(row.addedP99) <= GOALS.addedTtfb)}`,
    `added ≤ ${GOALS.addedTtfb} ms (p50; p99 against it as well)`,
  );

  lines.push(`### Maximum throughput, ${CONNECTIONS} connections, closed loop, ${THROUGHPUT_SECONDS} s (non-streamed)\n`);
  lines.push(
    `| target | requests/s | ratio to direct | goal: ≥ ${GOALS.throughputRatio * 100}% of direct | CPU ms/request: target process | upstream process |`,
  );
  lines.push('| --- | ---: | ---: | --- | ---: | ---: |');
  for (const target of latencyTargets) {
    const entry = throughputs.get(target.key);
    if (!entry) continue;
    const ratio = median(entry.ratio);
    const errors = entry.errors > 0 ? ` (${entry.errors} errors)` : '';
    lines.push(
      `| ${target.label}${errors} | ${num(median(entry.rps), 0)} | ${target.key === 'direct' ? '1.00' : num(ratio, 2)} (${num(ratio * 100, 0)}%) | ` +
        `${ourKeys.has(target.key) ? verdict(ratio >= GOALS.throughputRatio) : ''} | ` +
        `${target.key === 'direct' ? '(the upstream)' : num(median(entry.cpu), 3)} | ${num(median(entry.upstreamCpu), 3)} |`,
    );
  }
  lines.push('');

  lines.push(`### Memory with ${num(STREAMS, 0)} concurrent open streams (upstream paced at 2 tokens/s)\n`);
  lines.push(
    `| process | RSS idle, MB | peak RSS, ${num(STREAMS, 0)} streams open, MB | streams open | goal: ≤ ${GOALS.streamsMB} MB |`,
  );
  lines.push('| --- | ---: | ---: | ---: | --- |');
  for (const [key, list] of memory) {
    const opened = median(list.map((r) => r.opened));
    const peak = mb(median(list.map((r) => r.peakRssMiB)));
    const errors = list.reduce((n, r) => n + r.errors, 0);
    lines.push(
      `| ${labels.get(key)?.replace(', chat completions', '')}${errors > 0 ? ` (${errors} errors)` : ''} | ${num(mb(median(list.map((r) => r.idleMiB))), 0)} | ` +
        `${num(peak, 0)} | ${num(opened, 0)} of ${num(STREAMS, 0)} in ${num(median(list.map((r) => r.openSeconds)), 1)} s | ` +
        `${ourKeys.has(key) ? verdict(peak <= GOALS.streamsMB && opened === STREAMS) : ''} |`,
    );
  }
  lines.push('');

  notes.push(
    `RSS right after start, before any request: our gateway ${num(mb(startRss.gateway), 0)} MB, the peer ${num(mb(startRss.peer), 0)} MB ` +
      '("idle" above is between tests, after the load of the earlier ones).',
  );
  const late = median([...rateRows.values()].flatMap((row) => row.late));
  notes.push(
    `Open loop: the latest a request left its schedule was ${num(late, 1)} ms (median over targets and rounds); latencies are timed from when each request was sent.`,
  );
  for (const [key, list] of memory) {
    const lifetime = Math.max(...list.map((r) => r.hwmMiB));
    notes.push(`${labels.get(key)}: VmHWM (lifetime peak, including the throughput runs) ${num(mb(lifetime), 0)} MB.`);
  }
  const failures = [
    ...[seqRows, rateRows, ttfbRows].flatMap((rows) =>
      [...rows].filter(([, row]) => row.firstError).map(([key, row]) => [key, row.firstError] as const),
    ),
    ...[...throughputs].filter(([, e]) => e.firstError).map(([key, e]) => [key, e.firstError] as const),
    ...[...memory].flatMap(([key, list]) => list.filter((r) => r.firstError).map((r) => [key, r.firstError] as const)),
  ];
  for (const [key, error] of failures.slice(0, 5)) notes.push(`First error of ${labels.get(key)}: ${error}`);

  notes.push(
    `Load average (1 min) at start ${num(loadAtStart, 2)}, at end ${num(loadavg()[0], 2)} on ${cpus().length} CPUs: ` +
      'every process of the machine, other jobs included, shares them with the load generator, the upstream and the target.',
  );
  console.log(lines.join('\n'));
  for (const note of notes) console.log(`- ${note}`);
  console.log(`\n(${Math.round((Date.now() - started) / 1000)} s)`);
}

main()
  .then(
    () => cleanUp(),
    async (error: Error) => {
      process.stderr.write(`gateway bench failed: ${error.stack ?? error.message}\n`);
      process.exitCode = 1;
      await cleanUp();
    },
  )
  .finally(() => process.exit());
