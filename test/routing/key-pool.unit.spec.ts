import { Catalogue, CatalogueHost, HostCredential } from '../../src/catalogue/catalogue';
import { HostError } from '../../src/canonical/canonical';
import {
  chooseCredential,
  credentialOutcome,
  CredentialUse,
  DEFAULT_KEY_COOLDOWN_MS,
  KeyPools,
  MAX_KEY_COOLDOWN_MS,
} from '../../src/routing/key-pool';

const file = (apiKeyEnv: unknown) => ({
  hosts: [{ id: 'pool', kind: 'openai', baseUrl: 'http://127.0.0.1:9/v1', apiKeyEnv }],
  models: [
    {
      slug: 'vendor/m',
      id: '0b5c1a52-8f3e-4d8e-9d1c-2a4b6c8d0e1f',
      name: 'M',
      contextLength: 8192,
      maxOutputTokens: 100,
      hosts: [{ host: 'pool', model: 'm', pricing: { input: '1', output: '1' } }],
    },
  ],
});
const ENV = { K1: 'secret-one', K2: 'secret-two', K3: 'secret-three' };
const poolOf = (apiKeyEnv: unknown, env: Record<string, string> = ENV): CatalogueHost =>
  Catalogue.parse(file(apiKeyEnv), env).hosts[0];

describe('catalogue: key pools', () => {
  it('apiKeyEnv as a list of names or {env, weight}: one credential per variable set, each with its own endpoint', () => {
    const host = poolOf(['K1', { env: 'K2', weight: 3 }, 'UNSET']);
    expect(host.credentials.map((c) => [c.id, c.weight, c.endpoint.apiKey])).toEqual([
      ['K1', 1, 'secret-one'],
      ['K2', 3, 'secret-two'],
    ]);
    expect(host.credentials[0].endpoint).not.toBe(host.credentials[1].endpoint);
    expect(host).toMatchObject({ usable: true, apiKeyEnv: 'K1', apiKey: 'secret-one' });
  });

  it('a pool none of whose variables is set cannot serve; a host naming none has one keyless credential', () => {
    expect(poolOf(['UNSET_A', 'UNSET_B'])).toMatchObject({ usable: false, credentials: [] });
    expect(poolOf(undefined).credentials).toEqual([
      { id: null, weight: 1, endpoint: { id: 'pool', baseUrl: 'http://127.0.0.1:9/v1', apiKey: null, settings: {} } },
    ]);
  });

  it.each([
    [[], /must name at least one/],
    [['K1', 'K1'], /names K1 twice/],
    [[{ env: 'K1', weight: 0 }], /weight must be a positive number/],
    [[{ env: 'k1' }], /must name an environment variable/],
    [[42], /must be a variable name or/],
  ])('refuses apiKeyEnv %j', (apiKeyEnv, message) => {
    expect(() => poolOf(apiKeyEnv)).toThrow(message);
  });
});

describe('key pools: choosing a credential', () => {
  const credential = (id: string, weight = 1): HostCredential => ({
    id,
    weight,
    endpoint: { id: 'h', baseUrl: 'http://h/v1', apiKey: id, settings: {} },
  });
  const [x, y, z] = [credential('X'), credential('Y', 2), credential('Z')];
  const uses = (table: Record<string, Partial<CredentialUse>>) => (c: HostCredential) => ({
    inFlight: 0,
    calls: 0,
    coolingUntil: 0,
    out: false,
    ...table[c.id!],
  });

  it('the fewest calls in flight for its weight, then the fewest calls for its weight, then the first', () => {
    expect(chooseCredential([x, y, z], uses({ X: { inFlight: 1 }, Y: { inFlight: 1 }, Z: { inFlight: 2 } }), 0)).toBe(y);
    expect(chooseCredential([x, y, z], uses({ X: { calls: 1 }, Y: { calls: 1 }, Z: { calls: 1 } }), 0)).toBe(y);
    expect(chooseCredential([x, y, z], uses({}), 0)).toBe(x);
  });

  it('skips those out and cooling; with all cooling, the one whose rest ends first; with all out, none', () => {
    expect(chooseCredential([x, y, z], uses({ X: { out: true }, Y: { coolingUntil: 10 } }), 5)).toBe(z);
    expect(chooseCredential([x, y], uses({ X: { coolingUntil: 30 }, Y: { coolingUntil: 20 } }), 5)).toBe(y);
    expect(chooseCredential([x, y], uses({ X: { out: true }, Y: { out: true } }), 5)).toBeNull();
  });
});

describe('key pools: leases', () => {
  let now = 1_000;
  const lines: string[] = [];
  const pools = () =>
    new KeyPools(
      (line) => lines.push(line),
      () => now,
    );

  it('spreads calls in proportion to the weights', () => {
    const host = poolOf(['K1', { env: 'K2', weight: 2 }]);
    const keyPools = pools();
    const counts: Record<string, number> = {};
    for (let i = 0; i < 30; i++) {
      const lease = keyPools.lease(host)!;
      counts[lease.credential.id!] = (counts[lease.credential.id!] ?? 0) + 1;
      lease.release({ kind: 'ok' });
    }
    expect(counts).toEqual({ K1: 10, K2: 20 });
  });

  it('a 429 rests the credential for its Retry-After (capped) or the default, then it serves again', () => {
    const host = poolOf(['K1', 'K2']);
    const keyPools = pools();
    keyPools.lease(host)!.release({ kind: 'rate_limited', retryAfterMs: 5_000 });
    expect(keyPools.lease(host)!.credential.id).toBe('K2');
    now += 5_001;
    expect(keyPools.standing(host)).toBe('ready');
    const first = keyPools.lease(host)!;
    expect(first.credential.id).toBe('K1');
    first.release({ kind: 'rate_limited', retryAfterMs: null });
    const second = keyPools.lease(host)!;
    second.release({ kind: 'rate_limited', retryAfterMs: 24 * 3600_000 });
    expect(keyPools.standing(host)).toBe('cooling');
    now += DEFAULT_KEY_COOLDOWN_MS + 1;
    expect(keyPools.lease(host)!.credential.id).toBe('K1');
    now += MAX_KEY_COOLDOWN_MS;
    expect(keyPools.standing(host)).toBe('ready');
  });

  it('a 401/403 takes the credential out, logged by its variable, never its value; a reloaded catalogue has it again', () => {
    const host = poolOf(['K1', 'K2']);
    const keyPools = pools();
    lines.length = 0;
    keyPools.lease(host)!.release({ kind: 'refused' });
    keyPools.lease(host)!.release({ kind: 'refused' });
    expect(keyPools.standing(host)).toBe('out');
    expect(keyPools.lease(host)).toBeNull();
    expect(lines.join('\n')).toMatch(/credential K1 refused/);
    expect(lines.join('\n')).not.toMatch(/secret-/);
    expect(keyPools.standing(poolOf(['K1', 'K2']))).toBe('ready');
  });

  it('a host of one credential keeps it whatever the upstream answers (its failures are the host’s own handling)', () => {
    const host = poolOf('K1');
    const keyPools = pools();
    keyPools.lease(host)!.release({ kind: 'refused' });
    keyPools.lease(host)!.release({ kind: 'rate_limited', retryAfterMs: 60_000 });
    expect(keyPools.standing(host)).toBe('ready');
    expect(keyPools.lease(host)!.credential.id).toBe('K1');
  });

  it("a request goes on with another credential of the pool after its credential's 429 or 401/403, while one is ready", () => {
    const host = poolOf(['K1', 'K2', 'K3']);
    const keyPools = pools();
    const limited = new HostError('status', 'rate limited', 429, true, 60_000);
    const failed = (error: HostError) => {
      const lease = keyPools.lease(host)!;
      lease.release(credentialOutcome(error.status, error.retryAfterMs));
      return lease.credential.id;
    };
    expect(failed(limited)).toBe('K1');
    expect(keyPools.anotherCredential(host, limited, 0)).toBe(true);
    expect(failed(new HostError('status', 'bad key', 401))).toBe('K2');
    expect(keyPools.anotherCredential(host, new HostError('status', 'bad key', 401), 1)).toBe(true);
    // Tried as many times as the pool has other credentials: the host's own handling from then on.
    expect(keyPools.anotherCredential(host, limited, 2)).toBe(false);
    // The host's failures are not the credential's; after output nothing is called again.
    expect(keyPools.anotherCredential(host, new HostError('status', 'unavailable', 503), 0)).toBe(false);
    expect(keyPools.anotherCredential(host, new HostError('status', 'rate limited', 429, false), 0)).toBe(false);
    // None ready (K1 cooling, K2 out, K3 cooling now too): the next host.
    expect(failed(limited)).toBe('K3');
    expect(keyPools.anotherCredential(host, limited, 0)).toBe(false);
    // A host of one credential: nothing to move to.
    expect(pools().anotherCredential(poolOf(['K1']), limited, 0)).toBe(false);
  });
});
