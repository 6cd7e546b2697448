"""The Lua scripts of :class:`~focused.frontier.redis.RedisStore`: every change to the frontier is one of them.

A script runs atomically in Redis, so two crawler processes sharing a frontier
never pop the same entry, never add a URL twice, and never see half of a push.
Scores of the waiting sorted set are ``-priority * 2**33 + rank`` (see the
store's docstring): integers below 2**53, exact as doubles, and formatted with
``%.17g`` (Lua's default ``%.14g`` would round them). Lease expiries are
milliseconds of the Redis server's clock (``TIME``), so workers on several
machines need no synchronised clocks.
"""

from __future__ import annotations

#: A waiting score is ``-priority * SHIFT + rank`` (:func:`score`), priorities clipped to ``±MAX_PRIORITY``.
SHIFT = 2**33
MAX_PRIORITY = 2**20 - 1


def score(priority: int, rank: int) -> int:
    """The waiting score of an entry (the store's docstring): lower pops first."""
    return -max(-MAX_PRIORITY, min(MAX_PRIORITY, int(priority))) * SHIFT + rank


def priority_of(value: float) -> int:
    """The priority a waiting score encodes."""
    return -(int(value) // SHIFT)


#: Shared by the scripts: exact score text, the lease clock, and the reaper.
#: KEYS[1] waiting, KEYS[2] leases, KEYS[3] popped (key -> its waiting score) in every script that reaps.
PRELUDE = """
local SHIFT = 8589934592
local function fmt(x) return string.format('%.17g', x) end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function reap(now, limit)
  local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, limit)
  for _, key in ipairs(expired) do
    redis.call('ZADD', KEYS[1], redis.call('HGET', KEYS[3], key) or '0', key)
    redis.call('ZREM', KEYS[2], key)
    redis.call('HDEL', KEYS[3], key)
  end
  return #expired
end
"""

#: Drops the ``n`` lowest-priority waiting entries (the highest scores: among equal priorities the latest
#: rank first, as the other stores); they stay in ``seen`` (done, never fetched). KEYS as :data:`PUSH`'s.
DROP_LOWEST = """
local function drop_lowest(n)
  local dropped = 0
  while dropped < n do
    local keys = redis.call('ZRANGE', KEYS[2], -math.min(n - dropped, 1000), -1)
    if #keys == 0 then break end
    redis.call('ZREM', KEYS[2], unpack(keys))
    for i = 3, 5 do redis.call('HDEL', KEYS[i], unpack(keys)) end
    redis.call('HDEL', KEYS[7], unpack(keys))
    dropped = dropped + #keys
  end
  return dropped
end
"""

#: KEYS: seen, waiting, parents, items, payloads, counter, attempts.
#: ARGV: aggregation, the cap on waiting entries (0: none), then five per push: key, priority, item, framed
#: payload ('' = none), tie rank ('' = the next number of the shared counter: discovery order).
#: Returns one PushResult per push (0 new, 1 merged, 2 seen), then the waiting entries, then how many the
#: cap dropped: over the cap by more than 1% (so that this runs once per 1% of growth), the lowest-priority
#: waiting entries are dropped down to the cap, in the same call (``FOCUSED_FRONTIER_MAX_SIZE``).
PUSH = (
    DROP_LOWEST
    + """
local SHIFT = 8589934592
local function fmt(x) return string.format('%.17g', x) end
local function round_half_even(x)  -- Python's round()
  local f = math.floor(x)
  local d = x - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then return f + 1 end
  return f
end
local aggregation = ARGV[1]
local out = {}
for i = 3, #ARGV, 5 do
  local key, p, payload = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 3]
  if redis.call('SADD', KEYS[1], key) == 1 then
    local rank = tonumber(ARGV[i + 4]) or redis.call('INCR', KEYS[6])
    redis.call('ZADD', KEYS[2], fmt(-p * SHIFT + rank), key)
    redis.call('HSET', KEYS[3], key, fmt(p) .. ' 1 ' .. fmt(p) .. ' ' .. fmt(p))
    redis.call('HSET', KEYS[4], key, ARGV[i + 2])
    if payload ~= '' then redis.call('HSET', KEYS[5], key, payload) end
    out[#out + 1] = 0
  else
    local score = tonumber(redis.call('ZSCORE', KEYS[2], key))
    if score then
      local record = redis.call('HGET', KEYS[3], key) or ''
      local first, n, total, best = string.match(record, '^(%S+) (%S+) (%S+) (%S+)$')
      first, n, total, best = tonumber(first) or p, tonumber(n) or 0, tonumber(total) or 0, tonumber(best) or p
      n, total, best = n + 1, total + p, math.max(best, p)
      local new = best
      if aggregation == 'first' then new = first elseif aggregation == 'mean' then new = round_half_even(total / n) end
      local old = -math.floor(score / SHIFT)
      redis.call('ZADD', KEYS[2], fmt(-new * SHIFT + score + old * SHIFT), key)
      redis.call('HSET', KEYS[3], key, fmt(first) .. ' ' .. fmt(n) .. ' ' .. fmt(total) .. ' ' .. fmt(best))
      if payload ~= '' then
        redis.call('HSET', KEYS[5], key, (redis.call('HGET', KEYS[5], key) or '') .. payload)
      end
      out[#out + 1] = 1
    else
      out[#out + 1] = 2
    end
  end
end
local size, cap, dropped = redis.call('ZCARD', KEYS[2]), tonumber(ARGV[2]), 0
if cap > 0 and size > cap + math.floor(cap / 100) then
  dropped = drop_lowest(size - cap)
  size = size - dropped
end
out[#out + 1] = size
out[#out + 1] = dropped
return out
"""
)

#: KEYS: as :data:`PUSH`'s. ARGV: n. Drops the ``n`` lowest-priority waiting entries; returns how many.
DROP = DROP_LOWEST + "return drop_lowest(tonumber(ARGV[1]))"

#: An entry is done (in flight, or a lease that expired and went back to waiting): only the seen-set keeps
#: it. KEYS[1..7]: waiting, leases, popped, attempts, items, payloads, parents. Returns 1 if it was in flight.
ACK_ONE = """
local function ack(key)
  local n = redis.call('ZREM', KEYS[2], key)
  redis.call('ZREM', KEYS[1], key)
  for i = 3, 7 do redis.call('HDEL', KEYS[i], key) end
  return n
end
"""

#: KEYS: waiting, leases, popped, attempts, items, payloads, parents, pop (this worker's record). ARGV: n,
#: lease milliseconds, reap limit, record milliseconds, pop id, then the keys to acknowledge first (the
#: worker's pages handled since its last call: no round trip of their own). Returns {reaped, waiting entries
#: left, key1, score1, attempts1, item1, key2, ...}; a missing item is nil. The worker's last pop is recorded
#: under KEYS[8] (its id, then the keys it took) for a while: the same call retried after its reply was lost
#: (Redis restarted, connection cut) has the same id and returns the entries it popped then, still leased,
#: instead of popping others and leaving those leased to nobody. The worker's next pop replaces the record,
#: so a worker has one record at most.
POP = (
    PRELUDE
    + ACK_ONE
    + """
for i = 6, #ARGV do ack(ARGV[i]) end
local now = now_ms()
local done = redis.call('LRANGE', KEYS[8], 0, -1)
if done[1] == ARGV[5] then
  local out = {0, redis.call('ZCARD', KEYS[1])}
  for i = 2, #done do
    local key = done[i]
    if redis.call('ZSCORE', KEYS[2], key) then
      out[#out + 1] = key
      out[#out + 1] = redis.call('HGET', KEYS[3], key)
      out[#out + 1] = tonumber(redis.call('HGET', KEYS[4], key) or '1') - 1
      out[#out + 1] = redis.call('HGET', KEYS[5], key)
    end
  end
  return out
end
if #done > 0 then redis.call('DEL', KEYS[8]) end
local out = {reap(now, tonumber(ARGV[3])), 0}
local popped = redis.call('ZPOPMIN', KEYS[1], ARGV[1])
local expiry = now + tonumber(ARGV[2])
if #popped > 0 then redis.call('RPUSH', KEYS[8], ARGV[5]) end
for i = 1, #popped, 2 do
  local key, score = popped[i], popped[i + 1]
  redis.call('ZADD', KEYS[2], expiry, key)
  redis.call('HSET', KEYS[3], key, score)
  redis.call('RPUSH', KEYS[8], key)
  out[#out + 1] = key
  out[#out + 1] = score
  out[#out + 1] = redis.call('HINCRBY', KEYS[4], key, 1) - 1
  out[#out + 1] = redis.call('HGET', KEYS[5], key)
end
if #popped > 0 then redis.call('PEXPIRE', KEYS[8], ARGV[4]) end
out[2] = redis.call('ZCARD', KEYS[1])
return out
"""
)

#: KEYS: waiting, leases, popped. ARGV: reap limit. Returns how many expired leases went back to waiting.
REAP = PRELUDE + "return reap(now_ms(), tonumber(ARGV[1]))"

#: KEYS: waiting, leases, popped, attempts, items, payloads, parents. ARGV: keys.
#: The entries are done (a lease that expired and went back to waiting too): only the seen-set keeps them.
#: Returns how many were in flight.
ACK = (
    ACK_ONE
    + """
local n = 0
for _, key in ipairs(ARGV) do n = n + ack(key) end
return n
"""
)

#: KEYS: waiting, leases, popped. ARGV: keys. In-flight entries go back to waiting with their score.
GIVE_BACK = """
local n = 0
for _, key in ipairs(ARGV) do
  if redis.call('ZREM', KEYS[2], key) == 1 then
    redis.call('ZADD', KEYS[1], redis.call('HGET', KEYS[3], key) or '0', key)
    redis.call('HDEL', KEYS[3], key)
    n = n + 1
  end
end
return n
"""

#: KEYS: waiting, leases, popped. ARGV: lease milliseconds, reap limit, keys. Extends the leases this worker
#: still holds, then requeues the expired leases of any worker (one round trip for both); returns how many.
RENEW = (
    PRELUDE
    + """
local now = now_ms()
local expiry = now + tonumber(ARGV[1])
for i = 3, #ARGV do redis.call('ZADD', KEYS[2], 'XX', 'GT', expiry, ARGV[i]) end
return reap(now, tonumber(ARGV[2]))
"""
)
