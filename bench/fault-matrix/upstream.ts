/**
 * The fault matrix's upstream, in a process of its own: the tests' fake provider
 * (test/support/fake-upstream.ts, compiled with the bench), speaking OpenAI chat completions and
 * Anthropic Messages, streamed and whole, with usage. The catalogue reaches it as an `openai` host
 * and an `anthropic` host.
 *
 *   node dist/bench/fault-matrix/upstream.js
 *
 * Host models (the same on either format):
 *   fm-paced   STREAM_WORDS words, a piece every PACED_GAP_MS ms: streams in flight when a fault strikes
 *   fm-slow    SLOW_WORDS words, a piece every SLOW_GAP_MS ms: streams held open until their clients leave
 *
 * Reports `{ port }` to its parent over IPC once it listens; stops on SIGTERM, SIGINT, or when the
 * parent goes away (the IPC channel closes), so it never outlives the bench.
 */
import { startFakeUpstream } from '../../test/support/fake-upstream';

export const PACED_MODEL = 'fm-paced';
export const SLOW_MODEL = 'fm-slow';
export const STREAM_WORDS = 24;
const PACED_GAP_MS = 15;
const SLOW_WORDS = 100;
const SLOW_GAP_MS = 200;
/** Input tokens every reply reports; its output tokens are its words (one piece each). */
export const REPORTED_INPUT = 12;

const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i + 1}`).join(' ');

async function main(): Promise<void> {
  const fake = await startFakeUpstream();
  fake.on(PACED_MODEL, {
    kind: 'reply',
    reply: { text: words(STREAM_WORDS), usage: { input: REPORTED_INPUT, output: STREAM_WORDS } },
    chunkDelayMs: PACED_GAP_MS,
  });
  fake.on(SLOW_MODEL, {
    kind: 'reply',
    reply: { text: words(SLOW_WORDS), usage: { input: REPORTED_INPUT, output: SLOW_WORDS } },
    chunkDelayMs: SLOW_GAP_MS,
  });
  // The fake records every request for tests that inspect them; a bench run would only grow it.
  const forget = setInterval(() => fake.requests.splice(0), 1000);
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    clearInterval(forget);
    const force = setTimeout(() => process.exit(0), 2000);
    force.unref();
    void fake.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('disconnect', stop);
  const port = Number(new URL(fake.url).port);
  if (process.send) process.send({ port });
  else process.stdout.write(`${JSON.stringify({ port })}\n`);
}

if (require.main === module)
  main().catch((error: Error) => {
    process.stderr.write(`fault-matrix upstream failed: ${error.message}\n`);
    process.exit(1);
  });
