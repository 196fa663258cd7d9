import type { EventStore } from '../eventstore/event-store';
import { ledgerBatches } from '../ledger/ledger-chain';
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
  for await (const batch of ledgerBatches(events, orgId, head, BATCH)) {
    for (const event of batch) fold.apply(event);
    // Past the month's end nothing more counts: the rest of the log is left unread.
    if (fold.closed) break;
  }
  return { ...fold.statement(), position: head };
}
