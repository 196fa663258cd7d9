import type { AppendResult, EventStore, ExpectedRevision, NewEvent, RecordedEvent } from './event-store';

/**
 * The event log, its appends timed for whoever listens (the metrics): the store itself stays
 * unaware of them. Only appends are timed; the rest is passed through.
 */
export class TimedEventStore implements EventStore {
  private readonly listeners: Array<(seconds: number) => void> = [];

  constructor(private readonly inner: EventStore) {}

  /** Called with each append's duration in seconds, whether it succeeded or not. */
  onAppend(listener: (seconds: number) => void): void {
    this.listeners.push(listener);
  }

  async append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (this.listeners.length === 0) return this.inner.append(streamId, events, expected);
    const started = performance.now();
    try {
      return await this.inner.append(streamId, events, expected);
    } finally {
      const seconds = (performance.now() - started) / 1000;
      for (const listener of this.listeners) listener(seconds);
    }
  }

  readStream(streamId: string): Promise<RecordedEvent[]> {
    return this.inner.readStream(streamId);
  }

  readAll(after: number, limit: number): Promise<RecordedEvent[]> {
    return this.inner.readAll(after, limit);
  }

  headPosition(): Promise<number> {
    return this.inner.headPosition();
  }

  subscribe(after: number, signal: AbortSignal): AsyncIterable<RecordedEvent[]> {
    return this.inner.subscribe(after, signal);
  }

  appendFailure(): Promise<Error | null> {
    return this.inner.appendFailure();
  }

  logId(): Promise<string> {
    return this.inner.logId();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
