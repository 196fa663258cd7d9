import {
  CanonicalEvent,
  CanonicalImage,
  CanonicalMessage,
  CanonicalRequest,
  FinishReason,
  HostError,
  isOutput,
  Usage,
} from '../../canonical/canonical';
import { DEFAULT_MAX_TOKENS, thinkingFor, toolInput } from '../anthropic/anthropic.host';
import { thinkingGivenBack } from '../anthropic/anthropic.thinking';
import type { SseMessage, StreamDecoder } from '../host-kind';

/**
 * Bedrock's Converse API (`/model/{id}/converse` and `/converse-stream`): one request and reply
 * shape for every model Bedrock serves, content as blocks (`{text}`, `{image}`, `{toolUse}`,
 * `{toolResult}`, `{reasoningContent}`), model-specific fields in `additionalModelRequestFields`.
 */

type Block = Record<string, unknown>;
type Role = 'user' | 'assistant';

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Anthropic's models (base ids, cross-region inference profiles, ARNs): those taking Anthropic's own fields. */
export const isAnthropicModel = (hostModel: string): boolean => /(^|[./])anthropic\./.test(hostModel);

/** The image formats Converse takes, by media type. */
const IMAGE_FORMATS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/jpg': 'jpeg',
  'image/gif': 'gif',
  'image/webp': 'webp',
};

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

/**
 * An inline image as Converse's image block. Converse takes an image's bytes (or an S3 location),
 * never a URL it would fetch: any other image is refused, as the host would refuse it.
 */
function imageBlock(image: CanonicalImage): Block {
  const inline = DATA_URL.exec(image.url);
  const type = inline?.[1].toLowerCase() ?? '';
  const format = Object.hasOwn(IMAGE_FORMATS, type) ? IMAGE_FORMATS[type] : undefined;
  if (!inline) throw new HostError('status', 'Bedrock takes images inline (data: URLs), not by URL', 400);
  if (!format) throw new HostError('status', `Bedrock takes png, jpeg, gif or webp images, not ${inline[1]}`, 400);
  return { image: { format, source: { bytes: inline[2] } } };
}

// Converse rejects blank text blocks, so empty content gives none.
const textBlocks = (text: string): Block[] => (text === '' ? [] : [{ text }]);

/** A message's blocks; an assistant's open with the thinking given back when Claude's `thinking` is on (anthropic.thinking.ts). */
function blocksOf(message: Exclude<CanonicalMessage, { role: 'system' }>, thinking: boolean): Block[] {
  switch (message.role) {
    case 'user':
      return [...(message.images ?? []).map(imageBlock), ...textBlocks(message.content)];
    case 'assistant':
      return [
        ...(thinking
          ? thinkingGivenBack(message).map((block) => ({
              reasoningContent: { reasoningText: { text: block.thinking, signature: block.signature } },
            }))
          : []),
        ...textBlocks(message.content),
        ...message.toolCalls.map((call) => ({
          toolUse: { toolUseId: call.id, name: call.name, input: toolInput(call.arguments) },
        })),
      ];
    case 'tool':
      return [{ toolResult: { toolUseId: message.toolCallId, content: [{ text: message.content }] } }];
  }
}

/**
 * Converse's messages: user and assistant turns alternating, tool results in user turns; messages
 * of one role in a row become one turn, and one with no blocks is left out. System messages are
 * Converse's top-level `system`, which is the only place it takes instructions.
 */
function toTurns(
  messages: CanonicalMessage[],
  thinking: boolean,
): { system: string[]; turns: { role: Role; content: Block[] }[] } {
  const system: string[] = [];
  const turns: { role: Role; content: Block[] }[] = [];
  for (const message of messages) {
    if (message.role === 'system') {
      system.push(message.content);
      continue;
    }
    const role: Role = message.role === 'assistant' ? 'assistant' : 'user';
    const blocks = blocksOf(message, thinking);
    if (blocks.length === 0) continue;
    const last = turns.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  }
  return { system, turns };
}

const usesTools = (messages: CanonicalMessage[]): boolean =>
  messages.some((m) => m.role === 'tool' || (m.role === 'assistant' && m.toolCalls.length > 0));

/**
 * The models that take Converse's `toolChoice` (AWS's ToolChoice reference: Anthropic's Claude 3 and
 * later, Amazon Nova); the others refuse it ("This model doesn't support the toolConfig.toolChoice.any
 * field"), and choose among the tools themselves.
 */
const takesToolChoice = (hostModel: string): boolean => isAnthropicModel(hostModel) || /(^|[./])amazon\.nova/.test(hostModel);

/**
 * The tool configuration. Converse has no "none": such a request is sent without its tools, unless
 * the conversation already holds tool calls, for which Converse requires the tools to be declared.
 * A model that takes no `toolChoice` is sent none for `auto` (its own way), and a choice that
 * requires a tool is refused (400), naming the model: it cannot be carried.
 */
function toolConfigOf(request: CanonicalRequest, hostModel: string): Record<string, unknown> | null {
  if (request.tools.length === 0) return null;
  const choice = request.toolChoice;
  if (choice === 'none' && !usesTools(request.messages)) return null;
  const tools = request.tools.map(({ name, description, parameters }) => ({
    toolSpec: { name, ...(description === undefined ? {} : { description }), inputSchema: { json: parameters } },
  }));
  if (!takesToolChoice(hostModel)) {
    if (choice === 'required' || typeof choice === 'object') {
      throw new HostError(
        'status',
        `${hostModel} on Bedrock's Converse takes no tool_choice requiring a tool (only Claude and Nova models do): leave tool_choice out or "auto"`,
        400,
      );
    }
    return { tools };
  }
  const toolChoice =
    choice === undefined || choice === 'none'
      ? undefined
      : typeof choice === 'object'
        ? { tool: { name: choice.name } }
        : choice === 'required'
          ? { any: {} }
          : { auto: {} };
  return toolChoice ? { tools, toolChoice } : { tools };
}

/** A Converse request body: the model is in the path. */
export function converseBody(request: CanonicalRequest, hostModel: string): Record<string, unknown> {
  const maxTokens = request.maxTokens ?? DEFAULT_MAX_TOKENS;
  const thinking = isAnthropicModel(hostModel) ? thinkingFor(request, maxTokens) : null;
  const { system: inConversation, turns } = toTurns(request.messages, thinking !== null);
  const inferenceConfig: Record<string, unknown> = { maxTokens };
  if (request.temperature !== undefined) inferenceConfig.temperature = request.temperature;
  // As on Anthropic's API, Claude's 4.5 models refuse both: the temperature goes (other models take both).
  if (request.topP !== undefined && (request.temperature === undefined || !isAnthropicModel(hostModel)))
    inferenceConfig.topP = request.topP;
  if (request.stop.length > 0) inferenceConfig.stopSequences = request.stop;
  const body: Record<string, unknown> = { messages: turns, inferenceConfig };
  const system = [...request.system, ...inConversation].filter((part) => part !== '');
  if (system.length > 0) body.system = system.map((text) => ({ text }));
  const toolConfig = toolConfigOf(request, hostModel);
  if (toolConfig) body.toolConfig = toolConfig;
  const format = request.outputFormat;
  // Structured output (a schema only: CONVERSE_LIMITS), its schema as JSON text, as Converse takes it.
  if (format?.type === 'json_schema') {
    const { name, description, schema } = format;
    const jsonSchema = { schema: JSON.stringify(schema), ...(name ? { name } : {}), ...(description ? { description } : {}) };
    body.outputConfig = { textFormat: { type: 'json_schema', structure: { jsonSchema } } };
  }
  // Fields Converse has no place for, in the model's own terms: Anthropic's thinking and top_k.
  if (isAnthropicModel(hostModel)) {
    const extra: Record<string, unknown> = {};
    if (thinking) extra.thinking = thinking;
    if (request.topK !== undefined) extra.top_k = request.topK;
    if (Object.keys(extra).length > 0) body.additionalModelRequestFields = extra;
  }
  return body;
}

const FINISH_REASONS = new Map<unknown, FinishReason>([
  ['end_turn', 'stop'],
  ['tool_use', 'tool_calls'],
  ['max_tokens', 'length'],
  ['model_context_window_exceeded', 'length'],
  ['stop_sequence', 'stop_sequence'],
  ['guardrail_intervened', 'content_filter'],
  ['content_filtered', 'content_filter'],
]);

/** How a reply ended: Anthropic's models say which stop sequence matched in their additional response fields. */
function finishOf(stopReason: unknown, additional: unknown): CanonicalEvent[] {
  if (typeof stopReason !== 'string') return [];
  const reason = FINISH_REASONS.get(stopReason) ?? 'stop';
  const sequence = isObject(additional) ? additional.stop_sequence : undefined;
  return [
    reason === 'stop_sequence' && typeof sequence === 'string'
      ? { type: 'finish', reason, stopSequence: sequence }
      : { type: 'finish', reason },
  ];
}

/** A count as the host wrote it, for the pipeline to check (see inference/usage-check.ts), as the other kinds read it. */
const count = (value: unknown, absent: number): number =>
  typeof value === 'number' ? value : value === undefined || value === null ? absent : NaN;

/**
 * Tokens by class. Bedrock's `inputTokens` is the input neither read from nor written to the cache
 * (AWS's prompt-caching guide), so it is the uncached input as it stands; `cacheDetails` splits the
 * writes by how long they live (1 hour, else 5 minutes). Without the two required counts, NaN.
 */
export function usageOf(usage: Record<string, unknown>): Usage {
  const written = count(usage.cacheWriteInputTokens, 0);
  const details = Array.isArray(usage.cacheDetails) ? usage.cacheDetails.filter(isObject) : [];
  const oneHour = details.filter((d) => d.ttl === '1h').reduce((sum, d) => sum + count(d.inputTokens, 0), 0);
  const hour = Math.min(written, oneHour);
  return {
    inputTokens: count(usage.inputTokens, NaN),
    cacheReadTokens: count(usage.cacheReadInputTokens, 0),
    cacheWriteTokens: written - hour,
    cacheWrite1hTokens: hour,
    outputTokens: count(usage.outputTokens, NaN),
    // Reasoning is within outputTokens, with no count of its own.
    reasoningTokens: 0,
  };
}

const text = (value: unknown, what: string): string => {
  if (typeof value !== 'string') throw new HostError('malformed', `upstream reply without ${what}`);
  return value;
};

/** A whole Converse reply: its reasoning, text and tool calls in order, how it ended, its usage. */
export function decodeConverseReply(reply: Record<string, unknown>): CanonicalEvent[] {
  const output = isObject(reply.output) ? reply.output : {};
  const message = isObject(output.message) ? output.message : null;
  if (!message || !Array.isArray(message.content)) throw new HostError('malformed', 'upstream reply without output.message');
  const events: CanonicalEvent[] = [];
  let calls = 0;
  for (const block of message.content.filter(isObject)) {
    if (block.text !== undefined) {
      const piece = text(block.text, 'text');
      if (piece !== '') events.push({ type: 'text', text: piece });
    } else if (isObject(block.toolUse)) {
      const use = block.toolUse;
      events.push({
        type: 'tool_call',
        index: calls++,
        id: text(use.toolUseId, 'toolUseId'),
        name: text(use.name, 'tool name'),
        argumentsDelta: JSON.stringify(isObject(use.input) ? use.input : {}),
      });
    } else if (isObject(block.reasoningContent) && isObject(block.reasoningContent.reasoningText)) {
      // Redacted reasoning (`redactedContent`) has nothing to show.
      const reasoning = block.reasoningContent.reasoningText;
      const signature = typeof reasoning.signature === 'string' ? { signature: reasoning.signature } : {};
      events.push({ type: 'reasoning', text: text(reasoning.text, 'reasoning text'), ...signature });
    }
  }
  events.push(...finishOf(reply.stopReason, reply.additionalModelResponseFields));
  if (isObject(reply.usage)) events.push({ type: 'usage', usage: usageOf(reply.usage) });
  return events;
}

/** Bedrock's error text (`{"message": …}`, some services' `{"Message": …}`), when its body has one. */
export function bedrockMessage(data: Record<string, unknown>): string | null {
  const message = typeof data.message === 'string' ? data.message : typeof data.Message === 'string' ? data.Message : '';
  return message === '' ? null : message;
}

/**
 * An exception inside a stream (its `:exception-type` as the event: `throttlingException`,
 * `modelStreamErrorException`, `internalServerException`…, `{"message": …}` its payload), as the
 * HostError it fails the stream with; null for any other message.
 */
export function streamException(message: SseMessage, produced: boolean): HostError | null {
  const type = message.event ?? '';
  if (!type.endsWith('Exception')) return null;
  let text: string | null = null;
  try {
    const data: unknown = JSON.parse(message.data);
    if (isObject(data)) text = bedrockMessage(data);
  } catch {
    // A payload that is not JSON: the exception's type says enough.
  }
  return new HostError('upstream_error', text === null ? type : `${type}: ${text}`, null, !produced);
}

export function parseObject(data: string, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    throw new HostError('malformed', `unparseable ${what}: ${data.slice(0, 100)}`);
  }
  if (!isObject(parsed)) throw new HostError('malformed', `${what} is not an object: ${data.slice(0, 100)}`);
  return parsed;
}

/**
 * A ConverseStream: messageStart, then per content block contentBlockStart (a tool use's id and name),
 * contentBlockDelta (text, tool input, reasoning text or signature) and contentBlockStop; messageStop
 * (why it ended), and last metadata (usage, metrics), after which the stream is complete. An
 * exception (`throttlingException`, `modelStreamErrorException`…) fails it.
 */
export class ConverseStreamDecoder implements StreamDecoder {
  done = false;
  private produced = false;
  /** contentBlockIndex → the tool call's index among this reply's calls. */
  private readonly calls = new Map<unknown, number>();

  push(message: SseMessage): CanonicalEvent[] {
    if (this.done) return [];
    const exception = streamException(message, this.produced);
    if (exception) throw exception;
    const type = message.event ?? '';
    const data = parseObject(message.data, `${type || 'stream'} event`);
    const events = this.decode(type, data);
    if (events.some(isOutput)) this.produced = true;
    return events;
  }

  private decode(type: string, data: Record<string, unknown>): CanonicalEvent[] {
    switch (type) {
      case 'contentBlockStart': {
        const start = isObject(data.start) ? data.start : {};
        if (!isObject(start.toolUse)) return [];
        const index = this.calls.size;
        this.calls.set(data.contentBlockIndex, index);
        const use = start.toolUse;
        return [
          {
            type: 'tool_call',
            index,
            id: text(use.toolUseId, 'toolUseId'),
            name: text(use.name, 'tool name'),
            argumentsDelta: '',
          },
        ];
      }
      case 'contentBlockDelta': {
        const delta = isObject(data.delta) ? data.delta : {};
        if (delta.text !== undefined) return [{ type: 'text', text: text(delta.text, 'text') }];
        if (isObject(delta.toolUse)) {
          const index = this.calls.get(data.contentBlockIndex);
          // Input for a block that started no tool use is no call of the client's.
          if (index === undefined) return [];
          const input = text(delta.toolUse.input, 'tool input');
          return input === '' ? [] : [{ type: 'tool_call', index, argumentsDelta: input }];
        }
        if (isObject(delta.reasoningContent)) {
          const reasoning = delta.reasoningContent;
          if (reasoning.text !== undefined) return [{ type: 'reasoning', text: text(reasoning.text, 'reasoning text') }];
          if (reasoning.signature !== undefined)
            return [{ type: 'reasoning', text: '', signature: text(reasoning.signature, 'signature') }];
        }
        // Redacted reasoning, citations, and delta types added after this was written.
        return [];
      }
      case 'messageStop':
        return finishOf(data.stopReason, data.additionalModelResponseFields);
      case 'metadata':
        this.done = true;
        return isObject(data.usage) ? [{ type: 'usage', usage: usageOf(data.usage) }] : [];
      default:
        // messageStart, contentBlockStop, and event types added after this was written.
        return [];
    }
  }
}
