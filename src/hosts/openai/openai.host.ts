import type {
  CanonicalEvent,
  CanonicalMessage,
  CanonicalRequest,
  FinishReason,
  OutputFormat,
  Usage,
} from '../../canonical/canonical';
import { effortOf, HostError, isOutput, schemaNameOf, upstreamIdOf } from '../../canonical/canonical';
import { openAiErrorMessage } from '../host-kind';
import type { HostKind, JsonWordRule, SseMessage, StreamDecoder, UpstreamRequest, WireLimits } from '../host-kind';
import { openAiEmbeddingsRequest } from './openai.embeddings';

/** Chat-completions hosts: OpenAI and every compatible server (Groq, Together, vLLM, Ollama, …). */

function toWireMessage(message: CanonicalMessage): Record<string, unknown> {
  switch (message.role) {
    case 'system':
      return { role: message.role, content: message.content };
    case 'user':
      // Images first, each as an image_url part (a data: URL is the format's inline image).
      return message.images === undefined || message.images.length === 0
        ? { role: 'user', content: message.content }
        : {
            role: 'user',
            content: [
              ...message.images.map((image) => ({ type: 'image_url', image_url: { url: image.url } })),
              ...(message.content === '' ? [] : [{ type: 'text', text: message.content }]),
            ],
          };
    case 'assistant':
      return message.toolCalls.length === 0
        ? { role: 'assistant', content: message.content }
        : {
            role: 'assistant',
            content: message.content === '' ? null : message.content,
            tool_calls: message.toolCalls.map((c) => ({
              id: c.id,
              type: 'function',
              function: { name: c.name, arguments: c.arguments },
            })),
          };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
  }
}

const FINISH: Record<string, FinishReason> = {
  stop: 'stop',
  length: 'length',
  tool_calls: 'tool_calls',
  function_call: 'tool_calls',
  content_filter: 'content_filter',
};

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A string field of the upstream's JSON, or '' when it is anything else. */
const str = (value: unknown): string => (typeof value === 'string' ? value : '');

/** The canonical finish reason of a wire one (any other string: `stop`); none for anything but a string. */
const finishOf = (reason: unknown): FinishReason | null =>
  typeof reason === 'string' && reason !== '' ? (Object.hasOwn(FINISH, reason) ? FINISH[reason] : 'stop') : null;

/** An upstream's error message, when its error object has one. */
const errorText = (error: unknown): string =>
  isObject(error) && typeof error.message === 'string' ? error.message : 'upstream reported an error';

/** The usage fields this reads. Cached input is part of `prompt_tokens`. */
interface WireUsage {
  prompt_tokens?: unknown;
  completion_tokens?: unknown;
  /** `cached_tokens`: read from the cache; `cache_write_tokens` (some compatible hosts): written to it. */
  prompt_tokens_details?: unknown;
  completion_tokens_details?: unknown;
}

/**
 * A count as the host wrote it, for the pipeline to check (see inference/usage-check.ts): any
 * number as it is (negative, fractional, huge), none (absent or null) as `absent`, anything else
 * (a string, an object) as NaN, which no check lets through.
 */
const count = (value: unknown, absent: number): number =>
  typeof value === 'number' ? value : value === undefined || value === null ? absent : NaN;

/** A count shown to clients but never billed (reasoning, within the output): a whole number ≥ 0, else 0. */
const shownCount = (value: unknown): number => (Number.isSafeInteger(value) && (value as number) >= 0 ? (value as number) : 0);

/**
 * Tokens by class: the cache's reads and writes are taken out of `prompt_tokens`, the rest is
 * uncached input (negative when the host counts more cached tokens than input: not believed).
 * `prompt_tokens` and `completion_tokens` are the format's required counts: without them, NaN.
 */
function usageOf(usage: WireUsage): Usage {
  const details = isObject(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {};
  const reads = count(details.cached_tokens, 0);
  const writes = count(details.cache_write_tokens, 0);
  const completion = isObject(usage.completion_tokens_details) ? usage.completion_tokens_details : {};
  return {
    inputTokens: count(usage.prompt_tokens, NaN) - reads - writes,
    cacheReadTokens: reads,
    cacheWriteTokens: writes,
    // The format has no 1-hour writes.
    cacheWrite1hTokens: 0,
    outputTokens: count(usage.completion_tokens, NaN),
    reasoningTokens: shownCount(completion.reasoning_tokens),
  };
}

/** A usage event for a usage object that gives a count (the real API sends `usage: null` on every chunk but the last). */
const usageEvent = (usage: unknown): CanonicalEvent | null =>
  isObject(usage) && (usage.prompt_tokens !== undefined || usage.completion_tokens !== undefined)
    ? { type: 'usage', usage: usageOf(usage) }
    : null;

/** Reasoning text under either name compatible hosts use. */
const reasoningOf = (part: Record<string, unknown>): string =>
  typeof part.reasoning_content === 'string' ? part.reasoning_content : str(part.reasoning);

/** The first choice of a reply or chunk, and its message or delta, as objects (empty when missing or of another shape). */
function firstChoice(body: Record<string, unknown>, field: 'message' | 'delta') {
  const choice = Array.isArray(body.choices) && isObject(body.choices[0]) ? body.choices[0] : {};
  return { choice, part: isObject(choice[field]) ? choice[field] : {} };
}

/** The tool calls of a message or delta: objects in an array; anything else is no call. */
const toolCallsOf = (part: Record<string, unknown>): Record<string, unknown>[] =>
  Array.isArray(part.tool_calls) ? part.tool_calls.filter(isObject) : [];

/** A tool call's function: its name and arguments, as strings. */
function functionOf(call: Record<string, unknown>): { name: string; arguments: string } {
  const fn = isObject(call.function) ? call.function : {};
  return { name: str(fn.name), arguments: str(fn.arguments) };
}

/** A whole completion: its reasoning, text, tool calls (each in one piece), why it finished, its usage (and itself, passed through). */
function decodeReply(body: string, passThrough = false): CanonicalEvent[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new HostError('malformed', 'upstream sent a reply that is not JSON');
  }
  if (!isObject(parsed)) throw new HostError('malformed', 'upstream sent a reply that is not a JSON object');
  if (parsed.error) throw new HostError('upstream_error', errorText(parsed.error));
  if (!Array.isArray(parsed.choices) || parsed.choices.length === 0)
    throw new HostError('malformed', 'upstream sent a reply without choices');
  const { choice, part: message } = firstChoice(parsed, 'message');
  const events: CanonicalEvent[] = [];
  // Passed whole, the reply keeps the host's id: it is recorded, so the client can look the request up by it.
  const id = passThrough && upstreamIdOf(parsed.id);
  if (id) events.push(id);
  const reasoning = reasoningOf(message);
  if (reasoning !== '') events.push({ type: 'reasoning', text: reasoning });
  const content = str(message.content);
  if (content !== '') events.push({ type: 'text', text: content });
  toolCallsOf(message).forEach((call, index) => {
    const fn = functionOf(call);
    events.push({ type: 'tool_call', index, id: str(call.id), name: fn.name, argumentsDelta: fn.arguments });
  });
  const finish = finishOf(choice.finish_reason);
  if (finish) events.push({ type: 'finish', reason: finish });
  const usage = usageEvent(parsed.usage);
  if (usage) events.push(usage);
  if (passThrough) events.push({ type: 'pass_through', data: parsed });
  return events;
}

class OpenAiDecoder implements StreamDecoder {
  done = false;
  private produced = false;
  /**
   * Whether the reply's id has been told (every chunk repeats it); only when passed whole, as the client
   * then sees it. Azure's first chunk (its prompt's filter results) has an empty id: the next one tells it.
   */
  private identified = false;

  constructor(private readonly passThrough: boolean) {}

  push(message: SseMessage): CanonicalEvent[] {
    if (message.data === '[DONE]') {
      this.done = true;
      return [];
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(message.data);
    } catch {
      throw new HostError('malformed', 'upstream sent a stream chunk that is not JSON', null, !this.produced);
    }
    if (!isObject(parsed))
      throw new HostError('malformed', 'upstream sent a stream chunk that is not an object', null, !this.produced);
    if (parsed.error) throw new HostError('upstream_error', errorText(parsed.error), null, !this.produced);
    const events: CanonicalEvent[] = [];
    if (this.passThrough) events.push({ type: 'pass_through', data: parsed });
    if (this.passThrough && !this.identified) {
      const id = upstreamIdOf(parsed.id);
      if (id) events.push(id);
      this.identified = id !== null;
    }
    const { choice, part: delta } = firstChoice(parsed, 'delta');
    const reasoning = reasoningOf(delta);
    if (reasoning !== '') events.push({ type: 'reasoning', text: reasoning });
    const content = str(delta.content);
    if (content !== '') events.push({ type: 'text', text: content });
    for (const call of toolCallsOf(delta)) {
      const fn = functionOf(call);
      const index = Number.isSafeInteger(call.index) && (call.index as number) >= 0 ? (call.index as number) : 0;
      events.push({
        type: 'tool_call',
        index,
        ...(typeof call.id === 'string' && call.id !== '' ? { id: call.id } : {}),
        ...(fn.name !== '' ? { name: fn.name } : {}),
        argumentsDelta: fn.arguments,
      });
    }
    if (events.some(isOutput)) this.produced = true;
    const finish = finishOf(choice.finish_reason);
    if (finish) events.push({ type: 'finish', reason: finish });
    const usage = usageEvent(parsed.usage);
    if (usage) events.push(usage);
    return events;
  }
}

/**
 * The client's own chat-completions body, whole: the host's model in place of the slug, a cap the
 * pipeline lowered to the model's limit, and usage asked for on a stream (settlement needs the
 * host's count; the surface keeps it from clients that did not ask).
 */
function passThroughBody(request: CanonicalRequest, original: Record<string, unknown>, hostModel: string) {
  const body: Record<string, unknown> = { ...original, model: hostModel };
  const cap = request.maxTokens;
  for (const field of ['max_completion_tokens', 'max_tokens']) {
    const asked = original[field];
    if (cap !== undefined && typeof asked === 'number' && cap < asked) body[field] = cap;
  }
  if (request.stream) {
    const options = isObject(original.stream_options) ? original.stream_options : {};
    body.stream_options = { ...options, include_usage: true };
  }
  return body;
}

/** Structured output as `response_format`: JSON mode, or `json_schema` with its name (required), description, schema and strictness. */
export function responseFormatOf(format: OutputFormat): Record<string, unknown> {
  if (format.type === 'json_object') return { type: 'json_object' };
  const { description, schema, strict } = format;
  return {
    type: 'json_schema',
    json_schema: {
      name: schemaNameOf(format),
      ...(description !== undefined ? { description } : {}),
      schema,
      ...(strict !== undefined ? { strict } : {}),
    },
  };
}

/**
 * OpenAI's reasoning models (o1, o3, o4-mini, gpt-5…) refuse `max_tokens` (400 `unsupported_parameter`)
 * and take the cap as `max_completion_tokens`; the others, and the servers compatible with the
 * format, take `max_tokens` (some know no other). By the model's name, as it is called at the host.
 */
const REASONING_MODEL = /^(o\d|gpt-5)/;
const capFieldOf = (hostModel: string) => (REASONING_MODEL.test(hostModel) ? 'max_completion_tokens' : 'max_tokens');

/**
 * Chat completions' JSON mode wants the word in some message, system messages included (its 400:
 * "'messages' must contain the word 'json' in some form"): every instruction is a message there,
 * translated or whole.
 */
const IN_THE_MESSAGES: JsonWordRule = {
  where: 'the messages',
  says: (request) => request.system.some((text) => /json/i.test(text)) || request.messages.some((m) => /json/i.test(m.content)),
};

/**
 * What OpenAI's chat completions refuse (its OpenAPI reference: `stop` up to 4, a function's name of
 * a-z, A-Z, 0-9, underscores and dashes, at most 64); Azure OpenAI's too.
 */
export const CHAT_COMPLETIONS_LIMITS: WireLimits = {
  stopSequences: 4,
  toolNames: { pattern: /^[a-zA-Z0-9_-]{1,64}$/, rule: 'letters, digits, underscores and dashes, at most 64 characters' },
  outputFormats: { takes: ['json_object', 'json_schema'], field: 'response_format', jsonModeNeedsTheWord: IN_THE_MESSAGES },
};

/** Base URLs seen, and whether each is OpenAI's: asked on every request, a URL parsed once. */
const openAiBaseUrls = new Map<string, boolean>();

/** OpenAI's own API: the servers compatible with its format (vLLM, Groq, Ollama…) have limits of their own. */
export function isOpenAi(baseUrl: string): boolean {
  let known = openAiBaseUrls.get(baseUrl);
  if (known === undefined) {
    known = URL.canParse(baseUrl) && new URL(baseUrl).hostname === 'api.openai.com';
    openAiBaseUrls.set(baseUrl, known);
  }
  return known;
}

export const openAiHost: HostKind<'openai'> = {
  name: 'openai',
  wholeFormat: () => 'chat-completions',
  limits: (_hostModel, _settings, baseUrl) => (isOpenAi(baseUrl) ? CHAT_COMPLETIONS_LIMITS : {}),

  buildRequest(request: CanonicalRequest, hostModel: string, apiKey: string | null): UpstreamRequest {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: request.stream ? 'text/event-stream' : 'application/json',
    };
    if (apiKey) headers.authorization = `Bearer ${apiKey}`;
    if (request.original?.format === 'chat-completions') {
      return {
        path: '/chat/completions',
        headers,
        body: passThroughBody(request, request.original.body, hostModel),
        passThrough: true,
      };
    }
    const body: Record<string, unknown> = {
      model: hostModel,
      messages: [...request.system.map((content) => ({ role: 'system', content })), ...request.messages.map(toWireMessage)],
      stream: request.stream,
    };
    // Asked for always: settlement uses the host's own count (a whole reply carries it anyway).
    if (request.stream) body.stream_options = { include_usage: true };
    if (request.maxTokens !== undefined) body[capFieldOf(hostModel)] = request.maxTokens;
    if (request.temperature !== undefined) body.temperature = request.temperature;
    if (request.topP !== undefined) body.top_p = request.topP;
    if (request.stop.length > 0) body.stop = request.stop;
    if (request.tools.length > 0) {
      body.tools = request.tools.map((t) => ({
        type: 'function',
        function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.parameters },
      }));
    }
    // The API refuses parallel_tool_calls on a request without tools.
    if (request.parallelToolCalls === false && request.tools.length > 0) body.parallel_tool_calls = false;
    if (request.toolChoice !== undefined) {
      body.tool_choice =
        typeof request.toolChoice === 'string'
          ? request.toolChoice
          : { type: 'function', function: { name: request.toolChoice.name } };
    }
    const effort = effortOf(request.reasoning);
    if (effort !== undefined) body.reasoning_effort = effort;
    if (request.outputFormat) body.response_format = responseFormatOf(request.outputFormat);
    return { path: '/chat/completions', headers, body };
  },

  decoder: (passThrough = false) => new OpenAiDecoder(passThrough),

  decodeReply,

  errorMessage: openAiErrorMessage,
  embeddingsRequest: openAiEmbeddingsRequest,
};
