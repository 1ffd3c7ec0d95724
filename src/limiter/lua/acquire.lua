--[[
  acquire.lua: take one request token, atomically, from a key's bucket AND the organization's bucket, and for the
  backfill and summaries lanes decide how the request stands; try every candidate key and take the one whose
  token comes first. When no key may send yet, take nothing and say how long until one could.

  How a request stands (the same rules as TokenBucketLimiter.tryGrant in token-bucket.ts):
    LEVEL     a sync request always; a backfill or summaries request while its lane's bucket (its share) has a
              token, which it takes. It may use the key's and organization's whole tolerance (their burst).
    YIELDING  a backfill or summaries request beyond its share. It may use only the yielding tolerances (half
              the burst: gcraYielding in gcra.ts) and leaves its lane's bucket alone. Alone it still keeps the
              buckets at their full rate; beside a sync that wants the rest it gets nothing, because the sync
              finds the other half of the burst free and goes first.
    A request marked yielding (ARGV[6] = 1: a walk's single-record GETs) always yields, in any lane.
  Level is tried first; a lane request that may not go either way gets the sooner of the two waits.

  Each bucket is a GCRA (generic cell rate algorithm) hash: field `tat`, the theoretical arrival time of its
  next request in milliseconds on Redis's own clock (TIME), so every process agrees on "now" whatever its host's
  clock says. A key's hash may also hold `paused_until` (ms, same clock), set by pause.lua after a 429.
  All keys share one hash tag, {<prefix>}, so the script runs on Redis Cluster too.

  KEYS[1]        the organization's bucket   {<prefix>}:limiter:org
  KEYS[2]        the lane's bucket           {<prefix>}:limiter:lane:<lane>  (untouched when ARGV[4] is 0)
  KEYS[3..2+n]   the candidate keys' buckets {<prefix>}:limiter:key:<fingerprint>, in the caller's order

  ARGV[1], ARGV[2], ARGV[3]      organization: interval between requests (ms, fractional), tolerance (ms),
                                 yielding tolerance (ms)
  ARGV[4], ARGV[5]               lane: interval (0 for the sync lane: no lane bucket, never yields), tolerance
  ARGV[6]                        1: the request yields whatever its lane (AcquireOptions.yielding), else 0
  ARGV[4+3i], ARGV[5+3i], ARGV[6+3i]   candidate key i (1..n): interval, tolerance, yielding tolerance

  Returns { granted, i, wait_ms }:
    { 1, i, 0 }        a token was taken from key i (1-based, into KEYS[3..]), the organization and, standing
                       level in a backfill or summaries lane, the lane
    { 0, i, wait_ms }  nothing was taken; key i is the soonest, and in wait_ms (an integer >= 1, rounded up)
                       a request could go if nobody else takes the token first
  Among keys that may send now, the one with the most tokens left (the earliest tat) wins, so a pool spreads.
]]

if redis.replicate_commands then
  -- Redis < 5 replicates scripts verbatim; TIME makes this one non-deterministic, so replicate its effects.
  pcall(redis.replicate_commands)
end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000

local function field(key, name)
  return tonumber(redis.call('HGET', key, name) or '0') or 0
end

-- How long until this bucket lets one request through (0: now). Float dust counts as now.
local function gcra_wait(tat, tolerance)
  local wait = math.max(tat, now) - tolerance - now
  if wait > 0.000001 then return wait end
  return 0
end

-- Take one token; the hash expires once it would read as a full bucket anyway.
local function take(key, tat, interval, keep_until)
  local next_tat = math.max(tat, now) + interval
  -- %.3f: tostring would keep only 14 significant digits (0.1 ms at epoch milliseconds).
  redis.call('HSET', key, 'tat', string.format('%.3f', next_tat))
  redis.call('PEXPIRE', key, math.ceil(math.max(next_tat, keep_until or 0) - now) + 1000)
end

local org_interval = tonumber(ARGV[1])
local org_tolerance = { tonumber(ARGV[2]), tonumber(ARGV[3]) }
local lane_interval, lane_tolerance = tonumber(ARGV[4]), tonumber(ARGV[5])
local always_yields = ARGV[6] == '1'

local org_tat = field(KEYS[1], 'tat')
local key_tat, key_paused = {}, {}
for slot = 1, #KEYS - 2 do
  key_tat[slot] = field(KEYS[2 + slot], 'tat')
  key_paused[slot] = field(KEYS[2 + slot], 'paused_until')
end
if #key_tat == 0 then
  return redis.error_reply('acquire.lua needs at least one key bucket')
end

-- The soonest key and the wait, the organization's included, for one standing (1: level, 2: yielding).
local function soonest(standing)
  local best, best_wait = nil, nil
  for slot = 1, #key_tat do
    local tolerance = tonumber(ARGV[4 + 3 * slot + standing])
    local wait = math.max(gcra_wait(key_tat[slot], tolerance), key_paused[slot] - now, 0)
    if best == nil or wait < best_wait or (wait == best_wait and key_tat[slot] < key_tat[best]) then
      best, best_wait = slot, wait
    end
  end
  return best, math.max(best_wait, gcra_wait(org_tat, org_tolerance[standing]))
end

local function grant(slot, lane_too)
  take(KEYS[2 + slot], key_tat[slot], tonumber(ARGV[4 + 3 * slot]), key_paused[slot])
  take(KEYS[1], org_tat, org_interval)
  if lane_too then
    take(KEYS[2], field(KEYS[2], 'tat'), lane_interval)
  end
  return { 1, slot, 0 }
end

if always_yields then
  local slot, wait = soonest(2)
  if wait == 0 then
    return grant(slot, false)
  end
  return { 0, slot, math.max(1, math.ceil(wait)) }
end

local level, level_wait = soonest(1)
if lane_interval > 0 then
  level_wait = math.max(level_wait, gcra_wait(field(KEYS[2], 'tat'), lane_tolerance))
end
if level_wait == 0 then
  return grant(level, lane_interval > 0)
end
if lane_interval == 0 then
  return { 0, level, math.max(1, math.ceil(level_wait)) }
end

-- Beyond its share: only what nobody standing level is waiting for, and the lane's bucket is left alone.
local yielding, yielding_wait = soonest(2)
if yielding_wait == 0 then
  return grant(yielding, false)
end
if yielding_wait < level_wait then
  return { 0, yielding, math.max(1, math.ceil(yielding_wait)) }
end
return { 0, level, math.max(1, math.ceil(level_wait)) }
