/**
 * The fault matrix's upstream, in a process of its own: a fake provider speaking OpenAI chat
 * completions (/v1/chat/completions) and Anthropic Messages (/v1/messages), streamed and whole,
 * with usage, in their real shapes (as test/support/fake-upstream.ts does for the tests, which the
 * build, and so the Docker image, does not hold). The catalogue reaches it as an `openai` host and
 * an `anthropic` host.
 *
 *   node dist/bench/fault-matrix/upstream.js
 *
 * Host models (the same on either format): each replies `word1 word2 …`, one word a piece (the
 * first with the headers), and reports REPORTED_INPUT input tokens and one output token a word.
 *   fm-paced   STREAM_WORDS words, a piece every 15 ms: streams in flight when a fault strikes
 *   fm-slow    100 words, a piece every 200 ms: streams held open until their clients leave
 *
 * Reports `{ port }` to its parent over IPC once it listens; stops on SIGTERM, SIGINT, or when the
 * parent goes away (the IPC channel closes), so it never outlives the bench.
 */
import { randomBytes } from 'node:crypto';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const PACED_MODEL = 'fm-paced';
export const SLOW_MODEL = 'fm-slow';
const STREAM_WORDS = 24;
const PACE: Record<string, { words: number; gapMs: number }> = {
  [PACED_MODEL]: { words: STREAM_WORDS, gapMs: 15 },
  [SLOW_MODEL]: { words: 100, gapMs: 200 },
};
const REPORTED_INPUT = 12;

const newId = (prefix: string) => prefix + randomBytes(12).toString('hex');
const sse = (data: object | string, event?: string) =>
  `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

interface Reply {
  model: string;
  pieces: string[];
  output: number;
}

/** OpenAI chat completions: the whole reply, or its chunks (the usage chunk when asked for) and `[DONE]`. */
const openai = {
  usage: (r: Reply) => ({
    prompt_tokens: REPORTED_INPUT,
    completion_tokens: r.output,
    total_tokens: REPORTED_INPUT + r.output,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  }),
  whole(r: Reply) {
    return {
      id: newId('chatcmpl-'),
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: r.model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: r.pieces.join(''), refusal: null },
          logprobs: null,
          finish_reason: 'stop',
        },
      ],
      usage: openai.usage(r),
    };
  },
  stream(r: Reply, body: { stream_options?: { include_usage?: boolean } }): { head: string[]; pieces: string[]; tail: string[] } {
    const base = {
      id: newId('chatcmpl-'),
      object: 'chat.completion.chunk',
      created: Math.floor(Date.now() / 1000),
      model: r.model,
    };
    const includeUsage = body.stream_options?.include_usage === true;
    const chunk = (delta: object, finish: string | null = null) =>
      sse({
        ...base,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
        ...(includeUsage ? { usage: null } : {}),
      });
    return {
      head: [chunk({ role: 'assistant', content: '' })],
      pieces: r.pieces.map((content) => chunk({ content })),
      tail: [chunk({}, 'stop'), ...(includeUsage ? [sse({ ...base, choices: [], usage: openai.usage(r) })] : []), sse('[DONE]')],
    };
  },
};

/** Anthropic Messages: the whole message, or message_start … message_stop (message_delta's usage cumulative). */
const anthropic = {
  usage: (output: number) => ({
    input_tokens: REPORTED_INPUT,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    output_tokens: output,
    service_tier: 'standard',
  }),
  whole(r: Reply) {
    return {
      id: newId('msg_'),
      type: 'message',
      role: 'assistant',
      model: r.model,
      content: [{ type: 'text', text: r.pieces.join('') }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: anthropic.usage(r.output),
    };
  },
  stream(r: Reply): { head: string[]; pieces: string[]; tail: string[] } {
    const ev = (type: string, payload: object = {}) => sse({ type, ...payload }, type);
    const message = { id: newId('msg_'), type: 'message', role: 'assistant', model: r.model, content: [], stop_reason: null };
    return {
      head: [
        ev('message_start', { message: { ...message, stop_sequence: null, usage: anthropic.usage(1) } }),
        ev('ping'),
        ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      ],
      pieces: r.pieces.map((text) => ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text } })),
      tail: [
        ev('content_block_stop', { index: 0 }),
        ev('message_delta', {
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: {
            input_tokens: REPORTED_INPUT,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
            output_tokens: r.output,
          },
        }),
        ev('message_stop'),
      ],
    };
  },
};

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://upstream').pathname;
  const format = path === '/v1/chat/completions' ? openai : path === '/v1/messages' ? anthropic : null;
  let body: { model?: string; stream?: boolean; stream_options?: { include_usage?: boolean } };
  try {
    body = JSON.parse(await readBody(req)) as typeof body;
  } catch {
    body = {};
  }
  const pace = PACE[body.model ?? ''];
  if (req.method !== 'POST' || format === null || pace === undefined) {
    res.writeHead(404, { 'content-type': 'application/json' });
    return void res.end(
      JSON.stringify({ error: { message: `no such route or model (${req.method} ${path})`, type: 'invalid_request_error' } }),
    );
  }
  const words = Array.from({ length: pace.words }, (_, i) => `word${i + 1}`);
  const reply: Reply = { model: body.model ?? '', pieces: words.map((w, i) => (i === 0 ? w : ` ${w}`)), output: words.length };
  const ids = format === openai ? { 'x-request-id': newId('req_') } : { 'request-id': newId('req_') };
  if (body.stream !== true) {
    res.writeHead(200, { 'content-type': 'application/json', ...ids });
    return void res.end(JSON.stringify(format.whole(reply)));
  }
  const { head, pieces, tail } = format === openai ? openai.stream(reply, body) : anthropic.stream(reply);
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', ...ids });
  // The first word at once, as a host that starts at once (its reservation may not yet be in the
  // gateway's log); then one every gap until the reply is out, or the client (the gateway) has gone.
  res.write(head.join('') + pieces[0]);
  for (const piece of pieces.slice(1)) {
    await new Promise((done) => setTimeout(done, pace.gapMs));
    if (res.destroyed) return;
    res.write(piece);
  }
  res.end(tail.join(''));
}

async function main(): Promise<void> {
  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    server.closeAllConnections();
    server.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('disconnect', stop);
  const { port } = server.address() as AddressInfo;
  if (process.send) process.send({ port });
  else process.stdout.write(`${JSON.stringify({ port })}\n`);
}

if (require.main === module)
  main().catch((error: Error) => {
    process.stderr.write(`fault-matrix upstream failed: ${error.message}\n`);
    process.exit(1);
  });
