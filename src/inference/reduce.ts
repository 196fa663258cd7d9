import type { EventEmitter } from 'node:events';
import type { Observable, Subscription } from 'rxjs';
import type { CanonicalToolCall, Citation, FinishReason, PassThrough, Usage } from '../canonical/canonical';
import type { Billed, PipelineEvent } from './inference.command';

/** A whole reply: what a non-streamed response is made of. */
export interface Reply {
  text: string;
  /** The reasoning shown before the text, and the host's signature of it when it signs it. */
  reasoning: string;
  reasoningSignature?: string;
  toolCalls: CanonicalToolCall[];
  /** Pages the host cited for passages of the text, in the order cited. */
  citations: Citation[];
  finish: FinishReason;
  stopSequence?: string;
  /** The host's last count. */
  usage: Usage | null;
  billed: Billed | null;
  /** The upstream's own reply, when the request was passed through in the client's format. */
  passThrough: PassThrough['data'] | null;
}

const empty = (): Reply => ({
  text: '',
  reasoning: '',
  toolCalls: [],
  citations: [],
  finish: 'stop',
  usage: null,
  billed: null,
  passThrough: null,
});

function add(reply: Reply, event: PipelineEvent): Reply {
  switch (event.type) {
    case 'text':
      reply.text += event.text;
      break;
    case 'reasoning':
      reply.reasoning += event.text;
      if (event.signature !== undefined) reply.reasoningSignature = event.signature;
      break;
    case 'pass_through':
      reply.passThrough = event.data;
      break;
    case 'tool_call': {
      const call = (reply.toolCalls[event.index] ??= { id: '', name: '', arguments: '' });
      if (event.id) call.id = event.id;
      if (event.name) call.name = event.name;
      call.arguments += event.argumentsDelta;
      break;
    }
    case 'citation':
      reply.citations.push(event);
      break;
    case 'finish':
      reply.finish = event.reason;
      reply.stopSequence = event.stopSequence;
      break;
    case 'usage':
      reply.usage = event.usage;
      break;
    case 'billed':
      reply.billed = event;
      break;
  }
  return reply;
}

/**
 * A non-streamed reply is a reduction of the same stream, folded as its events arrive. When the
 * client's response closes first, the reduction ends there (its subscription stops the upstream
 * call) with what had arrived.
 */
export function collectReply(events: Observable<PipelineEvent>, client: EventEmitter & { destroyed?: boolean }): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const reply = empty();
    let subscription: Subscription | null = null;
    const finish = () => {
      client.off('close', leave);
      resolve({ ...reply, toolCalls: reply.toolCalls.filter(Boolean) });
    };
    const leave = () => {
      subscription?.unsubscribe();
      finish();
    };
    // Listening first: a stream that ends at once (while subscribing) finds the listener to remove.
    client.once('close', leave);
    subscription = events.subscribe({
      next: (event) => add(reply, event),
      // The stream fails with ApiErrors (a host's failure is mapped before it reaches here).
      error: (error: Error) => {
        client.off('close', leave);
        reject(error);
      },
      complete: finish,
    });
    // A client that left while the request was admitted fired its 'close' before anyone listened.
    if (client.destroyed === true) leave();
  });
}
