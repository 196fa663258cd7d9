import { hash } from 'node:crypto';
import { type Attempt, type AttemptStore, delaySchedule } from './attempt-store';

/**
 * Shared by the scripts. KEYS: an attempt's counts, one hash each (count, until, last: ms on the
 * callers' clock). ARGV: now, then for each count: its cap (maxDelayMs), the length of its schedule,
 * the schedule (delaySchedule: the wait after the 1st, 2nd… attempt, the last standing for every
 * later one). A count left alone for the cap past its wait is none, whether or not its TTL (by
 * Redis's clock) has run out yet: the same rule as the memory store's, on the same clock.
 */
const COUNTS = `
local now = tonumber(ARGV[1])
local counts = {}
local i = 2
for k = 1, #KEYS do
  local n = tonumber(ARGV[i + 1])
  local schedule = {}
  for j = 1, n do schedule[j] = tonumber(ARGV[i + 1 + j]) end
  local count = {cap = tonumber(ARGV[i]), schedule = schedule, n = 0, untilMs = 0}
  local f = redis.call('HMGET', KEYS[k], 'count', 'until', 'last')
  if f[1] then
    if math.max(tonumber(f[2]), tonumber(f[3])) + count.cap < now then
      redis.call('DEL', KEYS[k])
    else
      count.n, count.untilMs = tonumber(f[1]), tonumber(f[2])
    end
  end
  counts[k] = count
  i = i + 2 + n
end
local function delayAfter(count, n) return count.schedule[math.min(n, #count.schedule)] end
`;

/** Replies 0 when the attempt is taken on every count, else the milliseconds to wait (none taken). */
const TAKE = `${COUNTS}
local wait = 0
for k = 1, #KEYS do wait = math.max(wait, counts[k].untilMs - now) end
if wait > 0 then return wait end
for k = 1, #KEYS do
  local n = counts[k].n + 1
  local delay = delayAfter(counts[k], n)
  redis.call('HSET', KEYS[k], 'count', n, 'until', now + delay, 'last', now)
  redis.call('PEXPIRE', KEYS[k], delay + counts[k].cap + 1)
end
return 0
`;

/** Gives an attempt back on every count (see AttemptStore.giveBack). */
const GIVE_BACK = `${COUNTS}
for k = 1, #KEYS do
  local n = counts[k].n - 1
  if n <= 0 then
    redis.call('DEL', KEYS[k])
  else
    redis.call('HSET', KEYS[k], 'count', n)
    if delayAfter(counts[k], n) == 0 then redis.call('HSET', KEYS[k], 'until', 0) end
  end
end
return 1
`;

const CLEAR = `redis.call('DEL', unpack(KEYS)) return 1`;

/** What the Redis read models lend the attempt limits: their script runner and the hash tag of a group's counts. */
export interface RedisAttemptScripts {
  run(script: string, keys: string[], args: Array<string | number>): Promise<unknown>;
  attemptsTag(group: string): string;
}

/**
 * Counts in Redis, shared by every instance and worker on it: each operation one script over one
 * group's keys (one hash tag, so it runs on Redis Cluster too). Groups and keys are named by their
 * SHA-256, never in clear: they hold emails and addresses, and a dump of Redis is not to list who
 * tried to sign in where (a pseudonym only: an email one already suspects can be hashed and matched).
 * Times are the callers' clocks (instances' clocks are assumed in step, to well under a first delay).
 * Entries expire by Redis TTL once they would start afresh.
 */
export class RedisAttemptStore implements AttemptStore {
  constructor(private readonly redis: RedisAttemptScripts) {}

  async take(attempt: Attempt, now: number): Promise<number> {
    return (await this.redis.run(TAKE, this.keys(attempt), this.args(attempt, now))) as number;
  }

  async giveBack(attempt: Attempt, now: number): Promise<void> {
    await this.redis.run(GIVE_BACK, this.keys(attempt), this.args(attempt, now));
  }

  async clear(attempt: Attempt): Promise<void> {
    await this.redis.run(CLEAR, this.keys(attempt), []);
  }

  private keys(attempt: Attempt): string[] {
    const tag = this.redis.attemptsTag(sha256(attempt.group));
    return attempt.counts.map(({ key }) => `${tag}:${sha256(key)}`);
  }

  private args(attempt: Attempt, now: number): number[] {
    return [
      now,
      ...attempt.counts.flatMap(({ allowance }) => {
        const schedule = delaySchedule(allowance);
        return [allowance.maxDelayMs, schedule.length, ...schedule];
      }),
    ];
  }
}

const sha256 = (text: string): string => hash('sha256', text, 'hex');
