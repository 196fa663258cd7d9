/**
 * Hosts bench: `npm run bench:hosts` (not part of the tests; about 4 minutes with the default counts, on 2 vCPUs).
 *
 * What each host kind costs the gateway beside `openai`, and what SigV4 signing and AWS's event
 * stream cost in themselves. Two parts, in one run:
 *
 *   (a) One gateway process (the build, started as `npm start` starts it) whose catalogue has one
 *       model per host kind (./hosts/kinds.ts), every host on one upstream process, the tests' fake
 *       provider (./hosts/fake-host.ts), which speaks each kind's wire. Through the gateway's
 *       chat-completions route, max_tokens 16, each round: BENCH_SEQUENTIAL requests to each kind,
 *       non-streamed, interleaved (request i to every kind before request i + 1 to any, one
 *       connection each: the machine's other jobs slow every kind alike), p50 and p99 of the whole
 *       reply; as many streamed, timed to the first `data:` chunk; then, kind by kind,
 *       BENCH_CPU_SEQUENTIAL requests in sequence of each form, with the CPU time the gateway process
 *       and the fake spent per request (from /proc). The kinds' order rotates each round, over
 *       BENCH_ROUNDS rounds; the table shows medians of the rounds, and "vs openai" the median of the
 *       rounds' differences from the `openai` model's figures of the same round.
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
import { arch, cpus, loadavg, platform } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { Client } from 'undici';
import { bedrockHost } from '../src/hosts/bedrock/bedrock.host';
import { signingAuthorizer } from '../src/hosts/bedrock/bedrock.signing';
import type { StreamFraming } from '../src/hosts/host-kind';
import { HOST_KIND_NAMES, isHostKindName } from '../src/hosts/hosts';
import { sseFraming } from '../src/hosts/transport';
import { Latencies, percentile, probeFailure, recorder, sequential, Target, timed } from './gateway/load';
import {
  cleanUp,
  cpuMs,
  launch,
  ROOT,
  setting,
  startArgs,
  startedOrFailed,
  startGatewayWith,
  tempDir,
} from './gateway/processes';
import { BENCH_KEY, BENCH_KEY_ENV, BENCH_KINDS, BenchKind, FakeHost } from './hosts/kinds';

const ROUNDS = setting('BENCH_ROUNDS', 5);
const SEQUENTIAL = setting('BENCH_SEQUENTIAL', 400);
const CPU_SEQUENTIAL = setting('BENCH_CPU_SEQUENTIAL', 250);
const MICRO_RUNS = setting('BENCH_MICRO_RUNS', 2000);
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
async function startFakeHost(): Promise<FakeHost & { pid: number }> {
  const child = launch('fake host', [join(__dirname, 'hosts', 'fake-host.js'), tempDir('mg-bench-fake-host-')], process.env, {
    ipc: true,
  });
  const ready = new Promise<FakeHost>((done) => child.process.once('message', (message: FakeHost) => done(message)));
  return { pid: child.pid, ...(await startedOrFailed(child, ready, 15_000)) };
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

function catalogueOf(kinds: BenchKind[], fake: FakeHost): object {
  return {
    hosts: kinds.map((k) => k.host(fake, `bench-${k.kind}`)),
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

/**
 * `count` requests to each target, interleaved: request i to every target (in the order given)
 * before request i + 1 to any, each target on a keep-alive connection of its own. Whatever the
 * machine's other jobs do to a stretch of the run, they do to every kind alike.
 */
async function interleaved(targets: Target[], count: number, streamed: boolean): Promise<Map<string, Latencies>> {
  const clients = targets.map((target) => new Client(target.origin, { pipelining: 1, keepAliveTimeout: 60_000 }));
  const results = targets.map(() => recorder());
  try {
    for (let i = 0; i < count; i++)
      for (const [t, target] of targets.entries()) {
        results[t].requests += 1;
        try {
          results[t].ms.push(await timed(clients[t], target, streamed, streamed));
        } catch (error) {
          results[t].fail((error as Error).message);
        }
      }
  } finally {
    await Promise.all(clients.map((client) => client.close()));
  }
  return new Map(targets.map((target, t) => [target.key, results[t]]));
}

/** CPU ms per request the gateway and the fake spent on `count` requests to `target` in sequence. */
async function cpuPerRequest(
  target: Target,
  streamed: boolean,
  pids: { gateway: number; fake: number },
): Promise<{ cpu: number; fakeCpu: number; errors: number; firstError: string | null }> {
  const [gateway, fake] = [cpuMs(pids.gateway), cpuMs(pids.fake)];
  const result = await sequential(target, CPU_SEQUENTIAL, { streamed });
  return {
    cpu: (cpuMs(pids.gateway) - gateway) / result.requests,
    fakeCpu: (cpuMs(pids.fake) - fake) / result.requests,
    errors: result.errors,
    firstError: result.firstError,
  };
}

async function measureKinds(lines: string[], notes: string[]): Promise<void> {
  const { kinds, skipped } = selectKinds();
  notes.push(...skipped);
  progress(`starting the fake host and the gateway (kinds: ${kinds.map((k) => k.kind).join(', ')})…`);
  const fake = await startFakeHost();
  const gateway = await startGatewayWith(catalogueOf(kinds, fake), {
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
  await interleaved(targets, 200, false);
  await interleaved(targets, 100, true);

  const rows = new Map<string, Row>(targets.map((t) => [t.key, newRow()]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = rotate(targets, round);
    const tag = `round ${round + 1}/${ROUNDS}`;
    const whole = await interleaved(order, SEQUENTIAL, false);
    const streamed = await interleaved(order, SEQUENTIAL, true);
    for (const target of order) {
      const row = rows.get(target.key)!;
      const [w, s] = [whole.get(target.key)!, streamed.get(target.key)!];
      row.p50.push(percentile(w.ms, 50));
      row.p99.push(percentile(w.ms, 99));
      row.firstP50.push(percentile(s.ms, 50));
      row.firstP99.push(percentile(s.ms, 99));
      const [cw, cs] = [await cpuPerRequest(target, false, pids), await cpuPerRequest(target, true, pids)];
      row.cpu.push(cw.cpu);
      row.cpuStreamed.push(cs.cpu);
      row.fakeCpu.push((cw.fakeCpu + cs.fakeCpu) / 2);
      row.errors += w.errors + s.errors + cw.errors + cs.errors;
      row.firstError ??= w.firstError ?? s.firstError ?? cw.firstError ?? cs.firstError;
      progress(
        `${tag} ${target.key.padEnd(width)} p50 whole ${num(row.p50[round], 3)} ms, first event ${num(row.firstP50[round], 3)} ms; ` +
          `CPU ${num(cw.cpu, 2)} / ${num(cs.cpu, 2)} ms a request`,
      );
    }
  }
  await cleanUp();

  /** Each round's figure of a kind minus the reference's of that round: the median, and the lowest and highest. */
  const versus = (row: Row, field: keyof Omit<Row, 'errors' | 'firstError'>, withRange: boolean) => {
    const reference = rows.get(REFERENCE)![field];
    const differences = row[field].map((x, round) => x - reference[round]);
    const range = `(${signed(Math.min(...differences), 3)} … ${signed(Math.max(...differences), 3)})`;
    return `${signed(median(differences), 3)}${withRange ? ` ${range}` : ''}`;
  };
  lines.push(
    `### Through the gateway, per host kind: chat completions, max_tokens 16, one connection each, ${num(SEQUENTIAL, 0)} requests interleaved, then ${num(CPU_SEQUENTIAL, 0)} in sequence for the CPU\n`,
  );
  lines.push(
    '| kind | p50 whole, ms | p50 stream first event, ms | p99 whole / first event, ms | ' +
      `vs \`${REFERENCE}\`: p50 whole, ms (rounds lowest … highest) | vs \`${REFERENCE}\`: p50 first event, ms (rounds) | ` +
      `gateway CPU ms/request: whole / streamed | vs \`${REFERENCE}\`: CPU ms/request whole / streamed | the fake's CPU ms/request |`,
  );
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const target of targets) {
    const row = rows.get(target.key)!;
    const errors = row.errors > 0 ? ` (${row.errors} errors)` : '';
    const isReference = target.key === REFERENCE;
    lines.push(
      `| \`${target.key}\`${errors} | ${num(median(row.p50), 3)} | ${num(median(row.firstP50), 3)} | ` +
        `${num(median(row.p99), 3)} / ${num(median(row.firstP99), 3)} | ` +
        (isReference ? '– | – | ' : `${versus(row, 'p50', true)} | ${versus(row, 'firstP50', true)} | `) +
        `${num(median(row.cpu), 3)} / ${num(median(row.cpuStreamed), 3)} | ` +
        (isReference ? '– | ' : `${versus(row, 'cpu', false)} / ${versus(row, 'cpuStreamed', false)} | `) +
        `${num(median(row.fakeCpu), 3)} |`,
    );
    if (row.firstError) notes.push(`First error of \`${target.key}\`: ${row.firstError}`);
  }
  lines.push('');
  notes.push(
    `"vs \`${REFERENCE}\`" is the median of the rounds' own differences (the kind's figure minus the \`${REFERENCE}\` model's ` +
      "of the same round). CPU is user + system time from /proc in 10 ms ticks, over each kind's own run.",
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
