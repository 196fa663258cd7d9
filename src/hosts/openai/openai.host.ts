import type { CanonicalEvent, CanonicalMessage, CanonicalRequest, FinishReason, Usage } from '../../canonical/canonical';
import { HostError } from '../../canonical/canonical';
import type { HostKind, SseMessage, StreamDecoder } from '../host-kind';
import { openAiEmbeddingsRequest } from './openai.embeddings';

/** Chat-completions hosts: OpenAI and every compatible server (Groq, Together, vLLM, Ollama, …). */

function toWireMessage(message: CanonicalMessage): Record<string, unknown> {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
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

/** The usage fields this reads. Cached input is part of `prompt_tokens`. */
interface WireUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  /** `cached_tokens`: read from the cache; `cache_write_tokens` (some compatible hosts): written to it. */
  prompt_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number } | null;
  completion_tokens_details?: { reasoning_tokens?: number } | null;
}

interface WireChunk {
  error?: { message?: string };
  choices?: Array<{
    delta?: {
      content?: string | null;
      tool_calls?: Array<{ index?: number; id?: string; function?: { name?: string; arguments?: string } }>;
    };
    finish_reason?: string | null;
  }>;
  usage?: WireUsage | null;
}

/** The fields of a whole (non-streamed) completion this reads. */
interface WireCompletion {
  error?: { message?: string };
  choices?: Array<{
    message?: {
      content?: string | null;
      tool_calls?: Array<{ id?: string; function?: { name?: string; arguments?: string } }>;
    };
    finish_reason?: string | null;
  }>;
  usage?: WireUsage | null;
}

const count = (value: unknown): number => (typeof value === 'number' ? value : 0);

/** Tokens by class: the cache's reads and writes are taken out of `prompt_tokens`, the rest is uncached input. */
function usageOf(usage: WireUsage): Usage {
  const reads = count(usage.prompt_tokens_details?.cached_tokens);
  const writes = count(usage.prompt_tokens_details?.cache_write_tokens);
  return {
    inputTokens: Math.max(0, count(usage.prompt_tokens) - reads - writes),
    cacheReadTokens: reads,
    cacheWriteTokens: writes,
    // The format has no 1-hour writes.
    cacheWrite1hTokens: 0,
    outputTokens: count(usage.completion_tokens),
    reasoningTokens: count(usage.completion_tokens_details?.reasoning_tokens),
  };
}

const usageEvent = (usage: WireUsage | null | undefined): CanonicalEvent | null =>
  usage && typeof usage.prompt_tokens === 'number' ? { type: 'usage', usage: usageOf(usage) } : null;

/** A whole completion: its text, its tool calls (each in one piece), why it finished, its usage. */
function decodeReply(body: string): CanonicalEvent[] {
  let completion: WireCompletion;
  try {
    completion = JSON.parse(body) as WireCompletion;
  } catch {
    throw new HostError('malformed', 'upstream sent a reply that is not JSON');
  }
  if (completion?.error) throw new HostError('upstream_error', completion.error.message ?? 'upstream reported an error');
  const choice = completion?.choices?.[0];
  if (!choice) throw new HostError('malformed', 'upstream sent a reply without choices');
  const events: CanonicalEvent[] = [];
  const content = choice.message?.content;
  if (typeof content === 'string' && content !== '') events.push({ type: 'text', text: content });
  (choice.message?.tool_calls ?? []).forEach((call, index) =>
    events.push({
      type: 'tool_call',
      index,
      id: call.id ?? '',
      name: call.function?.name ?? '',
      argumentsDelta: call.function?.arguments ?? '',
    }),
  );
  if (choice.finish_reason) events.push({ type: 'finish', reason: FINISH[choice.finish_reason] ?? 'stop' });
  const usage = usageEvent(completion.usage);
  if (usage) events.push(usage);
  return events;
}

class OpenAiDecoder implements StreamDecoder {
  done = false;
  private produced = false;

  push(message: SseMessage): CanonicalEvent[] {
    if (message.data === '[DONE]') {
      this.done = true;
      return [];
    }
    let chunk: WireChunk;
    try {
      chunk = JSON.parse(message.data) as WireChunk;
    } catch {
      throw new HostError('malformed', 'upstream sent a stream chunk that is not JSON', null, !this.produced);
    }
    if (chunk.error) {
      throw new HostError('upstream_error', chunk.error.message ?? 'upstream reported an error', null, !this.produced);
    }
    const events: CanonicalEvent[] = [];
    const choice = chunk.choices?.[0];
    const delta = choice?.delta;
    if (typeof delta?.content === 'string' && delta.content !== '') events.push({ type: 'text', text: delta.content });
    for (const call of delta?.tool_calls ?? []) {
      events.push({
        type: 'tool_call',
        index: call.index ?? 0,
        ...(call.id ? { id: call.id } : {}),
        ...(call.function?.name ? { name: call.function.name } : {}),
        argumentsDelta: call.function?.arguments ?? '',
      });
    }
    if (events.length > 0) this.produced = true;
    if (choice?.finish_reason) events.push({ type: 'finish', reason: FINISH[choice.finish_reason] ?? 'stop' });
    const usage = usageEvent(chunk.usage);
    if (usage) events.push(usage);
    return events;
  }
}

export const openAiHost: HostKind<'openai'> = {
  name: 'openai',

  buildRequest(request: CanonicalRequest, hostModel: string, apiKey: string | null) {
    const body: Record<string, unknown> = {
      model: hostModel,
      messages: [...request.system.map((content) => ({ role: 'system', content })), ...request.messages.map(toWireMessage)],
      stream: request.stream,
    };
    // Asked for always: settlement uses the host's own count (a whole reply carries it anyway).
    if (request.stream) body.stream_options = { include_usage: true };
    if (request.maxTokens !== undefined) body.max_tokens = request.maxTokens;
    if (request.temperature !== undefined) body.temperature = request.temperature;
    if (request.topP !== undefined) body.top_p = request.topP;
    if (request.stop.length > 0) body.stop = request.stop;
    if (request.tools.length > 0) {
      body.tools = request.tools.map((t) => ({
        type: 'function',
        function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.parameters },
      }));
    }
    if (request.toolChoice !== undefined) {
      body.tool_choice =
        typeof request.toolChoice === 'string'
          ? request.toolChoice
          : { type: 'function', function: { name: request.toolChoice.name } };
    }
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: request.stream ? 'text/event-stream' : 'application/json',
    };
    if (apiKey) headers.authorization = `Bearer ${apiKey}`;
    return { path: '/chat/completions', headers, body };
  },

  decoder: () => new OpenAiDecoder(),

  decodeReply,

  errorMessage(status: number, body: string): string {
    try {
      const parsed = JSON.parse(body) as { error?: { message?: string } | string; message?: string };
      const message = typeof parsed.error === 'string' ? parsed.error : (parsed.error?.message ?? parsed.message);
      if (message) return message;
    } catch {
      // not JSON: fall through to the text
    }
    const text = body.trim().slice(0, 300);
    return text || `upstream answered ${status}`;
  },
  embeddingsRequest: openAiEmbeddingsRequest,
};
