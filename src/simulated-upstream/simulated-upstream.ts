import { createHash } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tokensForChars } from '../inference/tokens';

/**
 * The built-in simulated upstream: a small chat-completions server (not a kind of host: the
 * shipped catalogue reaches it as an `openai` host, over HTTP like any real one) that streams a
 * made-up reply at a realistic pace and reports usage, so a newcomer can chat with no provider
 * account; it answers embeddings too, with deterministic vectors. `npm start` runs it beside the gateway; the gateway bench uses it as its upstream.
 */
export interface SimulatedUpstreamOptions {
  port: number;
  host?: string;
  /** Delay before the first token. */
  firstTokenMs?: number;
  /** Pace of the reply. 0 streams as fast as possible. */
  tokensPerSecond?: number;
}

export interface SimulatedUpstream {
  url: string;
  close(): Promise<void>;
}

interface ChatBody {
  model?: string;
  messages?: Array<{ role?: string; content?: unknown }>;
  max_tokens?: number;
  max_completion_tokens?: number;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  tools?: Array<{ function?: { name?: string } }>;
  tool_choice?: unknown;
  response_format?: { type?: string; json_schema?: { schema?: unknown } };
}

const WORDS =
  'This reply comes from the simulated host built into Model Gateway. It streams tokens at a steady pace and reports usage like a real provider, so billing, streaming and the dashboard can be tried without any provider account.'.split(
    ' ',
  );

const partText = (part: unknown): string =>
  typeof part === 'object' && part !== null && 'text' in part && typeof part.text === 'string' ? part.text : '';

const contentText = (content: unknown): string =>
  typeof content === 'string' ? content : Array.isArray(content) ? content.map(partText).join(' ') : '';

/** The reply's pieces (one token each): an echo of the last user message, then the fixed text. */
function replyPieces(body: ChatBody, limit: number): string[] {
  const last = [...(body.messages ?? [])].reverse().find((m) => m.role === 'user' || m.role === 'tool');
  const prefix = last?.role === 'tool' ? 'The tool answered: ' : 'You said: ';
  const echo = contentText(last?.content).split(/\s+/).filter(Boolean).slice(0, 12);
  const words = [...`${prefix}${echo.join(' ')}.`.split(' '), ...WORDS];
  return words.slice(0, Math.max(1, limit)).map((w, i) => (i === 0 ? w : ` ${w}`));
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A value a JSON Schema describes, its strings holding `text`: every property, the first of an enum or a union. */
function instanceOf(schema: unknown, text: string): unknown {
  if (!isRecord(schema)) return null;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const union = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(union) && union.length > 0) return instanceOf(union[0], text);
  const types: unknown[] = Array.isArray(schema.type) ? schema.type : [schema.type];
  const type = types.find((t) => t !== 'null') ?? (isRecord(schema.properties) ? 'object' : undefined);
  if (type === 'object')
    return Object.fromEntries(
      Object.entries(isRecord(schema.properties) ? schema.properties : {}).map(([k, v]) => [k, instanceOf(v, text)]),
    );
  if (type === 'array') return [instanceOf(schema.items, text)];
  if (type === 'string') return text;
  if (type === 'integer' || type === 'number') return 1;
  if (type === 'boolean') return true;
  return null;
}

/**
 * Structured output, honoured as a real host does: for a `response_format` asking for JSON, the reply
 * is JSON (an instance of the schema; JSON mode: `{"reply": …}`), a few characters a piece. Null: text.
 */
function jsonPieces(body: ChatBody, limit: number): string[] | null {
  const format = body.response_format;
  if (format?.type !== 'json_object' && format?.type !== 'json_schema') return null;
  const text = replyPieces(body, 12).join('');
  const schema = format.type === 'json_schema' ? format.json_schema?.schema : undefined;
  const json = JSON.stringify(schema === undefined ? { reply: text } : instanceOf(schema, text));
  return (json.match(/[\s\S]{1,4}/g) ?? [json]).slice(0, Math.max(1, limit));
}

function forcedTool(body: ChatBody): string | null {
  const tools = body.tools ?? [];
  if (tools.length === 0) return null;
  const choice = body.tool_choice as { function?: { name?: string } } | string | undefined;
  if (typeof choice === 'object' && choice?.function?.name) return choice.function.name;
  if (choice === 'required') return tools[0].function?.name ?? null;
  return null;
}

interface EmbeddingsBody {
  model?: string;
  input?: unknown;
  dimensions?: number;
  encoding_format?: string;
}

/** Length of the simulated vectors when the request names no `dimensions`. */
const SIMULATED_DIMENSIONS = 256;

/**
 * A deterministic unit vector for a text or token array: the same input always embeds the same,
 * whatever the process. Components come from SHA-256 in counter mode, centred and normalized.
 */
export function simulatedEmbedding(piece: string | number[], dimensions: number): number[] {
  const seed = typeof piece === 'string' ? `t:${piece}` : `n:${piece.join(',')}`;
  const raw: number[] = [];
  for (let block = 0; raw.length < dimensions; block++) {
    const digest = createHash('sha256').update(`${block}:${seed}`).digest();
    for (let i = 0; i + 1 < digest.length && raw.length < dimensions; i += 2) raw.push(digest.readUInt16LE(i) / 32767.5 - 1);
  }
  const norm = Math.sqrt(raw.reduce((n, x) => n + x * x, 0)) || 1;
  return raw.map((x) => Math.fround(x / norm));
}

/** The pieces of an embeddings input (a text, texts, a token array, token arrays), or null when it is none of these. */
function embeddingPieces(input: unknown): Array<string | number[]> | null {
  if (typeof input === 'string') return [input];
  if (!Array.isArray(input) || input.length === 0) return null;
  if (input.every((x) => typeof x === 'number')) return [input];
  if (input.every((x) => typeof x === 'string' || (Array.isArray(x) && x.every((n) => typeof n === 'number')))) return input;
  return null;
}

/** POST /v1/embeddings as OpenAI answers it: vectors as floats or base64 (little-endian float32), usage in tokens. */
function embeddingsReply(body: EmbeddingsBody): { status: number; body: unknown } {
  const pieces = embeddingPieces(body.input);
  const dimensions = body.dimensions ?? SIMULATED_DIMENSIONS;
  if (!pieces || !Number.isSafeInteger(dimensions) || dimensions < 1 || dimensions > 4096) {
    const message = 'input must be a string, strings or token arrays; dimensions a whole number from 1 to 4096';
    return { status: 400, body: { error: { message, type: 'invalid_request_error' } } };
  }
  const data = pieces.map((piece, index) => {
    const vector = simulatedEmbedding(piece, dimensions);
    const embedding =
      body.encoding_format === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
    return { object: 'embedding', index, embedding };
  });
  const tokens = pieces.reduce((n, p) => n + (typeof p === 'string' ? tokensForChars(p.length) : p.length), 0);
  return {
    status: 200,
    body: { object: 'list', data, model: body.model ?? 'sim-embedding', usage: { prompt_tokens: tokens, total_tokens: tokens } },
  };
}

const promptTokens = (body: ChatBody) =>
  tokensForChars((body.messages ?? []).reduce((n, m) => n + contentText(m.content).length, 0)) + 4 * (body.messages?.length ?? 0);

export async function startSimulatedUpstream(options: SimulatedUpstreamOptions): Promise<SimulatedUpstream> {
  const firstTokenMs = options.firstTokenMs ?? 150;
  const pace = options.tokensPerSecond ?? 60;
  const timers = new Set<NodeJS.Timeout>();
  const wait = (ms: number) =>
    ms <= 0
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            timers.delete(timer);
            resolve();
          }, ms);
          timers.add(timer);
        });

  const answer = async (body: ChatBody, res: ServerResponse, gone: () => boolean) => {
    const id = `chatcmpl-sim${Date.now().toString(36)}`;
    const created = Math.floor(Date.now() / 1000);
    const model = body.model ?? 'sim-chat';
    const limit = body.max_completion_tokens ?? body.max_tokens ?? 200;
    const tool = forcedTool(body);
    const pieces = tool ? [] : (jsonPieces(body, limit) ?? replyPieces(body, limit));
    const toolArgs = tool ? ['{"input"', ': "simulated"}'] : [];
    const usage = { prompt_tokens: promptTokens(body), completion_tokens: tool ? 8 : pieces.length, total_tokens: 0 };
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    const finish = tool ? 'tool_calls' : pieces.length >= limit ? 'length' : 'stop';

    if (!body.stream) {
      await wait(firstTokenMs + (pace > 0 ? (pieces.length * 1000) / pace : 0));
      const message = tool
        ? {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'call_sim_1', type: 'function', function: { name: tool, arguments: toolArgs.join('') } }],
          }
        : { role: 'assistant', content: pieces.join('') };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created,
          model,
          choices: [{ index: 0, message, finish_reason: finish }],
          usage,
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices, ...extra })}\n\n`);
    await wait(firstTokenMs);
    send([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
    if (tool) {
      toolArgs.forEach((args, i) =>
        send([
          {
            index: 0,
            delta: {
              tool_calls: [
                {
                  index: 0,
                  ...(i === 0 ? { id: 'call_sim_1', type: 'function' } : {}),
                  function: { ...(i === 0 ? { name: tool } : {}), arguments: args },
                },
              ],
            },
            finish_reason: null,
          },
        ]),
      );
    }
    for (const piece of pieces) {
      if (gone()) return;
      send([{ index: 0, delta: { content: piece }, finish_reason: null }]);
      if (pace > 0) await wait(1000 / pace);
    }
    send([{ index: 0, delta: {}, finish_reason: finish }]);
    if (body.stream_options?.include_usage) send([], { usage });
    res.end('data: [DONE]\n\n');
  };

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const embeddings = req.url?.endsWith('/embeddings') === true;
    if (req.method !== 'POST' || (!embeddings && !req.url?.endsWith('/chat/completions'))) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: {
            message: 'the simulated host serves POST /v1/chat/completions and POST /v1/embeddings',
            type: 'invalid_request_error',
          },
        }),
      );
      return;
    }
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (raw += chunk));
    req.on('end', () => {
      let body: ChatBody;
      try {
        body = JSON.parse(raw) as ChatBody;
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'body is not JSON', type: 'invalid_request_error' } }));
        return;
      }
      if (embeddings) {
        const answer = embeddingsReply(body);
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer.body));
        return;
      }
      let closed = false;
      res.on('close', () => (closed = true));
      answer(body, res, () => closed).catch(() => res.destroy());
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        timers.forEach(clearTimeout);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
