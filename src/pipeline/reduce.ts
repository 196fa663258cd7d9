import { lastValueFrom, Observable, reduce } from 'rxjs';
import type { CanonicalToolCall, FinishReason } from './canonical';
import type { Billed, PipelineEvent } from './inference.command';

/** A whole reply: what a non-streamed response is made of. */
export interface Reply {
  text: string;
  toolCalls: CanonicalToolCall[];
  finish: FinishReason;
  stopSequence?: string;
  usage: { inputTokens: number; outputTokens: number } | null;
  billed: Billed | null;
}

const empty = (): Reply => ({ text: '', toolCalls: [], finish: 'stop', usage: null, billed: null });

function add(reply: Reply, event: PipelineEvent): Reply {
  switch (event.type) {
    case 'text':
      reply.text += event.text;
      break;
    case 'tool_call': {
      const call = (reply.toolCalls[event.index] ??= { id: '', name: '', arguments: '' });
      if (event.id) call.id = event.id;
      if (event.name) call.name = event.name;
      call.arguments += event.argumentsDelta;
      break;
    }
    case 'finish':
      reply.finish = event.reason;
      reply.stopSequence = event.stopSequence;
      break;
    case 'usage':
      reply.usage = { inputTokens: event.inputTokens, outputTokens: event.outputTokens };
      break;
    case 'billed':
      reply.billed = event;
      break;
  }
  return reply;
}

/** A non-streamed reply is a reduction of the same stream. */
export function collectReply(events: Observable<PipelineEvent>): Promise<Reply> {
  return lastValueFrom(events.pipe(reduce(add, empty())), { defaultValue: empty() }).then((reply) => ({
    ...reply,
    toolCalls: reply.toolCalls.filter(Boolean),
  }));
}
