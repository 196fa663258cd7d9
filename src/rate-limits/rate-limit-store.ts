import type { RateLimits } from '../identity/identity.events';
import { Buckets, checkLimits, limitsFor, RateLimitCheck, WINDOW_SECONDS } from './rate-limits';

/** Where a key's requests and tokens of the last minute are counted: in Redis (every instance) or in this process. */
export interface RateLimitStore {
  /**
   * Checks one request of the key against its limits (its own, else its organization's default)
   * and, when admitted, counts it, in one atomic step; null when no limits apply.
   */
  check(orgId: string, keyId: string, own: RateLimits | undefined, nowMs: number): Promise<RateLimitCheck | null>;
  /** Counts the tokens a request of the key was billed, at `nowMs`, against its tokens per minute. */
  spend(orgId: string, keyId: string, tokens: number, nowMs: number): Promise<void>;
}

/** An organization's default rate limits, as the read models show them. */
export type OrganizationDefaults = (orgId: string) => Promise<RateLimits | undefined>;

/** Counts in this process: limits hold for this instance alone (the service without Redis runs as one). */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly windows = new Map<string, { requests: Buckets; tokens: Buckets; lastSecond: number }>();

  constructor(private readonly defaults: OrganizationDefaults) {}

  async check(orgId: string, keyId: string, own: RateLimits | undefined, nowMs: number): Promise<RateLimitCheck | null> {
    const limits = limitsFor(own, own === undefined ? await this.defaults(orgId) : undefined);
    if (limits === null) return null;
    return checkLimits(limits, ...this.windowOf(keyId, nowMs));
  }

  async spend(_orgId: string, keyId: string, tokens: number, nowMs: number): Promise<void> {
    const [, buckets] = this.windowOf(keyId, nowMs);
    const second = Math.floor(nowMs / 1000);
    buckets.set(second, (buckets.get(second) ?? 0) + tokens);
  }

  private windowOf(keyId: string, nowMs: number): [Buckets, Buckets, number] {
    this.forgetIdle(nowMs);
    let window = this.windows.get(keyId);
    if (!window) {
      window = { requests: new Map(), tokens: new Map(), lastSecond: 0 };
      this.windows.set(keyId, window);
    }
    window.lastSecond = Math.floor(nowMs / 1000);
    return [window.requests, window.tokens, nowMs];
  }

  private sweptAt = 0;
  /** Keys unused for a whole window are forgotten (at most once a window), so the map holds only recent keys. */
  private forgetIdle(nowMs: number): void {
    const second = Math.floor(nowMs / 1000);
    if (second - this.sweptAt < WINDOW_SECONDS) return;
    this.sweptAt = second;
    for (const [keyId, window] of this.windows) if (second - window.lastSecond >= WINDOW_SECONDS) this.windows.delete(keyId);
  }
}
