--[[
  pause.lua: nobody, in any process, sends on this key before Redis's clock passes now + ARGV[1] ms (a 429's
  Retry-After, or the reset of a window the server reported empty). A longer pause already set is kept.

  KEYS[1]  the key's bucket   {<prefix>}:limiter:key:<fingerprint>  (the hash acquire.lua reads)
  ARGV[1]  pause length in milliseconds (> 0)

  Returns the milliseconds the key now stays paused (integer, rounded up).
]]

if redis.replicate_commands then
  pcall(redis.replicate_commands)
end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000

local paused_until = math.max(tonumber(redis.call('HGET', KEYS[1], 'paused_until') or '0') or 0, now + tonumber(ARGV[1]))
local tat = tonumber(redis.call('HGET', KEYS[1], 'tat') or '0') or 0
redis.call('HSET', KEYS[1], 'paused_until', string.format('%.3f', paused_until))
redis.call('PEXPIRE', KEYS[1], math.ceil(math.max(paused_until, tat) - now) + 1000)
return math.ceil(paused_until - now)
