import {
  EventStorePositionError,
  KnownPositions,
  checkPortPosition,
  exactPosition,
  isAnchorFor,
  planStart,
  toPortPosition,
} from '../../src/eventstore/eventstoredb-positions';

const pos = (commit: bigint, prepare = commit) => ({ commit, prepare });

describe('EventStoreDB positions and the port', () => {
  it("takes an event's position when commit and prepare agree and fit a safe integer", () => {
    expect(toPortPosition(pos(1n), 'e')).toBe(1);
    expect(toPortPosition(pos(123_456_789n), 'e')).toBe(123_456_789);
    expect(toPortPosition(pos(BigInt(Number.MAX_SAFE_INTEGER)), 'e')).toBe(Number.MAX_SAFE_INTEGER);
  });

  it.each([
    ['no position at all', undefined, 'sent no position'],
    ['the zeros client 6.x fills a missing position with', pos(0n), 'sent no position'],
    ['a zero prepare', pos(10n, 0n), 'sent no position'],
    ['an event of an explicit transaction (commit after prepare)', pos(2_000n, 1_500n), 'differs from prepare'],
    ['a position past the safe integers', pos(BigInt(Number.MAX_SAFE_INTEGER) + 1n), 'beyond'],
    ['a negative position', pos(-5n), 'sent no position'],
  ])('refuses %s', (_, position, message) => {
    expect(() => toPortPosition(position, 'event 3 of s')).toThrow(EventStorePositionError);
    expect(() => toPortPosition(position, 'event 3 of s')).toThrow(message);
  });

  it('accepts safe integers ≥ 0 as numbers to read after, nothing else', () => {
    expect(checkPortPosition(0)).toBe(0);
    expect(checkPortPosition(Number.MAX_SAFE_INTEGER)).toBe(Number.MAX_SAFE_INTEGER);
    for (const bad of [-1, 1.5, Number.NaN, Infinity, Number.MAX_SAFE_INTEGER + 1]) {
      expect(() => checkPortPosition(bad)).toThrow(RangeError);
    }
  });

  it('sends a number as a position only when it is known to be an exact event position', () => {
    const known = new KnownPositions();
    expect(planStart(0, known)).toEqual({ from: 'start' });
    expect(planStart(4_096, known)).toEqual({ from: 'search' });
    known.add(4_096);
    expect(planStart(4_096, known)).toEqual({ from: 'exact', position: 4_096 });
    // One less, one more: never an event's position, whatever its neighbours are.
    expect(planStart(4_095, known)).toEqual({ from: 'search' });
    expect(planStart(4_097, known)).toEqual({ from: 'search' });
    expect(() => planStart(-1, known)).toThrow(RangeError);
    expect(exactPosition(4_096)).toEqual({ commit: 4_096n, prepare: 4_096n });
  });

  it('anchors a read on the newest event at or before the number, by commit position', () => {
    expect(isAnchorFor(1_000, pos(1_000n))).toBe(true);
    expect(isAnchorFor(1_000, pos(999n))).toBe(true);
    expect(isAnchorFor(1_000, pos(1_001n))).toBe(false);
    // A server event of an explicit transaction is ordered by its commit.
    expect(isAnchorFor(1_000, pos(1_200n, 900n))).toBe(false);
  });

  it('forgets the oldest known positions past its bound', () => {
    const known = new KnownPositions(3);
    for (const p of [10, 20, 30, 20, 40]) known.add(p);
    expect(known.size).toBe(3);
    expect([10, 20, 30, 40].map((p) => known.has(p))).toEqual([false, true, true, true]);
  });
});
