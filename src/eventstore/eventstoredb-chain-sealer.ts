import { type ChainRule, chainGenesis, chainIdOf, chainLink } from './event-chain';
import { type EventStore, type RecordedEvent, WrongExpectedRevisionError } from './event-store';

/**
 * The hash chains of a log that cannot stamp at commit (EventStoreDB: no hook runs there, and events
 * never change once written), sealed after the fact. A sealer in every gateway instance follows the
 * log in order, links each chain's events with the same function as the SQLite writer (event-chain.ts),
 * and appends the links in batches to the chain's own stream, `chain-{id}`, with the revision it read
 * as the expected one. `$all` has one order, so every instance computes the same links: the loser of
 * a race reads the winner's batch, checks it holds the links it computed, and goes on from its head.
 * The chain streams are the sealers' checkpoint. Requests never wait for it.
 */

export const CHAIN_SEALED = 'ChainSealed';
/** How long a caught-up sealer waits before reading the log again. */
export const SEAL_INTERVAL_MS = 1_000;
/**
 * How long a chained event may go without its link while sealers run, before the audit calls it a
 * difference: an interval and a round (milliseconds: a read and an append per chain) make ~1 s; the
 * rest is room for a loaded node, a lost race, a sealer restarting.
 */
export const CHAIN_SEALED_WITHIN_MS = 10_000;
/** How long a stopping sealer goes on sealing what it has not yet. */
const FINAL_SEAL_MS = 2_000;
export const chainStreamOf = (chainId: string): string => `chain-${chainId}`;

/** One batch of a chain's links (an event of `chain-{id}`). */
export interface ChainSealed {
  chainId: string;
  /** Positions of the first and last events linked. */
  fromPosition: number;
  toPosition: number;
  /** Every event of every chain at or before this position was sealed when this batch was appended: where a sealer resumes. */
  sealedThrough: number;
  links: Array<{ position: number; link: string }>;
  /** The last link, and how many events the chain holds with this batch. */
  head: string;
  events: number;
}

/** What the sealer uses of the EventStoreDB adapter. */
export interface SealableLog extends Pick<EventStore, 'append' | 'readAll'> {
  readStreamFrom(streamId: string, from: number, limit: number): Promise<RecordedEvent[]>;
  lastOfStream(streamId: string): Promise<RecordedEvent | null>;
  lastOfType(type: string): Promise<RecordedEvent | null>;
}

export interface ChainSealerOptions {
  /** How long a sealer that has caught up waits before looking again (default 1 s): with a round's time, the bound on an event's wait for its link. */
  intervalMs?: number;
  /** Events read per round (default 1000). */
  batchLimit?: number;
  /** Told of what should not happen: a chain stream holding other links than those computed (tampering, or another log), a round that failed. */
  warn?: (message: string) => void;
}

/** A chain as its stream holds it: the revision of its last batch (-1: no stream), head, count and last position linked. */
interface Sealed {
  revision: number;
  head: string;
  events: number;
  toPosition: number;
}

export const isSealableLog = (log: object): log is SealableLog =>
  'lastOfType' in log && 'lastOfStream' in log && 'readStreamFrom' in log;

export class ChainSealer {
  private readonly intervalMs: number;
  private readonly batchLimit: number;
  private readonly warn: (message: string) => void;
  /** Every chained event at or before it is sealed; null until resumed from the chain streams. */
  private through: number | null = null;
  /** Chains as this sealer last read or wrote them; a conflict drops the entry. */
  private readonly chains = new Map<string, Sealed>();
  private stopping: AbortController | null = null;
  private running: Promise<void> | null = null;
  /** Links appended by this sealer, and races lost (batches another sealer appended first). */
  readonly counts = { sealed: 0, batches: 0, racesLost: 0, mismatches: 0 };

  constructor(
    private readonly log: SealableLog,
    private readonly rule: ChainRule,
    options: ChainSealerOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? SEAL_INTERVAL_MS;
    this.batchLimit = options.batchLimit ?? 1_000;
    this.warn = options.warn ?? (() => undefined);
  }

  /** Seals in the background until `stop()`; a failed round is told and retried after the interval. */
  start(): void {
    if (this.running) return;
    const stopping = (this.stopping = new AbortController());
    this.running = (async () => {
      while (!stopping.signal.aborted) {
        let caughtUp = true;
        try {
          caughtUp = (await this.sealRound()).caughtUp;
        } catch (error) {
          this.warn(`chain sealer: ${(error as Error).message}`);
        }
        if (caughtUp && !stopping.signal.aborted) await wait(this.intervalMs, stopping.signal);
      }
    })();
  }

  /**
   * Ends the background rounds, then seals what the log holds now, for up to FINAL_SEAL_MS (best
   * effort, so that a service stopping leaves little unsealed and never hangs on a server that does not answer).
   */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.stopping?.abort();
    await this.running;
    this.running = null;
    const final = (async () => {
      while (!(await this.sealRound()).caughtUp);
    })().catch((error: Error) => this.warn(`chain sealer: ${error.message}`));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([final, new Promise((resolve) => (timer = setTimeout(resolve, FINAL_SEAL_MS)))]);
    clearTimeout(timer);
  }

  /** Reads the next batch of the log after what is sealed and seals its chained events. */
  async sealRound(): Promise<{ sealed: number; caughtUp: boolean }> {
    this.through ??= await this.resumePosition();
    const after = this.through;
    const batch = await this.log.readAll(after, this.batchLimit);
    const byChain = new Map<string, RecordedEvent[]>();
    for (const event of batch) {
      const chainId = chainIdOf(this.rule, event.type, event.data);
      if (chainId === null) continue;
      const events = byChain.get(chainId) ?? [];
      events.push(event);
      byChain.set(chainId, events);
    }
    // Chains in the order of their first event, each sealed before the next: when one's batch is
    // appended, every event of the log before the next chain's first is sealed. The last records the
    // whole batch as sealed, so a sealer restarting reads on from there.
    const chains = [...byChain];
    const before = new Map(batch.map((event, i) => [event.position, i === 0 ? after : batch[i - 1].position]));
    let sealed = 0;
    for (const [i, [chainId, events]] of chains.entries()) {
      const next = chains[i + 1]?.[1][0].position;
      const sealedThrough = next === undefined ? batch[batch.length - 1].position : before.get(next)!;
      sealed += await this.sealChain(chainId, events, sealedThrough);
    }
    if (batch.length > 0) this.through = batch[batch.length - 1].position;
    return { sealed, caughtUp: batch.length < this.batchLimit };
  }

  /** Where the newest batch of any chain says everything before was sealed (the log's start if none is). */
  private async resumePosition(): Promise<number> {
    const last = await this.log.lastOfType(CHAIN_SEALED);
    return last === null ? 0 : (last.data as ChainSealed).sealedThrough;
  }

  private async sealed(chainId: string): Promise<Sealed> {
    const known = this.chains.get(chainId);
    if (known) return known;
    const last = await this.log.lastOfStream(chainStreamOf(chainId));
    if (last !== null && last.type !== CHAIN_SEALED)
      throw new Error(
        `${chainStreamOf(chainId)} ends with a ${last.type}, not a ${CHAIN_SEALED}: leave chain streams to the sealers`,
      );
    const found =
      last === null
        ? { revision: -1, head: chainGenesis(chainId), events: 0, toPosition: 0 }
        : { revision: last.revision, ...pick(last.data as ChainSealed) };
    this.chains.set(chainId, found);
    return found;
  }

  /** Links `events` (one chain's, in log order) not sealed yet and appends them as one batch; returns how many. */
  private async sealChain(chainId: string, events: RecordedEvent[], sealedThrough: number): Promise<number> {
    for (;;) {
      const from = await this.sealed(chainId);
      const pending = events.filter((event) => event.position > from.toPosition);
      if (pending.length === 0) return 0;
      let head = from.head;
      const links = pending.map((event) => ({ position: event.position, link: (head = chainLink(head, event)) }));
      const batch: ChainSealed = {
        chainId,
        fromPosition: pending[0].position,
        toPosition: pending[pending.length - 1].position,
        sealedThrough,
        links,
        head,
        events: from.events + pending.length,
      };
      try {
        const appended = await this.log.append(
          chainStreamOf(chainId),
          [{ type: CHAIN_SEALED, data: batch }],
          from.revision < 0 ? 'no_stream' : from.revision,
        );
        this.chains.set(chainId, { revision: appended.nextExpectedRevision, ...pick(batch) });
        this.counts.sealed += pending.length;
        this.counts.batches += 1;
        return pending.length;
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError)) throw error;
        // Another sealer appended first: its batches must hold the links computed here.
        this.counts.racesLost += 1;
        this.chains.delete(chainId);
        await this.compareWithWinner(chainId, from.revision + 1, links);
      }
    }
  }

  private async compareWithWinner(chainId: string, fromRevision: number, ours: ChainSealed['links']): Promise<void> {
    const computed = new Map(ours.map(({ position, link }) => [position, link]));
    for (let revision = fromRevision; ;) {
      const batches = await this.log.readStreamFrom(chainStreamOf(chainId), revision, 100);
      if (batches.length === 0) return;
      for (const batch of batches) {
        for (const { position, link } of (batch.data as ChainSealed).links) {
          const mine = computed.get(position);
          if (mine !== undefined && mine !== link) {
            this.counts.mismatches += 1;
            this.warn(
              `chain sealer: ${chainStreamOf(chainId)}@${batch.revision} links position ${position} to ${link}, the log gives ${mine} (tampering, or not the log followed)`,
            );
          }
        }
        revision = batch.revision + 1;
      }
    }
  }
}

const pick = ({ head, events, toPosition }: ChainSealed): Omit<Sealed, 'revision'> => ({ head, events, toPosition });

const wait = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
