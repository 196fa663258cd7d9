import { admitCall, BreakerPhase, BreakerSettings, BreakerState, recordCall } from './breaker';
import type { BreakerStore } from './breaker-store';
import { CallSample, HostHealth } from './health';

/** A circuit as this instance last saw it, for the metrics and /health/ready. */
export interface CircuitView {
  host: string;
  model: string;
  phase: BreakerPhase;
  /** An open circuit: when it lets a probe through (ISO time). */
  until?: string;
}

/**
 * The shell around the routing decisions every host call consults: its circuit breaker (in the
 * shared store) and the health it measures. A failing store never fails a request: the call goes
 * (its circuit unknown), and the failure is logged.
 */
/**
 * How long a circuit read closed is believed without asking the store again: the store (Redis) is
 * asked at most once a second per circuit while all is well, and another instance's opening of it
 * is seen here that much later at most (and a call served here meanwhile does not reset the failures
 * another instance counts). This instance's own changes are seen at once.
 */
const CLOSED_TRUSTED_MS = 1_000;

export class HostRouting {
  /** Circuits this instance has seen not closed (and those it has seen close since). */
  private readonly seen = new Map<string, { host: string; model: string; state: BreakerState }>();
  /** Circuits last read closed, and until when that is believed (see CLOSED_TRUSTED_MS). */
  private readonly trusted = new Map<string, { failures: number; until: number }>();

  constructor(
    private readonly breakers: BreakerStore,
    private readonly settings: BreakerSettings,
    readonly health: HostHealth,
    private readonly log: (message: string) => void,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Whether to call `hostId` for `model` now: false while its circuit is open (or its probe is out). */
  async admit(hostId: string, model: string): Promise<boolean> {
    if (this.settings.failures === 0) return true;
    const now = this.clock();
    if ((this.trusted.get(`${hostId}\n${model}`)?.until ?? 0) > now) return true;
    try {
      const state = await this.breakers.read(hostId, model);
      this.saw(hostId, model, state, now);
      if (state.phase === 'closed') return true;
      if (!admitCall(state, now, this.settings).allowed) return false;
      // Only one instance's call becomes the probe: the change is applied to the state as stored.
      let allowed = false;
      const { before, after } = await this.breakers.update(hostId, model, (current) => {
        const decided = admitCall(current, now, this.settings);
        allowed = decided.allowed;
        return decided.next;
      });
      this.changed(hostId, model, before, after, now);
      return allowed;
    } catch (error) {
      this.log(`circuit of host ${hostId} for ${model} unknown (${(error as Error).message}); calling it`);
      return true;
    }
  }

  /** A call has ended: its circuit told (`fault`: it failed by the host's fault), its health measured. Never rejects. */
  ended(hostId: string, model: string, fault: boolean, sample: Omit<CallSample, 'at' | 'ok'>): void {
    const now = this.clock();
    this.health.observe(hostId, model, { ...sample, at: now, ok: !fault });
    if (this.settings.failures === 0) return;
    // A call served on a circuit closed with no failure counted changes nothing: the store is not asked.
    const trusted = this.trusted.get(`${hostId}\n${model}`);
    if (!fault && trusted !== undefined && trusted.until > now && trusted.failures === 0) return;
    this.breakers
      .update(hostId, model, (state) => recordCall(state, !fault, now, this.settings))
      .then(({ before, after }) => this.changed(hostId, model, before, after, now))
      .catch((error: Error) => this.log(`circuit of host ${hostId} for ${model} not updated: ${error.message}`));
  }

  /**
   * The circuits this instance has seen not closed (and those it has seen close since), as the
   * store holds them now (another instance may have moved them); as last seen when it does not answer.
   */
  async circuits(): Promise<CircuitView[]> {
    const entries = [...this.seen.values()];
    const states = await Promise.all(entries.map(({ host, model, state }) => this.breakers.read(host, model).catch(() => state)));
    const now = this.clock();
    return entries.map(({ host, model }, i) => {
      const state = states[i];
      this.saw(host, model, state, now);
      return {
        host,
        model,
        phase: state.phase,
        ...(state.phase === 'open' ? { until: new Date(state.until).toISOString() } : {}),
      };
    });
  }

  private changed(hostId: string, model: string, before: BreakerState, after: BreakerState, now: number): void {
    this.saw(hostId, model, after, now);
    if (before.phase === after.phase) return;
    const why =
      after.phase === 'open'
        ? before.phase === 'half_open'
          ? `its probe failed; passed over for ${this.settings.cooldownMs} ms`
          : `${this.settings.failures} failures in a row; passed over for ${this.settings.cooldownMs} ms`
        : after.phase === 'half_open'
          ? 'cool-down over; one probe call goes'
          : 'its probe served';
    this.log(`circuit of host ${hostId} for ${model}: ${before.phase} → ${after.phase} (${why})`);
  }

  /** A circuit's state as just read or set: remembered for the views, and, closed, believed for a while. */
  private saw(hostId: string, model: string, state: BreakerState, now: number): void {
    const key = `${hostId}\n${model}`;
    if (state.phase === 'closed') this.trusted.set(key, { failures: state.failures, until: now + CLOSED_TRUSTED_MS });
    else this.trusted.delete(key);
    if (state.phase === 'closed' && !this.seen.has(key)) return;
    this.seen.set(key, { host: hostId, model, state });
  }
}
