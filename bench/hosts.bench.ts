/**
 * Hosts bench: `npm run bench:hosts` (not part of the tests; about 5 minutes with the default counts).
 *
 * What each host kind costs the gateway beside `openai`, and what SigV4 signing and AWS's event
 * stream cost in themselves. Two parts, in one run:
 *
 *   (a) One gateway process (the build, started as `npm start` starts it) whose catalogue has one
 *       model per host kind (./hosts/kinds.ts), every host on one upstream process, the tests' fake
 *       provider (./hosts/fake-host.ts), which speaks each kind's wire. Through the gateway's
 *       chat-completions route, per kind: BENCH_SEQUENTIAL requests in sequence on one connection,
 *       non-streamed (p50 and p99 of the whole reply), then as many streamed (time to the first
 *       `data:` chunk), max_tokens 16; the CPU time the gateway process and the fake spent per
 *       request (from /proc). The kinds alternate within each round, over BENCH_ROUNDS rounds; the
 *       table shows medians of the rounds, and "vs openai" is the kind's figure minus the `openai`
 *       model's of the same round.
 *   (b) In this process, after (a): one SigV4 signature of a Converse call by the bedrock kind's
 *       authorizer, and one ConverseStream reply of N events cut into messages by the bedrock kind's
 *       framing (AWS's event stream, read with AWS's codec) beside the same events as server-sent
 *       events cut by the transport's framing (eventsource-parser), as every other kind's are;
 *       medians of BENCH_MICRO_RUNS runs, in µs. (`npm run bench:bedrock` has more: bodies by size,
 *       the pure-JavaScript hash, the Converse decoder.)
 *
 * A kind this checkout does not have (not in HOST_KIND_NAMES) is skipped with a line saying so, as
 * is a kind with no entry in ./hosts/kinds.ts and one whose model does not answer 200.
 */
import { performance } from 'node:perf_hooks';
import { arch, cpus, loadavg, platform } from 'node:os';
import { join } from 'node:path';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { bedrockHost } from '../src/hosts/bedrock/bedrock.host';
import { signingAuthorizer } from '../src/hosts/bedrock/bedrock.signing';
import type { StreamFraming } from '../src/hosts/host-kind';
import { HOST_KIND_NAMES, isHostKindName } from '../src/hosts/hosts';
import { sseFraming } from '../src/hosts/transport';
import { Latencies, percentile, probeFailure, sequential, Target } from './gateway/load';
import { cleanUp, cpuMs, launch, ROOT, startArgs, startedOrFailed, startGatewayWith } from './gateway/processes';
import { BENCH_KEY, BENCH_KEY_ENV, BENCH_KINDS, BenchKind } from './hosts/kinds';

const env = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  return Number.isFinite(value) && value > 0 ? value : fallback;
};
const ROUNDS = env('BENCH_ROUNDS', 5);
const SEQUENTIAL = env('BENCH_SEQUENTIAL', 500);
const MICRO_RUNS = env('BENCH_MICRO_RUNS', 2000);
const REFERENCE = 'openai';

const median = (xs: number[]) => {
  const sorted = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.floor(sorted.length / 2)];
};
const num = (n: number, digits: number) =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : 'n/a';
const signed = (n: number, digits: number) => (Number.isFinite(n) ? `${n >= 0 ? '+' : '−'}${num(Math.abs(n), digits)}` : 'n/a');
const progress = (line: string) => process.stderr.write(`${line}\n`);
const rotate = <T>(xs: T[], by: number) => xs.map((_, i) => xs[(i + by) % xs.length]);

// --- part (a): the gateway on each kind -------------------------------------------------------

/** The fake provider in a process of its own (./hosts/fake-host.ts). */
async function startFakeHost(): Promise<{ pid: number; url: string }> {
  const child = launch('fake host', [join(__dirname, 'hosts', 'fake-host.js')], process.env, { ipc: true });
  const ready = new Promise<string>((done) => child.process.once('message', (message: { url: string }) => done(message.url)));
  return { pid: child.pid, url: await startedOrFailed(child, ready, 15_000) };
}

/** The kinds to measure, and a line for each kind left out. */
function selectKinds(): { kinds: BenchKind[]; skipped: string[] } {
  const skipped = BENCH_KINDS.filter((k) => !isHostKindName(k.kind)).map(
    (k) => `\`${k.kind}\`: not a host kind of this checkout (HOST_KIND_NAMES: ${HOST_KIND_NAMES.join(', ')}); skipped.`,
  );
  for (const name of HOST_KIND_NAMES)
    if (!BENCH_KINDS.some((k) => k.kind === name)) skipped.push(`\`${name}\`: no entry in bench/hosts/kinds.ts; skipped.`);
  return { kinds: BENCH_KINDS.filter((k) => isHostKindName(k.kind)), skipped };
}

const slugOf = (kind: BenchKind) => `bench/${kind.kind}`;

function catalogueOf(kinds: BenchKind[], url: string): object {
  return {
    hosts: kinds.map((k) => k.host(url, `bench-${k.kind}`)),
    models: kinds.map((k, i) => ({
      slug: slugOf(k),
      id: `00000000-0000-4000-8000-${String(i + 1).padStart(12, '0')}`,
      name: k.kind,
      contextLength: 32_768,
      maxOutputTokens: 100_000,
      hosts: [{ host: `bench-${k.kind}`, model: k.hostModel, pricing: { input: '0.10', output: '0.40' } }],
    })),
  };
}

const CHAT_MESSAGES = [{ role: 'user', content: 'Hello there, how are you?' }];

/** Figures of one kind, one entry per round. */
interface Row {
  p50: number[];
  p99: number[];
  firstP50: number[];
  firstP99: number[];
  /** Gateway CPU ms per request: non-streamed, streamed. */
  cpu: number[];
  cpuStreamed: number[];
  /** The fake's CPU ms per request, both runs together. */
  fakeCpu: number[];
  errors: number;
  firstError: string | null;
}

const newRow = (): Row => ({
  p50: [],
  p99: [],
  firstP50: [],
  firstP99: [],
  cpu: [],
  cpuStreamed: [],
  fakeCpu: [],
  errors: 0,
  firstError: null,
});

/** `sequential`, with the CPU time the gateway and the fake spent per request over it. */
async function measured(
  target: Target,
  streamed: boolean,
  pids: { gateway: number; fake: number },
): Promise<Latencies & { cpu: number; fakeCpu: number }> {
  const [gateway, fake] = [cpuMs(pids.gateway), cpuMs(pids.fake)];
  const result = await sequential(target, SEQUENTIAL, { streamed });
  return {
    ...result,
    cpu: (cpuMs(pids.gateway) - gateway) / result.requests,
    fakeCpu: (cpuMs(pids.fake) - fake) / result.requests,
  };
}

async function measureKinds(lines: string[], notes: string[]): Promise<void> {
  const { kinds, skipped } = selectKinds();
  notes.push(...skipped);
  progress(`starting the fake host and the gateway (kinds: ${kinds.map((k) => k.kind).join(', ')})…`);
  const fake = await startFakeHost();
  const gateway = await startGatewayWith(catalogueOf(kinds, fake.url), {
    name: 'gateway',
    root: ROOT,
    env: kinds.reduce<Record<string, string>>((all, k) => ({ ...all, ...k.env }), { [BENCH_KEY_ENV]: BENCH_KEY }),
  });
  const pids = { gateway: gateway.child.pid, fake: fake.pid };
  const targets: Target[] = [];
  for (const kind of kinds) {
    const body = (stream: boolean) =>
      JSON.stringify({ model: slugOf(kind), messages: CHAT_MESSAGES, max_tokens: 16, ...(stream ? { stream } : {}) });
    const target: Target = {
      key: kind.kind,
      label: kind.kind,
      origin: `http://127.0.0.1:${gateway.port}`,
      path: '/api/v1/chat/completions',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.secret}` },
      body: { plain: body(false), streamed: body(true) },
    };
    const failure = await probeFailure(target);
    if (failure === null) targets.push(target);
    else notes.push(`\`${kind.kind}\`: its model ${failure.slice(0, 200)}; skipped.`);
  }
  if (!targets.some((t) => t.key === REFERENCE)) throw new Error(`the \`${REFERENCE}\` kind, the reference, cannot be measured`);
  const width = Math.max(...targets.map((t) => t.key.length));

  progress('warming up (JIT, connections)…');
  for (const target of targets) {
    await sequential(target, 300, { streamed: false });
    await sequential(target, 100, { streamed: true });
  }

  const rows = new Map<string, Row>(targets.map((t) => [t.key, newRow()]));
  /** Per round, each kind's differences from the reference's figures of that round. */
  const versus = new Map<string, { p50: number[]; first: number[]; cpu: number[]; cpuStreamed: number[] }>(
    targets.map((t) => [t.key, { p50: [], first: [], cpu: [], cpuStreamed: [] }]),
  );
  for (let round = 0; round < ROUNDS; round++) {
    const order = rotate(targets, round);
    const tag = `round ${round + 1}/${ROUNDS}`;
    const whole = new Map<string, Latencies & { cpu: number; fakeCpu: number }>();
    for (const target of order) {
      whole.set(target.key, await measured(target, false, pids));
      progress(`${tag} whole        ${target.key.padEnd(width)} p50 ${num(percentile(whole.get(target.key)!.ms, 50), 3)} ms`);
    }
    const streamed = new Map<string, Latencies & { cpu: number; fakeCpu: number }>();
    for (const target of order) {
      // A few unmeasured first: the kind sat idle while the others ran.
      await sequential(target, 20, { streamed: true });
      streamed.set(target.key, await measured(target, true, pids));
      progress(`${tag} first event  ${target.key.padEnd(width)} p50 ${num(percentile(streamed.get(target.key)!.ms, 50), 3)} ms`);
    }
    for (const target of targets) {
      const row = rows.get(target.key)!;
      const [w, s] = [whole.get(target.key)!, streamed.get(target.key)!];
      row.p50.push(percentile(w.ms, 50));
      row.p99.push(percentile(w.ms, 99));
      row.firstP50.push(percentile(s.ms, 50));
      row.firstP99.push(percentile(s.ms, 99));
      row.cpu.push(w.cpu);
      row.cpuStreamed.push(s.cpu);
      row.fakeCpu.push((w.fakeCpu + s.fakeCpu) / 2);
      row.errors += w.errors + s.errors;
      row.firstError ??= w.firstError ?? s.firstError;
    }
    const reference = rows.get(REFERENCE)!;
    for (const target of targets) {
      const row = rows.get(target.key)!;
      const v = versus.get(target.key)!;
      v.p50.push(row.p50[round] - reference.p50[round]);
      v.first.push(row.firstP50[round] - reference.firstP50[round]);
      v.cpu.push(row.cpu[round] - reference.cpu[round]);
      v.cpuStreamed.push(row.cpuStreamed[round] - reference.cpuStreamed[round]);
    }
  }
  await cleanUp();

  lines.push(
    `### Through the gateway, per host kind: chat completions, max_tokens 16, one connection, ${num(SEQUENTIAL, 0)} requests in sequence of each\n`,
  );
  lines.push(
    '| kind | p50 whole, ms | p50 stream first event, ms | p99 whole / first event, ms | gateway CPU ms/request: whole / streamed | ' +
      `vs \`${REFERENCE}\`: p50 whole (rounds lowest … highest) / first event, ms | vs \`${REFERENCE}\`: CPU ms/request whole / streamed | fake's CPU ms/request |`,
  );
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const target of targets) {
    const row = rows.get(target.key)!;
    const v = versus.get(target.key)!;
    const errors = row.errors > 0 ? ` (${row.errors} errors)` : '';
    const isReference = target.key === REFERENCE;
    lines.push(
      `| \`${target.key}\`${errors} | ${num(median(row.p50), 3)} | ${num(median(row.firstP50), 3)} | ` +
        `${num(median(row.p99), 3)} / ${num(median(row.firstP99), 3)} | ${num(median(row.cpu), 3)} / ${num(median(row.cpuStreamed), 3)} | ` +
        (isReference
          ? '– | – | '
          : `${signed(median(v.p50), 3)} (${signed(Math.min(...v.p50), 3)} … ${signed(Math.max(...v.p50), 3)}) / ${signed(median(v.first), 3)} | ` +
            `${signed(median(v.cpu), 3)} / ${signed(median(v.cpuStreamed), 3)} | `) +
        `${num(median(row.fakeCpu), 3)} |`,
    );
    if (row.firstError) notes.push(`First error of \`${target.key}\`: ${row.firstError}`);
  }
  lines.push('');
  notes.push(
    `"vs \`${REFERENCE}\`" is the median of the rounds' own differences (the kind's figure minus the \`${REFERENCE}\` model's, ` +
      "measured in the same round); CPU is user + system time from /proc in 10 ms ticks, over each kind's run.",
  );
}

// --- part (b): SigV4 and the event stream, in process ------------------------------------------

/** Median µs of `runs` calls of `work`, after a tenth as many unmeasured. */
async function microseconds(runs: number, work: () => unknown): Promise<number> {
  for (let i = 0; i < Math.ceil(runs / 10); i++) await work();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await work();
    times.push((performance.now() - start) * 1000);
  }
  return median(times);
}

/** A Converse body as the bedrock kind sends one: a system prompt, a short conversation, an output cap. */
function converseBody(turns: number): string {
  const text = 'Summarize the quarterly report in three bullet points, citing the figures you use. ';
  return JSON.stringify({
    messages: Array.from({ length: turns }, (_, i) => ({
      role: i % 2 === 0 ? 'user' : 'assistant',
      content: [{ text: text.repeat(4) }],
    })),
    system: [{ text: 'You are a careful analyst. Answer briefly.' }],
    inferenceConfig: { maxTokens: 16 },
  });
}

async function signing(lines: string[]): Promise<void> {
  const credentials = { accessKeyId: 'AKIABENCHMARK0000001', secretAccessKey: 'bench/secret/key/0123456789abcdefghijklm' };
  // The bedrock kind's own authorizer: AWS's signer, with the credentials a provider gives.
  const authorizer = signingAuthorizer('us-east-1', () => Promise.resolve(credentials));
  const url = new URL(
    'https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse',
  );
  const headers = { 'content-type': 'application/json', accept: 'application/json' };
  lines.push("### SigV4: one signature of a Converse call, by the bedrock kind's authorizer (@smithy/signature-v4)\n");
  lines.push('| body | bytes | median µs |');
  lines.push('| --- | ---: | ---: |');
  for (const [label, turns] of [
    ['one turn (the bench request)', 1],
    ['a conversation of 10 turns', 10],
    ['a conversation of 100 turns', 100],
  ] as const) {
    const body = converseBody(turns);
    const us = await microseconds(MICRO_RUNS, () => authorizer.headers({ method: 'POST', url, headers, body }));
    lines.push(`| ${label} | ${num(Buffer.byteLength(body), 0)} | ${num(us, 1)} |`);
  }
  lines.push('');
}

const codec = new EventStreamCodec(toUtf8, fromUtf8);
const header = (value: string) => ({ type: 'string' as const, value });

/** A ConverseStream reply of `deltas` text deltas: each event's type and JSON, as Bedrock sends them. */
function converseEvents(deltas: number): Array<{ type: string; data: string }> {
  const usage = { inputTokens: 12, outputTokens: deltas, totalTokens: 12 + deltas };
  const events: Array<[string, object]> = [
    ['messageStart', { role: 'assistant', p: 'abcdefgh' }],
    ...Array.from({ length: deltas }, (_, i): [string, object] => [
      'contentBlockDelta',
      { contentBlockIndex: 0, delta: { text: ` word${i}` }, p: 'abcdefghijklmno' },
    ]),
    ['contentBlockStop', { contentBlockIndex: 0, p: 'abcd' }],
    ['messageStop', { stopReason: 'end_turn', p: 'abcdefghij' }],
    ['metadata', { usage, metrics: { latencyMs: 312 }, p: 'abc' }],
  ];
  return events.map(([type, payload]) => ({ type, data: JSON.stringify(payload) }));
}

/** The messages a framing cuts from a stream's chunks, fed one by one as the transport feeds them. */
function read(framing: StreamFraming, chunks: Uint8Array[]): number {
  let messages = 0;
  for (const chunk of chunks) messages += framing.feed(chunk).length;
  return messages;
}

async function streams(lines: string[]): Promise<void> {
  lines.push(
    "### One ConverseStream reply of N events, one chunk each, cut into messages: the bedrock kind's framing (AWS's event stream, @smithy/eventstream-codec) against the same events as SSE (the transport's framing, eventsource-parser)\n",
  );
  lines.push(
    '| events | event stream: µs per reply / per event | SSE: µs per reply / per event | event stream / SSE | bytes: event stream / SSE |',
  );
  lines.push('| ---: | ---: | ---: | ---: | ---: |');
  for (const deltas of [16, 200, 2000]) {
    const events = converseEvents(deltas);
    const binary = events.map(({ type, data }) =>
      codec.encode({
        headers: { ':event-type': header(type), ':content-type': header('application/json'), ':message-type': header('event') },
        body: fromUtf8(data),
      }),
    );
    const text = events.map(({ type, data }) => new TextEncoder().encode(`event: ${type}\ndata: ${data}\n\n`));
    const [eventStream, serverSent] = [() => bedrockHost.framing!(), sseFraming];
    if (read(eventStream(), binary) !== events.length || read(serverSent(), text) !== events.length)
      throw new Error('a framing did not cut every event');
    const runs = Math.max(100, Math.round((MICRO_RUNS * 20) / events.length));
    const binaryUs = await microseconds(runs, () => read(eventStream(), binary));
    const textUs = await microseconds(runs, () => read(serverSent(), text));
    const bytes = (chunks: Uint8Array[]) => chunks.reduce((n, c) => n + c.length, 0);
    const n = events.length;
    lines.push(
      `| ${num(n, 0)} | ${num(binaryUs, 1)} / ${num(binaryUs / n, 2)} | ${num(textUs, 1)} / ${num(textUs / n, 2)} | ` +
        `×${num(binaryUs / textUs, 2)} | ${num(bytes(binary), 0)} / ${num(bytes(text), 0)} |`,
    );
  }
  lines.push('');
}

async function main(): Promise<void> {
  const started = Date.now();
  const loadAtStart = loadavg()[0];
  console.log(
    `# Hosts bench: node ${process.version}, ${new Date().toISOString().slice(0, 10)}, ${platform()} ${arch()}, ` +
      `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'CPU'}, ${ROUNDS} rounds, medians shown; ` +
      `the gateway started as \`node ${startArgs(ROOT).join(' ')}\`\n`,
  );
  const lines: string[] = [];
  const notes: string[] = [];
  await measureKinds(lines, notes);
  progress('SigV4 and event-stream micro-benchmarks…');
  await signing(lines);
  await streams(lines);
  notes.push(
    `Load average (1 min) at start ${num(loadAtStart, 2)}, at end ${num(loadavg()[0], 2)} on ${cpus().length} CPUs: ` +
      'the load generator, the fake and the gateway share them with every other job of the machine.',
  );
  console.log(lines.join('\n'));
  for (const note of notes) console.log(`- ${note}`);
  console.log(`\n(${Math.round((Date.now() - started) / 1000)} s)`);
}

main()
  .then(
    () => cleanUp(),
    async (error: Error) => {
      process.stderr.write(`hosts bench failed: ${error.stack ?? error.message}\n`);
      process.exitCode = 1;
      await cleanUp();
    },
  )
  .finally(() => process.exit());
