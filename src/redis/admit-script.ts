/**
 * The admission script: one atomic check-and-count per attempt, on Redis's own clock
 * (`TIME`), so the processes' clocks never enter into it.
 *
 * KEYS[1] the per-second state, KEYS[2] the daily counter.
 * ARGV    mode ('bucket' | 'paced' | 'none'), perSecond, burst, marginMs, perDay (0: none),
 *         dailyStopFraction, dailyResetUtcHour.
 * Returns 0 when the call is admitted (and counted), else the milliseconds to wait (≥ 1).
 *
 * It mirrors the local limiters exactly:
 * - bucket: GCRA, the token bucket written as one "theoretical arrival time". A bucket of
 *   `burst` tokens refilled at `perSecond` admits a call iff TAT - now ≤ (burst - 1) × T,
 *   with T = 1000 / perSecond; admitting moves TAT to max(TAT, now) + T;
 * - paced: the start times of the last floor(perSecond) calls (a list, newest last); a call
 *   may leave when the last one left ≥ 1000 / perSecond + marginMs ago and the oldest of
 *   the list has left the rolling second;
 * - daily: a count for the current period (the period's end is stored with it, so a new
 *   day starts from zero), refused from floor(perDay × dailyStopFraction) on, until the
 *   reset at dailyResetUtcHour:00 UTC.
 * Nothing is written unless every check passes; every key written gets an expiry just past
 * the moment it stops mattering, so a crashed process leaves nothing behind.
 */
export const ADMIT_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local mode = ARGV[1]
local rate = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local margin = tonumber(ARGV[4])
local perDay = tonumber(ARGV[5])
local wait = 0
local tat, slots, spacing, periodEnd, count

if mode == 'bucket' then
  local interval = 1000 / rate
  tat = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
  if tat < now then tat = now end
  local w = tat - (burst - 1) * interval - now
  if w > wait then wait = w end
elseif mode == 'paced' then
  spacing = 1000 / rate + margin
  slots = math.max(1, math.floor(rate))
  local last = redis.call('LINDEX', KEYS[1], -1)
  if last then
    local w = tonumber(last) + spacing - now
    if w > wait then wait = w end
    local oldest = redis.call('LINDEX', KEYS[1], -slots)
    if oldest then
      w = tonumber(oldest) + 1000 - now
      if w > wait then wait = w end
    end
  end
end

if perDay > 0 then
  local day = 86400000
  local offset = tonumber(ARGV[7]) * 3600000
  periodEnd = (math.floor((now - offset) / day) + 1) * day + offset
  local h = redis.call('HMGET', KEYS[2], 'p', 'n')
  count = 0
  if h[1] and tonumber(h[1]) == periodEnd then count = tonumber(h[2]) or 0 end
  if count >= math.max(1, math.floor(perDay * tonumber(ARGV[6]))) then
    local w = periodEnd - now
    if w > wait then wait = w end
  end
end

if wait > 0 then return math.max(1, math.ceil(wait)) end

if mode == 'bucket' then
  tat = tat + 1000 / rate
  redis.call('SET', KEYS[1], string.format('%.3f', tat), 'PX', math.ceil(tat - now) + 1000)
elseif mode == 'paced' then
  redis.call('RPUSH', KEYS[1], string.format('%.3f', now))
  redis.call('LTRIM', KEYS[1], -slots, -1)
  redis.call('PEXPIRE', KEYS[1], math.ceil(spacing) + 2000)
end
if perDay > 0 then
  redis.call('HSET', KEYS[2], 'p', string.format('%.0f', periodEnd), 'n', count + 1)
  redis.call('PEXPIREAT', KEYS[2], string.format('%.0f', periodEnd + 3600000))
end
return 0
`;
