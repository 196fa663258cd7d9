import {
  type AppendResult,
  type Durability,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type RecordedEvent,
  revisionWentBack,
  WrongExpectedRevisionError,
} from './event-store';

/**
 * The event log, its appends timed for whoever listens (the metrics), and a refused append whose
 * stream went back reported (the projector checks the log): the store itself stays unaware of
 * either. The rest is passed through.
 */
export class TimedEventStore implements EventStore {
  private readonly listeners: Array<(seconds: number) => void> = [];
  private readonly wentBack: Array<(error: WrongExpectedRevisionError) => void> = [];
  private guard: () => (result: AppendResult) => Error | null = () => () => null;

  readonly chainHead?: EventStore['chainHead'];
  readonly readChain?: EventStore['readChain'];
  readonly chainSealedWithinMs?: number;
  readonly onCommitted?: EventStore['onCommitted'];

  constructor(private readonly inner: EventStore) {
    this.chainHead = inner.chainHead?.bind(inner);
    this.readChain = inner.readChain?.bind(inner);
    this.onCommitted = inner.onCommitted?.bind(inner);
    this.chainSealedWithinMs = inner.chainSealedWithinMs;
  }

  /** Called with each append's duration in seconds, whether it succeeded or not. */
  onAppend(listener: (seconds: number) => void): void {
    this.listeners.push(listener);
  }

  /** Called when an append finds its stream behind the revision it expected (see revisionWentBack). */
  onRevisionWentBack(listener: (error: WrongExpectedRevisionError) => void): void {
    this.wentBack.push(listener);
  }

  /**
   * Judges each append that went in, by a judge taken as it is sent (what was known then): an error
   * makes it fail to its caller (it is in the log all the same), so that nothing goes on from an
   * append written where it should not have been.
   */
  guardAppends(guard: () => (result: AppendResult) => Error | null): void {
    this.guard = guard;
  }

  async append(streamId: string, events: NewEvent[], expected: ExpectedRevision, durability?: Durability): Promise<AppendResult> {
    const started = performance.now();
    const judge = this.guard();
    try {
      const result = await this.inner.append(streamId, events, expected, durability);
      const refused = judge(result);
      if (refused) throw refused;
      return result;
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError && revisionWentBack(error))
        for (const listener of this.wentBack) listener(error);
      throw error;
    } finally {
      const seconds = (performance.now() - started) / 1000;
      for (const listener of this.listeners) listener(seconds);
    }
  }

  readStream(streamId: string): Promise<RecordedEvent[]> {
    return this.inner.readStream(streamId);
  }

  readAll(after: number, limit: number, options?: { chainLinks?: boolean | string }): Promise<RecordedEvent[]> {
    return this.inner.readAll(after, limit, options);
  }

  headPosition(): Promise<number> {
    return this.inner.headPosition();
  }

  subscribe(after: number, signal: AbortSignal, reached?: () => number): AsyncIterable<RecordedEvent[]> {
    return this.inner.subscribe(after, signal, reached);
  }

  lookNow(): void {
    this.inner.lookNow?.();
  }

  appendFailure(): Promise<Error | null> {
    return this.inner.appendFailure();
  }

  logId(): Promise<string> {
    return this.inner.logId();
  }

  readLogId(): Promise<string | null> {
    return this.inner.readLogId();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
