--[[
  acquire.lua: take one request token, atomically, from a key's bucket AND the organization's bucket AND (for
  the backfill and summaries lanes) the lane's bucket; try every candidate key and take the one whose token
  comes first. When no key may send yet, take nothing and say how long until one could.

  Each bucket is a GCRA (generic cell rate algorithm) hash: field `tat`, the theoretical arrival time of its
  next request in milliseconds on Redis's own clock (TIME), so every process agrees on "now" whatever its host's
  clock says. A key's hash may also hold `paused_until` (ms, same clock), set by pause.lua after a 429.
  All keys share one hash tag, {<prefix>}, so the script runs on Redis Cluster too.

  KEYS[1]        the organization's bucket   {<prefix>}:limiter:org
  KEYS[2]        the lane's bucket           {<prefix>}:limiter:lane:<lane>  (untouched when ARGV[3] is 0)
  KEYS[3..2+n]   the candidate keys' buckets {<prefix>}:limiter:key:<fingerprint>, in the caller's order

  ARGV[1], ARGV[2]               organization: interval between requests (ms, fractional), tolerance (ms)
  ARGV[3], ARGV[4]               lane: interval (0 for the sync lane: no lane bucket), tolerance
  ARGV[3+2i], ARGV[4+2i]         candidate key i (1..n): interval, tolerance

  Returns { granted, i, wait_ms }:
    { 1, i, 0 }        a token was taken from key i (1-based, into KEYS[3..]), the organization and the lane
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

local org_interval, org_tolerance = tonumber(ARGV[1]), tonumber(ARGV[2])
local lane_interval, lane_tolerance = tonumber(ARGV[3]), tonumber(ARGV[4])

local org_tat = field(KEYS[1], 'tat')
local shared_wait = gcra_wait(org_tat, org_tolerance)
local lane_tat = 0
if lane_interval > 0 then
  lane_tat = field(KEYS[2], 'tat')
  shared_wait = math.max(shared_wait, gcra_wait(lane_tat, lane_tolerance))
end

local best, best_wait, best_tat, best_paused = nil, nil, nil, 0
for i = 3, #KEYS do
  local slot = i - 2
  local interval, tolerance = tonumber(ARGV[3 + 2 * slot]), tonumber(ARGV[4 + 2 * slot])
  local tat = field(KEYS[i], 'tat')
  local paused_until = field(KEYS[i], 'paused_until')
  local wait = math.max(gcra_wait(tat, tolerance), paused_until - now, 0)
  if best == nil or wait < best_wait or (wait == best_wait and tat < best_tat) then
    best, best_wait, best_tat, best_paused = slot, wait, tat, paused_until
  end
end

if best == nil then
  return redis.error_reply('acquire.lua needs at least one key bucket')
end

local wait = math.max(best_wait, shared_wait)
if wait > 0 then
  return { 0, best, math.max(1, math.ceil(wait)) }
end

take(KEYS[2 + best], best_tat, tonumber(ARGV[3 + 2 * best]), best_paused)
take(KEYS[1], org_tat, org_interval)
if lane_interval > 0 then
  take(KEYS[2], lane_tat, lane_interval)
end
return { 1, best, 0 }
