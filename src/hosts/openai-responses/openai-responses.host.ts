import type {
  CanonicalEvent,
  CanonicalMessage,
  Citation,
  CanonicalRequest,
  FinishReason,
  HostedToolUses,
  OutputFormat,
  Usage,
} from '../../canonical/canonical';
import { effortOf, HostError, isOutput, schemaNameOf, upstreamIdOf } from '../../canonical/canonical';
import { hostedToolItemClassOf, type HostedToolsRun } from '../../canonical/hosted-tools';
import { openAiErrorMessage } from '../host-kind';
import type { HostKind, JsonWordRule, SseMessage, StreamDecoder, UpstreamRequest, WireLimits } from '../host-kind';
import { isOpenAi } from '../openai/openai.host';

/** Responses hosts: OpenAI's `POST /responses`, for the models and features only it serves. */

/**
 * The hosted tools this kind runs, by class: each use is an output item of the response (a
 * `web_search_call`…), counted here. A web search offered in another format is run by the
 * format's own `web_search` tool.
 */
const HOSTED_TOOLS: HostedToolsRun = {
  whole: new Set(['webSearch', 'fileSearch', 'codeExecution', 'imageGeneration']),
  translated: new Set(['webSearch']),
};

/** Hosted-tool uses by class among output items, each a hosted tool's call (null: none). */
function hostedToolUsesOf(items: unknown[]): HostedToolUses | null {
  const uses: HostedToolUses = {};
  for (const item of items) {
    const toolClass = isObject(item) && typeof item.type === 'string' ? hostedToolItemClassOf(item.type) : null;
    if (toolClass !== null) uses[toolClass] = (uses[toolClass] ?? 0) + 1;
  }
  return Object.keys(uses).length > 0 ? uses : null;
}

/** A canonical message as the Responses input items it becomes (an assistant turn: its text, then one item per call). */
function inputItems(message: CanonicalMessage): Record<string, unknown>[] {
  switch (message.role) {
    case 'system':
      // Instructions given mid-conversation: the format's developer messages.
      return [{ role: 'developer', content: message.content }];
    case 'user':
      return [
        message.images === undefined || message.images.length === 0
          ? { role: 'user', content: message.content }
          : {
              role: 'user',
              content: [
                ...message.images.map((image) => ({ type: 'input_image', image_url: image.url, detail: 'auto' })),
                ...(message.content === '' ? [] : [{ type: 'input_text', text: message.content }]),
              ],
            },
      ];
    case 'assistant':
      return [
        ...(message.content === '' ? [] : [{ role: 'assistant', content: message.content }]),
        ...message.toolCalls.map((c) => ({ type: 'function_call', call_id: c.id, name: c.name, arguments: c.arguments })),
      ];
    case 'tool':
      return [{ type: 'function_call_output', call_id: message.toolCallId, output: message.content }];
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const str = (value: unknown): string => (typeof value === 'string' ? value : '');

/** An upstream's error message, when its error object has one. */
const errorText = (error: unknown): string =>
  isObject(error) && typeof error.message === 'string' ? error.message : 'upstream reported an error';

/** A count as the host wrote it, for the pipeline to check (see inference/usage-check.ts), as the openai kind reads it. */
const count = (value: unknown, absent: number): number =>
  typeof value === 'number' ? value : value === undefined || value === null ? absent : NaN;

/** A count shown to clients but never billed (reasoning, within the output): a whole number ≥ 0, else 0. */
const shownCount = (value: unknown): number => (Number.isSafeInteger(value) && (value as number) >= 0 ? (value as number) : 0);

/**
 * Tokens by class: `input_tokens` includes those read from the cache (`cached_tokens`) and written
 * to it (`cache_write_tokens`), taken out here as the openai kind takes them out of `prompt_tokens`;
 * the format has no 1-hour writes. `output_tokens` includes reasoning. Without the two required
 * counts, NaN.
 */
function usageOf(usage: Record<string, unknown>): Usage {
  const input = isObject(usage.input_tokens_details) ? usage.input_tokens_details : {};
  const output = isObject(usage.output_tokens_details) ? usage.output_tokens_details : {};
  const reads = count(input.cached_tokens, 0);
  const writes = count(input.cache_write_tokens, 0);
  return {
    inputTokens: count(usage.input_tokens, NaN) - reads - writes,
    cacheReadTokens: reads,
    cacheWriteTokens: writes,
    cacheWrite1hTokens: 0,
    outputTokens: count(usage.output_tokens, NaN),
    reasoningTokens: shownCount(output.reasoning_tokens),
  };
}

/** The response's `incomplete_details.reason` as a finish reason (`max_output_tokens`: the cap was reached). */
const INCOMPLETE: Record<string, FinishReason> = { max_output_tokens: 'length', content_filter: 'content_filter' };

/**
 * How a response object ended, for a response that is over: a call made is `tool_calls`; an
 * incomplete one says why; else `stop`.
 */
function finishOf(response: Record<string, unknown>, called: boolean): FinishReason {
  if (called) return 'tool_calls';
  if (response.status !== 'incomplete') return 'stop';
  const reason = isObject(response.incomplete_details) ? str(response.incomplete_details.reason) : '';
  return Object.hasOwn(INCOMPLETE, reason) ? INCOMPLETE[reason] : 'length';
}

/**
 * The finish and usage events closing a response (no usage event when the response has none); the
 * usage with the hosted-tool uses among its output items (`seen`: those a stream announced done,
 * for a closing event whose response lists fewer).
 */
function ending(response: Record<string, unknown>, called: boolean, seen: unknown[] = []): CanonicalEvent[] {
  const events: CanonicalEvent[] = [{ type: 'finish', reason: finishOf(response, called) }];
  if (isObject(response.usage)) {
    const usage = usageOf(response.usage);
    const output = Array.isArray(response.output) ? (response.output as unknown[]) : [];
    const uses = hostedToolUsesOf(output.length >= seen.length ? output : seen);
    if (uses) usage.hostedToolUses = uses;
    events.push({ type: 'usage', usage });
  }
  return events;
}

/** A reasoning item's text: its summary, or (open-weight models) its reasoning text; a blank line between parts, as between paragraphs. */
function reasoningOf(item: Record<string, unknown>): string {
  const parts: unknown[] = [
    ...(Array.isArray(item.summary) ? (item.summary as unknown[]) : []),
    ...(Array.isArray(item.content) ? (item.content as unknown[]) : []),
  ];
  return parts
    .filter(isObject)
    .map((part) => str(part.text))
    .join('\n\n');
}

/** A message item's text: its output text and refusals, run together. */
function messageTextOf(item: Record<string, unknown>): string {
  return partsOf(item)
    .map((part) => (part.type === 'refusal' ? str(part.refusal) : str(part.text)))
    .join('');
}

const partsOf = (item: Record<string, unknown>) => (Array.isArray(item.content) ? item.content.filter(isObject) : []);

/** A `url_citation` annotation of a text part starting at `offset` of the reply's text, as a citation; null for other annotations. */
function citationOf(annotation: unknown, offset: number): Citation | null {
  if (!isObject(annotation) || annotation.type !== 'url_citation' || typeof annotation.url !== 'string') return null;
  const start = Number.isSafeInteger(annotation.start_index) ? (annotation.start_index as number) : 0;
  const end = Number.isSafeInteger(annotation.end_index) ? (annotation.end_index as number) : start;
  return { type: 'citation', url: annotation.url, title: str(annotation.title), start: offset + start, end: offset + end };
}

/** A message item's citations, its parts starting at `offset` of the reply's text. */
function messageCitationsOf(item: Record<string, unknown>, offset: number): Citation[] {
  const citations: Citation[] = [];
  for (const part of partsOf(item)) {
    const annotations = Array.isArray(part.annotations) ? (part.annotations as unknown[]) : [];
    for (const annotation of annotations) {
      const citation = citationOf(annotation, offset);
      if (citation) citations.push(citation);
    }
    offset += (part.type === 'refusal' ? str(part.refusal) : str(part.text)).length;
  }
  return citations;
}

/** A whole response: its reasoning, text and calls in order, how it ended, its usage (and itself, passed through, with its id). */
function decodeReply(body: string, passThrough = false): CanonicalEvent[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new HostError('malformed', 'upstream sent a reply that is not JSON');
  }
  if (!isObject(parsed)) throw new HostError('malformed', 'upstream sent a reply that is not a JSON object');
  if (parsed.error) throw new HostError('upstream_error', errorText(parsed.error));
  if (parsed.status === 'failed') throw new HostError('upstream_error', 'upstream reported its response failed');
  if (!Array.isArray(parsed.output)) throw new HostError('malformed', 'upstream sent a response without output');
  const events: CanonicalEvent[] = [];
  // Passed whole, the reply keeps the host's id: it is recorded, so the client can look the request up by it.
  const id = passThrough && upstreamIdOf(parsed.id);
  if (id) events.push(id);
  let calls = 0;
  // Where the reply's text has got to, for the passages its citations cover.
  let textLength = 0;
  for (const item of parsed.output.filter(isObject)) {
    if (item.type === 'reasoning') {
      const text = reasoningOf(item);
      if (text !== '') events.push({ type: 'reasoning', text });
    } else if (item.type === 'message') {
      const text = messageTextOf(item);
      if (text !== '') events.push({ type: 'text', text });
      events.push(...messageCitationsOf(item, textLength));
      textLength += text.length;
    } else if (item.type === 'function_call') {
      events.push({
        type: 'tool_call',
        index: calls++,
        id: str(item.call_id),
        name: str(item.name),
        argumentsDelta: str(item.arguments),
      });
    }
  }
  events.push(...ending(parsed, calls > 0));
  if (passThrough) events.push({ type: 'pass_through', data: parsed });
  return events;
}

/** Stream events whose deltas are reasoning: the summaries OpenAI's models give, the full text open-weight ones do. */
const REASONING_DELTAS = new Set(['response.reasoning_summary_text.delta', 'response.reasoning_text.delta']);

/**
 * A Responses stream: each event's `type` (in its data, as the `event:` line repeats it) says what
 * it is. Deltas carry text, reasoning and call arguments; the response's end (`completed` or
 * `incomplete`) carries the usage; `response.failed` and `error` are failures.
 */
class ResponsesDecoder implements StreamDecoder {
  done = false;
  private produced = false;
  /** Tool call indexes by the output index of their item, in the order the calls came. */
  private readonly calls = new Map<number, number>();
  /** The output items announced done, for the uses of hosted tools among them. */
  private readonly items: unknown[] = [];
  /** Characters of text so far, and where each text part (by output and content index) began in it. */
  private textLength = 0;
  private readonly partStarts = new Map<string, number>();

  constructor(private readonly passThrough: boolean) {}

  push(message: SseMessage): CanonicalEvent[] {
    let parsed: unknown;
    try {
      parsed = JSON.parse(message.data);
    } catch {
      throw new HostError('malformed', 'upstream sent a stream event that is not JSON', null, !this.produced);
    }
    if (!isObject(parsed))
      throw new HostError('malformed', 'upstream sent a stream event that is not an object', null, !this.produced);
    const events = this.decode(parsed);
    if (events.some(isOutput)) this.produced = true;
    if (!this.passThrough) return events;
    // Passed whole: the message itself goes first, and the response's id with the event that opens it.
    const opening = parsed.type === 'response.created' && isObject(parsed.response) && upstreamIdOf(parsed.response.id);
    return [{ type: 'pass_through', event: str(parsed.type), data: parsed }, ...(opening ? [opening] : []), ...events];
  }

  private decode(event: Record<string, unknown>): CanonicalEvent[] {
    const type = str(event.type);
    if (REASONING_DELTAS.has(type)) return str(event.delta) === '' ? [] : [{ type: 'reasoning', text: str(event.delta) }];
    switch (type) {
      case 'response.reasoning_summary_part.added':
        // A summary's later parts are its next paragraphs.
        return typeof event.summary_index === 'number' && event.summary_index > 0 ? [{ type: 'reasoning', text: '\n\n' }] : [];
      case 'response.output_text.delta':
      case 'response.refusal.delta': {
        const delta = str(event.delta);
        if (delta === '') return [];
        const part = `${String(event.output_index)}:${String(event.content_index)}`;
        if (!this.partStarts.has(part)) this.partStarts.set(part, this.textLength);
        this.textLength += delta.length;
        return [{ type: 'text', text: delta }];
      }
      case 'response.output_text.annotation.added': {
        const part = `${String(event.output_index)}:${String(event.content_index)}`;
        const citation = citationOf(event.annotation, this.partStarts.get(part) ?? this.textLength);
        return citation ? [citation] : [];
      }
      case 'response.output_item.added': {
        const item = isObject(event.item) ? event.item : {};
        if (item.type !== 'function_call') return [];
        const index = this.calls.size;
        this.calls.set(Number(event.output_index), index);
        return [{ type: 'tool_call', index, id: str(item.call_id), name: str(item.name), argumentsDelta: str(item.arguments) }];
      }
      case 'response.output_item.done':
        this.items.push(event.item);
        return [];
      case 'response.function_call_arguments.delta': {
        const index = this.calls.get(Number(event.output_index));
        if (index === undefined)
          throw new HostError('malformed', 'upstream streamed arguments for a call it had not begun', null, !this.produced);
        return [{ type: 'tool_call', index, argumentsDelta: str(event.delta) }];
      }
      case 'response.completed':
      case 'response.incomplete': {
        this.done = true;
        return ending(isObject(event.response) ? event.response : {}, this.calls.size > 0, this.items);
      }
      case 'response.failed': {
        const response = isObject(event.response) ? event.response : {};
        throw new HostError('upstream_error', errorText(response.error), null, !this.produced);
      }
      case 'error':
        throw new HostError('upstream_error', errorText(event), null, !this.produced);
      default:
        // The stream's other events (created, in_progress, parts and items opened and closed, the
        // `.done` events repeating what the deltas gave) add nothing the deltas did not.
        return [];
    }
  }
}

/**
 * The least `max_output_tokens` the API takes (the published document's `minimum`; below it, a 400
 * `integer_below_min_value`), where the other formats take any cap from 1.
 */
export const RESPONSES_MIN_OUTPUT_TOKENS = 16;

/** A Responses input message's text: its content, a string or parts (`input_text`, `output_text`…) with text. */
const messageText = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((part) => (isObject(part) ? str(part.text) : '')).join('\n')
      : '';

const saysJson = (text: string): boolean => /json/i.test(text);

/**
 * The Responses API's JSON mode wants the word in its input messages (its 400: "Response input
 * messages must contain the word 'json' in some form to use 'text.format' of type 'json_object'"):
 * `instructions` do not count, nor function call outputs, which are no messages. A body passed whole
 * is read as it goes; a translation sends the leading system text as `instructions`, later system
 * messages as `developer` input messages, tool results as `function_call_output` items.
 */
const IN_THE_INPUT_MESSAGES: JsonWordRule = {
  where: 'the input messages, not the instructions,',
  says(request, whole) {
    if (!whole || request.original === undefined) return request.messages.some((m) => m.role !== 'tool' && saysJson(m.content));
    const input = request.original.body.input;
    if (typeof input === 'string') return saysJson(input);
    return (
      Array.isArray(input) &&
      input.some(
        (item) =>
          isObject(item) &&
          typeof item.role === 'string' &&
          (item.type === undefined || item.type === 'message') &&
          saysJson(messageText(item.content)),
      )
    );
  },
};

/**
 * What OpenAI's Responses API refuses, Azure's too: JSON mode without the word in its input messages.
 * (It has no stop sequences: they are never sent.)
 */
export const RESPONSES_LIMITS: WireLimits = {
  outputFormats: { takes: ['json_object', 'json_schema'], field: 'text.format', jsonModeNeedsTheWord: IN_THE_INPUT_MESSAGES },
};

/**
 * The client's own Responses body, whole: the host's model in place of the slug, and the cap the
 * pipeline gave where it differs from the client's (lowered to the model's limit, or raised to the
 * API's least).
 */
function passThroughBody(request: CanonicalRequest, original: Record<string, unknown>, hostModel: string) {
  const body: Record<string, unknown> = { ...original, model: hostModel };
  if (request.maxTokens !== undefined && request.maxTokens !== original.max_output_tokens)
    body.max_output_tokens = request.maxTokens;
  boundToolCalls(body, request);
  return body;
}

/**
 * A request carrying hosted tools makes at most the uses its reservation holds for: `max_tool_calls`
 * (which bounds every hosted tool's calls together) lowered to that bound when higher or absent.
 */
function boundToolCalls(body: Record<string, unknown>, request: CanonicalRequest): void {
  const carried = request.carriedTools;
  if (!carried) return;
  const asked = body.max_tool_calls;
  if (typeof asked !== 'number' || asked > carried.maxUses) body.max_tool_calls = carried.maxUses;
}

/**
 * Structured output as `text.format`: JSON mode, or `json_schema` with its name (required), description,
 * schema and strictness beside its type (not nested as chat completions nest them).
 */
export function textFormatOf(format: OutputFormat): Record<string, unknown> {
  if (format.type === 'json_object') return { type: 'json_object' };
  const { description, schema, strict } = format;
  return {
    type: 'json_schema',
    name: schemaNameOf(format),
    ...(description !== undefined ? { description } : {}),
    schema,
    ...(strict !== undefined ? { strict } : {}),
  };
}

/** The web search tool a request translated from another format is given. */
const WEB_SEARCH_TOOL = { type: 'web_search' };

export const openAiResponsesHost: HostKind<'openai-responses'> = {
  name: 'openai-responses',
  hostedTools: HOSTED_TOOLS,
  wholeFormat: () => 'responses',
  minOutputTokens: () => RESPONSES_MIN_OUTPUT_TOKENS,
  // OpenAI's own API: servers compatible with the format have rules of their own.
  limits: (_hostModel, _settings, baseUrl) => (isOpenAi(baseUrl) ? RESPONSES_LIMITS : {}),

  buildRequest(request: CanonicalRequest, hostModel: string, apiKey: string | null): UpstreamRequest {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: request.stream ? 'text/event-stream' : 'application/json',
    };
    if (apiKey) headers.authorization = `Bearer ${apiKey}`;
    if (request.original?.format === 'responses')
      return { path: '/responses', headers, body: passThroughBody(request, request.original.body, hostModel), passThrough: true };
    const body: Record<string, unknown> = {
      model: hostModel,
      input: request.messages.flatMap(inputItems),
      stream: request.stream,
      // Nothing is kept upstream: each request carries its whole conversation, as on every other kind.
      store: false,
    };
    if (request.system.length > 0) body.instructions = request.system.join('\n\n');
    if (request.maxTokens !== undefined) body.max_output_tokens = request.maxTokens;
    if (request.temperature !== undefined) body.temperature = request.temperature;
    if (request.topP !== undefined) body.top_p = request.topP;
    // The format has no stop sequences and no top_k: they are not sent.
    const tools: Record<string, unknown>[] = request.tools.map((t) => ({
      type: 'function',
      name: t.name,
      ...(t.description ? { description: t.description } : {}),
      parameters: t.parameters,
      strict: false,
    }));
    // A web search offered in another format, run by this format's own tool within the uses held for.
    const carried = request.carriedTools;
    if (carried?.classes.includes('webSearch')) tools.push(WEB_SEARCH_TOOL);
    if (tools.length > 0) body.tools = tools;
    if (request.parallelToolCalls === false && tools.length > 0) body.parallel_tool_calls = false;
    boundToolCalls(body, request);
    if (carried?.required === 'webSearch')
      body.tool_choice = { type: 'allowed_tools', mode: 'required', tools: [WEB_SEARCH_TOOL] };
    else if (request.toolChoice !== undefined) {
      body.tool_choice =
        typeof request.toolChoice === 'string' ? request.toolChoice : { type: 'function', name: request.toolChoice.name };
    }
    const effort = effortOf(request.reasoning);
    // A summary asked for, so that the reasoning is shown as it is on the other kinds.
    if (effort !== undefined) body.reasoning = effort === 'none' ? { effort } : { effort, summary: 'auto' };
    if (request.outputFormat) body.text = { format: textFormatOf(request.outputFormat) };
    return { path: '/responses', headers, body };
  },

  decoder: (passThrough = false) => new ResponsesDecoder(passThrough),

  decodeReply,

  errorMessage: openAiErrorMessage,
};
