/**
 * The CPU the bedrock kind adds to a request: `npm run build && node dist/bench/bedrock.bench.js`.
 *
 *   - SigV4: signing one call (AWS's signer with AWS's Node SHA-256, as the kind's authorizer does it), by
 *     body size, beside the same signer with AWS's pure-JavaScript SHA-256.
 *   - Streams: reading one streamed reply of N text events, each arriving in its own chunk as a host
 *     generating live sends them: AWS's event stream (the kind's framing, AWS's codec, and the
 *     Converse decoder) beside the same reply as server-sent events (the transport's SSE framing and
 *     the anthropic kind's decoder).
 *
 * Medians over many runs, in microseconds of one thread's time; BENCH_RUNS sets the runs (default 2,000).
 */
import { Sha256 } from '@aws-crypto/sha256-js';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { SignatureV4 } from '@smithy/signature-v4';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { anthropicHost } from '../src/hosts/anthropic/anthropic.host';
import { bedrockHost } from '../src/hosts/bedrock/bedrock.host';
import { signingAuthorizer } from '../src/hosts/bedrock/bedrock.signing';
import type { HostKind, StreamFraming } from '../src/hosts/host-kind';
import { sseFraming } from '../src/hosts/transport';

const RUNS = Number(process.env.BENCH_RUNS ?? 2_000);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (n: number, digits = 1) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** Median µs of `runs` calls of `work`, after a warm-up of a tenth as many. */
async function microseconds(runs: number, work: () => unknown): Promise<number> {
  for (let i = 0; i < Math.ceil(runs / 10); i++) await work();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    await work();
    times.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  return median(times);
}

/** A Converse body of about `bytes` bytes: a conversation of that much text. */
function converseBody(bytes: number): string {
  const turn = 'The quick brown fox jumps over the lazy dog. ';
  const text = turn.repeat(Math.ceil(bytes / turn.length)).slice(0, bytes);
  return JSON.stringify({ messages: [{ role: 'user', content: [{ text }] }], inferenceConfig: { maxTokens: 1000 } });
}

async function signing(): Promise<void> {
  const credentials = {
    accessKeyId: 'AKIABENCHMARK0000001',
    secretAccessKey: 'bench/secret/key/0123456789abcdefghijklm',
    sessionToken: 'token',
  };
  const authorizer = signingAuthorizer('us-east-1', async () => credentials);
  const url = new URL(
    'https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream',
  );
  const headers = { 'content-type': 'application/json', accept: 'application/vnd.amazon.eventstream' };
  // AWS's pure-JavaScript SHA-256, for comparison: the kind signs with AWS's Node hash (node:crypto).
  const jsSigner = new SignatureV4({ credentials, region: 'us-east-1', service: 'bedrock', sha256: Sha256 });
  const request = (body: string) => ({
    method: 'POST',
    protocol: url.protocol,
    hostname: url.hostname,
    path: url.pathname,
    query: {},
    headers: { ...headers, host: url.host },
    body,
  });
  console.log('| SigV4 signing, one call | the kind (Node’s SHA-256): median µs | with AWS’s JavaScript SHA-256: median µs |');
  console.log('| --- | ---: | ---: |');
  for (const size of [1_000, 10_000, 100_000, 1_000_000]) {
    const body = converseBody(size);
    const runs = size >= 1_000_000 ? Math.ceil(RUNS / 20) : RUNS;
    const us = await microseconds(runs, () => authorizer.headers({ method: 'POST', url, headers, body }));
    const js = await microseconds(runs, () => jsSigner.sign(request(body)));
    console.log(`| body of ${fmt(size / 1000, 0)} KB | ${fmt(us)} | ${fmt(js)} |`);
  }
}

const codec = new EventStreamCodec(toUtf8, fromUtf8);
const str = (value: string) => ({ type: 'string' as const, value });
const event = (type: string, payload: object) =>
  codec.encode({
    headers: { ':event-type': str(type), ':content-type': str('application/json'), ':message-type': str('event') },
    body: fromUtf8(JSON.stringify(payload)),
  });
const sse = (type: string, payload: object) => Buffer.from(`event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`);

/** A reply of `n` text deltas, as each wire frames it: one chunk per event. */
function reply(n: number) {
  const words = Array.from({ length: n }, (_, i) => ` word${i}`);
  const usage = { inputTokens: 1200, outputTokens: n, totalTokens: 1200 + n, cacheReadInputTokens: 0, cacheWriteInputTokens: 0 };
  const eventStream = [
    event('messageStart', { role: 'assistant', p: 'abcd' }),
    ...words.map((text) => event('contentBlockDelta', { contentBlockIndex: 0, delta: { text }, p: 'abcdefgh' })),
    event('contentBlockStop', { contentBlockIndex: 0, p: 'abc' }),
    event('messageStop', { stopReason: 'end_turn', p: 'abcdef' }),
    event('metadata', { usage, metrics: { latencyMs: 900 }, p: 'ab' }),
  ];
  const messagesUsage = { input_tokens: 1200, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, output_tokens: n };
  const serverSent = [
    sse('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], usage: messagesUsage } }),
    sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    ...words.map((text) => sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text } })),
    sse('content_block_stop', { index: 0 }),
    sse('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: messagesUsage }),
    sse('message_stop', {}),
  ];
  return { eventStream, serverSent };
}

/** Reads a stream's chunks as the transport does: framed into messages, each decoded to canonical events. */
function read(kind: HostKind, framing: () => StreamFraming, chunks: Uint8Array[]): number {
  const frames = framing();
  const decoder = kind.decoder();
  let events = 0;
  for (const chunk of chunks) for (const message of frames.feed(chunk)) events += decoder.push(message).length;
  if (!decoder.done) throw new Error(`${kind.name}: the stream did not complete`);
  return events;
}

async function streams(): Promise<void> {
  console.log('');
  console.log(
    '| one streamed reply of N text events, one chunk each | N | event stream (bedrock): µs per reply / per event | SSE (anthropic): µs per reply / per event | bytes: event stream / SSE |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: |');
  for (const n of [10, 100, 1000]) {
    const { eventStream, serverSent } = reply(n);
    const runs = n >= 1000 ? Math.ceil(RUNS / 10) : RUNS;
    const bedrock = await microseconds(runs, () => read(bedrockHost, () => bedrockHost.framing!(), eventStream));
    const anthropic = await microseconds(runs, () => read(anthropicHost, sseFraming, serverSent));
    const size = (chunks: Uint8Array[]) => chunks.reduce((sum, c) => sum + c.length, 0);
    console.log(
      `| | ${n} | ${fmt(bedrock)} / ${fmt(bedrock / n, 2)} | ${fmt(anthropic)} / ${fmt(anthropic / n, 2)} | ${fmt(size(eventStream), 0)} / ${fmt(size(serverSent), 0)} |`,
    );
  }
}

async function main(): Promise<void> {
  console.log(`Node ${process.version}, ${RUNS} runs (medians)\n`);
  await signing();
  await streams();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
