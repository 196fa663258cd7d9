import type { EventStore } from '../eventstore/event-store';
import { type Statement, StatementFold, type StatementMonth } from './statement';

/** How many events one read of the log brings: enough to keep the fold busy, few enough to stay small. */
const BATCH = 5_000;

/**
 * An organization's statement for a month, read from the log up to its head when asked: the
 * events are folded as they are read, never all held at once.
 */
export async function readStatement(
  events: EventStore,
  orgId: string,
  month: StatementMonth,
): Promise<Statement & { position: number }> {
  const fold = new StatementFold(orgId, month);
  const head = await events.headPosition();
  let after = 0;
  while (after < head) {
    const batch = await events.readAll(after, BATCH);
    if (batch.length === 0) break;
    for (const event of batch) if (event.position <= head) fold.apply(event);
    after = batch[batch.length - 1].position;
  }
  return { ...fold.statement(), position: head };
}
