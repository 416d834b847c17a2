/**
 * Simulations for the "beyond the peers" features, in virtual time on FakeClock, seeded:
 * - budget: a full outage of three endpoints; upstream calls per offered call, with and
 *   without the retry budget (3 attempts per call);
 * - hedge: one of three endpoints 10x slower; p99 of calls with hedging, against a
 *   healthy pool's p99 and against no hedging;
 * - latency: one of three endpoints 10x slower; share of calls reaching it under
 *   `strategy: 'latency'` and under `round-robin`.
 */
import { Pool } from '../../dist/index.js';
import { FakeClock } from '../../dist/testing/index.js';
import { Rng } from '../sim/prng.mjs';

const prng = (seed) => new Rng(seed).next;

class Fail extends Error {}

/** Log-normal-ish latency around `median` ms. */
function latency(rand, median) {
  const u = Math.max(1e-9, rand());
  const v = rand();
  const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  return Math.max(1, Math.round(median * Math.exp(0.35 * z)));
}

function quantile(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** Drives `rate` calls/s for `seconds` and returns latencies, failures and upstream counts. */
async function drive({ endpoints, behave, poolOptions, callOptions, rate, seconds, seed }) {
  const clock = new FakeClock(1_700_000_000_000);
  const rand = prng(seed);
  const upstream = Object.fromEntries(endpoints.map((n) => [n, 0]));
  const pool = new Pool({ endpoints: endpoints.map((n) => ({ name: n, conn: n })), classify: () => 'transient', clock, random: prng(seed + 1), ...poolOptions });
  const op = (name, ctx) => {
    upstream[name]++;
    const { ms, ok } = behave(name, rand);
    return new Promise((resolve, reject) => {
      const timer = clock.setTimeout(() => (ok ? resolve(name) : reject(new Fail('down'))), ms);
      ctx.signal?.addEventListener?.('abort', () => clock.clearTimeout(timer));
    });
  };
  const durations = [];
  let failed = 0;
  const pending = [];
  const total = rate * seconds;
  const gap = 1000 / rate;
  for (let i = 0; i < total; i++) {
    const t0 = clock.now();
    pending.push(pool.execute((c) => op(c, { signal: undefined }), callOptions).then(() => durations.push(clock.now() - t0), () => failed++));
    await clock.advance(gap);
  }
  await clock.advance(60_000);
  await Promise.all(pending);
  durations.sort((a, b) => a - b);
  return { offered: total, failed, upstream, upstreamTotal: Object.values(upstream).reduce((a, b) => a + b, 0), p50: quantile(durations, 0.5), p99: quantile(durations, 0.99) };
}

export async function runBeyond({ scale = 1 } = {}) {
  const seconds = Math.max(5, Math.round(60 * scale));
  const names = ['a', 'b', 'c'];

  const down = () => ({ ms: 5, ok: false });
  const outage = { endpoints: names, behave: down, rate: 200, seconds, seed: 1 };
  const naive = await drive({ ...outage, poolOptions: { maxAttempts: 3, breaker: { threshold: 1e9 }, backoff: { initialMs: 10, maxMs: 10, jitter: 'none' } } });
  const budgeted = await drive({ ...outage, poolOptions: { maxAttempts: 3, breaker: { threshold: 1e9 }, backoff: { initialMs: 10, maxMs: 10, jitter: 'none' }, retryBudget: {} } });
  const budget = {
    naiveLoad: naive.upstreamTotal / naive.offered,
    budgetedLoad: budgeted.upstreamTotal / budgeted.offered,
  };

  const healthy = (_n, rand) => ({ ms: latency(rand, 20), ok: true });
  const oneSlow = (n, rand) => ({ ms: latency(rand, n === 'c' ? 200 : 20), ok: true });
  const base = { endpoints: names, rate: 100, seconds, seed: 2 };
  const rr = { strategy: 'round-robin', attemptTimeoutMs: 5000 };
  const healthyRun = await drive({ ...base, behave: healthy, poolOptions: rr });
  const slowNoHedge = await drive({ ...base, behave: oneSlow, poolOptions: rr });
  // Hedge after 30 ms: about the healthy endpoints' p90 (20 ms median).
  const slowHedged = await drive({ ...base, behave: oneSlow, poolOptions: { ...rr, hedge: { afterMs: 30 } }, callOptions: { idempotent: true } });
  const slowHedgedLatency = await drive({ ...base, behave: oneSlow, poolOptions: { strategy: 'latency', attemptTimeoutMs: 5000, hedge: { afterMs: 30 } }, callOptions: { idempotent: true } });
  const hedge = {
    healthyP99: healthyRun.p99,
    slowP99: slowNoHedge.p99,
    hedgedP99: slowHedged.p99,
    hedgedVsHealthy: slowHedged.p99 / healthyRun.p99,
    extraLoad: slowHedged.upstreamTotal / slowHedged.offered,
    hedgedLatencyP99: slowHedgedLatency.p99,
    hedgedLatencyVsHealthy: slowHedgedLatency.p99 / healthyRun.p99,
    hedgedLatencyExtraLoad: slowHedgedLatency.upstreamTotal / slowHedgedLatency.offered,
  };

  const rrSlow = await drive({ ...base, behave: oneSlow, poolOptions: rr, seed: 3 });
  const latencySlow = await drive({ ...base, behave: oneSlow, poolOptions: { strategy: 'latency', attemptTimeoutMs: 5000 }, seed: 3 });
  const share = (r) => r.upstream.c / r.upstreamTotal;
  const latencyAware = {
    roundRobinShare: share(rrSlow),
    latencyShare: share(latencySlow),
    roundRobinP99: rrSlow.p99,
    latencyP99: latencySlow.p99,
  };
  return { seconds, budget, hedge, latency: latencyAware };
}

export function renderBeyond(r) {
  const pct = (x) => `${(100 * x).toFixed(1)} %`;
  return `## Beyond the peers (virtual time, ${r.seconds} s per run, seeded)

| simulation | without | with | ratio |
|---|---|---|---|
| full outage, 200 calls/s, 3 attempts per call: upstream calls per offered call | ${r.budget.naiveLoad.toFixed(2)}× | ${r.budget.budgetedLoad.toFixed(2)}× (retry budget) | ${(r.budget.naiveLoad / r.budget.budgetedLoad).toFixed(2)}× less load |
| one of 3 endpoints 10× slower, round-robin: p99 of calls | ${r.hedge.slowP99} ms | ${r.hedge.hedgedP99} ms (hedged after 30 ms) | ${r.hedge.hedgedVsHealthy.toFixed(2)}× the healthy pool's p99 (${r.hedge.healthyP99} ms), for ${r.hedge.extraLoad.toFixed(2)} upstream calls per call |
| the same with \`strategy: 'latency'\` | ${r.hedge.slowP99} ms | ${r.hedge.hedgedLatencyP99} ms (hedged after 30 ms) | ${r.hedge.hedgedLatencyVsHealthy.toFixed(2)}× the healthy pool's p99, for ${r.hedge.hedgedLatencyExtraLoad.toFixed(2)} upstream calls per call |
| one of 3 endpoints 10× slower: share of calls sent to it | ${pct(r.latency.roundRobinShare)} (round-robin) | ${pct(r.latency.latencyShare)} (\`strategy: 'latency'\`) | ${(r.latency.roundRobinShare / r.latency.latencyShare).toFixed(1)}× fewer; p99 ${r.latency.roundRobinP99} → ${r.latency.latencyP99} ms |
`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await runBeyond({ scale: process.argv.includes('--smoke') ? 0.1 : 1 });
  console.log(renderBeyond(r));
}
