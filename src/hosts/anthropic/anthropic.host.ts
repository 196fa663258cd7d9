import {
  CanonicalEvent,
  CanonicalImage,
  CanonicalMessage,
  CanonicalRequest,
  CanonicalToolChoice,
  FinishReason,
  HostedToolUses,
  HostError,
  isOutput,
  ReasoningEffort,
  upstreamIdOf,
  Usage,
  type Citation,
} from '../../canonical/canonical';
import { hostedToolClassOf, type HostedToolsRun } from '../../canonical/hosted-tools';
import type { HostKind, SseMessage, StreamDecoder, UpstreamRequest, WireLimits } from '../host-kind';
import { thinkingConflict, thinkingGivenBack, type ThinkingLeftOut } from './anthropic.thinking';

/** The Messages API requires max_tokens; used only when the pipeline left it open. */
export const DEFAULT_MAX_TOKENS = 4096;

/**
 * The server tools this kind runs, by class, as the API counts them in `usage.server_tool_use`:
 * web searches (`web_search_requests`) and fetches (`web_fetch_requests`), passed whole; a web
 * search offered in another format is run by the messages format's own tool. Code execution is
 * billed by container time, which the usage does not report: it is not run.
 */
const HOSTED_TOOLS: HostedToolsRun = {
  whole: new Set(['webSearch', 'webFetch']),
  translated: new Set(['webSearch']),
};

/** The web search tool a request translated from another format is given (its name is the model's, as the API has it). */
const WEB_SEARCH_TOOL = { type: 'web_search_20250305', name: 'web_search' };

/** `usage.server_tool_use`'s counts, by the class each is billed in. */
const SERVER_TOOL_COUNTS = { webSearch: 'web_search_requests', webFetch: 'web_fetch_requests' } as const;

/** The beta under which the Messages API takes `role: "system"` entries inside `messages`. */
const MID_CONVERSATION_SYSTEM_BETA = 'mid-conversation-system-2026-04-07';

/** The smallest thinking budget the API takes. */
const MIN_THINKING_BUDGET = 1024;

/** The share of the output cap a reasoning effort may think with (the cap holds thinking and answer). */
const THINKING_SHARE: Record<Exclude<ReasoningEffort, 'none'>, number> = { minimal: 0.1, low: 0.2, medium: 0.5, high: 0.8 };

type ImageSource = { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };

type Block =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'text'; text: string }
  | { type: 'image'; source: ImageSource }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'tool_result'; tool_use_id: string; content: string };

type Role = 'user' | 'assistant' | 'system';

/** The usage fields this reads. `input_tokens` is the uncached input; the cache's tokens are counted apart. */
interface WireUsage {
  input_tokens?: unknown;
  cache_read_input_tokens?: unknown;
  /** Every cache write; `cache_creation` splits them by how long they live. */
  cache_creation_input_tokens?: unknown;
  cache_creation?: unknown;
  output_tokens?: unknown;
  /** The server tools' requests (web searches and fetches), billed per use. */
  server_tool_use?: unknown;
}

/** The fields of a stream event's data this decoder reads; anything else is ignored. */
interface WireEvent {
  type?: string;
  index?: number;
  message?: { id?: unknown; usage?: WireUsage };
  content_block?: { type?: string; id?: unknown; name?: unknown; citations?: unknown };
  delta?: {
    type?: string;
    citation?: unknown;
    text?: unknown;
    thinking?: unknown;
    signature?: unknown;
    partial_json?: unknown;
    stop_reason?: unknown;
    stop_sequence?: unknown;
  };
  usage?: WireUsage;
  error?: { type?: unknown; message?: unknown };
}

/** The fields of a whole (non-streamed) reply this reads. */
interface WireMessage {
  id?: unknown;
  type?: string;
  content?: unknown;
  stop_reason?: unknown;
  stop_sequence?: unknown;
  usage?: WireUsage;
  error?: { type?: unknown; message?: unknown };
}

const FINISH_REASONS = new Map<unknown, FinishReason>([
  ['end_turn', 'stop'],
  ['max_tokens', 'length'],
  ['model_context_window_exceeded', 'length'],
  ['stop_sequence', 'stop_sequence'],
  ['tool_use', 'tool_calls'],
  ['refusal', 'content_filter'],
  // A server-side tool loop paused; the turn is over as far as the client can tell.
  ['pause_turn', 'stop'],
]);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Tool input must be a JSON object on the wire, but the canonical arguments are the model's text,
 * which may be empty, cut short (max_tokens) or not an object. Such a call already happened, so
 * it is replayed with {} rather than refused: the history stays acceptable, its tool result still
 * tells the model what came of it, and a client's input must not surface as a host failure.
 */
export function toolInput(args: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(args);
    return isObject(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

// The API rejects empty text blocks, so empty content contributes none.
const textBlocks = (text: string): Block[] => (text === '' ? [] : [{ type: 'text', text }]);

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

/** An inline (`data:`) image as base64 source, any other URL as a URL source. */
function imageBlock(image: CanonicalImage): Block {
  const inline = DATA_URL.exec(image.url);
  return {
    type: 'image',
    source: inline ? { type: 'base64', media_type: inline[1], data: inline[2] } : { type: 'url', url: image.url },
  };
}

/** A message's blocks; an assistant's open with the thinking given back when `thinking` is on (anthropic.thinking.ts). */
function blocksOf(message: CanonicalMessage, thinking: boolean): Block[] {
  switch (message.role) {
    case 'system':
      return textBlocks(message.content);
    case 'user':
      // Images first, as the API's guidance has it.
      return [...(message.images ?? []).map(imageBlock), ...textBlocks(message.content)];
    case 'assistant':
      return [
        ...(thinking ? thinkingGivenBack(message).map((block): Block => ({ type: 'thinking', ...block })) : []),
        ...textBlocks(message.content),
        ...message.toolCalls.map((call): Block => ({
          type: 'tool_use',
          id: call.id,
          name: call.name,
          input: toolInput(call.arguments),
        })),
      ];
    case 'tool':
      return [{ type: 'tool_result', tool_use_id: message.toolCallId, content: message.content }];
  }
}

/**
 * The API requires user and assistant turns to alternate, and tool results travel in user turns:
 * consecutive messages of one role become one turn. A message with no blocks (empty content, no
 * tool calls) is dropped, which lets its neighbours merge instead of sending an empty turn.
 */
function toMessages(messages: CanonicalMessage[], thinking: boolean): { role: Role; content: string | Block[] }[] {
  const turns: { role: Role; blocks: Block[] }[] = [];
  for (const message of messages) {
    const role: Role = message.role === 'tool' ? 'user' : message.role;
    const blocks = blocksOf(message, thinking);
    if (blocks.length === 0) continue;
    const last = turns.at(-1);
    if (last?.role === role) last.blocks.push(...blocks);
    else turns.push({ role, blocks });
  }
  return turns.map(({ role, blocks }) => ({
    role,
    content: blocks.length === 1 && blocks[0].type === 'text' ? blocks[0].text : blocks,
  }));
}

function toToolChoice(choice: CanonicalToolChoice): Record<string, string> {
  if (typeof choice === 'object') return { type: 'tool', name: choice.name };
  return { type: choice === 'required' ? 'any' : choice };
}

/**
 * Where system messages go. Those before the conversation join the top-level `system`. Later ones
 * keep their place as `role: "system"` entries when the client asked for the beta that allows
 * them; without it the API takes instructions at the top level only, so they are folded there, in
 * order, after the others (their position is lost, their text is not).
 */
function placeSystem(request: CanonicalRequest): { system: string[]; messages: CanonicalMessage[] } {
  const inPlace = request.betas?.includes(MID_CONVERSATION_SYSTEM_BETA) === true;
  const system = [...request.system];
  const messages: CanonicalMessage[] = [];
  for (const message of request.messages) {
    if (message.role === 'system' && (messages.length === 0 || !inPlace)) system.push(message.content);
    else messages.push(message);
  }
  return { system, messages };
}

/** Version, key and the client's betas: the headers of every call to the Messages API. */
function headersFor(apiKey: string | null, betas: string[] = []): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' };
  if (apiKey !== null) headers['x-api-key'] = apiKey;
  if (betas.length > 0) headers['anthropic-beta'] = betas.join(',');
  return headers;
}

type Thinking = { type: 'enabled'; budget_tokens: number };

/**
 * For a request asking for reasoning (an effort other than `none`, or a budget): its thinking — its
 * budget, or the effort's share of the output cap, within what the API takes (at least 1024 tokens,
 * less than the cap) — or why it goes without: what the API refuses beside thinking
 * (anthropic.thinking.ts), or a cap too small to think within (`cap`). Null: none was asked for.
 */
function thinkingDecision(request: CanonicalRequest, maxTokens: number): Thinking | ThinkingLeftOut | null {
  const reasoning = request.reasoning;
  if (reasoning === undefined || reasoning.effort === 'none') return null;
  const conflict = thinkingConflict(request);
  if (conflict !== null) return conflict;
  const wanted = reasoning.budgetTokens ?? Math.floor(maxTokens * THINKING_SHARE[reasoning.effort ?? 'medium']);
  const budget = Math.min(Math.max(wanted, MIN_THINKING_BUDGET), maxTokens - 1);
  return budget < MIN_THINKING_BUDGET ? 'cap' : { type: 'enabled', budget_tokens: budget };
}

/** Why a translated request asking for reasoning goes without thinking, or null: it asks for none, or its thinking goes. */
export function thinkingLeftOut(request: CanonicalRequest): ThinkingLeftOut | null {
  const decided = thinkingDecision(request, request.maxTokens ?? DEFAULT_MAX_TOKENS);
  return typeof decided === 'string' ? decided : null;
}

/** The thinking of a request translated for a maximum of `maxTokens`, or null (see thinkingDecision). */
export function thinkingFor(request: CanonicalRequest, maxTokens: number): Thinking | null {
  const decided = thinkingDecision(request, maxTokens);
  return typeof decided === 'object' ? decided : null;
}

/**
 * The client's own messages body, whole, less its model (the slug): with the cap the pipeline
 * lowered to the model's limit (and a thinking budget that no longer fits under it lowered to just
 * below it, as the API requires).
 */
function passThroughBody(request: CanonicalRequest, original: Record<string, unknown>): Record<string, unknown> {
  const { model: _slug, ...body } = original;
  const bounded = boundedServerTools(original.tools, request);
  if (bounded) body.tools = bounded;
  const cap = request.maxTokens;
  if (cap !== undefined && typeof original.max_tokens === 'number' && cap < original.max_tokens) {
    body.max_tokens = cap;
    const thinking = original.thinking;
    if (isObject(thinking) && typeof thinking.budget_tokens === 'number' && thinking.budget_tokens >= cap) {
      body.thinking = { ...thinking, budget_tokens: cap - 1 };
    }
  }
  return body;
}

/**
 * The client's tools with each server tool carried bounded to the uses its reservation holds for
 * (`max_uses`, lowered when the client's is higher or absent); null when no server tool is carried.
 */
function boundedServerTools(tools: unknown, request: CanonicalRequest): unknown[] | null {
  const carried = request.carriedTools;
  if (!carried || !Array.isArray(tools)) return null;
  return tools.map((tool: unknown) => {
    if (!isObject(tool) || typeof tool.type !== 'string') return tool;
    const toolClass = hostedToolClassOf(tool.type);
    if (toolClass === null || !carried.classes.includes(toolClass)) return tool;
    const asked = tool.max_uses;
    return typeof asked === 'number' && asked <= carried.maxUses ? tool : { ...tool, max_uses: carried.maxUses };
  });
}

/**
 * The Messages API body of a request, without the model (hosts that serve this wire under their own
 * path, such as Vertex AI, name it there): the client's own body when it came in this format
 * (`passThrough`), else translated from the canonical request.
 */
export function messagesBody(request: CanonicalRequest): { body: Record<string, unknown>; passThrough: boolean } {
  if (request.original?.format === 'messages')
    return { body: passThroughBody(request, request.original.body), passThrough: true };
  const placed = placeSystem(request);
  const maxTokens = request.maxTokens ?? DEFAULT_MAX_TOKENS;
  const thinking = thinkingFor(request, maxTokens);
  const body: Record<string, unknown> = {
    max_tokens: maxTokens,
    stream: request.stream,
    messages: toMessages(placed.messages, thinking !== null),
  };
  if (thinking) body.thinking = thinking;
  const system = placed.system.filter((part) => part !== '').join('\n\n');
  if (system !== '') body.system = system;
  const tools: Record<string, unknown>[] = request.tools.map(({ name, description, parameters }) => ({
    name,
    ...(description === undefined ? {} : { description }),
    input_schema: parameters,
  }));
  // A web search offered in another format, run by this format's own tool within the uses held for.
  const carried = request.carriedTools;
  if (carried?.classes.includes('webSearch')) tools.push({ ...WEB_SEARCH_TOOL, max_uses: carried.maxUses });
  if (tools.length > 0) {
    body.tools = tools;
    // Inside the branch: the API refuses tool_choice on a request without tools.
    if (carried?.required === 'webSearch') body.tool_choice = { type: 'tool', name: WEB_SEARCH_TOOL.name };
    else if (request.toolChoice !== undefined) body.tool_choice = toToolChoice(request.toolChoice);
    // One call a turn: said in tool_choice (the API takes it with every type but none).
    if (request.parallelToolCalls === false) {
      const choice = (body.tool_choice as Record<string, unknown> | undefined) ?? { type: 'auto' };
      if (choice.type !== 'none') body.tool_choice = { ...choice, disable_parallel_tool_use: true };
    }
  }
  if (request.stop.length > 0) body.stop_sequences = request.stop;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  // Claude's 4.5 models refuse the two together ("temperature and top_p cannot both be specified"): the temperature goes.
  if (request.topP !== undefined && request.temperature === undefined) body.top_p = request.topP;
  if (request.topK !== undefined) body.top_k = request.topK;
  // Structured outputs (generally available: no beta), a schema only (MESSAGES_LIMITS); no name, description or strictness: it always follows the schema.
  if (request.outputFormat?.type === 'json_schema')
    body.output_config = { format: { type: 'json_schema', schema: request.outputFormat.schema } };
  return { body, passThrough: false };
}

function buildRequest(request: CanonicalRequest, hostModel: string, apiKey: string | null): UpstreamRequest {
  const { body, passThrough } = messagesBody(request);
  // A body passed whole keeps the client's order of fields (its model's place included): byte for byte, but the model.
  const ordered = passThrough ? { ...request.original?.body, ...body, model: hostModel } : { model: hostModel, ...body };
  const upstream = { path: '/messages', headers: headersFor(apiKey, request.betas), body: ordered };
  return passThrough ? { ...upstream, passThrough } : upstream;
}

function parseObject(data: string, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    throw new HostError('malformed', `unparseable ${what}: ${data.slice(0, 100)}`);
  }
  if (!isObject(parsed)) throw new HostError('malformed', `${what} is not an object: ${data.slice(0, 100)}`);
  return parsed;
}

function text(value: unknown, what: string): string {
  if (typeof value !== 'string') throw new HostError('malformed', `upstream reply without ${what}`);
  return value;
}

function errorReason(error: WireEvent['error']): string {
  const { message, type } = error ?? {};
  return typeof message === 'string' ? message : typeof type === 'string' ? type : 'upstream reported an error';
}

/**
 * A count as the host wrote it, for the pipeline to check (see inference/usage-check.ts): any
 * number as it is (negative, fractional, huge), none (absent or null) as `absent`, anything else
 * (a string, an object) as NaN, which no check lets through.
 */
const count = (value: unknown, absent: number): number =>
  typeof value === 'number' ? value : value === undefined || value === null ? absent : NaN;

const given = (value: unknown): boolean => value !== undefined && value !== null;

/**
 * Tokens by class from a usage object. A stream's counts are cumulative: message_delta's replace
 * message_start's (`start`), which fill in what message_delta leaves out (older API versions send
 * only output_tokens there; the 5-minute/1-hour split comes only in message_start). Cache writes
 * without the split are 5-minute writes, the API's default. `input_tokens` and `output_tokens` are
 * the format's required counts: without them, NaN.
 */
function usageOf(usage: WireUsage, start: WireUsage = usage): Usage {
  const latest = (
    key: 'input_tokens' | 'cache_read_input_tokens' | 'cache_creation_input_tokens' | 'output_tokens',
    absent: number,
  ) => count(given(usage[key]) ? usage[key] : start[key], absent);
  const splitOf = (u: WireUsage) => (isObject(u.cache_creation) ? u.cache_creation : null);
  const split = splitOf(usage) ?? splitOf(start) ?? {};
  const written =
    given(usage.cache_creation_input_tokens) || given(start.cache_creation_input_tokens)
      ? latest('cache_creation_input_tokens', 0)
      : count(split.ephemeral_5m_input_tokens, 0) + count(split.ephemeral_1h_input_tokens, 0);
  const oneHour = Math.min(written, count(split.ephemeral_1h_input_tokens, 0));
  const tokens: Usage = {
    inputTokens: latest('input_tokens', NaN),
    cacheReadTokens: latest('cache_read_input_tokens', 0),
    cacheWriteTokens: written - oneHour,
    cacheWrite1hTokens: oneHour,
    outputTokens: latest('output_tokens', NaN),
    // Thinking is counted in output_tokens, with no count of its own.
    reasoningTokens: 0,
  };
  const uses = serverToolUses(given(usage.server_tool_use) ? usage.server_tool_use : start.server_tool_use);
  if (uses) tokens.hostedToolUses = uses;
  return tokens;
}

/** The server tools' requests as the host counted them (absent or all none: null), for the pipeline to check. */
function serverToolUses(counts: unknown): HostedToolUses | null {
  if (!given(counts)) return null;
  if (!isObject(counts)) return { webSearch: NaN };
  const uses: HostedToolUses = {};
  for (const [toolClass, field] of Object.entries(SERVER_TOOL_COUNTS)) {
    const n = count(counts[field], 0);
    if (n !== 0) uses[toolClass as keyof typeof SERVER_TOOL_COUNTS] = n;
  }
  return Object.keys(uses).length > 0 ? uses : null;
}

/** The end of a reply: why it stopped, then its usage when the host reported one. */
function ending(stopReason: unknown, stopSequence: unknown, usage: Usage | null): CanonicalEvent[] {
  const events: CanonicalEvent[] = [];
  if (typeof stopReason === 'string') {
    const reason = FINISH_REASONS.get(stopReason) ?? 'stop';
    events.push(
      reason === 'stop_sequence' && typeof stopSequence === 'string'
        ? { type: 'finish', reason, stopSequence }
        : { type: 'finish', reason },
    );
  }
  if (usage) events.push({ type: 'usage', usage });
  return events;
}

/**
 * A text block's citations of web pages (a web search's results: `web_search_result_location`) as
 * citations of the reply's characters [start, end); citations of documents (no URL) have no counterpart.
 */
function citationsOf(citations: unknown, start: number, end: number): Citation[] {
  if (!Array.isArray(citations)) return [];
  return citations
    .filter((c): c is Record<string, unknown> => isObject(c) && typeof c.url === 'string')
    .map((c) => ({ type: 'citation', url: c.url as string, title: typeof c.title === 'string' ? c.title : '', start, end }));
}

/** A whole Messages reply: its thinking, text and tool_use blocks in order, then its ending (and the reply itself, passed through). */
function decodeReply(body: string, passThrough = false): CanonicalEvent[] {
  const parsed = parseObject(body, 'reply');
  const reply = parsed as WireMessage;
  if (reply.type === 'error') throw new HostError('upstream_error', errorReason(reply.error));
  if (!Array.isArray(reply.content)) throw new HostError('malformed', 'upstream reply without content');
  const events: CanonicalEvent[] = [];
  // Passed whole, the reply keeps the host's id: it is recorded, so the client can look the request up by it.
  const id = passThrough && upstreamIdOf(reply.id);
  if (id) events.push(id);
  let toolCalls = 0;
  // Where the reply's text has got to, for the passages its citations cover.
  let textLength = 0;
  for (const block of reply.content as Array<Record<string, unknown>>) {
    if (block?.type === 'text') {
      const piece = text(block.text, 'text');
      if (piece !== '') events.push({ type: 'text', text: piece });
      events.push(...citationsOf(block.citations, textLength, textLength + piece.length));
      textLength += piece.length;
    } else if (block?.type === 'thinking') {
      const signature = typeof block.signature === 'string' ? { signature: block.signature } : {};
      events.push({ type: 'reasoning', text: text(block.thinking, 'thinking'), ...signature });
    } else if (block?.type === 'tool_use') {
      const argumentsText = JSON.stringify(isObject(block.input) ? block.input : {});
      events.push({
        type: 'tool_call',
        index: toolCalls++,
        id: text(block.id, 'tool id'),
        name: text(block.name, 'tool name'),
        argumentsDelta: argumentsText,
      });
    }
  }
  events.push(...ending(reply.stop_reason, reply.stop_sequence, isObject(reply.usage) ? usageOf(reply.usage) : null));
  if (passThrough) events.push({ type: 'pass_through', data: parsed });
  return events;
}

class AnthropicDecoder implements StreamDecoder {
  done = false;
  /** Whether any output went out: a later error can then no longer be retried elsewhere. */
  private produced = false;
  /** Content block index → index of the tool call among this reply's tool calls. */
  private readonly toolCalls = new Map<number | undefined, number>();
  /** message_start's usage, which message_delta's completes. */
  private startUsage: WireUsage | null = null;
  /** Characters of text so far, and the open text blocks' starts and citations (given when the block closes). */
  private textLength = 0;
  private readonly textBlocks = new Map<number | undefined, { start: number; citations: unknown[] }>();

  constructor(private readonly passThrough: boolean) {}

  push(message: SseMessage): CanonicalEvent[] {
    if (this.done) return [];
    const data = parseObject(message.data, 'stream event');
    const type = message.event ?? (typeof data.type === 'string' ? data.type : undefined);
    const events = this.decode(type, data);
    if (events.some(isOutput)) this.produced = true;
    return this.passThrough ? [{ type: 'pass_through', event: type, data }, ...events] : events;
  }

  private decode(type: string | undefined, data: WireEvent): CanonicalEvent[] {
    switch (type) {
      case 'message_start': {
        // The input's classes are known from here; the output count comes with message_delta.
        const id = this.passThrough && upstreamIdOf(data.message?.id);
        const identified: CanonicalEvent[] = id ? [id] : [];
        const usage = data.message?.usage;
        if (!isObject(usage)) return identified;
        this.startUsage = usage;
        return [...identified, { type: 'usage', usage: usageOf(usage) }];
      }
      case 'content_block_start': {
        // Thinking comes in its deltas; other blocks (redacted thinking, server tools and their
        // results) have no canonical counterpart, and reach clients of this format passed through.
        const block = data.content_block;
        if (block?.type === 'text') {
          const citations = Array.isArray(block.citations) ? [...(block.citations as unknown[])] : [];
          this.textBlocks.set(data.index, { start: this.textLength, citations });
          return [];
        }
        if (block?.type !== 'tool_use') return [];
        const index = this.toolCalls.size;
        this.toolCalls.set(data.index, index);
        return [
          { type: 'tool_call', index, id: text(block.id, 'tool id'), name: text(block.name, 'tool name'), argumentsDelta: '' },
        ];
      }
      case 'content_block_delta': {
        const delta = data.delta;
        if (delta?.type === 'text_delta') {
          const piece = text(delta.text, 'text');
          this.textLength += piece.length;
          return [{ type: 'text', text: piece }];
        }
        if (delta?.type === 'citations_delta') {
          this.textBlocks.get(data.index)?.citations.push(delta.citation);
          return [];
        }
        if (delta?.type === 'thinking_delta') return [{ type: 'reasoning', text: text(delta.thinking, 'thinking') }];
        if (delta?.type === 'signature_delta')
          return [{ type: 'reasoning', text: '', signature: text(delta.signature, 'signature') }];
        const index = this.toolCalls.get(data.index);
        // Input deltas of blocks not announced as tool_use (server tools) are not the client's.
        if (delta?.type !== 'input_json_delta' || index === undefined) return [];
        const argumentsDelta = text(delta.partial_json, 'partial_json');
        return argumentsDelta === '' ? [] : [{ type: 'tool_call', index, argumentsDelta }];
      }
      case 'content_block_stop': {
        // A text block's citations cover its whole text, known once it closes.
        const block = this.textBlocks.get(data.index);
        if (!block) return [];
        this.textBlocks.delete(data.index);
        return citationsOf(block.citations, block.start, this.textLength);
      }
      case 'message_delta':
        return this.finish(data);
      case 'message_stop':
        this.done = true;
        return [];
      case 'error':
        throw new HostError('upstream_error', errorReason(data.error), null, !this.produced);
      default:
        // ping, and event types added after this was written.
        return [];
    }
  }

  private finish(data: WireEvent): CanonicalEvent[] {
    // Without usage here, message_start's count stands.
    const usage = isObject(data.usage) ? usageOf(data.usage, this.startUsage ?? data.usage) : null;
    return ending(data.delta?.stop_reason, data.delta?.stop_sequence, usage);
  }
}

function errorMessage(status: number, body: string): string {
  try {
    const parsed: unknown = JSON.parse(body);
    if (isObject(parsed) && isObject(parsed.error) && typeof parsed.error.message === 'string') return parsed.error.message;
  } catch {
    // Not JSON (a proxy's page, plain text): the text itself is the best message.
  }
  return body.trim().slice(0, 300) || `upstream answered ${status}`;
}

/** A count_tokens body is the client's own (the same wire format): only the model is the host's. */
const countTokensRequest = (body: Record<string, unknown>, hostModel: string, apiKey: string | null, betas: string[]) => ({
  path: '/messages/count_tokens',
  headers: headersFor(apiKey, betas),
  body: { ...body, model: hostModel },
});

/** The 1M-context beta's name, before its date (`context-1m-2025-08-07`): prompts past 200K tokens, at the long-context price. */
export const CONTEXT_1M_BETA = 'context-1m';

/**
 * What the Messages API refuses of a tool's name: outside `^[a-zA-Z0-9_-]{1,128}$`, the pattern its
 * validation names (its tool-use guide says at most 64; the longer bound is the one enforced). It
 * documents no limit on stop sequences. Its structured outputs (`output_config.format`) take a schema only.
 */
export const MESSAGES_LIMITS: WireLimits = {
  toolNames: { pattern: /^[a-zA-Z0-9_-]{1,128}$/, rule: 'letters, digits, underscores and dashes, at most 128 characters' },
  // Structured outputs take a JSON schema: the API has no JSON mode.
  outputFormats: { takes: ['json_schema'], field: 'output_config.format' },
  longContextBeta: CONTEXT_1M_BETA,
};

export const anthropicHost: HostKind<'anthropic'> = {
  name: 'anthropic',
  limits: () => MESSAGES_LIMITS,
  hostedTools: HOSTED_TOOLS,
  wholeFormat: () => 'messages',
  buildRequest,
  // A messages client's body goes whole, its own thinking as sent.
  omittedReasoning: (request) => (request.original?.format === 'messages' ? null : thinkingLeftOut(request)),
  countTokensRequest,
  decoder: (passThrough = false) => new AnthropicDecoder(passThrough),
  decodeReply,
  errorMessage,
};
