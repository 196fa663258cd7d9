/**
 * Lua scripts for the Redis read models. Each touches only one organization's keys (one hash
 * tag, so they run on Redis Cluster too). Amounts stay below 2^53, where Lua's numbers are exact.
 *
 * Apply scripts share a guard: an event at or before the organization's position is skipped
 * (returns 0), and an organization whose ledger hash is missing while the event is not its
 * creation returns -1: the read models were lost (Redis emptied) and must be rebuilt.
 */
const GUARD = `
local position = redis.call('HGET', KEYS[1], 'position')
if not position then return -1 end
if tonumber(ARGV[1]) <= tonumber(position) then return 0 end
redis.call('HSET', KEYS[1], 'position', ARGV[1])
`;

/** KEYS: ledger, org record. ARGV: position, org record JSON. */
export const APPLY_ORG_CREATED = `
local position = redis.call('HGET', KEYS[1], 'position')
if position and tonumber(ARGV[1]) <= tonumber(position) then return 0 end
redis.call('HSET', KEYS[1], 'position', ARGV[1])
redis.call('HSETNX', KEYS[1], 'granted', 0)
redis.call('HSETNX', KEYS[1], 'spent', 0)
redis.call('HSETNX', KEYS[1], 'reserved', 0)
redis.call('HSETNX', KEYS[1], 'pending', 0)
redis.call('SET', KEYS[2], ARGV[2])
return 1
`;

/** KEYS: ledger. ARGV: position, amount. */
export const APPLY_GRANT = `${GUARD}
redis.call('HINCRBY', KEYS[1], 'granted', ARGV[2])
return 1
`;

/** A pending hold's key: its pending total lowered by the hold, and the hold forgotten. KEYS[5], KEYS[6]: key pending, hold key. */
const FORGET_KEY_HOLD = `
local function forgetKeyHold(id, held)
  local keyId = redis.call('HGET', KEYS[6], id)
  if keyId then
    redis.call('HINCRBY', KEYS[5], keyId, -tonumber(held))
    redis.call('HDEL', KEYS[6], id)
  end
end
`;

/**
 * KEYS: ledger, holds, hold deadlines, open, key pending, hold key, key open.
 * ARGV: position, reservation id, amount, key id.
 */
export const APPLY_RESERVED = `${GUARD}${FORGET_KEY_HOLD}
local held = redis.call('HGET', KEYS[2], ARGV[2])
if held then
  redis.call('HDEL', KEYS[2], ARGV[2])
  redis.call('ZREM', KEYS[3], ARGV[2])
  redis.call('HINCRBY', KEYS[1], 'pending', -tonumber(held))
  forgetKeyHold(ARGV[2], held)
end
redis.call('HINCRBY', KEYS[1], 'reserved', ARGV[3])
redis.call('HSET', KEYS[4], ARGV[2], ARGV[3])
redis.call('HINCRBY', KEYS[7], ARGV[4], ARGV[3])
return 1
`;

/**
 * KEYS: ledger, open, request log, key last used, daily spend, key spend, key open, key period spend.
 * ARGV: position, reservation id ('' for a refused request), charge, log entry JSON, retention, key id, time, UTC day,
 * then the key's period spend fields the charge counts in.
 */
export const APPLY_RESOLVED = `${GUARD}
local held = redis.call('HGET', KEYS[2], ARGV[2])
if held then
  redis.call('HDEL', KEYS[2], ARGV[2])
  redis.call('HINCRBY', KEYS[1], 'reserved', -tonumber(held))
  redis.call('HINCRBY', KEYS[7], ARGV[6], -tonumber(held))
end
if tonumber(ARGV[3]) > 0 then
  redis.call('HINCRBY', KEYS[1], 'spent', ARGV[3])
  redis.call('HINCRBY', KEYS[5], ARGV[8], ARGV[3])
  redis.call('HINCRBY', KEYS[6], ARGV[6], ARGV[3])
  for i = 9, #ARGV do redis.call('HINCRBY', KEYS[8], ARGV[i], ARGV[3]) end
end
redis.call('LPUSH', KEYS[3], ARGV[4])
redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[5]) - 1)
local used = tonumber(redis.call('HGET', KEYS[4], ARGV[6]) or '0')
if tonumber(ARGV[7]) > used then redis.call('HSET', KEYS[4], ARGV[6], ARGV[7]) end
return 1
`;

/**
 * Admission. KEYS: ledger, holds, hold deadlines, key pending, hold key, key open, key period spend.
 * ARGV: reservation id, amount, pending-until, key id, the key's limit ('' for none), its period's spend field.
 * Returns {1} when held, {0, available} when the balance does not cover the amount, {0, available,
 * key remaining} when the key's limit does not.
 */
export const HOLD = `
local l = redis.call('HMGET', KEYS[1], 'granted', 'spent', 'reserved', 'pending')
local available = (tonumber(l[1]) or 0) - (tonumber(l[2]) or 0) - (tonumber(l[3]) or 0) - (tonumber(l[4]) or 0)
local amount = tonumber(ARGV[2])
if available < amount then return {0, available} end
if ARGV[5] ~= '' then
  local used = tonumber(redis.call('HGET', KEYS[7], ARGV[6]) or '0')
    + tonumber(redis.call('HGET', KEYS[6], ARGV[4]) or '0')
    + tonumber(redis.call('HGET', KEYS[4], ARGV[4]) or '0')
  local limit = tonumber(ARGV[5])
  if used + amount > limit then return {0, available, math.max(0, limit - used)} end
end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 1 then
  redis.call('HINCRBY', KEYS[1], 'pending', ARGV[2])
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
  redis.call('HINCRBY', KEYS[4], ARGV[4], ARGV[2])
  redis.call('HSET', KEYS[5], ARGV[1], ARGV[4])
end
return {1}
`;

/** KEYS: ledger, holds, hold deadlines, (unused), key pending, hold key. ARGV: reservation id. */
export const DROP_HOLD = `${FORGET_KEY_HOLD}
local held = redis.call('HGET', KEYS[2], ARGV[1])
if held then
  redis.call('HDEL', KEYS[2], ARGV[1])
  redis.call('HINCRBY', KEYS[1], 'pending', -tonumber(held))
  forgetKeyHold(ARGV[1], held)
end
redis.call('ZREM', KEYS[3], ARGV[1])
return held and 1 or 0
`;

/** KEYS: ledger, holds, hold deadlines, (unused), key pending, hold key. ARGV: now. Returns how many holds were swept. */
export const SWEEP_HOLDS = `${FORGET_KEY_HOLD}
local due = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[1])
for _, id in ipairs(due) do
  local held = redis.call('HGET', KEYS[2], id)
  if held then
    redis.call('HDEL', KEYS[2], id)
    redis.call('HINCRBY', KEYS[1], 'pending', -tonumber(held))
    forgetKeyHold(id, held)
  end
  redis.call('ZREM', KEYS[3], id)
end
return #due
`;

/** KEYS: ledger, open. ARGV: granted, spent, reserved, position, then reservation id/amount pairs. */
export const LOAD_LEDGER = `
local position = redis.call('HGET', KEYS[1], 'position')
if position and tonumber(position) > tonumber(ARGV[4]) then return 0 end
redis.call('HSET', KEYS[1], 'granted', ARGV[1], 'spent', ARGV[2], 'reserved', ARGV[3], 'position', ARGV[4])
redis.call('HSETNX', KEYS[1], 'pending', 0)
redis.call('DEL', KEYS[2])
for i = 5, #ARGV, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
return 1
`;

/** KEYS: checkpoint. ARGV: position. Moves the checkpoint forward only. */
export const ADVANCE_CHECKPOINT = `
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > current then redis.call('SET', KEYS[1], ARGV[1]) end
return 1
`;

/** KEYS: lock. ARGV: token. Releases the lock only if this holder still has it. */
export const RELEASE_LOCK = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;
