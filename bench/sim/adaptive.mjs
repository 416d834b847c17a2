/**
 * Limits that tune themselves (issue 18): one endpoint whose provider enforces an
 * undisclosed limit over a rolling one-second window and answers a bare 429 (no number, no
 * Retry-After) past it. The limit is `rate` for the first phase, halves for the second and
 * comes back for the third. Demand is closed-loop and always above the limit, so the limit
 * binds in every phase: capacity left unused is the limiter's doing.
 *
 * Per contender: the share of the true capacity used (successes ÷ limit) per phase after its
 * first 30 s, the time after each change until the 5-second utilisation first reaches 90 %,
 * and the share of upstream attempts that got a 429 (all self-inflicted: nobody else uses
 * the key). Everything runs on a FakeClock from one seed, so a run is a pure function of
 * (rate, seed); the Pool and FakeClock classes are injected (dist/ in the benchmark, src/
 * in the test).
 *
 *   node bench/sim/adaptive.mjs [--rates 2,10,50] [--seeds 1,2,3] [--phase 120] [--out bench/results]
 */
import { pathToFileURL } from 'node:url';
import { Rng } from './prng.mjs';
import { Scheduler } from './scheduler.mjs';
import { Ceiling, Upstream, UpstreamError } from './upstream.mjs';

const S = 1000;
/** What "within 30 s of a change" means here. */
export const SETTLE_MS = 30 * S;
const BIN_MS = 1000;

/** Bare 429s: the class only, no Retry-After and no rate. */
export function classifyBare(error) {
  if (error instanceof UpstreamError) return error.kind === 'ceiling' || error.kind === 'throttled' ? 'rate-limited' : 'transient';
  return 'transient';
}

const POOL_BASE = { deadlineMs: 10_000, attemptTimeoutMs: 5_000, maxAttempts: 4 };

/**
 * The contenders, for a plan rate `rate` (the higher true limit). `Pool`: the class to use.
 * eRPC's auto-tuner is modelled from its documentation and source (see `erpcLike`).
 */
export function contenders(rate) {
  const paced = (perSecond, extra = {}) => ({ rateLimit: { perSecond, mode: 'paced', ...extra } });
  return [
    { name: 'fixed at the lower rate', endpoint: paced(rate / 2) },
    { name: 'fixed at the higher rate', endpoint: paced(rate) },
    { name: 'no limit (retry on 429)', endpoint: {} },
    { name: 'adaptive, max = plan rate', endpoint: paced(rate, { adaptive: { min: rate / 20, max: rate } }) },
    { name: 'adaptive, max = 4 × plan, starts there', endpoint: paced(rate * 4, { adaptive: { min: rate / 20, max: rate * 4 } }) },
    { name: 'eRPC auto-tuner (modelled)', erpc: true },
  ];
}

/**
 * One run. Returns per-phase figures for each contender.
 * @param {{ Pool: any, FakeClock: any, rate: number, seed: number, phaseMs?: number, only?: string[] }} o
 */
export async function runAdaptive({ Pool, FakeClock, rate, seed, phaseMs = 120 * S, only }) {
  const phases = [rate, rate / 2, rate];
  const durationMs = phases.length * phaseMs;
  const limitAt = (t) => phases[Math.min(phases.length - 1, Math.floor(t / phaseMs))];
  const clock = new FakeClock(0);
  const sched = new Scheduler(clock);
  const root = new Rng(seed);
  const list = contenders(rate).filter((c) => only === undefined || only.includes(c.name));
  const runs = list.map((c) => {
    const rng = root.fork(c.name);
    const bins = Math.ceil(durationMs / BIN_MS) + 60;
    const counts = { ok: new Array(bins).fill(0), limited: new Array(bins).fill(0) };
    const recorder = {
      attempt(_index, t, fate) {
        const b = Math.floor(t / BIN_MS);
        if (fate === 'ok') counts.ok[b]++;
        else if (fate === 'ceiling') counts.limited[b]++;
      },
    };
    const ceiling = new Ceiling(rate, 1000);
    const upstream = new Upstream({ name: 'rpc', index: 0, sched, rng: rng.fork('upstream'), recorder, medianMs: 50, ceiling });
    const events = [];
    const call = c.erpc ? erpcLike({ sched, upstream, rate }) : poolCall({ Pool, clock, rng, upstream, endpoint: c.endpoint, events });
    return { c, counts, ceiling, call, events, failed: 0, calls: 0 };
  });
  // The provider's limit moves at each phase boundary, for every contender at once.
  for (let p = 1; p < phases.length; p++) sched.at(p * phaseMs, () => runs.forEach((r) => (r.ceiling.limit = phases[p])));

  // Closed-loop demand (a backfill job): `workers` callers, each starting its next call when
  // the last one ends (100 ms later after a failure). Twice the plan rate in callers keeps
  // every phase saturated while the wait for a slot stays under the deadline.
  const workers = Math.ceil(2 * rate);
  const worker = async (r) => {
    while (sched.now() < durationMs) {
      r.calls++;
      try {
        await r.call.call();
      } catch {
        r.failed++;
        await sched.sleep(100);
      }
    }
  };
  for (const r of runs) for (let i = 0; i < workers; i++) sched.at(1 + i, () => void worker(r));
  await clock.advance(durationMs);
  await clock.advance(20 * S);
  for (const r of runs) await r.call.close?.();

  return runs.map((r) => {
    const perPhase = phases.map((limit, p) => {
      const from = p * phaseMs;
      const to = from + phaseMs;
      const settled = sum(r.counts.ok, (from + SETTLE_MS) / BIN_MS, to / BIN_MS) / ((to - from - SETTLE_MS) / 1000) / limit;
      // The first 5-second stretch after the change at >= 90 % of the limit.
      let reachMs = null;
      for (let t = from; t + 5 * S <= to; t += BIN_MS) {
        if (sum(r.counts.ok, t / BIN_MS, (t + 5 * S) / BIN_MS) / 5 >= 0.9 * limit) {
          reachMs = t + 5 * S - from;
          break;
        }
      }
      return { limit, utilisationAfter30s: round(settled, 3), reach90Ms: reachMs };
    });
    const ok = sum(r.counts.ok, 0, r.counts.ok.length);
    const limited = sum(r.counts.limited, 0, r.counts.limited.length);
    let capacity = 0;
    for (let t = 0; t < durationMs; t += BIN_MS) capacity += limitAt(t);
    return {
      contender: r.c.name,
      rate,
      seed,
      phases: perPhase,
      utilisation: round(ok / capacity, 3),
      attempts: ok + limited,
      limited,
      limitedPct: round((100 * limited) / Math.max(1, ok + limited), 2),
      calls: r.calls,
      failedPct: round((100 * r.failed) / r.calls, 1),
      adapted: r.events.length,
    };
  });
}

function poolCall({ Pool, clock, rng, upstream, endpoint, events }) {
  const pool = new Pool({
    ...POOL_BASE,
    endpoints: [{ name: upstream.name, conn: upstream, ...endpoint }],
    classify: classifyBare,
    clock,
    random: rng.fork('pool').next,
    onEvent: (e) => {
      if (e.type === 'endpoint-adapted') events.push(e);
    },
  });
  const op = (u) => u.request();
  return { call: () => pool.execute(op), close: () => pool.close() };
}

/**
 * eRPC's rate-limit auto-tuner, from its documentation and source (upstream/ratelimiter_autotuner.go):
 * a budget of `maxCount` calls per period (a fixed window, Envoy's algorithm) in front of the
 * upstream; every `adjustmentPeriod` (default 1 min), with at least 10 samples, an error
 * rate (429s ÷ answers) above `errorRateThreshold` (0.1) multiplies the budget by
 * `decreaseFactor` (0.9); an error rate of exactly 0 multiplies it by `increaseFactor` (1.05);
 * anything in between holds. Bounds `minBudget` 0 and `maxBudget` 10000. Here the budget
 * starts at the plan rate (`rate`), a call over budget waits for the next window (eRPC's
 * `waitTime`), and a 429 is retried after 100 ms, up to 4 attempts within 10 s, like the
 * pool contenders.
 */
export function erpcLike({ sched, upstream, rate }) {
  const period = 60 * S;
  let budget = rate;
  let windowStart = 0;
  let used = 0;
  let total = 0;
  let errors = 0;
  let lastAdjust = 0;
  const adjust = () => {
    const now = sched.now();
    if (now - lastAdjust < period) return;
    lastAdjust = now;
    const n = total;
    const e = errors;
    total = 0;
    errors = 0;
    if (n < 10) return;
    const r = e / n;
    if (r > 0.1) budget = Math.max(0, Math.floor(budget * 0.9));
    else if (r === 0) budget = Math.min(10_000, Math.ceil(budget * 1.05));
  };
  const slot = async (deadline) => {
    for (;;) {
      const now = sched.now();
      if (now >= deadline) return false;
      const w = Math.floor(now / S) * S;
      if (w !== windowStart) {
        windowStart = w;
        used = 0;
      }
      if (used < Math.max(1, budget)) {
        used++;
        return true;
      }
      await sched.sleep(w + S - now);
    }
  };
  return {
    async call() {
      const deadline = sched.now() + POOL_BASE.deadlineMs;
      for (let attempt = 1; attempt <= POOL_BASE.maxAttempts; attempt++) {
        if (!(await slot(deadline))) throw new Error('deadline');
        try {
          const v = await upstream.request();
          total++;
          adjust();
          return v;
        } catch (e) {
          total++;
          if (e instanceof UpstreamError && e.kind === 'ceiling') errors++;
          adjust();
          await sched.sleep(100);
        }
      }
      throw new Error('attempts');
    },
  };
}

function sum(xs, from, to) {
  let n = 0;
  for (let i = Math.floor(from); i < Math.floor(to); i++) n += xs[i] ?? 0;
  return n;
}

function round(x, d) {
  const f = 10 ** d;
  return Math.round(x * f) / f;
}

/** The worst case over runs, per contender. */
export function worst(results) {
  const by = new Map();
  for (const r of results) {
    const w = by.get(r.contender) ?? { contender: r.contender, minUtilisationAfter30s: Infinity, maxReach90Ms: 0, maxLimitedPct: 0, minUtilisation: Infinity, maxFailedPct: 0 };
    for (const p of r.phases) {
      w.minUtilisationAfter30s = Math.min(w.minUtilisationAfter30s, p.utilisationAfter30s);
      w.maxReach90Ms = p.reach90Ms === null || w.maxReach90Ms === null ? null : Math.max(w.maxReach90Ms, p.reach90Ms);
    }
    w.maxLimitedPct = Math.max(w.maxLimitedPct, r.limitedPct);
    w.minUtilisation = Math.min(w.minUtilisation, r.utilisation);
    w.maxFailedPct = Math.max(w.maxFailedPct, r.failedPct);
    by.set(r.contender, w);
  }
  return [...by.values()];
}

/** Every rate and seed; what bench/run.mjs and the command line call. */
export async function runAdaptiveAll({ Pool, FakeClock, rates = [2, 10, 50], seeds = [1, 2, 3], phaseMs = 120 * S, only, log = () => {} }) {
  const results = [];
  for (const rate of rates) {
    for (const seed of seeds) {
      const rs = await runAdaptive({ Pool, FakeClock, rate, seed, phaseMs, only });
      results.push(...rs);
      for (const r of rs) {
        const ph = r.phases.map((p) => `${p.limit}/s: ${(p.utilisationAfter30s * 100).toFixed(1)} % (90 % at ${p.reach90Ms === null ? 'never' : `${p.reach90Ms / 1000} s`})`).join(', ');
        log(`rate ${rate} seed ${seed} ${r.contender.padEnd(40)} 429 ${String(r.limitedPct).padStart(5)} %  failed ${String(r.failedPct).padStart(5)} %  ${ph}`);
      }
    }
  }
  return { rates, seeds, phaseMs, worst: worst(results), results };
}

/** The markdown table of a run (results/adaptive.md): worst over seeds, per rate and contender. */
export function renderAdaptive({ rates, seeds, phaseMs, results }) {
  const pct = (x) => `${(x * 100).toFixed(1)} %`;
  const lines = [
    `Worst over seeds ${seeds.join(', ')}; phases of ${phaseMs / 1000} s at the rate, half of it, the rate again.`,
    'Utilisation: successes ÷ the true limit, from 30 s after a change to the next; "90 % by": the end of the first',
    '5-second stretch at 90 % of the limit, after the change that took longest; 429: share of upstream attempts refused.',
    '',
    '| true rate | contender | utilisation after 30 s (worst phase) | 90 % by | 429s | calls failed |',
    '| ---: | --- | ---: | ---: | ---: | ---: |',
  ];
  for (const rate of rates) {
    for (const w of worst(results.filter((r) => r.rate === rate))) {
      const by = w.maxReach90Ms === null ? 'never' : `${w.maxReach90Ms / 1000} s`;
      lines.push(`| ${rate}/s | ${w.contender} | ${pct(w.minUtilisationAfter30s)} | ${by} | ${w.maxLimitedPct} % | ${w.maxFailedPct} % |`);
    }
  }
  lines.push('', '| all rates | contender | utilisation after 30 s | 90 % by | 429s | calls failed |', '| --- | --- | ---: | ---: | ---: | ---: |');
  for (const w of worst(results)) lines.push(`| worst | ${w.contender} | ${pct(w.minUtilisationAfter30s)} | ${w.maxReach90Ms === null ? 'never' : `${w.maxReach90Ms / 1000} s`} | ${w.maxLimitedPct} % | ${w.maxFailedPct} % |`);
  return lines.join('\n') + '\n';
}

const main = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (main) {
  const arg = (name, dflt) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : dflt;
  };
  const { Pool } = await import('../../dist/index.js');
  const { FakeClock } = await import('../../dist/testing/index.js');
  const rates = arg('rates', '2,10,50').split(',').map(Number);
  const seeds = arg('seeds', '1,2,3').split(',').map(Number);
  const phaseMs = Number(arg('phase', '120')) * S;
  const only = arg('only', undefined)?.split('|');
  const run = await runAdaptiveAll({ Pool, FakeClock, rates, seeds, phaseMs, only, log: console.log });
  console.log('\nworst over runs:');
  for (const x of run.worst) console.log(`${x.contender.padEnd(40)} utilisation after 30 s >= ${(x.minUtilisationAfter30s * 100).toFixed(1)} %, 90 % reached by ${x.maxReach90Ms === null ? 'never' : `${x.maxReach90Ms / 1000} s`}, 429 <= ${x.maxLimitedPct} %, failed <= ${x.maxFailedPct} %`);
  const out = arg('out', undefined);
  if (out !== undefined) {
    const fs = await import('node:fs');
    fs.writeFileSync(`${out}/adaptive.json`, JSON.stringify(run, null, 1) + '\n');
    fs.writeFileSync(`${out}/adaptive-table.md`, renderAdaptive(run));
  }
}
