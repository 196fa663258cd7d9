import { EventEmitter } from 'node:events';
import { NEVER, Observable, of, throwError } from 'rxjs';
import type { PipelineEvent } from '../../src/inference/inference.command';
import { collectReply } from '../../src/inference/reduce';
import { usage } from '../support/usage';

describe('a non-streamed reply, folded from the stream', () => {
  it("folds text, tool calls, finish and usage (the host's last count), and stops listening to the client", async () => {
    const client = new EventEmitter();
    const events: PipelineEvent[] = [
      { type: 'text', text: 'Hel' },
      { type: 'text', text: 'lo' },
      { type: 'tool_call', index: 0, id: 'call_1', name: 'lookup', argumentsDelta: '{"q":' },
      { type: 'tool_call', index: 0, argumentsDelta: '"x"}' },
      { type: 'finish', reason: 'tool_calls' },
      { type: 'usage', usage: usage({ inputTokens: 1, outputTokens: 1 }) },
      { type: 'usage', usage: usage({ inputTokens: 3, cacheReadTokens: 2, outputTokens: 5 }) },
    ];
    const reply = await collectReply(of(...events), client);
    expect(reply).toMatchObject({
      text: 'Hello',
      toolCalls: [{ id: 'call_1', name: 'lookup', arguments: '{"q":"x"}' }],
      finish: 'tool_calls',
      usage: usage({ inputTokens: 3, cacheReadTokens: 2, outputTokens: 5 }),
    });
    expect(client.listenerCount('close')).toBe(0);
  });

  it('rejects with a failure that comes while subscribing, and stops listening', async () => {
    const client = new EventEmitter();
    await expect(
      collectReply(
        throwError(() => new Error('at once')),
        client,
      ),
    ).rejects.toThrow('at once');
    expect(client.listenerCount('close')).toBe(0);
  });

  it('ends with what arrived when the client leaves, and unsubscribes (which stops the upstream call)', async () => {
    const client = new EventEmitter();
    let unsubscribed = false;
    const events = new Observable<PipelineEvent>((subscriber) => {
      subscriber.next({ type: 'text', text: 'partial' });
      const never = NEVER.subscribe();
      return () => {
        unsubscribed = true;
        never.unsubscribe();
      };
    });
    const folding = collectReply(events, client);
    client.emit('close');
    await expect(folding).resolves.toMatchObject({ text: 'partial' });
    expect(unsubscribed).toBe(true);
    expect(client.listenerCount('close')).toBe(0);
  });
});
