import { BreakerState, breakerStateOf, CLOSED } from './breaker';

/**
 * Where circuit breakers' states live: in Redis when the read models are (every instance sees the
 * same circuits), in this process otherwise. A change is applied atomically: the pure function
 * given sees the state as it is and its result replaces it, whatever other instances do meanwhile.
 */
export interface BreakerStore {
  read(hostId: string, model: string): Promise<BreakerState>;
  /** Replaces the state by `change(state)`; resolves with both. */
  update(
    hostId: string,
    model: string,
    change: (state: BreakerState) => BreakerState,
  ): Promise<{ before: BreakerState; after: BreakerState }>;
}

export class MemoryBreakerStore implements BreakerStore {
  private readonly states = new Map<string, BreakerState>();

  read(hostId: string, model: string): Promise<BreakerState> {
    return Promise.resolve(this.states.get(`${hostId}\n${model}`) ?? CLOSED);
  }

  update(hostId: string, model: string, change: (state: BreakerState) => BreakerState) {
    const key = `${hostId}\n${model}`;
    const before = this.states.get(key) ?? CLOSED;
    const after = change(before);
    if (after.phase === 'closed' && after.failures === 0) this.states.delete(key);
    else this.states.set(key, after);
    return Promise.resolve({ before, after });
  }
}

/**
 * Compare-and-set: KEYS = the breaker's key; ARGV = the state as read ('' for none), the new one
 * ('' to delete), its lifetime (ms). Replies 1 when set, else {0, the state found}.
 */
const COMPARE_AND_SET = `
local found = redis.call('GET', KEYS[1]) or ''
if found ~= ARGV[1] then return {0, found} end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
return {1}
`;

/** What the Redis read models lend the breakers: their script runner, GET, and the name of a breaker's key. */
export interface RedisBreakerScripts {
  run(script: string, keys: string[], args: Array<string | number>): Promise<unknown>;
  get(key: string): Promise<string | null>;
  breakerKey(hostId: string, model: string): string;
}

/** Tries of a change lost to another instance's before giving up (each loss means the other's went in). */
const CAS_TRIES = 8;

export class RedisBreakerStore implements BreakerStore {
  /** `ttlMs`: how long a state no call has touched is kept (failures long past no longer count). */
  constructor(
    private readonly redis: RedisBreakerScripts,
    private readonly ttlMs: number,
  ) {}

  async read(hostId: string, model: string): Promise<BreakerState> {
    return breakerStateOf(await this.redis.get(this.redis.breakerKey(hostId, model)));
  }

  async update(hostId: string, model: string, change: (state: BreakerState) => BreakerState) {
    const key = this.redis.breakerKey(hostId, model);
    let found = (await this.redis.get(key)) ?? '';
    for (let tries = 0; tries < CAS_TRIES; tries++) {
      const before = breakerStateOf(found);
      const after = change(before);
      const json = after.phase === 'closed' && after.failures === 0 ? '' : JSON.stringify(after);
      if (json === found) return { before, after };
      const reply = (await this.redis.run(COMPARE_AND_SET, [key], [found, json, this.ttlMs])) as [number, string?];
      if (reply[0] === 1) return { before, after };
      found = reply[1] ?? '';
    }
    throw new Error(`the circuit of host ${hostId} for ${model} kept changing under this instance`);
  }
}
