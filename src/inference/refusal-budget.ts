/**
 * How many refused requests an instance records per organization each second. Refusals cost
 * the caller nothing, so a client retrying a 402 in a tight loop would otherwise write to the
 * event log as fast as it can send; past the budget a refusal is answered but not logged.
 */
export class RefusalBudget {
  private readonly windows = new Map<string, { second: number; used: number }>();

  constructor(private readonly perSecond: number) {}

  /** Whether a refusal for `orgId` at `now` (ms) may be recorded, counting it if so. */
  take(orgId: string, now: number): boolean {
    const second = Math.floor(now / 1000);
    const window = this.windows.get(orgId);
    if (!window || window.second !== second) {
      // One entry per organization that was refused, reused from second to second.
      this.windows.set(orgId, { second, used: 1 });
      return this.perSecond > 0;
    }
    if (window.used >= this.perSecond) return false;
    window.used += 1;
    return true;
  }
}
