import type { RateLimits } from '../identity/identity.events';
import type { RateLimitStore } from './rate-limit-store';
import { LimitState, RateLimitCheck, WINDOW_SECONDS } from './rate-limits';

/**
 * The check of rate-limits.ts in one script, so that instances sharing Redis count each request
 * once: KEYS = the key's request buckets, its token buckets, its organization's record (its
 * `rateLimits` field: the default); ARGV = now (ms), its own requests and tokens per minute ('' for none), '1' when it has
 * limits of its own. Each hash's fields are epoch seconds. Replies {0} when no limits apply, else
 * {admitted, then for requests and for tokens: limit (-1: none), remaining, resetMs, retryMs}.
 */
const CHECK = `
local now = tonumber(ARGV[1])
local rpm = tonumber(ARGV[2])
local tpm = tonumber(ARGV[3])
if ARGV[4] ~= '1' then
  local json = redis.call('HGET', KEYS[3], 'rateLimits')
  if json then
    local ok, limits = pcall(cjson.decode, json)
    if ok and type(limits) == 'table' then
      rpm = tonumber(limits.requestsPerMinute)
      tpm = tonumber(limits.tokensPerMinute)
    end
  end
end
if not rpm and not tpm then return {0} end
local second = math.floor(now / 1000)
local oldest = second - ${WINDOW_SECONDS} + 1
local function window(key)
  local fields = redis.call('HGETALL', key)
  local buckets = {}
  for i = 1, #fields, 2 do
    local s = tonumber(fields[i])
    if s < oldest then redis.call('HDEL', key, fields[i]) else buckets[#buckets + 1] = {s, tonumber(fields[i + 1])} end
  end
  table.sort(buckets, function(a, b) return a[1] < b[1] end)
  return buckets
end
local function leaves(s) return math.max(0, (s + ${WINDOW_SECONDS}) * 1000 - now) end
local function state(buckets, limit)
  if not limit then return {-1, 0, 0, 0} end
  local used = 0
  for _, b in ipairs(buckets) do used = used + b[2] end
  local retry, left = 0, used
  for _, b in ipairs(buckets) do
    if left < limit then break end
    left = left - b[2]
    retry = leaves(b[1])
  end
  local reset = 0
  if #buckets > 0 then reset = leaves(buckets[#buckets][1]) end
  return {limit, math.max(0, limit - used), reset, retry}
end
local requests = state(window(KEYS[1]), rpm)
local tokens = state(window(KEYS[2]), tpm)
local admitted = (not rpm or requests[2] > 0) and (not tpm or tokens[2] > 0)
if admitted and rpm then
  redis.call('HINCRBY', KEYS[1], second, 1)
  redis.call('PEXPIRE', KEYS[1], ${(WINDOW_SECONDS + 1) * 1000})
  requests[2] = requests[2] - 1
  requests[3] = (second + ${WINDOW_SECONDS}) * 1000 - now
end
local reply = {admitted and 1 or 0}
for _, v in ipairs(requests) do reply[#reply + 1] = v end
for _, v in ipairs(tokens) do reply[#reply + 1] = v end
return reply
`;

/** Adds billed tokens to the key's bucket of this second: KEYS = its token buckets; ARGV = now (ms), tokens. */
const SPEND = `
redis.call('HINCRBY', KEYS[1], math.floor(tonumber(ARGV[1]) / 1000), ARGV[2])
redis.call('PEXPIRE', KEYS[1], ${(WINDOW_SECONDS + 1) * 1000})
return 1
`;

/** What the Redis read models lend the rate limits: their script runner and the names of a key's counters. */
export interface RedisScripts {
  run(script: string, keys: string[], args: Array<string | number>): Promise<unknown>;
  rateLimitKeys(orgId: string, keyId: string): { requests: string; tokens: string; organization: string };
}

const stateOf = (reply: number[], at: number): LimitState | undefined =>
  reply[at] === -1 ? undefined : { limit: reply[at], remaining: reply[at + 1], resetMs: reply[at + 2], retryMs: reply[at + 3] };

/** Counts in Redis: every instance sharing it holds each key to the same limits. */
export class RedisRateLimitStore implements RateLimitStore {
  constructor(private readonly redis: RedisScripts) {}

  async check(orgId: string, keyId: string, own: RateLimits | undefined, nowMs: number): Promise<RateLimitCheck | null> {
    const k = this.redis.rateLimitKeys(orgId, keyId);
    const reply = (await this.redis.run(
      CHECK,
      [k.requests, k.tokens, k.organization],
      [nowMs, own?.requestsPerMinute ?? '', own?.tokensPerMinute ?? '', own === undefined ? '0' : '1'],
    )) as number[];
    if (reply.length === 1) return null;
    return { admitted: reply[0] === 1, requests: stateOf(reply, 1), tokens: stateOf(reply, 5) };
  }

  async spend(orgId: string, keyId: string, tokens: number, nowMs: number): Promise<void> {
    await this.redis.run(SPEND, [this.redis.rateLimitKeys(orgId, keyId).tokens], [nowMs, tokens]);
  }
}
