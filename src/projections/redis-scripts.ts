/**
 * Lua scripts for the Redis read models. Each touches only one organization's keys (one hash
 * tag, so they run on Redis Cluster too). Amounts stay below 2^53, where Lua's numbers are exact.
 */

/**
 * Ends a reservation's pending hold, if it has one: its amount leaves the organization's pending
 * total and its key's. Returns whether there was one.
 */
const RELEASE_PENDING_HOLD = `
local function releasePendingHold(ledger, holds, deadlines, keyPending, holdKey, id)
  local held = redis.call('HGET', holds, id)
  if not held then return false end
  redis.call('HDEL', holds, id)
  redis.call('ZREM', deadlines, id)
  redis.call('HINCRBY', ledger, 'pending', -tonumber(held))
  local keyId = redis.call('HGET', holdKey, id)
  if keyId then
    redis.call('HINCRBY', keyPending, keyId, -tonumber(held))
    redis.call('HDEL', holdKey, id)
  end
  return true
end
`;

/**
 * Applies the writes of a batch of one organization's events (writes.ts), each event under the one
 * guard: an event at or before the organization's position is skipped. Returns -1 when an event
 * other than the organization's creation finds no position: the read models were lost (Redis
 * emptied) and must be rebuilt.
 *
 * KEYS[1]: the organization's ledger (its position, its pending holds, how many requests it has
 * logged); KEYS[2..]: the other keys the writes name, by their index in KEYS.
 * ARGV, for each event: its position, '1' if it creates the organization, how many arguments its
 * writes take, then its writes:
 *   add <key> <field> <by> | release <key> <field> <open> <reservation id> | max <key> <field> <value>
 *   set <key> <field> <value> | del <key> <field>
 *   push <log> <index> <retention> <request id> <host's reply id, or ''> <entry JSON>
 *   hold <holds> <hold deadlines> <key pending> <hold key> <reservation id>
 * The request log is a list, newest first, of elements `<n> <entry JSON>`, n counting the
 * organization's logged requests (kept in its ledger as `logged`): the element n is at index
 * logged - n. The index maps a request id (and a host's reply id) to the n of its newest element,
 * and loses it when that element is trimmed.
 */
export const APPLY = `${RELEASE_PENDING_HOLD}
local i = 1
while i <= #ARGV do
  local last = i + 2 + tonumber(ARGV[i + 2])
  local position = redis.call('HGET', KEYS[1], 'position')
  if not position and ARGV[i + 1] ~= '1' then return -1 end
  if position and tonumber(ARGV[i]) <= tonumber(position) then
    i = last + 1
  else
    redis.call('HSET', KEYS[1], 'position', ARGV[i])
    i = i + 3
    while i <= last do
      local op = ARGV[i]
      if op == 'add' then
        redis.call('HINCRBY', KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2], ARGV[i + 3])
        i = i + 4
      elseif op == 'release' then
        local held = redis.call('HGET', KEYS[tonumber(ARGV[i + 3])], ARGV[i + 4])
        if held then redis.call('HINCRBY', KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2], '-' .. held) end
        i = i + 5
      elseif op == 'max' then
        local key = KEYS[tonumber(ARGV[i + 1])]
        local now = redis.call('HGET', key, ARGV[i + 2])
        if not now or tonumber(ARGV[i + 3]) > tonumber(now) then redis.call('HSET', key, ARGV[i + 2], ARGV[i + 3]) end
        i = i + 4
      elseif op == 'set' then
        redis.call('HSET', KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2], ARGV[i + 3])
        i = i + 4
      elseif op == 'del' then
        redis.call('HDEL', KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2])
        i = i + 3
      elseif op == 'push' then
        local log, index, retention = KEYS[tonumber(ARGV[i + 1])], KEYS[tonumber(ARGV[i + 2])], tonumber(ARGV[i + 3])
        local n = redis.call('HINCRBY', KEYS[1], 'logged', 1)
        redis.call('LPUSH', log, n .. ' ' .. ARGV[i + 6])
        redis.call('HSET', index, ARGV[i + 4], n)
        if ARGV[i + 5] ~= '' then redis.call('HSET', index, ARGV[i + 5], n) end
        while redis.call('LLEN', log) > retention do
          local dropped = redis.call('RPOP', log)
          local space = string.find(dropped, ' ', 1, true)
          local entry = cjson.decode(string.sub(dropped, space + 1))
          local m = string.sub(dropped, 1, space - 1)
          if redis.call('HGET', index, entry.requestId) == m then redis.call('HDEL', index, entry.requestId) end
          if entry.upstreamId and redis.call('HGET', index, entry.upstreamId) == m then
            redis.call('HDEL', index, entry.upstreamId)
          end
        end
        i = i + 7
      elseif op == 'hold' then
        releasePendingHold(KEYS[1], KEYS[tonumber(ARGV[i + 1])], KEYS[tonumber(ARGV[i + 2])],
          KEYS[tonumber(ARGV[i + 3])], KEYS[tonumber(ARGV[i + 4])], ARGV[i + 5])
        i = i + 6
      else
        return redis.error_reply('unknown read-model write ' .. tostring(op))
      end
    end
  end
end
return 1
`;

/**
 * Admission. KEYS: ledger, holds, hold deadlines, key pending, hold key, key open, key period spend.
 * ARGV: reservation id, amount, pending-until, key id, the key's limit ('' for none), its period's spend field.
 * Returns {1} when held, {0, available} when the balance does not cover the amount, {0, available,
 * key remaining} when the key's limit does not, {-1} when the organization has no ledger (unknown to
 * the log, or the read models are gone: the caller tells which).
 */
export const HOLD = `
local l = redis.call('HMGET', KEYS[1], 'granted', 'spent', 'reserved', 'pending', 'position')
if not l[5] then return {-1} end
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

/** KEYS: ledger, holds, hold deadlines, key pending, hold key. ARGV: reservation id. */
export const DROP_HOLD = `${RELEASE_PENDING_HOLD}
local held = releasePendingHold(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return held and 1 or 0
`;

/** KEYS: ledger, holds, hold deadlines, key pending, hold key. ARGV: now. Returns how many holds were swept. */
export const SWEEP_HOLDS = `${RELEASE_PENDING_HOLD}
local due = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[1])
for _, id in ipairs(due) do
  releasePendingHold(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], id)
  redis.call('ZREM', KEYS[3], id)
end
return #due
`;

/** KEYS: ledger. ARGV: granted, spent, reserved, position, requests logged. Writes nothing over a ledger that is further on. */
export const LOAD_LEDGER = `
local position = redis.call('HGET', KEYS[1], 'position')
if position and tonumber(position) > tonumber(ARGV[4]) then return 0 end
redis.call('HSET', KEYS[1], 'granted', ARGV[1], 'spent', ARGV[2], 'reserved', ARGV[3], 'position', ARGV[4], 'logged', ARGV[5])
redis.call('HSETNX', KEYS[1], 'pending', 0)
return 1
`;

/**
 * KEYS: ledger, request log, request index. ARGV: request id. The newest element of the request log
 * with that id, or nil (also while a rebuild writes the log and its count apart).
 */
export const FIND_REQUEST = `
local n = redis.call('HGET', KEYS[3], ARGV[1])
if not n then return false end
local logged = tonumber(redis.call('HGET', KEYS[1], 'logged') or '0')
local element = redis.call('LINDEX', KEYS[2], logged - tonumber(n))
if element and string.sub(element, 1, #n + 1) == n .. ' ' then return element end
return false
`;

/**
 * KEYS: checkpoint. ARGV: position. Writes the checkpoint if there is none, else moves it forward
 * only. Returns the checkpoint as it stands after (further than ARGV[1] when another follower got
 * further).
 */
export const ADVANCE_CHECKPOINT = `
local current = redis.call('GET', KEYS[1])
if not current or tonumber(ARGV[1]) > tonumber(current) then
  redis.call('SET', KEYS[1], ARGV[1])
  return ARGV[1]
end
return current
`;

/** KEYS: lock. ARGV: token. Releases the lock only if this holder still has it. */
export const RELEASE_LOCK = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;
