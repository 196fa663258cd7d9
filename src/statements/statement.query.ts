import type { EventStore } from '../eventstore/event-store';
import { ledgerBatches } from '../ledger/ledger-chain';
import { type Statement, StatementFold, type StatementMonth } from './statement';

/** How many events one read of the log brings: enough to keep the fold busy, few enough to stay small. */
const BATCH = 5_000;

/**
 * An organization's statement for a month, read from the log up to its head when asked: the
 * events are folded as they are read, never all held at once. The statement is the organization's
 * chain's alone (its `chain.position` says how far it reached), the same document whoever folds the
 * same events (`ledger statement --export`); `position`, the log's head it was read to (other
 * organizations' events included), is beside it, not in it.
 */
export async function readStatement(
  events: EventStore,
  orgId: string,
  month: StatementMonth,
): Promise<{ statement: Statement; position: number }> {
  const fold = new StatementFold(orgId, month);
  const head = await events.headPosition();
  for await (const batch of ledgerBatches(events, orgId, head, BATCH)) {
    for (const event of batch) fold.apply(event);
    // Past the month's end nothing more counts: the rest of the log is left unread.
    if (fold.closed) break;
  }
  return { statement: fold.statement(), position: head };
}
