/**
 * The admission script: one atomic check-and-count on Redis's own clock (`TIME`), so the
 * processes' clocks never enter into it. It admits now, or reserves slots that start later,
 * so that a refused caller is handed its start time instead of asking again.
 *
 * KEYS[1] `bucket`: the GCRA "theoretical arrival time" of a token bucket (a string);
 * KEYS[2] `paced`: the start times of the latest admissions, newest last (a list): the
 *         common counter that both kinds of limit check and write;
 * KEYS[3] `daily`: the count of the current period and the period's end (a hash; `q`/`m`: the
 *         end and count of the period before, which counts again if Redis's clock steps
 *         back across that reset);
 * KEYS[4] `state`: what the fleet learned about this limit (a hash, see report-script.ts).
 * ARGV    mode ('bucket' | 'paced' | 'none'), perSecond, burst, marginMs, perDay (0: none),
 *         dailyStopFraction, dailyResetUtcHour, slots wanted, horizonMs (the furthest start
 *         accepted: 0 admits only now), the state version the caller has seen, guardMs.
 * Returns { refusedWaitMs, stateVersion, statePairs, redisNowMs, wait1, wait2, … }: one wait
 * (ms from Redis's now, 0: now) per slot counted, in order; `refusedWaitMs` (0 when every slot wanted was
 * counted) is how long until the next slot would enter the horizon; `statePairs` is empty when the
 * caller has the current version, else field/value pairs (remaining times in ms).
 *
 * The rules mirror the local limiters:
 * - bucket: GCRA. A bucket of `burst` tokens refilled at `perSecond` admits at s iff
 *   TAT - s ≤ (burst - 1) × T, T = 1000 / perSecond; admitting moves TAT to max(TAT, s) + T;
 * - paced: s ≥ last start + (1000 / perSecond) × (1 + marginMs / 1000), as locally (a slot is
 *   the reserved start, not the process's actual one, so a late start never moves the next);
 * - both kinds: at most `cap` starts (paced: floor(perSecond); bucket: max(burst,
 *   floor(perSecond))) in any 1000 + guardMs, on the common list. Processes that disagree
 *   on the mode (a rolling deploy) keep their own kind's key but meet on this list, so the
 *   fleet stays under the ceiling in every second while both kinds run;
 * - daily: a count per period, refused from floor(perDay × dailyStopFraction) on;
 * - a ceiling learned by any process (state field `c`) replaces the configured one; a parked
 *   limit (state field `p`, until then) admits nothing.
 * Nothing is written unless a slot is counted; every key gets an expiry just past the moment
 * it stops mattering. A key of an unexpected type (an older layout, a hand edit) is deleted
 * and read as empty instead of failing every admission with WRONGTYPE.
 */
export const ADMIT_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local mode = ARGV[1]
local rate = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local margin = tonumber(ARGV[4])
local perDay = tonumber(ARGV[5])
local want = tonumber(ARGV[8])
local horizon = tonumber(ARGV[9])
local guard = tonumber(ARGV[11])

local function read(cmd, key, ...)
  local ok, v = pcall(redis.call, cmd, key, ...)
  if ok then return v end
  redis.call('DEL', key)
  return false
end

local version = '0'
local pairs_out = {}
local ceiling, parked
local st = read('HGETALL', KEYS[4]) or {}
for i = 1, #st, 2 do
  local f, v = st[i], st[i + 1]
  if f == 'v' then version = v
  elseif f == 'c' then ceiling = tonumber(v)
  elseif f == 'p' then parked = tonumber(v) end
end
if version ~= ARGV[10] then
  for i = 1, #st, 2 do
    local f, v = st[i], st[i + 1]
    if f == 'c' then
      pairs_out[#pairs_out + 1] = f
      pairs_out[#pairs_out + 1] = v
    elseif f ~= 'v' then
      local left = (tonumber(v) or 0) - now
      if left > 0 then
        pairs_out[#pairs_out + 1] = f
        pairs_out[#pairs_out + 1] = string.format('%.0f', math.ceil(left))
      end
    end
  end
end

if ceiling and ceiling > 0 then
  rate = ceiling
  if mode == 'none' then mode = 'paced' end
  if mode == 'bucket' then burst = math.max(1, math.ceil(rate)) end
end
if parked and parked > now then
  return { math.max(1, math.ceil(parked - now)), version, pairs_out, string.format('%.3f', now) }
end

local interval, spacing, cap, tat
-- The common list is read lazily, entry by entry from its tail: only the latest start and
-- the cap-th latest matter, so an admission costs O(slots), not O(list).
local n0 = 0
local w = {}
local added = 0
local function at(i)
  if i > n0 then return w[i - n0] end
  local v = w[-i]
  if v == nil then
    v = tonumber(redis.call('LINDEX', KEYS[2], i - 1 - n0)) or 0
    w[-i] = v
  end
  return v
end
if mode == 'bucket' or mode == 'paced' then
  interval = 1000 / rate
  spacing = interval * (1 + margin / 1000)
  if mode == 'paced' then cap = math.max(1, math.floor(rate))
  else cap = math.max(1, math.floor(math.max(burst, rate))) end
  -- Beyond 100000 a second the window is not checked (the list keeps only the latest start).
  if cap > 100000 then cap = 0 end
  n0 = tonumber(read('LLEN', KEYS[2]) or 0) or 0
  if mode == 'bucket' then
    tat = tonumber(read('GET', KEYS[1]) or '0') or 0
  end
end

local periodEnd, count, stop, prevEnd, prevCount
if perDay > 0 then
  local day = 86400000
  local offset = tonumber(ARGV[7]) * 3600000
  periodEnd = (math.floor((now - offset) / day) + 1) * day + offset
  local h = read('HMGET', KEYS[3], 'p', 'n', 'q', 'm') or {}
  local p, n = tonumber(h[1]), tonumber(h[2]) or 0
  prevEnd, prevCount = tonumber(h[3]), tonumber(h[4]) or 0
  count = 0
  if p == periodEnd then count = n
  elseif p and p > periodEnd then
    -- Redis's clock went back before the counted day: the count stands, and a reset it
    -- recrosses never happened (the day left there counts again).
    count = n
    if prevEnd and prevEnd > now then count = count + prevCount end
    prevEnd = nil
  elseif p and n > 0 then
    prevEnd, prevCount = p, n
  end
  stop = math.max(1, math.floor(perDay * tonumber(ARGV[6])))
end

local out = { 0, version, pairs_out, string.format('%.3f', now) }
for k = 1, want do
  local s = now
  local n = n0 + added
  local last = n > 0 and cap and at(n) or nil
  if mode == 'bucket' then
    local x = tat - (burst - 1) * interval
    if x > s then s = x end
  elseif mode == 'paced' and last and last + spacing > s then
    s = last + spacing
  end
  if last and last > s then s = last end
  if cap and cap > 0 and n >= cap then
    local edge = at(n - cap + 1) + 1000 + guard
    if edge > s then s = edge end
  end
  if perDay > 0 and count >= stop then
    out[1] = math.max(1, math.ceil(periodEnd - now))
    break
  end
  if s - now > horizon then
    -- Come back when that slot enters the horizon (a caller that cannot reserve now asks once more, not in a loop).
    out[1] = math.max(1, math.ceil(s - now - horizon))
    break
  end
  if cap then
    added = added + 1
    w[added] = s
    if mode == 'bucket' then
      if s > tat then tat = s end
      tat = tat + interval
    end
  end
  if perDay > 0 then count = count + 1 end
  out[#out + 1] = math.ceil(s - now)
end

local counted = #out - 4
if counted == 0 then return out end
if mode == 'bucket' then
  redis.call('SET', KEYS[1], string.format('%.3f', tat), 'PX', math.ceil(tat - now) + 1000)
end
if cap and added > 0 then
  for i = 1, added do redis.call('RPUSH', KEYS[2], string.format('%.3f', w[i])) end
  redis.call('LTRIM', KEYS[2], -math.max(cap, 1), -1)
  redis.call('PEXPIRE', KEYS[2], math.ceil(w[added] - now + spacing + guard) + 2000)
end
if perDay > 0 then
  redis.call('HSET', KEYS[3], 'p', string.format('%.0f', periodEnd), 'n', count)
  if prevEnd then redis.call('HSET', KEYS[3], 'q', string.format('%.0f', prevEnd), 'm', prevCount)
  else redis.call('HDEL', KEYS[3], 'q', 'm') end
  redis.call('PEXPIREAT', KEYS[3], string.format('%.0f', periodEnd + 3600000))
end
return out
`;

/**
 * What the fleet learned about a limit, written by `report` and returned by the admission
 * script to every process whose version differs.
 *
 * KEYS[1] the limit's `state` hash. ARGV kind ('ceiling' | 'parked' | 'disabled' |
 * 'enabled' | 'key-parked'), value (ceiling per second | ms until unparked | endpoint name),
 * ttlMs (for 'key-parked': ms until the endpoint is unparked).
 * Fields: `c` learned ceiling, `p` parked until, `d:<endpoint>` disabled until, `k:<endpoint>`
 * one endpoint of the limit parked until (Redis ms; the admission script hands it back like
 * `d:` and does not refuse on it: `acquire` does not say which endpoint it is for);
 * `v` the version, Redis's time of the last change. The hash expires with its longest entry.
 */
export const REPORT_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local kind = ARGV[1]
local ttl = tonumber(ARGV[3])
local ok = pcall(redis.call, 'HLEN', KEYS[1])
if not ok then redis.call('DEL', KEYS[1]) end
if kind == 'ceiling' then
  redis.call('HSET', KEYS[1], 'c', ARGV[2])
elseif kind == 'parked' then
  ttl = tonumber(ARGV[2])
  redis.call('HSET', KEYS[1], 'p', string.format('%.0f', now + ttl))
elseif kind == 'disabled' then
  redis.call('HSET', KEYS[1], 'd:' .. ARGV[2], string.format('%.0f', now + ttl))
elseif kind == 'key-parked' then
  redis.call('HSET', KEYS[1], 'k:' .. ARGV[2], string.format('%.0f', now + ttl))
elseif kind == 'enabled' then
  redis.call('HDEL', KEYS[1], 'd:' .. ARGV[2])
  ttl = 0
else
  return redis.error_reply('ERR unknown change ' .. kind)
end
redis.call('HSET', KEYS[1], 'v', t[1] .. string.format('%06d', tonumber(t[2])))
local left = redis.call('PTTL', KEYS[1])
if ttl > 0 and left < ttl then redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil(ttl))) end
return 0
`;
