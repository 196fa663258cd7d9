import type { ApiError } from '../../http/api-error';
import { creditsNumber } from '../../ledger/money';
import type { CanonicalMessage, CanonicalRequest } from '../../canonical/canonical';
import type { InferenceResult, PipelineEvent } from '../../inference/inference.command';
import type { Reply } from '../../inference/reduce';
import { replyTokens } from '../reply-usage';
import type { SurfaceWire } from '../respond';
import { sseData, StreamSerializer } from '../sse';
import type { NativeChatRequest } from './native.schema';

/** The native format: ours, documented in the README. Pure translation; no I/O. */

/** The native conversation (user and assistant text turns) as canonical messages; the playground sends the same. */
export const toCanonicalMessages = (messages: NativeChatRequest['messages']): CanonicalMessage[] =>
  messages.map((m) =>
    m.role === 'user' ? { role: 'user', content: m.content } : { role: 'assistant', content: m.content, toolCalls: [] },
  );

export const toCanonical = (body: NativeChatRequest): CanonicalRequest => ({
  system: [],
  messages: toCanonicalMessages(body.messages),
  tools: [],
  maxTokens: body.max_tokens ?? undefined,
  temperature: body.temperature ?? undefined,
  stop: [],
  stream: body.stream === true,
});

/**
 * Usage and cost: credits as a number for people, nano-credits as an exact integer for machines.
 * `input_tokens` is the uncached input; the cache's reads and writes are counted apart.
 */
function accounting(reply: Pick<Reply, 'billed' | 'usage'>) {
  const tokens = replyTokens(reply);
  const usage = {
    input_tokens: tokens.inputTokens,
    output_tokens: tokens.outputTokens,
    cache_read_tokens: tokens.cacheReadTokens,
    cache_write_tokens: tokens.cacheWriteTokens + tokens.cacheWrite1hTokens,
  };
  return {
    usage,
    cost: reply.billed ? creditsNumber(reply.billed.cost) : null,
    cost_nano: reply.billed?.cost ?? null,
    // The settlement's position in the ledger (as the x-ledger-position header): a read with min_position at it includes the charge.
    ledger_position: reply.billed?.position ?? null,
  };
}

export function chatBody(result: InferenceResult, reply: Reply) {
  return {
    id: result.requestId,
    model: result.model.slug,
    text: reply.text,
    finish_reason: reply.finish,
    ...accounting(reply),
  };
}

export const nativeError = (error: ApiError) => ({ error: { code: error.code, message: error.message } });

/** `event: start`, `event: delta` per piece of text, then `event: done` with usage and cost. */
export function nativeSerializer(result: InferenceResult): StreamSerializer {
  const reply: Pick<Reply, 'billed' | 'usage' | 'finish'> = { billed: null, usage: null, finish: 'stop' };
  return {
    open: () => sseData({ id: result.requestId, model: result.model.slug }, 'start'),
    event(event: PipelineEvent) {
      switch (event.type) {
        case 'text':
          return sseData({ text: event.text }, 'delta');
        case 'finish':
          reply.finish = event.reason;
          return '';
        case 'usage':
          reply.usage = event.usage;
          return '';
        case 'billed':
          reply.billed = event;
          return '';
        default:
          return '';
      }
    },
    close: () => sseData({ finish_reason: reply.finish, ...accounting(reply) }, 'done'),
    error: (error: ApiError) => sseData(nativeError(error), 'error'),
  };
}

export const nativeWire: SurfaceWire = { serializer: nativeSerializer, body: chatBody, error: nativeError };
