import { admitCall, BreakerState, breakerStateOf, CLOSED, recordCall } from '../../src/routing/breaker';

const settings = { failures: 3, cooldownMs: 1_000 };

/** The state after `outcomes` (true: served) recorded at `now`, from closed. */
const after = (outcomes: boolean[], now = 0): BreakerState =>
  outcomes.reduce((state, ok) => recordCall(state, ok, now, settings), CLOSED);

describe('a host circuit breaker', () => {
  it('stays closed below the failures in a row, and a success starts the count again', () => {
    expect(after([false, false])).toEqual({ phase: 'closed', failures: 2 });
    expect(after([false, false, true, false, false])).toEqual({ phase: 'closed', failures: 2 });
    expect(admitCall(after([false, false]), 0, settings).allowed).toBe(true);
  });

  it('opens at the failures in a row, for the cool-down', () => {
    const open = after([false, false, false], 5_000);
    expect(open).toEqual({ phase: 'open', until: 6_000 });
    expect(admitCall(open, 5_999, settings)).toEqual({ allowed: false, next: open });
  });

  it('after the cool-down, lets one probe through (half-open) and passes the others over', () => {
    const open = after([false, false, false], 5_000);
    const probe = admitCall(open, 6_000, settings);
    expect(probe).toEqual({ allowed: true, next: { phase: 'half_open', probeUntil: 7_000 } });
    expect(admitCall(probe.next, 6_500, settings).allowed).toBe(false);
  });

  it('a probe that served closes it; one that failed opens it for another cool-down', () => {
    const halfOpen: BreakerState = { phase: 'half_open', probeUntil: 7_000 };
    expect(recordCall(halfOpen, true, 6_200, settings)).toEqual(CLOSED);
    expect(recordCall(halfOpen, false, 6_200, settings)).toEqual({ phase: 'open', until: 7_200 });
  });

  it('a probe never heard of (its instance gone) lets another go once its time is up', () => {
    const halfOpen: BreakerState = { phase: 'half_open', probeUntil: 7_000 };
    expect(admitCall(halfOpen, 7_000, settings)).toEqual({ allowed: true, next: { phase: 'half_open', probeUntil: 8_000 } });
  });

  it('a call that began before the circuit opened does not shorten the cool-down', () => {
    const open: BreakerState = { phase: 'open', until: 6_000 };
    expect(recordCall(open, true, 5_500, settings)).toBe(open);
    expect(recordCall(open, false, 5_500, settings)).toBe(open);
  });

  it('with no failures set, never opens', () => {
    const never = { failures: 0, cooldownMs: 1_000 };
    const state = [false, false, false, false].reduce((s, ok) => recordCall(s, ok, 0, never), CLOSED);
    expect(state).toEqual({ phase: 'closed', failures: 4 });
  });

  it('reads back what a store holds; anything unreadable is closed', () => {
    for (const state of [CLOSED, { phase: 'open', until: 9 }, { phase: 'half_open', probeUntil: 9 }] as BreakerState[])
      expect(breakerStateOf(JSON.stringify(state))).toEqual(state);
    expect(breakerStateOf(null)).toEqual(CLOSED);
    expect(breakerStateOf('{"phase":"open"}')).toEqual(CLOSED);
    expect(breakerStateOf('not json')).toEqual(CLOSED);
  });
});
