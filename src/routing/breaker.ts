/**
 * A host's circuit breaker for one model: closed (calls go), open after `failures` failures in a
 * row (calls are passed over for `cooldownMs`), then half-open — one call, the probe, goes; its
 * success closes the circuit, its failure opens it for another cool-down. Pure: the store keeps
 * the state (shared by every instance), the caller brings the clock.
 */

export interface BreakerSettings {
  /** Failures in a row that open the circuit; 0: circuits never open. */
  readonly failures: number;
  /** How long an open circuit passes the host over before it lets a probe through; also how long a probe may take. */
  readonly cooldownMs: number;
}

export const DEFAULT_BREAKER: BreakerSettings = { failures: 5, cooldownMs: 30_000 };

export type BreakerState =
  | { readonly phase: 'closed'; readonly failures: number }
  | { readonly phase: 'open'; readonly until: number }
  /** A probe is out; should it never report (its instance gone), another may go after `probeUntil`. */
  | { readonly phase: 'half_open'; readonly probeUntil: number };

export type BreakerPhase = BreakerState['phase'];

export const CLOSED: BreakerState = { phase: 'closed', failures: 0 };

/** Whether a call may go now, and the state once it has (a call let through an open circuit is its probe). */
export function admitCall(state: BreakerState, now: number, settings: BreakerSettings): { allowed: boolean; next: BreakerState } {
  switch (state.phase) {
    case 'closed':
      return { allowed: true, next: state };
    case 'open':
      if (now < state.until) return { allowed: false, next: state };
      return { allowed: true, next: { phase: 'half_open', probeUntil: now + settings.cooldownMs } };
    case 'half_open':
      if (now < state.probeUntil) return { allowed: false, next: state };
      return { allowed: true, next: { phase: 'half_open', probeUntil: now + settings.cooldownMs } };
  }
}

/** The state once a call has ended: `ok`, it served (or failed for no fault of the host's). */
export function recordCall(state: BreakerState, ok: boolean, now: number, settings: BreakerSettings): BreakerState {
  const open: BreakerState = { phase: 'open', until: now + settings.cooldownMs };
  switch (state.phase) {
    case 'closed':
      if (ok) return state.failures === 0 ? state : CLOSED;
      if (settings.failures > 0 && state.failures + 1 >= settings.failures) return open;
      return { phase: 'closed', failures: state.failures + 1 };
    case 'open':
      // A call let through before the circuit opened, ending now: the cool-down stands.
      return state;
    case 'half_open':
      return ok ? CLOSED : open;
  }
}

/** A state as a store holds it, read back; anything unreadable is a closed circuit (the store forgot). */
export function breakerStateOf(json: string | null | undefined): BreakerState {
  if (!json) return CLOSED;
  try {
    const value = JSON.parse(json) as Record<string, unknown>;
    const n = (field: string) => (Number.isSafeInteger(value[field]) ? (value[field] as number) : null);
    if (value.phase === 'closed' && n('failures') !== null) return { phase: 'closed', failures: n('failures')! };
    if (value.phase === 'open' && n('until') !== null) return { phase: 'open', until: n('until')! };
    if (value.phase === 'half_open' && n('probeUntil') !== null) return { phase: 'half_open', probeUntil: n('probeUntil')! };
  } catch {
    // unreadable: closed
  }
  return CLOSED;
}
