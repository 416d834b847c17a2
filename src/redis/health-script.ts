/**
 * Scripts of the shared health view: one sorted set per prefix, a member per
 * `<status>|<endpoint>`, scored by when it expires (on Redis's clock). Expired members are
 * pruned on every write and read, and the set itself expires with its last member.
 */

/** KEYS[1] the set; ARGV member, ttlMs. */
export const MARK_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], string.format('%.0f', now + tonumber(ARGV[2])), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now))
local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if top[2] then redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil(tonumber(top[2]) - now))) end
return 0
`;

/** KEYS[1] the set. Returns [member, remainingMs, member, remainingMs, …]. */
export const READ_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now))
local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. string.format('%.0f', now), '+inf', 'WITHSCORES')
local out = {}
for i = 1, #live, 2 do
  out[#out + 1] = live[i]
  out[#out + 1] = string.format('%.0f', tonumber(live[i + 1]) - now)
end
return out
`;
