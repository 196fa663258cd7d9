import { type ChainRule, chainGenesis, chainIdOf, chainLink } from '../eventstore/event-chain';
import type { EventStore, RecordedEvent } from '../eventstore/event-store';

/**
 * The ledger's chains: one per organization, of its ledger events in log order (whatever stream
 * each is on: credits-, reservation-, refusal-). `CreditNoteIssued` is the credit notes' event
 * (see docs/architecture.md, "The ledger's hash chain").
 */
export const LEDGER_CHAIN: ChainRule = {
  types: [
    'CreditsGranted',
    'CreditsReserved',
    'ReservationProgress',
    'ReservationSettled',
    'ReservationReleased',
    'ReservationExpired',
    'RequestRefused',
    'CreditNoteIssued',
  ],
  by: 'orgId',
};

/**
 * One organization's ledger events up to the log's position `head`, in log order, in batches of at
 * most `size`: its chain alone where the log indexes chains (`readChain`), so that a statement or an
 * export reads that organization's events and not every organization's; else the whole log (each
 * chained event of `orgId` with its link when `links`), which the reader filters by organization.
 */
export async function* ledgerBatches(
  events: EventStore,
  orgId: string,
  head: number,
  size: number,
  links = false,
): AsyncGenerator<RecordedEvent[]> {
  for (let after = 0; after < head;) {
    const batch = events.readChain
      ? await events.readChain(orgId, after, size)
      : await events.readAll(after, size, links ? { chainLinks: orgId } : undefined);
    const past = batch.findIndex((event) => event.position > head);
    if (past !== -1) batch.length = past;
    if (batch.length === 0) return;
    yield batch;
    if (past !== -1) return;
    after = batch[batch.length - 1].position;
  }
}

/**
 * Which period an organization's ledger event belongs to: the one the log recorded it in, in its
 * chain's order — never the time the event carries (granted, settled, issued). A boundary cuts the
 * chain once, before its first event recorded at the boundary or later: that event and every one
 * after it lie past the boundary, even one whose recording time reads a little earlier (another
 * process's clock). So a period is always one stretch of the chain with no holes, closing on a link
 * of it: what an export of the period holds (`ledger export --from --to`), what a statement of it folds,
 * and so what `ledger verify` vouches for. Why: docs/architecture.md, "Which period an event belongs to".
 */
export class PeriodBoundary {
  private crossed = false;

  /** `at`: ms since the epoch; -Infinity, a boundary every event is past (a period open at its start); Infinity, one none is. */
  constructor(readonly at: number) {}

  /** Whether an event of the chain has been found past the boundary: then every later one is too. */
  get reached(): boolean {
    return this.crossed;
  }

  /** Whether `event`, the chain's next event (each given once, in log order), lies past the boundary. */
  past(event: { recordedAt: number }): boolean {
    if (!this.crossed && event.recordedAt >= this.at) this.crossed = true;
    return this.crossed;
  }
}

/** The organization whose chain an event is in, or null for an event outside the ledger's chains. */
export const chainOrgOf = (event: { type: string; data: unknown }): string | null =>
  chainIdOf(LEDGER_CHAIN, event.type, event.data);

/** An organization's chain as far as it has been followed: its last link and how many events it holds. */
export interface ChainHead {
  orgId: string;
  /** The last event's link (the genesis while the chain is empty). */
  head: string;
  events: number;
  /** The last event's position in the log; 0 while the chain is empty. */
  position: number;
}

/**
 * Follows every organization's chain in log order, recomputing each link and comparing it with the one
 * the log stamped. A difference names the first event where the chain breaks: the chain goes on from
 * the link that event carries, so one edited event is one difference, not one per event after it.
 */
export class ChainFollower {
  private readonly heads = new Map<string, ChainHead>();
  /** Events of a chain the log carries no link for (a log that records none, or links not sealed yet). */
  unstamped = 0;
  /** Of those, events on a sealed log (EventStoreDB) still within the time their link may take: not differences. */
  pending = 0;

  /**
   * The link `event` should carry, and a difference if it carries another, or none where one is due:
   * `links` true, a log that stamps at commit (due at once); `{ sealedBefore }`, a log sealed after the
   * fact (due for events recorded before that time); false, a log that records none.
   */
  follow(
    event: RecordedEvent,
    links: boolean | { sealedBefore: number },
  ): { orgId: string; link: string; difference: string | null } | null {
    const orgId = chainOrgOf(event);
    if (orgId === null) return null;
    const head = this.head(orgId);
    const link = chainLink(head.head, event);
    let difference: string | null = null;
    if (event.chainLink === undefined) {
      this.unstamped += 1;
      if (links === true)
        difference = `chain of organization ${orgId}: no link stamped (an event added outside the log's writer?)`;
      else if (links !== false) {
        if (event.recordedAt < links.sealedBefore)
          difference = `chain of organization ${orgId}: not sealed, recorded ${new Date(event.recordedAt).toISOString()} (inserted after sealing, or no sealer running)`;
        else this.pending += 1;
      }
    } else if (event.chainLink !== link) {
      difference = `chain of organization ${orgId}: link ${event.chainLink} but its predecessor and content give ${link} (edited, removed, inserted or moved)`;
    }
    this.heads.set(orgId, {
      orgId,
      head: event.chainLink ?? link,
      events: head.events + 1,
      position: event.position,
    });
    return { orgId, link, difference };
  }

  head(orgId: string): ChainHead {
    return this.heads.get(orgId) ?? { orgId, head: chainGenesis(orgId), events: 0, position: 0 };
  }

  all(): ChainHead[] {
    return [...this.heads.values()];
  }
}

/**
 * An organization's chain head and event count, as the log holds it now: the link its last ledger
 * event carries (read by index where the log stamps links; on EventStoreDB, its chain stream's last
 * sealed batch), else recomputed by following the log.
 */
export async function orgChainHead(events: EventStore, orgId: string): Promise<ChainHead> {
  if (events.chainHead) {
    const stamped = await events.chainHead(orgId);
    if (stamped !== null) return { orgId, ...stamped };
  }
  const follower = new ChainFollower();
  for (let after = 0; ;) {
    const batch = await events.readAll(after, 5000);
    if (batch.length === 0) break;
    for (const event of batch) follower.follow(event, false);
    after = batch[batch.length - 1].position;
  }
  return follower.head(orgId);
}
