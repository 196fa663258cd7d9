import type { HostError } from '../canonical/canonical';
import type { CatalogueHost, HostCredential } from '../catalogue/catalogue';

/**
 * Key pools: a host with several credentials spreads its calls over them — weighted, least in
 * flight — and sets aside one the upstream has refused: a 429 cools it down for the answer's
 * Retry-After (or a default), a 401/403 takes it out until the catalogue is reloaded (a reloaded
 * catalogue's credentials are new objects, with no history). Per instance: each counts its own calls.
 * A host of a single credential is left to the host's own handling (retries, circuit breaking):
 * setting its one key aside would take the host out.
 */

/** How long a credential answered 429 without a Retry-After waits before it is used again. */
export const DEFAULT_KEY_COOLDOWN_MS = 30_000;
/** The longest a Retry-After is honoured for one credential: a day-long one would idle a key on a typo. */
export const MAX_KEY_COOLDOWN_MS = 10 * 60_000;

/** What is known of one credential's use in this process. */
export interface CredentialUse {
  inFlight: number;
  /** Calls made with it since the catalogue was loaded: the tie-break that spreads calls one at a time. */
  calls: number;
  /** Epoch ms until which it rests after a 429 (0: not cooling). */
  coolingUntil: number;
  /** Refused (401/403): not used again until the catalogue is reloaded. */
  out: boolean;
}

const FRESH: CredentialUse = { inFlight: 0, calls: 0, coolingUntil: 0, out: false };

/**
 * The credential to call with, of `credentials` whose use is `useOf`: among those neither out nor
 * cooling, the fewest calls in flight for its weight, then the fewest calls for its weight (so
 * calls one after another go round the pool in proportion), then the catalogue's order. When every
 * credential left is cooling, the one whose rest ends first. Null when every one is out.
 */
export function chooseCredential(
  credentials: readonly HostCredential[],
  useOf: (credential: HostCredential) => CredentialUse,
  now: number,
): HostCredential | null {
  let best: { credential: HostCredential; load: number; share: number } | null = null;
  let soonest: { credential: HostCredential; until: number } | null = null;
  for (const credential of credentials) {
    const use = useOf(credential);
    if (use.out) continue;
    if (use.coolingUntil > now) {
      if (!soonest || use.coolingUntil < soonest.until) soonest = { credential, until: use.coolingUntil };
      continue;
    }
    const load = use.inFlight / credential.weight;
    const share = use.calls / credential.weight;
    if (!best || load < best.load || (load === best.load && share < best.share)) best = { credential, load, share };
  }
  return best?.credential ?? soonest?.credential ?? null;
}

/** Where a host stands for routing: some credential ready, all cooling (tried last), or none left (not tried). */
export type PoolStanding = 'ready' | 'cooling' | 'out';

export function standingOf(
  credentials: readonly HostCredential[],
  useOf: (credential: HostCredential) => CredentialUse,
  now: number,
): PoolStanding {
  let cooling = false;
  for (const credential of credentials) {
    const use = useOf(credential);
    if (use.out) continue;
    if (use.coolingUntil <= now) return 'ready';
    cooling = true;
  }
  return cooling ? 'cooling' : 'out';
}

/** How a call with a credential ended, as far as the credential is concerned. */
export type CredentialOutcome =
  | { kind: 'ok' }
  | { kind: 'rate_limited'; retryAfterMs: number | null }
  | { kind: 'refused' }
  /** Any other failure: the host's, not the credential's. */
  | { kind: 'other' };

/** A failed call's status, as the credential's outcome. */
export function credentialOutcome(status: number | null, retryAfterMs: number | null): CredentialOutcome {
  if (status === 429) return { kind: 'rate_limited', retryAfterMs };
  if (status === 401 || status === 403) return { kind: 'refused' };
  return { kind: 'other' };
}

/** A failure before output that is the credential's (429: its quota; 401/403: the key), not the host's. */
export const credentialFailed = (error: HostError): boolean =>
  error.beforeOutput && error.kind === 'status' && credentialOutcome(error.status, null).kind !== 'other';

/** One call's hold on a credential, released once with how the call went. */
export interface CredentialLease {
  readonly credential: HostCredential;
  release(outcome: CredentialOutcome): void;
}

/** The key pools of this process: each credential's use, kept as long as its catalogue is. */
export class KeyPools {
  private readonly uses = new WeakMap<HostCredential, CredentialUse>();

  constructor(
    private readonly log: (line: string) => void,
    private readonly clock: () => number = Date.now,
  ) {}

  private useOf = (credential: HostCredential): CredentialUse => this.uses.get(credential) ?? FRESH;

  standing(host: CatalogueHost): PoolStanding {
    return standingOf(host.credentials, this.useOf, this.clock());
  }

  /**
   * Whether a request whose call of `host` has just failed with `error` (its credential already
   * released) goes on at once with another credential of the pool, before the host's retries or
   * the next host: the credential failed, not the host, another is ready (neither cooling nor
   * out), and the request has moved `switched` times on this host, fewer than the pool's other credentials.
   */
  anotherCredential(host: CatalogueHost, error: HostError, switched: number): boolean {
    return switched < host.credentials.length - 1 && credentialFailed(error) && this.standing(host) === 'ready';
  }

  /** Takes a credential of `host` for one call (null: none is left), counted in flight until released. */
  lease(host: CatalogueHost): CredentialLease | null {
    const credential = chooseCredential(host.credentials, this.useOf, this.clock());
    if (!credential) return null;
    const use = { ...this.useOf(credential) };
    use.inFlight += 1;
    use.calls += 1;
    this.uses.set(credential, use);
    let released = false;
    return {
      credential,
      release: (outcome) => {
        if (released) return;
        released = true;
        this.settle(host, credential, outcome);
      },
    };
  }

  private settle(host: CatalogueHost, credential: HostCredential, outcome: CredentialOutcome): void {
    const use = this.uses.get(credential)!;
    use.inFlight -= 1;
    // A host of one credential has nothing to spread over: its failures are the host's (retries, its breaker).
    if (host.credentials.length < 2) return;
    if (outcome.kind === 'rate_limited') {
      const ms = Math.min(outcome.retryAfterMs ?? DEFAULT_KEY_COOLDOWN_MS, MAX_KEY_COOLDOWN_MS);
      use.coolingUntil = Math.max(use.coolingUntil, this.clock() + ms);
      this.log(`host ${host.id}: credential ${credential.id} rate-limited; resting it ${ms} ms`);
    } else if (outcome.kind === 'refused' && !use.out) {
      use.out = true;
      this.log(`host ${host.id}: credential ${credential.id} refused (401/403); not used until the catalogue is reloaded`);
    }
  }
}
