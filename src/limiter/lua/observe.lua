--[[
  observe.lua: believe the server's X-RateLimit-Remaining. When it says fewer requests are left on this key
  than our bucket would let go back to back (other integrations of the organization spend the same key or
  budget), push the key's TAT forward so that at most `remaining` may go now. Never loosens the bucket.

  KEYS[1]  the key's bucket   {<prefix>}:limiter:key:<fingerprint>  (the hash acquire.lua reads)
  ARGV[1]  the key's interval between requests (ms, fractional)
  ARGV[2]  the key's tolerance (ms)
  ARGV[3]  X-RateLimit-Remaining (integer >= 0)

  Returns 1 when the bucket was tightened, 0 when it already was at least that careful.
]]

if redis.replicate_commands then
  pcall(redis.replicate_commands)
end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000

local interval, tolerance = tonumber(ARGV[1]), tonumber(ARGV[2])
local remaining = math.max(0, math.floor(tonumber(ARGV[3])))
local tat = tonumber(redis.call('HGET', KEYS[1], 'tat') or '0') or 0
-- With this TAT exactly `remaining` requests may go back to back now (gcraLimitAvailable in gcra.ts).
local capped = now + tolerance - (remaining - 1) * interval
if capped <= tat then
  return 0
end
local paused_until = tonumber(redis.call('HGET', KEYS[1], 'paused_until') or '0') or 0
redis.call('HSET', KEYS[1], 'tat', string.format('%.3f', capped))
redis.call('PEXPIRE', KEYS[1], math.ceil(math.max(capped, paused_until) - now) + 1000)
return 1
