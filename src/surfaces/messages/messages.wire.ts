import { replyIdOf } from '../reply-id';
import { isHostedTool } from '../../canonical/hosted-tools';
import { ApiError, ApiErrorCode } from '../../http/api-error';
import type {
  CanonicalImage,
  CanonicalMessage,
  CanonicalReasoning,
  CanonicalRequest,
  CanonicalToolChoice,
  FinishReason,
  ReasoningEffort,
  ToolsAsked,
} from '../../canonical/canonical';
import type { InferenceResult, PipelineEvent } from '../../inference/inference.command';
import type { Reply } from '../../inference/reduce';
import { reasoningTokens, replyTokens } from '../reply-usage';
import { sseData, StreamSerializer } from '../sse';
import type {
  ContentBlock,
  CountTokensRequest,
  ImageBlock,
  MessagesRequest,
  TextBlock,
  ToolResultBlock,
  ToolUseBlock,
} from './messages.schema';

/** The messages wire format, in and out. Pure translation; no I/O. */

/** A thinking block given back in an assistant turn: read, not validated (hosts of this format get it whole). */
type ThinkingBlock = { type: 'thinking'; thinking?: unknown; signature?: unknown };

const blocksOf = (content: string | ContentBlock[]): ContentBlock[] =>
  typeof content === 'string' ? [{ type: 'text', text: content }] : content;

const textOfBlocks = (blocks: ContentBlock[]): string =>
  blocks
    .filter((b): b is TextBlock => b.type === 'text')
    .map((b) => b.text)
    .join('\n');

const toolResultText = (block: ToolResultBlock): string => {
  const text = typeof block.content === 'string' ? block.content : textOfBlocks(block.content ?? []);
  // Chat-completions hosts have no error flag on tool results: say it in the text.
  return block.is_error ? `Error: ${text}` : text;
};

const CHOICE: Record<string, CanonicalToolChoice> = { auto: 'auto', any: 'required', none: 'none' };

/** Image blocks given inline (base64) or by URL; a Files API reference has no counterpart elsewhere. */
const imagesOf = (blocks: ContentBlock[]): CanonicalImage[] =>
  blocks
    .filter((b): b is ImageBlock => b.type === 'image')
    .flatMap(({ source }) =>
      source.type === 'base64' && typeof source.data === 'string'
        ? [{ url: `data:${source.media_type};base64,${source.data}` }]
        : source.type === 'url' && typeof source.url === 'string'
          ? [{ url: source.url }]
          : [],
    );

const EFFORTS: Record<string, Exclude<ReasoningEffort, 'none'>> = { low: 'low', medium: 'medium', high: 'high', max: 'high' };

/**
 * The reasoning asked for: `thinking` with a budget, adaptive thinking at `output_config.effort`
 * (medium when unsaid), or thinking turned off.
 */
function reasoningOf(body: Pick<MessagesRequest, 'thinking' | 'output_config'>): CanonicalRequest['reasoning'] {
  const thinking = body.thinking;
  if (thinking == null) return undefined;
  if (thinking.type === 'disabled') return { effort: 'none' };
  if (thinking.type === 'enabled' && typeof thinking.budget_tokens === 'number') return { budgetTokens: thinking.budget_tokens };
  return { effort: EFFORTS[body.output_config?.effort ?? ''] ?? 'medium' };
}

/** Structured outputs: `output_config.format` (or the beta's `output_format`), the JSON schema the reply's text follows. */
function outputFormatOf(body: Pick<MessagesRequest, 'output_config' | 'output_format'>): Pick<CanonicalRequest, 'outputFormat'> {
  const format = body.output_config?.format ?? body.output_format;
  return format == null ? {} : { outputFormat: { type: 'json_schema', schema: format.schema } };
}

/**
 * The `anthropic-beta` header's names: comma-separated, possibly sent more than once (an array,
 * or already joined by Node), each kept once in the order given.
 */
export function betasOf(header: string | string[] | undefined): string[] {
  const values = header === undefined ? [] : typeof header === 'string' ? [header] : header;
  const names = values.flatMap((value) => value.split(',')).map((name) => name.trim());
  return [...new Set(names.filter((name) => name !== ''))];
}

type Tool = NonNullable<MessagesRequest['tools']>[number];

const isServerTool = (tool: Tool) => tool.type !== undefined && isHostedTool(tool.type);
/** The client's custom tools, with their schema: functions in every format. */
const isCustomTool = (tool: Tool) => tool.type === undefined || tool.type === 'custom';

/**
 * The server tools offered (`web_search_20250305`…) and whether `tool_choice` requires one (or any
 * tool), for the one decision to rule on once the model's hosts are known (see hosted-tools.ts).
 */
function serverToolsOf(body: Pick<MessagesRequest, 'tools' | 'tool_choice'>): { asked: ToolsAsked | null; named: boolean } {
  const tools = body.tools ?? [];
  const choice = body.tool_choice;
  const named = choice?.type === 'tool' ? tools.find((t) => t.name === choice.name && isServerTool(t)) : undefined;
  const hosted = tools.filter(isServerTool).map((t) => t.type!);
  if (hosted.length === 0) return { asked: null, named: false };
  return {
    asked: {
      hosted,
      clientTools: tools.some((t) => !isServerTool(t)),
      required: choice?.type === 'any' ? 'any' : named ? { hosted: named.type! } : null,
    },
    named: named !== undefined,
  };
}

/**
 * The thinking blocks of an assistant turn given back: their text, and the last signature (the one
 * closing the turn's reasoning, as this gateway sends a host's signature), for hosts that take it
 * back; and the blocks themselves when each is signed and none is redacted, for Claude hosts, which
 * verify each block's signature (a redacted block's encrypted data has no canonical place).
 */
function reasoningGivenBack(blocks: ContentBlock[]): { reasoning?: CanonicalReasoning } {
  const thinking = blocks.filter((b): b is ThinkingBlock => b.type === 'thinking');
  if (thinking.length === 0) return {};
  const signature = thinking
    .map((b) => b.signature)
    .filter((s): s is string => typeof s === 'string' && s !== '')
    .at(-1);
  const text = thinking.map((b) => (typeof b.thinking === 'string' ? b.thinking : '')).join('');
  const signed = thinking.every((b) => typeof b.thinking === 'string' && typeof b.signature === 'string' && b.signature !== '');
  const whole = signed && !blocks.some((b) => b.type === 'redacted_thinking');
  return {
    reasoning: {
      text,
      ...(signature === undefined ? {} : { signature }),
      ...(whole ? { blocks: thinking.map((b) => ({ thinking: b.thinking as string, signature: b.signature as string })) } : {}),
    },
  };
}

/** A message request (or a count_tokens body, which has no cap and no stream) and its betas, as a canonical request. */
export function toCanonical(
  asked: CountTokensRequest & Partial<Pick<MessagesRequest, 'max_tokens' | 'stream'>>,
  betas: string[],
): CanonicalRequest {
  const body = asked;
  const serverTools = serverToolsOf(body);
  const clientRun = (body.tools ?? []).filter((t) => !isCustomTool(t) && !isServerTool(t)).map((t) => t.type!);
  const system = body.system == null ? [] : typeof body.system === 'string' ? [body.system] : [textOfBlocks(body.system)];
  const messages: CanonicalMessage[] = [];
  for (const message of body.messages) {
    const blocks = blocksOf(message.content);
    if (message.role === 'system') {
      const text = textOfBlocks(blocks);
      // Instructions before the conversation join the top-level ones; later ones keep their place.
      if (text === '') continue;
      if (messages.length === 0) system.push(text);
      else messages.push({ role: 'system', content: text });
      continue;
    }
    if (message.role === 'assistant') {
      messages.push({
        role: 'assistant',
        content: textOfBlocks(blocks),
        toolCalls: blocks
          .filter((b): b is ToolUseBlock => b.type === 'tool_use')
          .map((b) => ({ id: b.id, name: b.name, arguments: JSON.stringify(b.input) })),
        ...reasoningGivenBack(blocks),
      });
      continue;
    }
    // Tool results come first in a user turn; what the user adds follows them.
    for (const block of blocks) {
      if (block.type === 'tool_result') {
        const result = block as ToolResultBlock;
        messages.push({ role: 'tool', toolCallId: result.tool_use_id, content: toolResultText(result) });
      }
    }
    const text = textOfBlocks(blocks);
    const images = imagesOf(blocks);
    if (images.length > 0) messages.push({ role: 'user', content: text, images });
    else if (text !== '' || !blocks.some((b) => b.type === 'tool_result')) messages.push({ role: 'user', content: text });
  }
  const choice = body.tool_choice;
  if (choice?.type === 'tool' && !choice.name) throw new ApiError('invalid_request', 'tool_choice of type "tool" needs a "name"');
  return {
    system: system.filter((s) => s !== ''),
    messages,
    // The client's custom tools, which have a schema (messages.schema.ts); its server tools are
    // hostedTools; the API's tools it runs itself (`bash_20250124`…) go only in its body passed whole.
    tools: (body.tools ?? [])
      .filter(isCustomTool)
      .map((t) => ({ name: t.name, description: t.description, parameters: t.input_schema! })),
    // A server tool named by tool_choice is the hosted tool required (hostedTools.required).
    toolChoice:
      choice == null || serverTools.named ? undefined : choice.type === 'tool' ? { name: choice.name! } : CHOICE[choice.type],
    ...(choice?.disable_parallel_tool_use === true ? { parallelToolCalls: false } : {}),
    maxTokens: body.max_tokens,
    // null is "not given" (some clients send it): the host's default applies.
    temperature: body.temperature ?? undefined,
    topP: body.top_p ?? undefined,
    topK: body.top_k ?? undefined,
    stop: body.stop_sequences ?? [],
    stream: body.stream === true,
    betas,
    reasoning: reasoningOf(body),
    ...outputFormatOf(body),
    original: { format: 'messages', body: body as unknown as Record<string, unknown> },
    ...(serverTools.asked ? { hostedTools: serverTools.asked } : {}),
    ...(clientRun.length > 0 ? { wholeOnlyTools: clientRun } : {}),
  };
}

const STOP_REASON: Record<FinishReason, string> = {
  stop: 'end_turn',
  stop_sequence: 'stop_sequence',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  content_filter: 'refusal',
};

const messageId = (result: InferenceResult) => replyIdOf('msg_', result.requestId);

/** Tool arguments as the `input` object the format wants; arguments that are not a JSON object become {}. */
function inputOf(args: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(args || '{}') as unknown;
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * `input_tokens` is the uncached input; the cache's reads and writes are counted apart, as the
 * format does. The format's usage names every field, null where a translated reply has nothing
 * to say (the tier, region and speed are the host's to tell); the web searches and fetches a host
 * of another format ran (a web search translated) are its `server_tool_use`.
 */
function usageOf(reply: Pick<Reply, 'billed' | 'usage'>) {
  const tokens = replyTokens(reply);
  const uses = tokens.hostedToolUses;
  const searched = (uses?.webSearch ?? 0) > 0 || (uses?.webFetch ?? 0) > 0;
  return {
    input_tokens: tokens.inputTokens,
    cache_creation_input_tokens: tokens.cacheWriteTokens + tokens.cacheWrite1hTokens,
    cache_read_input_tokens: tokens.cacheReadTokens,
    cache_creation: { ephemeral_5m_input_tokens: tokens.cacheWriteTokens, ephemeral_1h_input_tokens: tokens.cacheWrite1hTokens },
    output_tokens: tokens.outputTokens,
    output_tokens_details: { thinking_tokens: reasoningTokens(reply) },
    server_tool_use: searched ? { web_search_requests: uses?.webSearch ?? 0, web_fetch_requests: uses?.webFetch ?? 0 } : null,
    service_tier: null,
    inference_geo: null,
    speed: null,
  };
}

/** What a message always names and a translated reply has none of: no container, no refusal's details. */
const NO_CONTAINER_NOR_REFUSAL = { container: null, stop_details: null };

const textBlock = (text: string) => ({ type: 'text', text, citations: null });

/** A tool call of the model's own (`caller` direct: not made by code a server tool ran). */
const toolUseBlock = (id: string, name: string, input: Record<string, unknown>) => ({
  type: 'tool_use',
  id,
  name,
  input,
  caller: { type: 'direct' },
});

/** The host's own reply when it speaks this format (passed through, under the slug), else the translation. */
export function messageBody(result: InferenceResult, reply: Reply) {
  if (reply.passThrough) return { ...reply.passThrough, model: result.model.slug };
  const thinking =
    reply.reasoning === '' ? [] : [{ type: 'thinking', thinking: reply.reasoning, signature: reply.reasoningSignature ?? '' }];
  const content = [
    ...thinking,
    ...(reply.text !== '' || reply.toolCalls.length === 0 ? [textBlock(reply.text)] : []),
    ...reply.toolCalls.map((c) => toolUseBlock(c.id, c.name, inputOf(c.arguments))),
  ];
  return {
    id: messageId(result),
    type: 'message',
    role: 'assistant',
    model: result.model.slug,
    content,
    stop_reason: STOP_REASON[reply.finish],
    stop_sequence: reply.stopSequence ?? null,
    ...NO_CONTAINER_NOR_REFUSAL,
    diagnostics: null,
    usage: usageOf(reply),
  };
}

const ERROR_TYPES: Record<ApiErrorCode, string> = {
  invalid_request: 'invalid_request_error',
  invalid_api_key: 'authentication_error',
  insufficient_credits: 'billing_error',
  forbidden: 'permission_error',
  not_found: 'not_found_error',
  model_not_found: 'not_found_error',
  // Anthropic's API: GET /v1/messages is a 405 invalid_request_error ("Method Not Allowed").
  method_not_allowed: 'invalid_request_error',
  request_timeout: 'invalid_request_error',
  conflict: 'invalid_request_error',
  payload_too_large: 'request_too_large',
  rate_limited: 'rate_limit_error',
  headers_too_large: 'invalid_request_error',
  provider_error: 'api_error',
  provider_timeout: 'timeout_error',
  internal_error: 'api_error',
  unavailable: 'overloaded_error',
};

/** The format's error body, naming the request (its x-request-id) as the format does. */
export const messagesError = (error: ApiError, requestId: string) => ({
  type: 'error',
  error: { type: ERROR_TYPES[error.code], message: error.message },
  request_id: requestId,
});

/**
 * The event sequence: message_start, ping, then content blocks (thinking, a text block, tool_use
 * blocks with input_json_delta), then message_delta with the stop reason and usage, then
 * message_stop. The usage in message_start is the host's count so far; message_delta's is
 * cumulative and final. A host speaking this format has its own events sent on instead, each as
 * it came (the model named by its slug), but for its end (message_delta, message_stop), which
 * waits for the stream's close, as the translation's does: a reply ends once it is billed.
 */
export function eventSerializer(result: InferenceResult): StreamSerializer {
  let blockIndex = -1;
  let openBlock: 'thinking' | 'text' | 'tool' | null = null;
  let finish: FinishReason = 'stop';
  let stopSequence: string | null = null;
  let usage: Reply['usage'] = null;
  let billed: Reply['billed'] = null;
  /** The host's events are being sent on: the translation is not written. */
  let passingThrough = false;
  /**
   * The host's own end (its message_delta, message_stop and whatever follows), held until the
   * stream closes: it goes out only once the settlement is in the log, and never if it is refused.
   */
  const hostEnd: { data: Record<string, unknown>; event: string | undefined }[] = [];
  /** The settlement's position, on message_delta (beside the usage billed): `ledger_position`. */
  const positioned = (data: Record<string, unknown>, event: string | undefined) =>
    event === 'message_delta' && billed ? { ...data, ledger_position: billed.position } : data;

  const closeBlock = () => {
    if (openBlock === null) return '';
    openBlock = null;
    return sseData({ type: 'content_block_stop', index: blockIndex }, 'content_block_stop');
  };
  const startBlock = (kind: 'thinking' | 'text' | 'tool', block: Record<string, unknown>) => {
    const closing = closeBlock();
    blockIndex += 1;
    openBlock = kind;
    return closing + sseData({ type: 'content_block_start', index: blockIndex, content_block: block }, 'content_block_start');
  };
  const delta = (payload: Record<string, unknown>) =>
    sseData({ type: 'content_block_delta', index: blockIndex, delta: payload }, 'content_block_delta');

  const translate = (event: PipelineEvent): string => {
    switch (event.type) {
      case 'reasoning': {
        const start = openBlock === 'thinking' ? '' : startBlock('thinking', { type: 'thinking', thinking: '', signature: '' });
        const thinking = event.text === '' ? '' : delta({ type: 'thinking_delta', thinking: event.text });
        const signature = event.signature === undefined ? '' : delta({ type: 'signature_delta', signature: event.signature });
        return start + thinking + signature;
      }
      case 'text': {
        const start = openBlock === 'text' ? '' : startBlock('text', textBlock(''));
        return start + delta({ type: 'text_delta', text: event.text });
      }
      case 'tool_call': {
        const start =
          event.id !== undefined || openBlock !== 'tool'
            ? startBlock('tool', toolUseBlock(event.id ?? '', event.name ?? '', {}))
            : '';
        return start + (event.argumentsDelta ? delta({ type: 'input_json_delta', partial_json: event.argumentsDelta }) : '');
      }
      case 'finish':
        finish = event.reason;
        stopSequence = event.stopSequence ?? null;
        return closeBlock();
      default:
        return '';
    }
  };

  return {
    open: () =>
      passingThrough
        ? ''
        : sseData(
            {
              type: 'message_start',
              message: {
                id: messageId(result),
                type: 'message',
                role: 'assistant',
                model: result.model.slug,
                content: [],
                stop_reason: null,
                stop_sequence: null,
                ...NO_CONTAINER_NOR_REFUSAL,
                diagnostics: null,
                // What the host has counted by now (its input, when it counts that first), as the format does.
                usage: usageOf({ billed: null, usage }),
              },
            },
            'message_start',
          ) + sseData({ type: 'ping' }, 'ping'),
    event(event: PipelineEvent) {
      switch (event.type) {
        case 'pass_through': {
          passingThrough = true;
          const { data } = event;
          const message = data.type === 'message_start' ? data.message : undefined;
          const named =
            typeof message === 'object' && message !== null
              ? { ...data, message: { ...message, model: result.model.slug } }
              : data;
          if (hostEnd.length > 0 || event.event === 'message_delta' || event.event === 'message_stop') {
            hostEnd.push({ data: named, event: event.event });
            return '';
          }
          return sseData(named, event.event);
        }
        case 'usage':
          usage = event.usage;
          return '';
        case 'billed':
          billed = event;
          return '';
        default:
          return passingThrough ? '' : translate(event);
      }
    },
    close: () =>
      passingThrough
        ? hostEnd.map(({ data, event }) => sseData(positioned(data, event), event)).join('')
        : closeBlock() +
          sseData(
            positioned(
              {
                type: 'message_delta',
                delta: { stop_reason: STOP_REASON[finish], stop_sequence: stopSequence, ...NO_CONTAINER_NOR_REFUSAL },
                usage: usageOf({ billed, usage }),
              },
              'message_delta',
            ),
            'message_delta',
          ) +
          sseData({ type: 'message_stop' }, 'message_stop'),
    error: (error: ApiError) => sseData(messagesError(error, result.requestId), 'error'),
  };
}
