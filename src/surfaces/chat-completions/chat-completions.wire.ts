import { replyIdOf } from '../reply-id';
import { API_ERRORS, ApiError, chatCompletionsError } from '../../http/api-error';
import { creditsNumber } from '../../ledger/money';
import type {
  CanonicalImage,
  CanonicalMessage,
  CanonicalRequest,
  Citation,
  FinishReason,
  OutputFormat,
  ReasoningEffort,
  ToolsAsked,
} from '../../canonical/canonical';
import type { Billed, InferenceResult, PipelineEvent } from '../../inference/inference.command';
import type { Reply } from '../../inference/reduce';
import { allInputTokens, reasoningTokens, replyTokens } from '../reply-usage';
import { sseData, StreamSerializer } from '../sse';
import type { ChatCompletionRequest, ChatMessage } from './chat-completions.schema';
import { withoutRouting } from '../../routing/preferences';

/** The chat-completions wire format, in and out. Pure translation; no I/O. */

const textOf = (content: ChatMessage['content']): string =>
  content == null
    ? ''
    : typeof content === 'string'
      ? content
      : content
          .filter((part) => part.type === 'text')
          .map((part) => part.text ?? '')
          .join('\n');

/**
 * The JSON a `response_format` asks for: any object (`json_object`), or what its schema describes
 * (`json_schema`, with its name, description and strictness). Text, and what the other formats have
 * no counterpart for (a json_schema without a schema, a type of a compatible server's own), are none.
 */
function outputFormatOf(format: ChatCompletionRequest['response_format']): OutputFormat | undefined {
  if (format?.type === 'json_object') return { type: 'json_object' };
  const named = format?.type === 'json_schema' ? format.json_schema : undefined;
  if (named?.schema == null) return undefined;
  return {
    type: 'json_schema',
    schema: named.schema,
    name: named.name,
    ...(named.description !== undefined ? { description: named.description } : {}),
    ...(named.strict != null ? { strict: named.strict } : {}),
  };
}

/**
 * What only a host of this format can honour, the request passed whole: a response format the others
 * have no counterpart for (a json_schema without its schema, a type other than text and JSON), log
 * probabilities. Admission refuses a request with them for a model any of whose hosts would be sent
 * a translation. Pure.
 */
function wholeOnlyFieldsOf(body: ChatCompletionRequest): string[] {
  const fields: string[] = [];
  const format = body.response_format?.type;
  if (format === 'json_schema' && body.response_format?.json_schema?.schema == null)
    fields.push('response_format json_schema without a schema');
  else if (format !== undefined && !['text', 'json_object', 'json_schema'].includes(format))
    fields.push(`response_format ${format}`);
  if (body.logprobs === true) fields.push('logprobs');
  if (typeof body.top_logprobs === 'number' && body.top_logprobs > 0) fields.push('top_logprobs');
  return fields;
}

/** A user message's image parts, as canonical images (an `https:` URL or a `data:` URL). */
function imagesOf(content: ChatCompletionRequest['messages'][number]['content']): CanonicalImage[] {
  if (!Array.isArray(content)) return [];
  return content.flatMap((part) =>
    part.type === 'image_url' && typeof part.image_url?.url === 'string' ? [{ url: part.image_url.url }] : [],
  );
}

/**
 * `web_search_options` offers the hosted web search (the format has no way to require it), for the
 * one decision to rule on once the model's hosts are known (see hosted-tools.ts).
 */
function hostedToolsOf(body: ChatCompletionRequest): ToolsAsked | null {
  if (body.web_search_options == null) return null;
  return { hosted: ['web_search'], clientTools: (body.tools ?? []).length > 0, required: null };
}

/** The body a host of this format gets: the client's, less the routing fields that are the gateway's own. */
const forHosts = (body: ChatCompletionRequest): Record<string, unknown> => withoutRouting({ ...body });

const EFFORTS: Record<string, ReasoningEffort> = {
  none: 'none',
  minimal: 'minimal',
  low: 'low',
  medium: 'medium',
  high: 'high',
  xhigh: 'high',
};

export function toCanonical(body: ChatCompletionRequest): CanonicalRequest {
  const hostedTools = hostedToolsOf(body);
  const system: string[] = [];
  const messages: CanonicalMessage[] = [];
  body.messages.forEach((m, i) => {
    switch (m.role) {
      case 'system':
      case 'developer':
        // Instructions before the conversation are the request's; later ones keep their place.
        if (messages.length === 0) system.push(textOf(m.content));
        else messages.push({ role: 'system', content: textOf(m.content) });
        return;
      case 'user': {
        const images = imagesOf(m.content);
        messages.push({ role: 'user', content: textOf(m.content), ...(images.length > 0 ? { images } : {}) });
        return;
      }
      case 'assistant':
        messages.push({
          role: 'assistant',
          content: textOf(m.content),
          toolCalls: (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
        });
        return;
      case 'tool':
        if (!m.tool_call_id) throw new ApiError('invalid_request', `messages[${i}]: a tool message needs tool_call_id`);
        messages.push({ role: 'tool', toolCallId: m.tool_call_id, content: textOf(m.content) });
        return;
    }
  });
  if (messages.length === 0)
    throw new ApiError('invalid_request', 'messages must include at least one user, assistant or tool message');
  const choice = body.tool_choice;
  const stop = body.stop == null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop;
  const wholeOnly = wholeOnlyFieldsOf(body);
  const outputFormat = outputFormatOf(body.response_format);
  return {
    system,
    messages,
    tools: (body.tools ?? []).map((t) => ({
      name: t.function.name,
      description: t.function.description,
      parameters: t.function.parameters ?? { type: 'object', properties: {} },
    })),
    toolChoice: choice == null ? undefined : typeof choice === 'string' ? choice : { name: choice.function.name },
    ...(body.parallel_tool_calls === false ? { parallelToolCalls: false } : {}),
    // null is "not given" (some clients send it): the host's or model's default applies.
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
    temperature: body.temperature ?? undefined,
    topP: body.top_p ?? undefined,
    stop,
    stream: body.stream === true,
    reasoning:
      body.reasoning_effort != null && EFFORTS[body.reasoning_effort] ? { effort: EFFORTS[body.reasoning_effort] } : undefined,
    original: { format: 'chat-completions', body: forHosts(body) },
    ...(hostedTools ? { hostedTools } : {}),
    ...(outputFormat ? { outputFormat } : {}),
    ...(wholeOnly.length > 0 ? { wholeOnlyFields: wholeOnly } : {}),
  };
}

const FINISH: Record<FinishReason, string> = {
  stop: 'stop',
  stop_sequence: 'stop',
  length: 'length',
  tool_calls: 'tool_calls',
  content_filter: 'content_filter',
};

const completionId = (result: InferenceResult) => replyIdOf('chatcmpl-', result.requestId);

/** A page the host cited for a passage of the text, as the format's `url_citation` annotation. */
const annotationOf = ({ start, end, url, title }: Citation) => ({
  type: 'url_citation',
  url_citation: { start_index: start, end_index: end, url, title },
});

/** Every input token in `prompt_tokens`, the cache's share of them in its details. */
function usageOf(reply: Pick<Reply, 'billed' | 'usage'>) {
  const tokens = replyTokens(reply);
  const promptTokens = allInputTokens(tokens);
  const cacheWrites = tokens.cacheWriteTokens + tokens.cacheWrite1hTokens;
  return {
    prompt_tokens: promptTokens,
    completion_tokens: tokens.outputTokens,
    total_tokens: promptTokens + tokens.outputTokens,
    prompt_tokens_details:
      cacheWrites > 0
        ? { cached_tokens: tokens.cacheReadTokens, cache_write_tokens: cacheWrites }
        : { cached_tokens: tokens.cacheReadTokens },
    completion_tokens_details: { reasoning_tokens: reasoningTokens(reply) },
    ...(reply.billed ? { cost: creditsNumber(reply.billed.cost) } : {}),
  };
}

/**
 * The host's own completion when it speaks this format (under the slug, with the cost added to its
 * usage), else the translation.
 */
export function completionBody(result: InferenceResult, reply: Reply) {
  if (reply.passThrough)
    return { ...reply.passThrough, model: result.model.slug, usage: passedUsage(reply.passThrough.usage, reply) };
  return {
    id: completionId(result),
    object: 'chat.completion',
    created: result.created,
    model: result.model.slug,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: reply.text === '' && reply.toolCalls.length > 0 ? null : reply.text,
          ...(reply.reasoning === '' ? {} : { reasoning_content: reply.reasoning }),
          refusal: null,
          ...(reply.citations.length > 0 ? { annotations: reply.citations.map(annotationOf) } : {}),
          ...(reply.toolCalls.length > 0
            ? {
                tool_calls: reply.toolCalls.map((c) => ({
                  id: c.id,
                  type: 'function',
                  function: { name: c.name, arguments: c.arguments },
                })),
              }
            : {}),
        },
        logprobs: null,
        finish_reason: FINISH[reply.finish],
      },
    ],
    usage: usageOf(reply),
  };
}

export const errorBody = chatCompletionsError;

/**
 * A failure after the stream started, as the chunk's own `error`: the status the request would
 * have had as `code` and the message (OpenRouter's mid-stream error), and OpenAI's error `type`
 * (what OpenAI's clients, which throw on a chunk carrying `error`, read). The choice's
 * `finish_reason` stays null: OpenAI's document has no "error" among its reasons.
 */
const streamError = (error: ApiError) => ({ code: error.status, message: error.message, type: API_ERRORS[error.code].type });

/** A host's own usage with the cost added; ours when it sent none. */
const passedUsage = (hostUsage: unknown, reply: Pick<Reply, 'billed' | 'usage'>) =>
  typeof hostUsage === 'object' && hostUsage !== null
    ? { ...hostUsage, ...(reply.billed ? { cost: creditsNumber(reply.billed.cost) } : {}) }
    : usageOf(reply);

/** Where a text delta goes in a chunk's line (a string no id or slug can hold: ids and slugs have no spaces). */
const TEXT_SLOT = 'text slot 9e3c';

/**
 * `data: {chunk}` lines, then `data: [DONE]`; the usage chunk only when the client asked for it
 * (it carries the settlement's `ledger_position` beside the cost).
 * A host speaking this format has its own chunks sent on instead (the model named by its slug),
 * its usage held back to the end, where it goes out with the cost when asked for.
 */
export function chunkSerializer(result: InferenceResult, includeUsage: boolean): StreamSerializer {
  const base = { id: completionId(result), object: 'chat.completion.chunk', created: result.created, model: result.model.slug };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    sseData({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
  // Text deltas are most of a stream: their line is this stream's chunk around the text, cut once
  // from the same serialization, so each token costs one JSON string and no objects.
  const [textHead, textTail] = chunk({ content: TEXT_SLOT }).split(JSON.stringify(TEXT_SLOT));
  let usage: Reply['usage'] = null;
  /** The host's chunks are being sent on: the translation is not written. */
  let passingThrough = false;
  /** The host's usage chunk, kept for the end. */
  let hostUsage: Record<string, unknown> | null = null;

  const passOn = (data: Record<string, unknown>): string => {
    passingThrough = true;
    if (typeof data.usage === 'object' && data.usage !== null) {
      hostUsage = data;
      const choices = data.choices;
      if (!Array.isArray(choices) || choices.length === 0) return '';
      const { usage: _taken, ...rest } = data;
      return sseData({ ...rest, model: result.model.slug });
    }
    return sseData({ ...data, model: result.model.slug });
  };
  const usageChunk = (billed: Billed): string => {
    if (!includeUsage) return '';
    if (hostUsage) {
      return sseData({
        ...hostUsage,
        model: result.model.slug,
        choices: [],
        usage: passedUsage(hostUsage.usage, { billed, usage }),
        ledger_position: billed.position,
      });
    }
    return sseData({ ...base, choices: [], usage: usageOf({ billed, usage }), ledger_position: billed.position });
  };

  return {
    open: () => (passingThrough ? '' : chunk({ role: 'assistant', content: '' })),
    event(event: PipelineEvent) {
      switch (event.type) {
        case 'pass_through':
          return passOn(event.data);
        case 'usage':
          usage = event.usage;
          return '';
        case 'billed':
          return usageChunk(event);
        default:
          break;
      }
      if (passingThrough) return '';
      switch (event.type) {
        case 'text':
          return textHead + JSON.stringify(event.text) + textTail;
        case 'reasoning':
          return event.text === '' ? '' : chunk({ reasoning_content: event.text });
        case 'tool_call':
          return chunk({
            tool_calls: [
              {
                index: event.index,
                ...(event.id ? { id: event.id, type: 'function' } : {}),
                function: { ...(event.name ? { name: event.name } : {}), arguments: event.argumentsDelta },
              },
            ],
          });
        case 'citation':
          return chunk({ annotations: [annotationOf(event)] });
        case 'finish':
          return chunk({}, FINISH[event.reason]);
        default:
          return '';
      }
    },
    close: () => 'data: [DONE]\n\n',
    error: (error: ApiError) =>
      sseData({ ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: null }], error: streamError(error) }),
  };
}
