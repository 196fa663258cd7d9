import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Decider, handleCommand, newStream, readStreamState } from '../../src/eventstore/command-handler';
import { EventStore, ExpectedRevision, NewEvent, WrongExpectedRevisionError } from '../../src/eventstore/event-store';
import { SqliteEventStore } from '../../src/eventstore/sqlite-event-store';
import { tempDir } from '../support/temp';

// A counter that never goes past 10: enough rules to see what the handler decides on.
interface Added {
  type: 'Added';
  data: { by: number };
}
interface Add {
  type: 'Add';
  by: number;
}
// Adding nothing decides no event: a command with nothing left to do.
interface Counter {
  total: number;
  /** The totals `decide` was called on, in order. */
  decidedOn: number[];
}

class LimitError extends Error {}

function counterDecider(): Decider<Add, Counter, Added> & { decidedOn: number[] } {
  const decidedOn: number[] = [];
  return {
    decidedOn,
    initialState: () => ({ total: 0, decidedOn }),
    evolve: (state, event) => ({ total: state.total + event.data.by, decidedOn }),
    decide: (command, state) => {
      decidedOn.push(state.total);
      if (command.by === 0) return [];
      if (state.total + command.by > 10) throw new LimitError(`${state.total} + ${command.by} is past 10`);
      return [{ type: 'Added', data: { by: command.by } }];
    },
  };
}

const added = (by: number): NewEvent => ({ type: 'Added', data: { by } });

/**
 * The store as the handler sees it, with what it was asked recorded, and another writer that
 * appends to the stream just before each of the handler's first `races` appends.
 */
function observed(store: EventStore, races = 0) {
  const calls = { reads: 0, expected: [] as ExpectedRevision[] };
  let left = races;
  const wrapped: EventStore = {
    append: async (streamId, events, expected) => {
      calls.expected.push(expected);
      if (left > 0) {
        left -= 1;
        await store.append(streamId, [added(1)], 'any');
      }
      return store.append(streamId, events, expected);
    },
    readStream: async (streamId) => {
      calls.reads += 1;
      return store.readStream(streamId);
    },
    readAll: (after, limit) => store.readAll(after, limit),
    headPosition: () => store.headPosition(),
    subscribe: (after, signal) => store.subscribe(after, signal),
    appendFailure: () => store.appendFailure(),
    logId: () => store.logId(),
    readLogId: () => store.readLogId(),
    close: () => store.close(),
  };
  return { store: wrapped, calls };
}

describe('event-sourced command handler', () => {
  const dir = tempDir('command-handler');
  let store: SqliteEventStore;
  const stream = () => `counter-${randomUUID()}`;
  const totalOf = async (streamId: string) => (await readStreamState(store, streamId, counterDecider())).state.total;

  beforeAll(() => {
    store = new SqliteEventStore(join(dir.path, 'events.sqlite'), { pollIntervalMs: 20 });
  });
  afterAll(async () => {
    await store.close();
    dir.cleanup();
  });

  it("appends a stream's first events with 'no_stream', and later ones with the revision it read", async () => {
    const s = stream();
    const { store: watched, calls } = observed(store);
    const first = await handleCommand(watched, s, counterDecider(), { type: 'Add', by: 2 });
    expect(first.events).toEqual([{ type: 'Added', data: { by: 2 } }]);
    expect(first.nextExpectedRevision).toBe(0);
    const second = await handleCommand(watched, s, counterDecider(), { type: 'Add', by: 3 });
    expect(second.nextExpectedRevision).toBe(1);
    expect(second.position).toBeGreaterThan(first.position);
    expect(calls.expected).toEqual(['no_stream', 0]);
    expect(await totalOf(s)).toBe(5);
    expect(await readStreamState(store, s, counterDecider())).toMatchObject({ revision: 1 });
    expect(await readStreamState(store, stream(), counterDecider())).toMatchObject({
      revision: 'no_stream',
      state: { total: 0 },
    });
  });

  it('appends nothing when the decider decides nothing, answering the state and the stream as they are', async () => {
    const s = stream();
    const { position } = await store.append(s, [added(4)], 'no_stream');
    const { store: watched, calls } = observed(store);
    const handled = await handleCommand(watched, s, counterDecider(), { type: 'Add', by: 0 });
    expect(handled).toMatchObject({ events: [], state: { total: 4 }, nextExpectedRevision: 0, position });
    expect(calls.expected).toEqual([]);
    expect(await readStreamState(store, s, counterDecider())).toMatchObject({ revision: 0, position });
  });

  it('surfaces the WrongExpectedRevisionError of a conflict when no retry is allowed, and appends nothing of its own', async () => {
    const s = stream();
    await store.append(s, [added(4)], 'no_stream');
    const { store: raced, calls } = observed(store, 1);
    const decider = counterDecider();
    await expect(handleCommand(raced, s, decider, { type: 'Add', by: 2 })).rejects.toThrow(WrongExpectedRevisionError);
    expect(calls.expected).toEqual([0]);
    expect(decider.decidedOn).toEqual([4]);
    // Only the other writer's event landed.
    expect(await totalOf(s)).toBe(5);
  });

  it('answers a conflict by reading, deciding and appending again, as many times as allowed', async () => {
    const s = stream();
    const { store: raced, calls } = observed(store, 2);
    const decider = counterDecider();
    const handled = await handleCommand(raced, s, decider, { type: 'Add', by: 3 }, { retries: 2 });
    // Decided first on the empty stream, then on what each other writer's append left.
    expect(decider.decidedOn).toEqual([0, 1, 2]);
    expect(calls.expected).toEqual(['no_stream', 0, 1]);
    expect(handled).toMatchObject({ events: [{ type: 'Added', data: { by: 3 } }], nextExpectedRevision: 2 });
    expect(await totalOf(s)).toBe(5);

    const { store: alwaysRaced } = observed(store, 5);
    const outraced = handleCommand(alwaysRaced, s, counterDecider(), { type: 'Add', by: 1 }, { retries: 1 });
    await expect(outraced).rejects.toBeInstanceOf(WrongExpectedRevisionError);
  });

  it("re-decides on what the stream holds after a conflict: a rule the other writer's event breaks surfaces", async () => {
    const s = stream();
    await store.append(s, [added(9)], 'no_stream');
    const { store: raced } = observed(store, 1);
    await expect(handleCommand(raced, s, counterDecider(), { type: 'Add', by: 1 }, { retries: 3 })).rejects.toThrow(LimitError);
    expect(await totalOf(s)).toBe(10);
  });

  it('decides on a stream the caller already knows without reading it, and reads it on a conflict', async () => {
    const s = stream();
    const { store: watched, calls } = observed(store);
    const decider = counterDecider();
    await handleCommand(watched, s, decider, { type: 'Add', by: 2 }, { known: newStream(decider) });
    expect(calls).toEqual({ reads: 0, expected: ['no_stream'] });

    const known = await readStreamState(store, s, decider);
    const { store: raced, calls: racedCalls } = observed(store, 1);
    await handleCommand(raced, s, decider, { type: 'Add', by: 2 }, { known, retries: 1 });
    expect(racedCalls).toEqual({ reads: 1, expected: [0, 1] });
    expect(await totalOf(s)).toBe(5);
  });
});
