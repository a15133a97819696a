"""A principal's `requestsPerMinute` counted in Redis, once for every replica (`SharedRates`): the
token bucket as a Lua script, run by Redis on its own clock so that replicas' clocks do not matter."""

# A token bucket of `ARGV[1]` requests a minute, refilled continuously, a burst of as many; returns
# 0 when a request may go, else whole seconds (at least 1) until one would. Idle buckets expire.
TAKE_SCRIPT = """
local capacity = tonumber(ARGV[1])
local rate = capacity / 60000.0
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local stored = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(stored[1])
local at = tonumber(stored[2])
if tokens == nil or at == nil then
  tokens = capacity
  at = now
end
tokens = math.min(capacity, tokens + math.max(0, now - at) * rate)
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.max(1, math.ceil((1 - tokens) / rate / 1000))
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], 120000)
return wait
"""
