import { EventStore, NewEvent, WrongExpectedRevisionError } from './event-store';

/**
 * The rules of one kind of stream, with no I/O: what a command decides given the state, how an
 * event changes the state, and the state of a stream that does not exist yet.
 */
export interface Decider<Command, State, Event extends NewEvent = NewEvent> {
  decide(command: Command, state: State): Event[];
  evolve(state: State, event: Event): State;
  initialState(): State;
}

/** A stream folded into its state, with the revision of its last event (`no_stream` when it has none). */
export interface StreamState<State> {
  state: State;
  revision: number | 'no_stream';
  /** The log position of its last event; 0 when it has none. */
  position: number;
}

export interface HandleOptions<State> {
  /**
   * How many times a conflict (another writer appended after the stream was read) is answered by
   * reading, deciding and appending again. Default 0: the WrongExpectedRevisionError surfaces.
   */
  retries?: number;
  /**
   * The stream as the caller already knows it, so the first attempt decides and appends without
   * reading: one it has just read, or one it has just named (`newStream(decider)`). A conflict is
   * then answered as on a stream read here.
   */
  known?: StreamState<State>;
}

export interface Handled<Event, State = unknown> {
  /** The events decided and appended; none when the decider decided none (a command already carried out). */
  events: Event[];
  /** The stream's state they were decided on. */
  state: State;
  /** The stream's last revision after the command: the expected revision for the next append. */
  nextExpectedRevision: number | 'no_stream';
  /** The log position of the stream's last event after the command: read models hold its outcome once they reach it. */
  position: number;
}

/** A stream the caller has just named (a fresh id): nothing to read, and it must not exist. */
export const newStream = <State>(decider: Pick<Decider<never, State, never>, 'initialState'>): StreamState<State> => ({
  state: decider.initialState(),
  revision: 'no_stream',
  position: 0,
});

/** Reads a stream and folds it with the decider's `evolve`. */
export async function readStreamState<State, Event extends NewEvent>(
  store: EventStore,
  streamId: string,
  decider: Pick<Decider<never, State, Event>, 'evolve' | 'initialState'>,
): Promise<StreamState<State>> {
  const stream = await store.readStream(streamId);
  let state = decider.initialState();
  // The port's events are untyped. A stream holds only the events its decider decided, so they
  // are read back as the decider's events: this is the one place that assumption is made.
  for (const event of stream) state = decider.evolve(state, event as unknown as Event);
  const last = stream.at(-1);
  return last === undefined
    ? { state, revision: 'no_stream', position: 0 }
    : { state, revision: stream.length - 1, position: last.position };
}

/**
 * Runs a command against a stream: read it, fold it, decide, and append the events with the
 * revision read as the expected revision ('no_stream' when it was empty), so that a write in
 * between is a WrongExpectedRevisionError rather than a decision on stale state. A decision of no
 * events appends nothing (the command was carried out before: a retry). The decider's errors
 * surface as they are; conflicts are retried up to `options.retries` times.
 */
export async function handleCommand<Command, State, Event extends NewEvent>(
  store: EventStore,
  streamId: string,
  decider: Decider<Command, State, Event>,
  command: Command,
  options: HandleOptions<State> = {},
): Promise<Handled<Event, State>> {
  const retries = options.retries ?? 0;
  let current = options.known ?? (await readStreamState(store, streamId, decider));
  for (let attempt = 0; ; attempt++) {
    const { state, revision, position } = current;
    const events = decider.decide(command, state);
    if (events.length === 0) return { events, state, nextExpectedRevision: revision, position };
    try {
      const appended = await store.append(streamId, events, revision);
      return { events, state, ...appended };
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError) || attempt >= retries) throw error;
    }
    current = await readStreamState(store, streamId, decider);
  }
}
