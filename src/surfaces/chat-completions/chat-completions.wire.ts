import { ApiError, chatCompletionsError } from '../../http/api-error';
import { creditsNumber } from '../../ledger/money';
import type { CanonicalMessage, CanonicalRequest, FinishReason } from '../../canonical/canonical';
import type { InferenceResult, PipelineEvent } from '../../inference/inference.command';
import type { Reply } from '../../inference/reduce';
import { allInputTokens, reasoningTokens, replyTokens } from '../reply-usage';
import { sseData, StreamSerializer } from '../sse';
import type { ChatCompletionRequest, ChatMessage } from './chat-completions.schema';

/** The chat-completions wire format, in and out. Pure translation; no I/O. */

const textOf = (content: ChatMessage['content']): string =>
  content == null
    ? ''
    : typeof content === 'string'
      ? content
      : content
          // Image and audio parts are accepted and dropped: hosts here take text only.
          .filter((part) => part.type === 'text')
          .map((part) => part.text ?? '')
          .join('\n');

export function toCanonical(body: ChatCompletionRequest): CanonicalRequest {
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
      case 'user':
        messages.push({ role: 'user', content: textOf(m.content) });
        return;
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
  return {
    system,
    messages,
    tools: (body.tools ?? []).map((t) => ({
      name: t.function.name,
      description: t.function.description,
      parameters: t.function.parameters ?? { type: 'object', properties: {} },
    })),
    toolChoice: choice == null ? undefined : typeof choice === 'string' ? choice : { name: choice.function.name },
    // null is "not given" (some clients send it): the host's or model's default applies.
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
    temperature: body.temperature ?? undefined,
    topP: body.top_p ?? undefined,
    stop,
    stream: body.stream === true,
  };
}

const FINISH: Record<FinishReason, string> = {
  stop: 'stop',
  stop_sequence: 'stop',
  length: 'length',
  tool_calls: 'tool_calls',
  content_filter: 'content_filter',
};

const completionId = (result: InferenceResult) => `chatcmpl-${result.requestId.replace(/^req_/, '')}`;

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

export function completionBody(result: InferenceResult, reply: Reply) {
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
          refusal: null,
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

/** Where a text delta goes in a chunk's line (a string no id or slug can hold: ids and slugs have no spaces). */
const TEXT_SLOT = 'text slot 9e3c';

/** `data: {chunk}` lines, then `data: [DONE]`; the usage chunk only when the client asked for it. */
export function chunkSerializer(result: InferenceResult, includeUsage: boolean): StreamSerializer {
  const base = { id: completionId(result), object: 'chat.completion.chunk', created: result.created, model: result.model.slug };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    sseData({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
  // Text deltas are most of a stream: their line is this stream's chunk around the text, cut once
  // from the same serialization, so each token costs one JSON string and no objects.
  const [textHead, textTail] = chunk({ content: TEXT_SLOT }).split(JSON.stringify(TEXT_SLOT));
  let usage: Reply['usage'] = null;
  return {
    open: () => chunk({ role: 'assistant', content: '' }),
    event(event: PipelineEvent) {
      switch (event.type) {
        case 'text':
          return textHead + JSON.stringify(event.text) + textTail;
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
        case 'finish':
          return chunk({}, FINISH[event.reason]);
        case 'usage':
          usage = event.usage;
          return '';
        case 'billed':
          return includeUsage ? sseData({ ...base, choices: [], usage: usageOf({ billed: event, usage }) }) : '';
        default:
          return '';
      }
    },
    close: () => 'data: [DONE]\n\n',
    error: (error: ApiError) =>
      sseData({ ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'error' }], ...errorBody(error) }),
  };
}
