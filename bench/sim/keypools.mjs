/**
 * Generated API-key pools (issues 14 and 20): seeded random profiles, an upstream that
 * answers like Etherscan, and a runner that drives one pool configuration through a
 * profile at a given share of its true capacity, on a FakeClock.
 *
 * A profile (`generateProfile(seed)`) has 5–10 keys:
 * - solo keys on plan rates of 0.5–20 calls/s, about a third of them accepting less than
 *   advertised (a hidden per-key limit, 40–90 % of the plan);
 * - zero to two accounts (groups) of 2–4 keys sharing one bucket (the plan rate the user
 *   configures), some members with a lower per-key limit of their own inside it;
 * - sometimes an invalid key ("Invalid API Key"), sometimes an undisclosed daily cap that
 *   binds in the middle of the run ("Max daily rate limit reached");
 * - limits that drift down (to 40–70 %) and back up without notice, one to three times;
 * - bursty arrivals: Poisson, modulated between a burst rate (1.5×) and a calm rate with
 *   the same mean.
 * A server's window admits whole calls: a nominal 1.7/s admits one call a second (and says
 * "(1/sec)"). True capacity is the lowest over the run of what the valid keys accept (a capped key
 * counted as gone, drifts applied, a group at the lower of its bucket and its members'
 * own limits); the offered load is a share of that.
 *
 * Everything is injected (the Pool class, FakeClock, the classifier), so the same code
 * runs on `dist/` in the benchmark and on `src/` in the property test.
 */
import { Rng } from './prng.mjs';

const S = 1000;
const PLANS = [0.5, 1, 2, 3, 5, 10, 20];

/** A profile from a seed. `durationMs`: the run it is drawn for. */
export function generateProfile(seed, durationMs = 600 * S) {
  const rng = new Rng(seed);
  const pick = (list) => list[Math.floor(rng.next() * list.length)];
  const keys = [];
  const groups = [];
  const soloCount = 3 + Math.floor(rng.next() * 5);
  for (let i = 0; i < soloCount; i++) {
    const plan = pick(PLANS);
    const hidden = rng.next() < 0.35 ? Math.max(0.5, round1(plan * rng.uniform(0.4, 0.9))) : plan;
    keys.push({ name: `k${keys.length + 1}`, plan, limit: hidden, group: undefined });
  }
  const groupCount = Math.floor(rng.next() * 3);
  for (let g = 0; g < groupCount; g++) {
    const plan = pick(PLANS.filter((p) => p >= 2));
    const members = 2 + Math.floor(rng.next() * 3);
    const names = [];
    for (let m = 0; m < members; m++) {
      // A member's own limit: the account's rate, or (one time in three) less than that.
      const own = rng.next() < 0.35 ? Math.max(0.5, round1(plan * rng.uniform(0.3, 0.7))) : plan;
      const name = `k${keys.length + 1}`;
      keys.push({ name, plan, limit: own, group: `g${g + 1}` });
      names.push(name);
    }
    groups.push({ name: `g${g + 1}`, plan, limit: plan, members: names });
  }
  // An invalid key, in about half the profiles.
  if (rng.next() < 0.5) pick(keys.filter((k) => k.group === undefined)).invalid = true;
  // An undisclosed daily cap binding between 30 % and 70 % of the run, in about half.
  if (rng.next() < 0.5) {
    const k = pick(keys.filter((x) => !x.invalid));
    k.dailyCapAtMs = Math.round(durationMs * rng.uniform(0.3, 0.7));
  }
  // Drifts: a key's (or an account's) limit falls to 40-70 % for a while, then comes back.
  const drifts = [];
  const driftCount = 1 + Math.floor(rng.next() * 3);
  for (let d = 0; d < driftCount; d++) {
    const onGroup = groups.length > 0 && rng.next() < 0.3;
    const target = onGroup ? pick(groups).name : pick(keys.filter((k) => !k.invalid)).name;
    const from = Math.round(durationMs * rng.uniform(0.1, 0.6));
    const to = Math.min(durationMs, from + Math.round(durationMs * rng.uniform(0.1, 0.3)));
    drifts.push({ target, from, to, factor: round1(rng.uniform(0.4, 0.7) * 10) / 10 });
  }
  return { seed, durationMs, keys, groups, drifts, burst: { factor: 1.5, share: 0.3, meanMs: 2000 } };
}

function round1(x) {
  return Math.round(x * 10) / 10;
}

/**
 * What a server with a rolling one-second window really admits for a nominal `limit`: a
 * whole number of calls a second (at least one), or one call per `1000 / limit` ms below 1/s.
 */
function admitted(limit) {
  return limit < 1 ? limit : Math.floor(limit);
}

/** The factor a drift applies to `name` at `t`. */
function driftFactor(profile, name, t) {
  let f = 1;
  for (const d of profile.drifts) if (d.target === name && t >= d.from && t < d.to) f = Math.min(f, d.factor);
  return f;
}

/** Calls per second the valid keys accept at `t` (`capped`: keys whose daily cap has bound count as gone). */
export function capacityAt(profile, t, capped = true) {
  let total = 0;
  const alive = (k) => !k.invalid && !(capped && k.dailyCapAtMs !== undefined && t >= k.dailyCapAtMs);
  for (const k of profile.keys) if (k.group === undefined && alive(k)) total += admitted(k.limit * driftFactor(profile, k.name, t));
  for (const g of profile.groups) {
    let own = 0;
    for (const name of g.members) {
      const k = profile.keys.find((x) => x.name === name);
      if (alive(k)) own += admitted(k.limit * driftFactor(profile, k.name, t));
    }
    total += Math.min(admitted(g.limit * driftFactor(profile, g.name, t)), own);
  }
  return total;
}

/** The lowest capacity over the run (sampled every second), with capped keys counted as gone from the start. */
export function trueCapacity(profile) {
  let min = Number.POSITIVE_INFINITY;
  for (let t = 0; t < profile.durationMs; t += S) min = Math.min(min, capacityAt(profile, t, false));
  // A capped key is lost for the rest of the run at some point: count without it.
  const capped = { ...profile, keys: profile.keys.map((k) => (k.dailyCapAtMs === undefined ? k : { ...k, invalid: true })) };
  for (let t = 0; t < profile.durationMs; t += S) min = Math.min(min, capacityAt(capped, t, false));
  return min;
}

/** The error an upstream answer rejects with: only a message, like a parsed API body (no stack). */
class ApiError {
  constructor(message, kind) {
    this.message = message;
    this.kind = kind;
  }
}

/** A rolling-window counter at the server (arrival times of admitted requests). */
class Window {
  constructor() {
    this.times = [];
    this.head = 0;
  }

  /** Whether one more request at `t` fits `perSecond` (a limit under 1/s: one per 1000 / perSecond ms). */
  fits(t, perSecond) {
    const span = perSecond >= 1 ? S : S / perSecond;
    const allowance = perSecond >= 1 ? perSecond : 1;
    while (this.head < this.times.length && this.times[this.head] <= t - span) this.head++;
    if (this.head > 4096) {
      this.times = this.times.slice(this.head);
      this.head = 0;
    }
    return this.times.length - this.head < allowance;
  }

  add(t) {
    this.times.push(t);
  }
}

/** The upstream of a profile: per-key and per-account windows, daily caps, invalid keys, drifts. */
export class KeyServer {
  constructor(profile, clock, rng) {
    this.profile = profile;
    this.clock = clock;
    this.rng = rng;
    this.byName = new Map(profile.keys.map((k) => [k.name, { key: k, window: new Window(), count: 0 }]));
    this.groups = new Map(profile.groups.map((g) => [g.name, { group: g, window: new Window() }]));
    this.fates = { ok: 0, perSecond: 0, daily: 0, invalid: 0 };
  }

  request(name) {
    const clock = this.clock;
    const rng = this.rng;
    const up = rng.uniform(20, 80);
    const down = rng.uniform(20, 80);
    return new Promise((resolve, reject) => {
      clock.setTimeout(() => {
        const t = clock.now();
        const e = this.byName.get(name);
        const k = e.key;
        const answer = (fn, after) => clock.setTimeout(fn, Math.round(after + down));
        if (k.invalid) {
          this.fates.invalid++;
          return answer(() => reject(new ApiError('Invalid API Key', 'invalid')), 5);
        }
        if (k.dailyCapAtMs !== undefined && t >= k.dailyCapAtMs) {
          this.fates.daily++;
          return answer(() => reject(new ApiError('Max daily rate limit reached', 'daily')), 5);
        }
        const own = admitted(k.limit * driftFactor(this.profile, k.name, t));
        if (!e.window.fits(t, own)) {
          this.fates.perSecond++;
          return answer(() => reject(new ApiError(`Max calls per sec rate limit reached (${fmt(own)}/sec)`, 'rate')), 5);
        }
        const g = k.group === undefined ? undefined : this.groups.get(k.group);
        if (g !== undefined) {
          const shared = admitted(g.group.limit * driftFactor(this.profile, g.group.name, t));
          if (!g.window.fits(t, shared)) {
            this.fates.perSecond++;
            return answer(() => reject(new ApiError(`Max calls per sec rate limit reached (${fmt(shared)}/sec)`, 'rate')), 5);
          }
          g.window.add(t);
        }
        e.window.add(t);
        this.fates.ok++;
        answer(() => resolve(name), rng.lognormal(150, 0.4));
      }, Math.round(up));
    });
  }
}

function fmt(n) {
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

/**
 * README's recommended configuration for a key pool: paced plan rates with a margin that
 * covers the path's jitter (this upstream's one-way transit varies by 60 ms), accounts
 * as groups, `health`, and queue waits bounded at 40 % of the deadline.
 */
export function recommendedOptions(profile, classify, deadlineMs = 10 * S) {
  return {
    endpoints: profile.keys.map((k) => ({ name: k.name, conn: k.name, rateLimit: { perSecond: k.plan, mode: 'paced', marginMs: 60 } })),
    groups: profile.groups.map((g) => g.members),
    strategy: 'health',
    classify: (err) => classify(err) ?? 'transient',
    deadlineMs,
    attemptTimeoutMs: 5 * S,
    maxQueueWaitMs: 0.4 * deadlineMs,
  };
}

/**
 * Runs `options` (a function of the profile) through the profile at `load` × its true
 * capacity, on a fresh FakeClock. Returns the figures the goals are stated in.
 */
export async function runKeyPool({ profile, load, Pool, FakeClock, options, durationMs = profile.durationMs, seed = profile.seed, trace = undefined, jitterMs = 0 }) {
  const clock = new FakeClock(0);
  const rng = new Rng(seed ^ 0x5bd1e995);
  const server = new KeyServer(profile, clock, rng.fork('server'));
  const opts = options(profile);
  const onEvent = trace?.event === undefined ? {} : { onEvent: (e) => trace.event(clock.now(), e) };
  // Its own generator, so that the arrivals and the server are the same with and without jitter.
  const poolClock = jitterMs > 0 ? readAhead(clock, jitterMs, new Rng(seed ^ 0x3c6ef372)) : clock;
  const pool = new Pool({ ...opts, ...onEvent, clock: poolClock, random: rng.fork('pool').next });
  trace?.started?.(pool, clock);
  const capacity = trueCapacity(profile);
  const times = arrivalTimes(profile, load * capacity, durationMs, rng.fork('arrivals'));
  const results = { calls: 0, failures: 0, failTimes: [], okTimes: [], codes: {} };
  let open = 0;
  const op = (name) => server.request(name);
  let next = 0;
  const arrive = () => {
    const t = clock.now();
    results.calls++;
    open++;
    pool.execute(op).then(
      () => {
        open--;
        results.okTimes.push(clock.now() - t);
      },
      (e) => {
        open--;
        results.failures++;
        results.failTimes.push(clock.now() - t);
        results.codes[e.code] = (results.codes[e.code] ?? 0) + 1;
        trace?.failed?.(t, clock.now(), e);
      },
    );
    if (++next < times.length) clock.setTimeout(arrive, times[next] - t);
  };
  if (times.length > 0) clock.setTimeout(arrive, times[0]);
  await clock.advance(durationMs);
  for (let waited = 0; open > 0 && waited < 60 * S; waited += S) await clock.advance(S);
  await pool.close();
  const attempts = server.fates.ok + server.fates.perSecond + server.fates.daily + server.fates.invalid;
  const failTimes = Float64Array.from(results.failTimes).sort();
  const okTimes = Float64Array.from(results.okTimes).sort();
  return {
    seed: profile.seed,
    load,
    capacity: Math.round(capacity * 100) / 100,
    calls: results.calls,
    failurePct: pct(results.failures, results.calls),
    selfInflicted429Pct: pct(server.fates.perSecond, attempts),
    medianFailureMs: quantile(failTimes, 0.5),
    servedP99Ms: quantile(okTimes, 0.99),
    deadlineMs: opts.deadlineMs,
    unsettled: open,
    codes: results.codes,
    fates: server.fates,
    oracleFailurePct: oracleFailurePct(profile, times, opts.maxQueueWaitMs ?? opts.deadlineMs, 1 / (1 + (opts.endpoints[0]?.rateLimit?.marginMs ?? 0) / S)),
  };
}

/**
 * The pool's view of `clock` on a real host: each reading up to `jitterMs` ahead of the
 * time its timers run on (never behind the reading before), as Node's timers run on the
 * event loop's whole-millisecond time, behind `performance.now()`. The server keeps the
 * exact time.
 */
export function readAhead(clock, jitterMs, rng) {
  let last = -Infinity;
  return {
    now: () => (last = Math.max(last, clock.now() + jitterMs * rng.next())),
    wallNow: () => clock.wallNow(),
    setTimeout: (fn, ms, background) => clock.setTimeout(fn, ms, background),
    clearTimeout: (handle) => clock.clearTimeout(handle),
    setRef: (handle, keepAlive) => clock.setRef(handle, keepAlive),
  };
}

/**
 * The arrival times (whole ms) of a run at `mean` calls a second: Poisson, modulated
 * between bursts (`burst.factor` × the mean, a `burst.share` of the phases) and a calm rate
 * with the same overall mean; phases last `burst.meanMs` on average (exponential).
 */
export function arrivalTimes(profile, mean, durationMs, arrivals) {
  const { factor, share, meanMs } = profile.burst;
  const calm = (1 - share * factor) / (1 - share);
  const times = [];
  let bursting = false;
  let phaseEnds = 0;
  for (let t = 0; t < durationMs; ) {
    times.push(t);
    if (t >= phaseEnds) {
      bursting = arrivals.next() < share;
      phaseEnds = t + arrivals.exponential(meanMs);
    }
    const rate = mean * (bursting ? factor : calm);
    t += Math.max(0, Math.round(arrivals.exponential(S / rate)));
  }
  return times;
}

/**
 * What an ideal scheduler would fail: one FIFO line served at the capacity the valid keys
 * really have at each moment (`capacityAt`: drifts applied, capped keys gone once capped),
 * evenly spaced, that turns a call away when its wait would exceed `maxWaitMs`. It knows
 * every limit in advance and never sends a call too many, so it bounds what any pool
 * configuration can reach on the same arrivals. `share`: the part of that capacity it may
 * use (a pacing margin against the path's jitter costs `marginMs / 1000`). Returns the
 * share of calls it fails (%).
 */
export function oracleFailurePct(profile, times, maxWaitMs, share = 1) {
  let free = 0;
  let failed = 0;
  for (const t of times) {
    const start = Math.max(free, t);
    if (start - t > maxWaitMs) {
      failed++;
      continue;
    }
    const c = share * capacityAt(profile, start);
    free = start + (c > 0 ? S / c : Number.POSITIVE_INFINITY);
  }
  return pct(failed, times.length);
}

function pct(n, d) {
  return d === 0 ? 0 : Math.round((100_000 * n) / d) / 1000;
}

function quantile(sorted, q) {
  if (sorted.length === 0) return 0;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]);
}
