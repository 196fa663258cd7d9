// A fake model provider for the gateway's tests: plain node:http speaking the real wire formats
// of OpenAI chat completions (/v1/chat/completions), Responses (/v1/responses) and embeddings (/v1/embeddings), and Anthropic
// Messages (/v1/messages, and /v1/messages/count_tokens), Amazon Bedrock Runtime (/model/{id}/converse…, /invoke…: see
// fakes/bedrock.ts), streamed (SSE, or AWS's event stream) and not, plus the failure modes a real upstream shows (errors, hangs, cut
// sockets, garbage, in-stream errors). Everything is event-driven; no polling. The Gemini API's wire
// (/v1beta/models/{model}:generateContent, :streamGenerateContent) is in fakes/gemini.ts.
import { randomBytes } from 'node:crypto';
import { createServer, IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { messagesThinkingProblem, samplingProblem, signatureOf } from './fakes/anthropic-thinking';
import { azureRoute } from './fakes/azure';
import { bedrockRoute, serveBedrock } from './fakes/bedrock';
import { DEFAULT_SEARCH, type FakeSearch } from './fakes/search';
import { structuredOutputOf, structuredReply } from './fakes/structured-output';
import {
  GEMINI_MALFORMED,
  GEMINI_STREAM_ERROR,
  geminiError,
  geminiMessage,
  geminiProblem,
  geminiRoute,
  geminiStream,
} from './fakes/gemini';
import { FakeGoogleOAuth } from './fakes/google-oauth';
import {
  googleError,
  vertexAnthropicProblem,
  vertexAuthRefusal,
  vertexFormat,
  vertexGoogleProblem,
  vertexRoute,
} from './fakes/vertex';

export interface FakeReply {
  text?: string;
  /**
   * Reasoning shown before the text: an Anthropic thinking block (with its signature), or a
   * chat-completions host's `reasoning_content` (as DeepSeek and vLLM send it).
   */
  thinking?: string;
  toolCalls?: Array<{ id: string; name: string; arguments: string }>;
  finish?: 'stop' | 'length' | 'tool_calls' | 'stop_sequence';
  stopSequence?: string;
  /** Omitted: {input: 12, output: 6}. null: report no usage at all. */
  usage?: FakeUsage | null;
  /**
   * The web searches the host runs, when the request offers its web search tool (the Responses
   * `web_search`, the messages `web_search_*` server tool, Gemini's `googleSearch`): each with the
   * page it finds, which the text cites. Without them, such a request gets one search (DEFAULT_SEARCH); a request without the tool, none.
   */
  searches?: FakeSearch[];
  /**
   * The usage object's JSON text exactly as written here (any values: negative, fractional,
   * exponent notation, strings, 1e400), in place of `usage`'s, wherever the format carries usage
   * (chat-completions: the last chunk or the reply; messages: message_start, message_delta, the reply).
   */
  wireUsage?: string;
  /** Gemini: the grounding's `webSearchQueries` as sent (empty or repeated ones too), in place of each search's query. */
  webSearchQueries?: string[];
}

export { DEFAULT_SEARCH, type FakeSearch } from './fakes/search';

/** The searches a reply runs: only when the request offers the format's web search tool. */
const searchesOf = (req: any, reply: FakeReply): FakeSearch[] => {
  const offered =
    Array.isArray(req.tools) && req.tools.some((t: any) => typeof t?.type === 'string' && t.type.startsWith('web_search'));
  return offered ? (reply.searches ?? [DEFAULT_SEARCH]) : [];
};

/** Where a reply's `wireUsage` goes: a string no reply holds, replaced by the text once serialized. */
export const WIRE_USAGE = 'wire-usage-slot-5b1e';
export const wired = (json: string, reply: FakeReply): string =>
  reply.wireUsage === undefined ? json : json.split(JSON.stringify(WIRE_USAGE)).join(reply.wireUsage);

/**
 * Tokens as the fake reports them, in each format's real fields. `input` is the uncached input
 * (chat-completions' prompt_tokens adds the cache's tokens to it); `cacheWrite1h` has no
 * chat-completions field, and `reasoning` no Messages field (thinking is within the output).
 */
export interface FakeUsage {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
  cacheWrite1h?: number;
  reasoning?: number;
  /** Gemini's `toolUsePromptTokenCount`: input the host's own tools added to the prompt. */
  toolPrompt?: number;
}

export type FakeBehaviour =
  | {
      kind: 'reply';
      reply: FakeReply;
      chunkDelayMs?: number;
      firstByteDelayMs?: number;
      pieces?: number;
      /** Answers only once this settles: the test decides when the host replies. */
      released?: Promise<unknown>;
    }
  /** An error status; `headers` beside it (a 429's `Retry-After`, as real hosts send it). */
  | { kind: 'status'; status: number; body?: string; headers?: Record<string, string> }
  | { kind: 'hang' }
  | { kind: 'hang_after_headers' }
  | { kind: 'cut'; reply: FakeReply; afterPieces: number }
  | { kind: 'malformed'; afterPieces: number }
  | { kind: 'stream_error'; afterPieces: number }
  /** Exactly these bytes: a whole JSON reply, or (for a streamed request) an SSE body. */
  | { kind: 'verbatim'; body: string }
  /** On /v1/messages/count_tokens: answer this count (without it, one computed from the body). */
  | { kind: 'count'; inputTokens: number };

export interface ReceivedRequest {
  /** When it arrived (performance.now() of this process: the gateway's timers run on the same clock). */
  at: number;
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
  /** The body's bytes as they arrived. */
  raw: string;
  /** The model, for hosts that name it in the path (Bedrock's `/model/{id}/…`, Gemini's `/models/{model}:…`, Vertex AI's `…/publishers/{p}/models/{model}:…`); else body.model. */
  model?: string;
}

export interface FakeUpstream {
  /** http://127.0.0.1:PORT — the hosts' baseUrl is `${url}/v1`. */
  url: string;
  /** Every request, in arrival order, recorded before it is answered. */
  requests: ReceivedRequest[];
  /** Behaviour for requests for `model` (see ReceivedRequest.model); unknown models get DEFAULT_REPLY. */
  on(model: string, behaviour: FakeBehaviour | ((req: ReceivedRequest) => FakeBehaviour)): void;
  /**
   * Resolves when the client closed the connection of the n-th request (0-based) before its
   * response was complete. Rejects if the response completed, or the fake itself cut it.
   */
  closed(index: number): Promise<void>;
  /** Resolves with the nth (0-based, default first) request for `model`, once it has arrived. */
  received(model: string, nth?: number): Promise<ReceivedRequest>;
  /** Closes every socket, hanging ones included, and clears every timer. */
  close(): Promise<void>;
  /** Google's token endpoint, at POST /token: the tokens the Vertex AI routes require. */
  googleOAuth: FakeGoogleOAuth;
}

const DEFAULT_USAGE = { input: 12, output: 6 };
export const DEFAULT_REPLY: FakeReply = { text: 'Hello from the fake upstream.', usage: DEFAULT_USAGE };
// Billing tests need usage unless they opt out, so only an explicit null means "none".
export const withUsage = (r: FakeReply): FakeReply =>
  r.usage === undefined && r.wireUsage === undefined ? { ...r, usage: DEFAULT_USAGE } : r;

type Api = 'openai' | 'anthropic' | 'responses' | 'gemini';
export type Finish = NonNullable<FakeReply['finish']>;
export interface Frame {
  event?: string;
  data: string;
  /** A content delta (text or tool arguments): what afterPieces counts. */
  piece?: boolean;
}
/** head: preamble; body: content blocks and their deltas; tail: finish, usage, terminator. */
export interface Stream {
  head: Frame[];
  body: Frame[];
  tail: Frame[];
}

const newId = (prefix: string) => prefix + randomBytes(12).toString('hex');
const now = () => Math.floor(Date.now() / 1000);
const sse = (f: Frame) => (f.event ? `event: ${f.event}\n` : '') + `data: ${f.data}\n\n`;
export const finishOf = (r: FakeReply): Finish => r.finish ?? (r.toolCalls?.length ? 'tool_calls' : 'stop');
// OpenAI has no separate stop-sequence reason: a matched stop sequence is just 'stop'.
const OPENAI_FINISH: Record<Finish, string> = { stop: 'stop', length: 'length', tool_calls: 'tool_calls', stop_sequence: 'stop' };
const ANTHROPIC_STOP: Record<Finish, string> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  stop_sequence: 'stop_sequence',
};

/** One piece per word (leading whitespace stays with its word, as tokenizers do), or `pieces` near-equal slices. */
export function splitText(text: string, pieces?: number): string[] {
  if (!text) return [];
  if (!pieces || pieces < 1) {
    const words = text.match(/\s*\S+/g) ?? [text];
    const rest = text.slice(words.join('').length);
    if (rest) words[words.length - 1] += rest;
    return words;
  }
  const cut = (i: number) => Math.round((i * text.length) / pieces);
  return Array.from({ length: pieces }, (_, i) => text.slice(cut(i), cut(i + 1))).filter(Boolean);
}

/** Tool arguments always arrive in at least two pieces, so clients must concatenate them. */
export const halves = (s: string) => [s.slice(0, Math.ceil(s.length / 2)), s.slice(Math.ceil(s.length / 2))].filter(Boolean);

const parseArgs = (s: string) => {
  try {
    return JSON.parse(s);
  } catch {
    return {};
  }
};

// ---- OpenAI chat completions ----

function openaiUsage(u: FakeUsage) {
  if (u.cacheWrite1h) throw new Error('chat-completions usage has no 1-hour cache writes');
  const { cacheRead = 0, cacheWrite = 0, reasoning = 0 } = u;
  const prompt = u.input + cacheRead + cacheWrite;
  return {
    prompt_tokens: prompt,
    completion_tokens: u.output,
    total_tokens: prompt + u.output,
    // OpenAI's own fields; cache_write_tokens is what some compatible hosts add.
    prompt_tokens_details: {
      cached_tokens: cacheRead,
      audio_tokens: 0,
      ...(cacheWrite ? { cache_write_tokens: cacheWrite } : {}),
    },
    completion_tokens_details: {
      reasoning_tokens: reasoning,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

/**
 * The log probabilities of a text as chat completions give them with `logprobs: true`, one entry per
 * token (a token here: a piece of the text as the fake splits it), each with `top_logprobs` alternatives.
 */
function logprobsOf(req: any, text: string): object | null {
  if (req.logprobs !== true) return null;
  const alternatives = typeof req.top_logprobs === 'number' ? req.top_logprobs : 0;
  const entry = (token: string, i: number) => ({ token, logprob: -0.5 * i, bytes: [...Buffer.from(token)] });
  return {
    content: splitText(text).map((token, i) => ({
      ...entry(token, i),
      top_logprobs: Array.from({ length: alternatives }, (_, k) => entry(k === 0 ? token : `${token}~${k}`, i + k)),
    })),
    refusal: null,
  };
}

function openaiStream(req: any, reply: FakeReply, pieces?: number): Stream {
  const base = { id: newId('chatcmpl-'), object: 'chat.completion.chunk', created: now(), model: req.model };
  const includeUsage = req.stream_options?.include_usage === true;
  // With include_usage, the real API puts `usage: null` on every chunk but the last.
  const chunk = (delta: object, finish: string | null = null, piece = false): Frame => ({
    data: JSON.stringify({
      ...base,
      choices: [
        {
          index: 0,
          delta,
          // With logprobs asked, each content chunk carries its token's.
          logprobs: (delta as { content?: unknown }).content ? logprobsOf(req, (delta as { content: string }).content) : null,
          finish_reason: finish,
        },
      ],
      ...(includeUsage ? { usage: null } : {}),
    }),
    piece,
  });
  const body: Frame[] = [
    ...splitText(reply.thinking ?? '').map((reasoning_content) => chunk({ reasoning_content }, null, true)),
    ...splitText(reply.text ?? '', pieces).map((content) => chunk({ content }, null, true)),
  ];
  reply.toolCalls?.forEach((call, index) => {
    body.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const part of halves(call.arguments))
      body.push(chunk({ tool_calls: [{ index, function: { arguments: part } }] }, null, true));
  });
  const tail = [chunk({}, OPENAI_FINISH[finishOf(reply)])];
  if (includeUsage && reply.wireUsage !== undefined)
    tail.push({ data: JSON.stringify({ ...base, choices: [], usage: WIRE_USAGE }) });
  else if (includeUsage && reply.usage)
    tail.push({ data: JSON.stringify({ ...base, choices: [], usage: openaiUsage(reply.usage) }) });
  tail.push({ data: '[DONE]' });
  return { head: [chunk({ role: 'assistant', content: '' })], body, tail };
}

function openaiMessage(req: any, reply: FakeReply) {
  const toolCalls = reply.toolCalls?.map((c) => ({
    id: c.id,
    type: 'function',
    function: { name: c.name, arguments: c.arguments },
  }));
  return {
    id: newId('chatcmpl-'),
    object: 'chat.completion',
    created: now(),
    model: req.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: reply.text ?? (toolCalls?.length ? null : ''),
          ...(reply.thinking ? { reasoning_content: reply.thinking } : {}),
          refusal: null,
          ...(toolCalls?.length ? { tool_calls: toolCalls } : {}),
        },
        logprobs: reply.text ? logprobsOf(req, reply.text) : null,
        finish_reason: OPENAI_FINISH[finishOf(reply)],
      },
    ],
    ...(reply.wireUsage !== undefined ? { usage: WIRE_USAGE } : reply.usage ? { usage: openaiUsage(reply.usage) } : {}),
  };
}

/** What OpenAI answers `max_tokens` on a reasoning model (o1, o3, o4-mini, gpt-5…). */
const OPENAI_MAX_TOKENS_REFUSED = {
  error: {
    message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
    type: 'invalid_request_error',
    param: 'max_tokens',
    code: 'unsupported_parameter',
  },
};

function openaiError(status: number, message?: string) {
  const [type, code] =
    status === 401
      ? ['invalid_request_error', 'invalid_api_key']
      : status === 404
        ? ['invalid_request_error', 'model_not_found']
        : status === 429
          ? ['requests', 'rate_limit_exceeded']
          : status >= 500
            ? ['server_error', null]
            : ['invalid_request_error', null];
  return { error: { message: message ?? `Fake upstream error (HTTP ${status}).`, type, param: null, code } };
}

/**
 * What OpenAI's chat completions refuse (on Azure too): more than 4 stop sequences, a function name
 * outside `^[a-zA-Z0-9_-]+$` or over 64; the error body the API answers, naming the parameter.
 */
function chatCompletionsLimitsRefusal(body: any): object | null {
  const invalid = (message: string, param: string, code: string) => ({
    error: { message, type: 'invalid_request_error', param, code },
  });
  if (Array.isArray(body.stop) && body.stop.length > 4)
    return invalid(
      `Invalid 'stop': array too long. Expected an array with maximum length 4, but got an array with length ${body.stop.length} instead.`,
      'stop',
      'array_above_max_length',
    );
  const tools: any[] = Array.isArray(body.tools) ? body.tools : [];
  for (const [i, tool] of tools.entries()) {
    const name = tool?.function?.name;
    if (typeof name !== 'string') continue;
    const param = `tools[${i}].function.name`;
    if (name.length > 64)
      return invalid(
        `Invalid '${param}': string too long. Expected a string with maximum length 64, but got a string with length ${name.length} instead.`,
        param,
        'string_above_max_length',
      );
    if (!/^[a-zA-Z0-9_-]+$/.test(name))
      return invalid(
        `Invalid '${param}': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
        param,
        'invalid_value',
      );
  }
  return null;
}

// ---- Anthropic Messages ----

export { signatureOf };

/** The Messages API's refusal of a tool name outside the pattern it validates, as it words it; null: none. */
function messagesToolNameProblem(body: any): string | null {
  const tools: any[] = Array.isArray(body.tools) ? body.tools : [];
  const i = tools.findIndex((t) => typeof t?.name === 'string' && !/^[a-zA-Z0-9_-]{1,128}$/.test(t.name));
  return i < 0 ? null : `tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`;
}

/** The server tools' requests, as the API counts them in `usage.server_tool_use` (when the request offered one). */
const serverToolUse = (searches: FakeSearch[] | null) =>
  searches === null ? {} : { server_tool_use: { web_search_requests: searches.length, web_fetch_requests: 0 } };

/** A whole reply's usage, or message_start's with its provisional output count. */
const anthropicUsage = (u: FakeUsage, output = u.output, searches: FakeSearch[] | null = null) => ({
  input_tokens: u.input,
  cache_creation_input_tokens: (u.cacheWrite ?? 0) + (u.cacheWrite1h ?? 0),
  cache_read_input_tokens: u.cacheRead ?? 0,
  cache_creation: { ephemeral_5m_input_tokens: u.cacheWrite ?? 0, ephemeral_1h_input_tokens: u.cacheWrite1h ?? 0 },
  output_tokens: output,
  ...serverToolUse(searches),
  service_tier: 'standard',
});

/** message_delta's usage, as the current API sends it: cumulative counts, the input's included (no 5m/1h split). */
const anthropicDeltaUsage = (u: FakeUsage, searches: FakeSearch[] | null) => ({
  input_tokens: u.input,
  cache_creation_input_tokens: (u.cacheWrite ?? 0) + (u.cacheWrite1h ?? 0),
  cache_read_input_tokens: u.cacheRead ?? 0,
  output_tokens: u.output,
  ...serverToolUse(searches),
});

/** A messages server tool's id (`srvtoolu_…`), one per search. */
const serverToolId = (i: number) => `srvtoolu_fake${String(i).padStart(4, '0')}`;

/** The blocks of the searches a reply ran: each a server_tool_use and its web_search_tool_result. */
function searchBlocks(searches: FakeSearch[]): object[] {
  return searches.flatMap((search, i) => [
    { type: 'server_tool_use', id: serverToolId(i), name: 'web_search', input: { query: search.query } },
    {
      type: 'web_search_tool_result',
      tool_use_id: serverToolId(i),
      content: [
        {
          type: 'web_search_result',
          url: search.url,
          title: search.title,
          encrypted_content: Buffer.from(`page:${search.url}`).toString('base64'),
          page_age: null,
        },
      ],
    },
  ]);
}

/** A text block's citations of the searches' pages (the whole text cites them). */
const citationsOf = (searches: FakeSearch[], text: string) =>
  searches.map((search) => ({
    type: 'web_search_result_location',
    url: search.url,
    title: search.title,
    encrypted_index: Buffer.from(`index:${search.url}`).toString('base64'),
    cited_text: text,
  }));

export function anthropicStream(req: any, reply: FakeReply, pieces?: number): Stream {
  const ev = (type: string, payload: object, piece = false): Frame => ({
    event: type,
    data: JSON.stringify({ type, ...payload }),
    piece,
  });
  const { usage } = reply;
  const offered = searchesOf(req, reply);
  const searches = offered.length > 0 ? offered : null;
  const message = {
    id: newId('msg_'),
    type: 'message',
    role: 'assistant',
    model: req.model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    // Like the real API: message_start carries the input tokens and a provisional output count;
    // message_delta's counts are cumulative (clients must not add the two).
    ...(reply.wireUsage !== undefined
      ? { usage: WIRE_USAGE }
      : usage
        ? { usage: anthropicUsage(usage, Math.min(1, usage.output)) }
        : {}),
  };
  const body: Frame[] = [];
  let index = 0;
  if (reply.thinking) {
    body.push(ev('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }));
    for (const thinking of splitText(reply.thinking))
      body.push(ev('content_block_delta', { index, delta: { type: 'thinking_delta', thinking } }, true));
    body.push(ev('content_block_delta', { index, delta: { type: 'signature_delta', signature: signatureOf(reply.thinking) } }));
    body.push(ev('content_block_stop', { index: index++ }));
  }
  // Each search: its server_tool_use (its input streamed), then its result whole, as the API streams them.
  for (const block of searchBlocks(offered) as any[]) {
    if (block.type === 'server_tool_use') {
      body.push(ev('content_block_start', { index, content_block: { ...block, input: {} } }));
      for (const partial_json of halves(JSON.stringify(block.input)))
        body.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } }));
    } else body.push(ev('content_block_start', { index, content_block: block }));
    body.push(ev('content_block_stop', { index: index++ }));
  }
  if (reply.text || !reply.toolCalls?.length) {
    const cited = offered.length > 0;
    body.push(
      ev('content_block_start', { index, content_block: { type: 'text', text: '', ...(cited ? { citations: [] } : {}) } }),
    );
    if (cited)
      for (const citation of citationsOf(offered, reply.text ?? ''))
        body.push(ev('content_block_delta', { index, delta: { type: 'citations_delta', citation } }));
    for (const text of splitText(reply.text ?? '', pieces))
      body.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text } }, true));
    body.push(ev('content_block_stop', { index: index++ }));
  }
  for (const call of reply.toolCalls ?? []) {
    body.push(ev('content_block_start', { index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } }));
    for (const partial_json of halves(call.arguments))
      body.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } }, true));
    body.push(ev('content_block_stop', { index: index++ }));
  }
  const stop = finishOf(reply);
  const tail = [
    ev('message_delta', {
      delta: { stop_reason: ANTHROPIC_STOP[stop], stop_sequence: stop === 'stop_sequence' ? (reply.stopSequence ?? null) : null },
      ...(reply.wireUsage !== undefined ? { usage: WIRE_USAGE } : usage ? { usage: anthropicDeltaUsage(usage, searches) } : {}),
    }),
    ev('message_stop', {}),
  ];
  return { head: [ev('message_start', { message }), ev('ping', {})], body, tail };
}

export function anthropicMessage(req: any, reply: FakeReply) {
  const stop = finishOf(reply);
  const content: object[] = reply.thinking
    ? [{ type: 'thinking', thinking: reply.thinking, signature: signatureOf(reply.thinking) }]
    : [];
  const searches = searchesOf(req, reply);
  content.push(...searchBlocks(searches));
  if (reply.text || !reply.toolCalls?.length)
    content.push({
      type: 'text',
      text: reply.text ?? '',
      ...(searches.length > 0 ? { citations: citationsOf(searches, reply.text ?? '') } : {}),
    });
  for (const c of reply.toolCalls ?? [])
    content.push({ type: 'tool_use', id: c.id, name: c.name, input: parseArgs(c.arguments) });
  return {
    id: newId('msg_'),
    type: 'message',
    role: 'assistant',
    model: req.model,
    content,
    stop_reason: ANTHROPIC_STOP[stop],
    stop_sequence: stop === 'stop_sequence' ? (reply.stopSequence ?? null) : null,
    ...(reply.wireUsage !== undefined
      ? { usage: WIRE_USAGE }
      : reply.usage
        ? { usage: anthropicUsage(reply.usage, reply.usage.output, searches.length > 0 ? searches : null) }
        : {}),
  };
}

const ANTHROPIC_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

function anthropicError(status: number, message?: string) {
  const type = ANTHROPIC_ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
  return {
    type: 'error',
    error: { type, message: message ?? `Fake upstream error (HTTP ${status}).` },
    request_id: newId('req_'),
  };
}

// ---- OpenAI Responses ----

/**
 * What the Responses API refuses of a body the fake otherwise serves, as it refuses it: a
 * `max_output_tokens` below its minimum of 16 (OpenAI's and Azure's words and code). Null: served.
 */
function responsesRefusal(req: any) {
  const cap = req.max_output_tokens;
  if (typeof cap !== 'number' || cap >= 16) return null;
  return {
    error: {
      message: `Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got ${cap} instead.`,
      type: 'invalid_request_error',
      param: 'max_output_tokens',
      code: 'integer_below_min_value',
    },
  };
}

/**
 * Responses usage: `input_tokens` includes the tokens read from the cache and written to it, each
 * in its `input_tokens_details` field (both required by the API's ResponseUsage); the format has no
 * 1-hour writes.
 */
function responsesUsage(u: FakeUsage) {
  if (u.cacheWrite1h) throw new Error('Responses usage has no 1-hour cache writes');
  const { cacheRead = 0, cacheWrite = 0, reasoning = 0 } = u;
  const input = u.input + cacheRead + cacheWrite;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: cacheRead, cache_write_tokens: cacheWrite },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: reasoning },
    total_tokens: input + u.output,
  };
}

/** A reasoning item's encrypted content (opaque on the real API): one per summary, so tests can expect it. */
export const encryptedReasoningOf = (summary: string) => Buffer.from(`encrypted:${summary}`).toString('base64');

/** The output items of a reply, complete; `include` as the request asked (`reasoning.encrypted_content`). */
function responsesItems(req: any, reply: FakeReply) {
  const encrypted = Array.isArray(req.include) && req.include.includes('reasoning.encrypted_content');
  const items: any[] = [];
  if (reply.thinking)
    items.push({
      id: newId('rs_'),
      type: 'reasoning',
      summary: [{ type: 'summary_text', text: reply.thinking }],
      ...(encrypted ? { encrypted_content: encryptedReasoningOf(reply.thinking) } : {}),
    });
  const searches = searchesOf(req, reply);
  for (const search of searches)
    items.push({
      id: newId('ws_'),
      type: 'web_search_call',
      status: 'completed',
      action: { type: 'search', query: search.query, sources: [{ type: 'url', url: search.url }] },
    });
  const text = reply.text ?? '';
  if (reply.text || !reply.toolCalls?.length)
    items.push({
      id: newId('msg_'),
      type: 'message',
      status: 'completed',
      role: 'assistant',
      content: [
        {
          type: 'output_text',
          text,
          // The whole text cites each page found.
          annotations: searches.map((search) => ({
            type: 'url_citation',
            start_index: 0,
            end_index: text.length,
            url: search.url,
            title: search.title,
          })),
          logprobs: [],
        },
      ],
    });
  for (const c of reply.toolCalls ?? [])
    items.push({
      id: newId('fc_'),
      type: 'function_call',
      status: 'completed',
      arguments: c.arguments,
      call_id: c.id,
      name: c.name,
    });
  return items;
}

/** The response object, as the real API returns it (and as its stream's first and last events carry it). */
function responsesObject(req: any, reply: FakeReply, id: string, state: 'in_progress' | 'final') {
  const length = finishOf(reply) === 'length';
  const status = state === 'in_progress' ? 'in_progress' : length ? 'incomplete' : 'completed';
  return {
    id,
    object: 'response',
    created_at: now(),
    status,
    background: false,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: req.instructions ?? null,
    max_output_tokens: req.max_output_tokens ?? null,
    max_tool_calls: null,
    model: req.model,
    output: state === 'in_progress' ? [] : responsesItems(req, reply),
    parallel_tool_calls: true,
    previous_response_id: null,
    prompt_cache_key: null,
    reasoning: { effort: req.reasoning?.effort ?? null, summary: req.reasoning?.summary ?? null },
    safety_identifier: null,
    service_tier: 'default',
    store: req.store ?? true,
    temperature: req.temperature ?? 1,
    text: { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: req.tool_choice ?? 'auto',
    tools: req.tools ?? [],
    top_logprobs: 0,
    top_p: req.top_p ?? 1,
    truncation: 'disabled',
    usage:
      state === 'in_progress'
        ? null
        : reply.wireUsage !== undefined
          ? WIRE_USAGE
          : reply.usage
            ? responsesUsage(reply.usage)
            : null,
    user: null,
    metadata: {},
  };
}

/** A Responses stream with every event the real API sends for such a reply, each with its `sequence_number`. */
function responsesStream(req: any, reply: FakeReply, pieces?: number): Stream {
  let sequence = 0;
  const ev = (type: string, payload: object, piece = false): Frame => ({
    event: type,
    data: JSON.stringify({ type, ...payload, sequence_number: sequence++ }),
    piece,
  });
  const id = newId('resp_');
  const head = [
    ev('response.created', { response: responsesObject(req, reply, id, 'in_progress') }),
    ev('response.in_progress', { response: responsesObject(req, reply, id, 'in_progress') }),
  ];
  const body: Frame[] = [];
  responsesItems(req, reply).forEach((item, output_index) => {
    const item_id = item.id;
    if (item.type === 'reasoning') {
      const text = item.summary[0].text;
      const { encrypted_content, ...rest } = item;
      body.push(ev('response.output_item.added', { output_index, item: { ...rest, summary: [] } }));
      const at = { item_id, output_index, summary_index: 0 };
      body.push(ev('response.reasoning_summary_part.added', { ...at, part: { type: 'summary_text', text: '' } }));
      for (const delta of splitText(text)) body.push(ev('response.reasoning_summary_text.delta', { ...at, delta }, true));
      body.push(ev('response.reasoning_summary_text.done', { ...at, text }));
      body.push(ev('response.reasoning_summary_part.done', { ...at, part: { type: 'summary_text', text } }));
      body.push(
        ev('response.output_item.done', { output_index, item: { ...rest, ...(encrypted_content ? { encrypted_content } : {}) } }),
      );
    } else if (item.type === 'web_search_call') {
      const { action: _action, ...opened } = item;
      body.push(ev('response.output_item.added', { output_index, item: { ...opened, status: 'in_progress' } }));
      for (const phase of ['in_progress', 'searching', 'completed'])
        body.push(ev(`response.web_search_call.${phase}`, { item_id, output_index }));
      body.push(ev('response.output_item.done', { output_index, item }));
    } else if (item.type === 'message') {
      const text = item.content[0].text;
      body.push(ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } }));
      const at = { item_id, output_index, content_index: 0 };
      body.push(
        ev('response.content_part.added', { ...at, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } }),
      );
      for (const delta of splitText(text, pieces))
        body.push(ev('response.output_text.delta', { ...at, delta, logprobs: [] }, true));
      item.content[0].annotations.forEach((annotation: object, annotation_index: number) =>
        body.push(ev('response.output_text.annotation.added', { ...at, annotation_index, annotation })),
      );
      body.push(ev('response.output_text.done', { ...at, text, logprobs: [] }));
      body.push(ev('response.content_part.done', { ...at, part: item.content[0] }));
      body.push(ev('response.output_item.done', { output_index, item }));
    } else {
      body.push(ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', arguments: '' } }));
      for (const delta of halves(item.arguments))
        body.push(ev('response.function_call_arguments.delta', { item_id, output_index, delta }, true));
      body.push(ev('response.function_call_arguments.done', { item_id, output_index, arguments: item.arguments }));
      body.push(ev('response.output_item.done', { output_index, item }));
    }
  });
  const final = responsesObject(req, reply, id, 'final');
  const tail = [ev(final.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: final })];
  return { head, body, tail };
}

const responsesMessage = (req: any, reply: FakeReply) => responsesObject(req, reply, newId('resp_'), 'final');

/** One wire format's replies, streams and errors (its errors' extra headers: a 429's retry-after). */
export interface FakeFormat {
  stream(req: any, reply: FakeReply, pieces?: number): Stream;
  message(req: any, reply: FakeReply): object;
  error(status: number, message?: string): object;
  errorHeaders?(status: number): Record<string, string>;
  /** The header naming the request, when the API sends one. */
  requestIdHeader: string | null;
}

const wireUsageSlot = () => WIRE_USAGE;

const FORMATS: Record<'openai' | 'anthropic' | 'responses' | 'gemini', FakeFormat> = {
  openai: { stream: openaiStream, message: openaiMessage, error: openaiError, requestIdHeader: 'x-request-id' },
  anthropic: { stream: anthropicStream, message: anthropicMessage, error: anthropicError, requestIdHeader: 'request-id' },
  responses: { stream: responsesStream, message: responsesMessage, error: openaiError, requestIdHeader: 'x-request-id' },
  gemini: {
    stream: (req, reply, pieces) => geminiStream(req, reply, wireUsageSlot, pieces, splitText),
    message: (req, reply) => geminiMessage(req, reply, wireUsageSlot),
    error: geminiError,
    requestIdHeader: null,
  },
};

/** The frame a decoder must reject: an event whose data is truncated JSON. */
const MALFORMED: Record<Api, string> = {
  openai: 'data: {"choices":[{"index":0,"delta":{"content":"trunc\n\n',
  anthropic: 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":\n\n',
  responses: 'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":\n\n',
  gemini: GEMINI_MALFORMED,
};

/** How real upstreams report a failure after the 200 has gone out. */
const STREAM_ERROR: Record<Api, string> = {
  openai: sse({ data: JSON.stringify(openaiError(500, 'The server had an error while processing your request.')) }),
  anthropic: sse({
    event: 'error',
    data: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
  }),
  // The Responses stream's error event (its sequence number past any frame the fake plays before it).
  responses: sse({
    event: 'error',
    data: JSON.stringify({
      type: 'error',
      code: 'server_error',
      message: 'The server had an error while processing your request.',
      param: null,
      sequence_number: 999,
    }),
  }),
  gemini: GEMINI_STREAM_ERROR,
};

/** Failure modes play the default text: per word, or finer when more pieces than words are asked for. */
export const fillerPieces = (afterPieces: number) =>
  afterPieces < splitText(DEFAULT_REPLY.text!).length ? undefined : afterPieces + 1;

/** Head plus body up to and including the n-th piece (n = 0: none); never the tail. */
export function upToPiece(s: Stream, n: number): Frame[] {
  const out = [...s.head];
  let seen = 0;
  for (const f of s.body) {
    if (f.piece && seen === n) break;
    out.push(f);
    if (f.piece && ++seen === n) break;
  }
  return out;
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve(v: T): void;
  reject(e: Error): void;
}
function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  promise.catch(() => {}); // nobody has to await closed(i): a rejection nobody asked for is not an error
  return { promise, resolve, reject };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
    req.on('close', () => reject(new Error('client went away mid-body'))); // no-op after 'end'
  });
}

export async function startFakeUpstream(): Promise<FakeUpstream> {
  const requests: ReceivedRequest[] = [];
  const behaviours = new Map<string, FakeBehaviour | ((req: ReceivedRequest) => FakeBehaviour)>();
  const closedSignals: Array<Deferred<void>> = [];
  const waiters: Array<{ model: string; nth: number; resolve(r: ReceivedRequest): void }> = [];
  const timers = new Set<NodeJS.Timeout>();
  let shuttingDown = false;

  const signal = (i: number) => (closedSignals[i] ??= deferred<void>());

  const googleOAuth = new FakeGoogleOAuth();
  const nthFor = (model: string, nth: number) => requests.filter((r) => (r.model ?? r.body?.model) === model)[nth];
  const wakeWaiters = () => {
    for (const w of [...waiters]) {
      const hit = nthFor(w.model, w.nth);
      if (hit) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(hit);
      }
    }
  };

  async function handle(req: IncomingMessage, res: ServerResponse) {
    // Arrival is when its head came, before its body is read.
    const at = performance.now();
    const raw = await readBody(req);
    let body: any;
    try {
      body = raw ? JSON.parse(raw) : {};
    } catch {
      body = raw;
    }
    const url = new URL(req.url ?? '/', 'http://fake');
    const path = url.pathname;
    const bedrock = bedrockRoute(path);
    const gemini = geminiRoute(path);
    const vertex = vertexRoute(path);
    const pathModel = bedrock?.modelId ?? gemini?.model ?? (vertex && !vertex.countTokens ? vertex.model : undefined);
    const received: ReceivedRequest = {
      at,
      path,
      headers: req.headers,
      body,
      raw,
      ...(pathModel !== undefined && { model: pathModel }),
    };
    const index = requests.push(received) - 1;

    let gone = false; // the connection closed: stop writing, drop pending timers
    let cutByUs = false;
    const pending = new Set<NodeJS.Timeout>();
    res.on('close', () => {
      gone = true;
      for (const t of pending) {
        clearTimeout(t);
        timers.delete(t);
      }
      if (!res.writableEnded && !cutByUs && !shuttingDown) signal(index).resolve();
      else
        signal(index).reject(
          new Error(
            `request ${index} ${cutByUs || shuttingDown ? 'was closed by the fake' : 'completed'}; the client did not close it`,
          ),
        );
    });
    const pause = (ms = 0) =>
      ms <= 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            const t = setTimeout(() => {
              timers.delete(t);
              pending.delete(t);
              resolve();
            }, ms);
            timers.add(t);
            pending.add(t);
          });
    wakeWaiters();
    if (bedrock && req.method === 'POST') {
      const configured = behaviours.get(bedrock.modelId);
      const cut = () => ((cutByUs = true), res.socket?.destroy());
      const call = { req, res, received, pause, gone: () => gone, cut };
      return serveBedrock(bedrock, call, typeof configured === 'function' ? configured(received) : configured);
    }

    if (path === '/token' && req.method === 'POST') {
      const answer = googleOAuth.answer(raw, req.headers['content-type']);
      return send(res, answer.status, answer.body);
    }
    if (vertex) {
      const refusal = vertexAuthRefusal(req.headers, googleOAuth);
      if (refusal) return send(res, refusal.status, refusal.body);
      const claude = vertex.publisher === 'anthropic';
      const problem = claude ? vertexAnthropicProblem(body, vertex) : vertexGoogleProblem(body);
      if (problem) return send(res, 400, claude ? anthropicError(400, problem) : googleError(400, problem));
    }
    if ((path === '/v1/messages/count_tokens' || vertex?.countTokens) && req.method === 'POST')
      return countTokens(res, body, behaviours.get(body?.model), received);
    if (path === '/v1/embeddings' && req.method === 'POST') return embeddings(res, body, behaviours.get(body?.model), received);
    const azure = azureRoute(req, body, FORMATS);
    if (azure && 'refusal' in azure) return send(res, azure.refusal.status, azure.refusal.body, azure.refusal.headers);
    if (azure?.api === 'embeddings')
      return embeddings(res, { ...body, model: azure.model }, behaviours.get(azure.model), received);
    const api: Api | null = vertex
      ? vertex.publisher === 'anthropic'
        ? 'anthropic'
        : 'gemini'
      : azure
        ? azure.api
        : path === '/v1/chat/completions'
          ? 'openai'
          : path === '/v1/messages'
            ? 'anthropic'
            : path === '/v1/responses'
              ? 'responses'
              : gemini
                ? 'gemini'
                : null;
    if (!api || req.method !== 'POST') {
      return send(res, 404, openaiError(404, `Invalid URL (${req.method} ${path})`));
    }
    const fmt = vertex ? vertexFormat(FORMATS[api], vertex.publisher) : (azure?.format ?? FORMATS[api]);
    const ids: Record<string, string> = fmt.requestIdHeader ? { [fmt.requestIdHeader]: newId('req_') } : {};
    if (typeof body !== 'object' || body === null)
      return send(res, 400, fmt.error(400, 'The request body is not valid JSON.'), ids);
    // OpenAI's reasoning models refuse max_tokens, as the real API does (their cap is max_completion_tokens).
    if (api === 'openai' && /^(o\d|gpt-5)/.test(azure?.model ?? body.model) && 'max_tokens' in body)
      return send(res, 400, OPENAI_MAX_TOKENS_REFUSED, ids);
    // What the Messages API refuses beside thinking, whatever the test configured: a gateway sending it fails.
    const thinkingProblem =
      api === 'anthropic'
        ? (messagesThinkingProblem(body) ?? samplingProblem(vertex?.model ?? body.model, body.temperature, body.top_p))
        : null;
    if (thinkingProblem) return send(res, 400, fmt.error(400, thinkingProblem), ids);
    // Stop sequences and tool names the API refuses, as it says so.
    const toolNameProblem = api === 'anthropic' ? messagesToolNameProblem(body) : null;
    const limitRefused =
      api === 'openai' ? chatCompletionsLimitsRefusal(body) : toolNameProblem ? fmt.error(400, toolNameProblem) : null;
    if (limitRefused) return send(res, 400, limitRefused, ids);
    // What the Gemini API refuses (a Gemini 3 call without its signature, a budget the model does not take…), on Vertex AI too.
    const googleProblem = api === 'gemini' ? geminiProblem((gemini ?? vertex)!.model, body, vertex !== null) : null;
    if (googleProblem) return send(res, 400, fmt.error(400, googleProblem), ids);
    const refused = api === 'responses' ? responsesRefusal(body) : null;
    if (refused) return send(res, 400, refused, ids);
    // Structured output as each API takes it: a wrong shape refused in its words; asked for, the reply's text is JSON.
    const structured = structuredOutputOf(api, body);
    if (typeof structured === 'string') return send(res, 400, fmt.error(400, structured), ids);
    // The fake speaks Gemini's stream as server-sent events only (the API's other form is one JSON array).
    if ((gemini?.stream || (vertex?.publisher === 'google' && vertex.stream)) && url.searchParams.get('alt') !== 'sse')
      return send(res, 400, geminiError(400, 'the fake streams only with alt=sse'), ids);
    // Gemini and Vertex AI name the model in the path: the wire functions read it from the request as the others' bodies carry it.
    const pathRoute = gemini ?? vertex;
    const request = pathRoute ? { ...body, model: pathRoute.model } : body;

    const configured = behaviours.get(azure?.model ?? pathRoute?.model ?? body.model);
    const b: FakeBehaviour = (typeof configured === 'function' ? configured(received) : configured) ?? {
      kind: 'reply',
      reply: DEFAULT_REPLY,
    };
    const reply = 'reply' in b ? structuredReply(withUsage(b.reply), structured) : DEFAULT_REPLY;
    const streamed = pathRoute ? pathRoute.stream : body.stream === true;
    const sseHead = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', ...ids };
    const jsonHead = { 'content-type': 'application/json', ...ids };

    // Writes frames (with a pause between them), then ends, or destroys the socket once the
    // last bytes are flushed so the client really receives them before the reset.
    const play = async (chunks: string[], end: 'end' | 'cut', gapMs = 0) => {
      res.writeHead(200, sseHead);
      res.flushHeaders();
      for (const [i, chunk] of chunks.entries()) {
        if (i > 0) await pause(gapMs);
        if (gone) return;
        if (end === 'cut' && i === chunks.length - 1) return void res.write(chunk, () => cut());
        res.write(chunk);
      }
      if (end === 'cut') cut();
      else res.end();
    };
    const cut = () => {
      cutByUs = true;
      res.socket?.destroy();
    };

    switch (b.kind) {
      case 'reply': {
        await b.released;
        await pause(b.firstByteDelayMs);
        if (gone) return;
        if (!streamed) return send(res, 200, wired(JSON.stringify(fmt.message(request, reply)), reply), ids);
        const s = fmt.stream(request, reply, b.pieces);
        return play(
          [...s.head, ...s.body, ...s.tail].map((f) => wired(sse(f), reply)),
          'end',
          b.chunkDelayMs,
        );
      }
      case 'status': {
        const head = { ...ids, ...fmt.errorHeaders?.(b.status), ...b.headers };
        if (b.body === undefined) return send(res, b.status, fmt.error(b.status), head);
        let isJson = true;
        try {
          JSON.parse(b.body);
        } catch {
          isJson = false; // e.g. an HTML page from a proxy: hosts must cope with non-JSON error bodies
        }
        return send(res, b.status, b.body, {
          ...head,
          'content-type': isJson ? 'application/json' : 'text/plain; charset=utf-8',
        });
      }
      case 'hang':
        return; // request read and recorded; nothing is ever sent
      case 'hang_after_headers':
        res.writeHead(200, streamed ? sseHead : jsonHead);
        return void res.flushHeaders();
      case 'cut': {
        if (!streamed) {
          // Announce the full length, send half: the client sees a truncated body.
          const full = JSON.stringify(fmt.message(request, reply));
          res.writeHead(200, { ...jsonHead, 'content-length': Buffer.byteLength(full) });
          return void res.write(full.slice(0, full.length >> 1), () => cut());
        }
        return play(upToPiece(fmt.stream(request, reply), b.afterPieces).map(sse), 'cut');
      }
      case 'malformed': {
        if (!streamed) return send(res, 200, '{"id":"truncated",', jsonHead);
        const frames = upToPiece(fmt.stream(request, DEFAULT_REPLY, fillerPieces(b.afterPieces)), b.afterPieces).map(sse);
        return play([...frames, MALFORMED[api]], 'end');
      }
      case 'verbatim':
        res.writeHead(200, streamed ? sseHead : jsonHead);
        return void res.end(b.body);
      case 'count':
        return send(res, 400, fmt.error(400, 'a token count is answered on /v1/messages/count_tokens only'), ids);
      case 'stream_error': {
        if (!streamed) return send(res, 500, fmt.error(500), ids);
        const frames = upToPiece(fmt.stream(request, DEFAULT_REPLY, fillerPieces(b.afterPieces)), b.afterPieces).map(sse);
        return play([...frames, STREAM_ERROR[api]], 'end');
      }
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: Error) => {
      // A behaviour callback that throws must fail the test visibly, not hang it.
      if (res.destroyed) return; // e.g. the client went away mid-body
      if (res.headersSent) res.destroy();
      else send(res, 500, `fake upstream failure: ${err.message}`, { 'content-type': 'text/plain; charset=utf-8' });
    });
  });
  server.on('clientError', (_err, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    on(model, behaviour) {
      behaviours.set(model, behaviour);
    },
    closed: (index) => signal(index).promise,
    googleOAuth,
    received(model, nth = 0) {
      const hit = nthFor(model, nth);
      if (hit) return Promise.resolve(hit);
      return new Promise((resolve) => waiters.push({ model, nth, resolve }));
    },
    async close() {
      shuttingDown = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      server.closeAllConnections(); // hanging requests included: server.close alone would wait for them
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * POST /v1/messages/count_tokens as the real API answers it: `{"input_tokens": N}` for a body with
 * a model and messages (N as configured, else about four characters a token of what is counted),
 * an error status as configured, or nothing at all for a hang.
 */
function countTokens(
  res: ServerResponse,
  body: any,
  configured: FakeBehaviour | ((req: ReceivedRequest) => FakeBehaviour) | undefined,
  received: ReceivedRequest,
) {
  const ids = { 'request-id': newId('req_') };
  if (typeof body !== 'object' || body === null || typeof body.model !== 'string' || !Array.isArray(body.messages))
    return send(res, 400, anthropicError(400, 'model: Field required; messages: Field required'), ids);
  const b = typeof configured === 'function' ? configured(received) : configured;
  if (b?.kind === 'status') return send(res, b.status, b.body ?? anthropicError(b.status), ids);
  if (b?.kind === 'hang') return;
  const counted = JSON.stringify([body.system ?? '', body.messages, body.tools ?? []]).length;
  send(res, 200, { input_tokens: b?.kind === 'count' ? b.inputTokens : Math.ceil(counted / 4) }, ids);
}

/** A complete response: objects go out as JSON, strings as they are. */
function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

/** The fake's embedding vectors' length when the request names no `dimensions`. */
export const FAKE_EMBEDDING_DIMENSIONS = 8;

/** The fake's vector for a piece of input: deterministic, so a test can compute what it must receive. */
export function fakeEmbedding(piece: string | number[], dimensions: number): number[] {
  const seed = typeof piece === 'string' ? piece.length : piece.reduce((n, t) => n + t, 0);
  // Values exact in float32 (multiples of 1/64), so base64 round-trips to the same numbers.
  return Array.from({ length: dimensions }, (_, i) => ((seed + i * 7) % 64) / 64 - 0.5);
}

/** Tokens the fake counts for an embeddings input: a token array its length, a text one per word plus one. */
export function fakeEmbeddingTokens(input: unknown): number {
  const pieces: unknown[] =
    typeof input === 'string' || typeof (input as unknown[])[0] === 'number' ? [input] : (input as unknown[]);
  return pieces.reduce<number>((n, p) => n + (Array.isArray(p) ? p.length : ((p as string).match(/\S+/g) ?? []).length + 1), 0);
}

/**
 * POST /v1/embeddings as the real API answers it: `{object: "list", data: [{object: "embedding",
 * index, embedding}], model, usage: {prompt_tokens, total_tokens}}`, vectors as floats or base64
 * (little-endian float32) as `encoding_format` says. A configured reply's `usage.input` is the
 * count reported (null: no usage at all); a status, a hang, or a cut body as configured.
 */
function embeddings(
  res: ServerResponse,
  body: any,
  configured: FakeBehaviour | ((req: ReceivedRequest) => FakeBehaviour) | undefined,
  received: ReceivedRequest,
) {
  const ids = { 'x-request-id': newId('req_') };
  const input = body?.input;
  const valid =
    typeof body === 'object' &&
    body !== null &&
    typeof body.model === 'string' &&
    (typeof input === 'string' || (Array.isArray(input) && input.length > 0));
  if (!valid) return send(res, 400, openaiError(400, "'input' and 'model' are required"), ids);
  const b = typeof configured === 'function' ? configured(received) : configured;
  if (b?.kind === 'status') return send(res, b.status, b.body ?? openaiError(b.status), { ...ids, ...b.headers });
  if (b?.kind === 'hang') return;
  const pieces: Array<string | number[]> = typeof input === 'string' || typeof input[0] === 'number' ? [input] : input;
  const dimensions = body.dimensions ?? FAKE_EMBEDDING_DIMENSIONS;
  const data = pieces.map((piece, index) => {
    const vector = fakeEmbedding(piece, dimensions);
    const embedding =
      body.encoding_format === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
    return { object: 'embedding', index, embedding };
  });
  const usage = b?.kind === 'reply' && b.reply.usage !== undefined ? b.reply.usage : undefined;
  const tokens = usage === undefined ? fakeEmbeddingTokens(input) : usage?.input;
  const reply = {
    object: 'list',
    data,
    model: body.model,
    ...(usage === null ? {} : { usage: { prompt_tokens: tokens, total_tokens: tokens } }),
  };
  if (b?.kind === 'cut') {
    const full = JSON.stringify(reply);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(full), ...ids });
    return void res.write(full.slice(0, full.length >> 1), () => res.socket?.destroy());
  }
  send(res, 200, reply, ids);
}
