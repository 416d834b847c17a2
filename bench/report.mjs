/**
 * Renders bench/results/summary.md from the three result sets: a "Performance" section
 * ready to paste into the top-level README, the targets with met/missed, and the full
 * tables behind them.
 */

const PEERS = ['cockatiel', 'cockatiel-no-timeout', 'opossum', 'p-retry+p-limit', 'viem-fallback'];
const MISSING = Object.freeze({ medianNs: Number.NaN, aboveFloorNs: Number.NaN, ratioToPoolFull: Number.NaN, opsPerSec: Number.NaN, bytesPerCall: Number.NaN, aboveFloorBytes: Number.NaN });
const us = (ns) => (ns / 1000).toFixed(2);
const x = (r) => `${r.toFixed(1)}×`;
const ms = (v) => (v === null || v === undefined ? 'never' : `${(v / 1000).toFixed(2)} s`);

export function renderSummary({ environment: env, overhead, scale, sim }) {
  // A smoke run measures only some cases: missing ones render as NaN rather than crash.
  const t = (contender, op = 'value', callers = 1) => overhead.timing.find((r) => r.contender === contender && r.op === op && r.callers === callers) ?? MISSING;
  const heap = (c) => overhead.heap.find((h) => h.contender === c) ?? MISSING;
  const full = t('pool-full');
  const lines = [];
  const push = (...s) => lines.push(...s);

  push('# Benchmark results', '');
  push(`Node ${env.node}, ${env.platform}, ${env.cpus} CPUs (${env.cpuModel ?? 'unknown'}), ${env.date}.${env.smoke ? ' **Smoke run: numbers are meaningless.**' : ''}`);
  push('Timings are medians over fresh processes on a shared, noisy machine; compare the ratios (peers measured side by side in the same run), not the absolute times.', '');

  push('## Performance', '');
  push(`Measured by \`npm run bench\` (see \`bench/README.md\`); operation \`async () => 42\`, one caller, medians of ${overhead.runs} fresh processes.`, '');
  push('| | time per call | above the bare `await` | endpoint-pool is faster by |', '|---|---|---|---|');
  push(`| bare \`await op()\` | ${us(t('bare').medianNs)} µs | – | – |`);
  push(`| **endpoint-pool** (3 endpoints, timeout, deadline, breaker, rate limit, metrics) | ${us(full.medianNs)} µs | ${us(full.aboveFloorNs)} µs | – |`);
  push(`| endpoint-pool, all defaults | ${us(t('pool-default').medianNs)} µs | ${us(t('pool-default').aboveFloorNs)} µs | ${x(t('pool-default').ratioToPoolFull)} |`);
  for (const p of PEERS) push(`| ${p} | ${us(t(p).medianNs)} µs | ${us(t(p).aboveFloorNs)} µs | ${x(t(p).ratioToPoolFull)} |`);
  push('');
  push(`With 100 concurrent callers endpoint-pool runs ${(t('pool-full', 'value', 100).opsPerSec / 1e6).toFixed(2)} M calls/s (bare: ${(t('bare', 'value', 100).opsPerSec / 1e6).toFixed(2)} M). Each call in flight holds ${heap('pool-full').bytesPerCall} bytes of heap (${heap('pool-full').aboveFloorBytes} above a bare pending promise; cockatiel ${heap('cockatiel').bytesPerCall}, viem ${heap('viem-fallback').bytesPerCall}, opossum ${heap('opossum').bytesPerCall}).`);
  const rr = scale.rows.filter((r) => r.strategy === 'round-robin');
  const ord = scale.rows.filter((r) => r.strategy === 'ordered');
  push(`Selection cost does not grow with the pool: from 3 to ${ord.at(-1).endpoints} endpoints the per-call time changes by ${x(ord.at(-1).ratioTo3)} (ordered) and ${x(rr.at(-1).ratioTo3)} (round-robin).`, '');
  push(`In the failure simulator (virtual time, ${sim.callsPerWallSec.toLocaleString('en-US')} simulated calls per second of wall time), against plain round-robin, viem's \`fallback\` and a cockatiel policy:`, '');
  push('| scenario | endpoint-pool failures | round-robin | viem fallback | cockatiel | endpoint-pool p99 | chart |', '|---|---|---|---|---|---|---|');
  for (const s of sim.scenarios) {
    const r = (c) => s.results.find((q) => q.contender === c);
    push(`| ${s.name} | ${r('endpoint-pool').failureRatePct} % | ${r('round-robin').failureRatePct} % | ${r('viem-fallback').failureRatePct} % | ${r('cockatiel').failureRatePct} % | ${r('endpoint-pool').p99Ms} ms | \`bench/results/${s.chart}\` |`);
  }
  push('');

  push('## Targets', '');
  push('| target | measured | |', '|---|---|---|');
  const target = (name, value, ok) => push(`| ${name} | ${value} | ${ok ? 'met' : '**missed**'} |`);
  target('full pool ≤ 1 µs per call above the floor', `${us(full.aboveFloorNs)} µs`, full.aboveFloorNs <= 1000);
  target('≥ 20× faster than cockatiel with a timeout', x(t('cockatiel').ratioToPoolFull), t('cockatiel').ratioToPoolFull >= 20);
  target('≥ 4× faster than viem fallback', x(t('viem-fallback').ratioToPoolFull), t('viem-fallback').ratioToPoolFull >= 4);
  target('≤ 1 KB of heap per in-flight call', `${heap('pool-full').bytesPerCall} B (${heap('pool-full').aboveFloorBytes} B above the floor)`, heap('pool-full').bytesPerCall <= 1024);
  target('≥ 1M calls/s with 100 concurrent callers', `${(t('pool-full', 'value', 100).opsPerSec / 1e6).toFixed(2)} M/s`, t('pool-full', 'value', 100).opsPerSec >= 1e6);
  target('simulator ≥ 100,000 calls per wall second', `${sim.callsPerWallSec.toLocaleString('en-US')}`, sim.callsPerWallSec >= 100_000);
  for (const name of ['endpoint-pool', 'endpoint-pool-next']) {
    const get = (sc) => sim.scenarios.find((s) => s.name === sc)?.results.find((r) => r.contender === name);
    const k = get('keys-90');
    if (k === undefined) continue;
    target(`${name}, keys at 90 %: caller failures ≤ 1 %`, `${k.failureRatePct} %`, k.failureRatePct <= 1);
    target(`${name}, keys at 90 %: self-inflicted 429s ≤ 2 % of upstream calls`, `${k.selfInflicted429Pct} %`, k.selfInflicted429Pct <= 2);
    const b = get('blackhole');
    target(`${name}, blackhole: no call over its 5 s deadline`, `${b.deadlineMisses} calls over, max ${b.maxMs} ms`, b.deadlineMisses === 0);
    target(`${name}, blackhole: p99 ≤ attempt timeout + one backoff (1,000 + 50 ms)`, `${b.p99Ms} ms`, b.p99Ms <= 1050);
    const o = get('outage');
    const inForce = o.cooldownAtRecoveryMs;
    target(`${name}, outage: back on the primary within one cooldown of recovery (the configured 5 s)`, ms(o.shift.backMs), o.shift.backMs !== null && o.shift.backMs <= 5000);
    if (inForce) target(`${name}, outage: back within the cooldown in force at recovery (${ms(inForce)}, after doubling on failed probes)`, ms(o.shift.backMs), o.shift.backMs !== null && o.shift.backMs <= inForce);
  }
  push('');

  push('## Overhead, all cases', '');
  push('`value`: `async () => 42`; `immediate`: resolves through `setImmediate`. Ratio: the contender\'s time over endpoint-pool (full) in the same case.', '');
  push('| operation | callers | contender | median | min–max | above floor | ratio to pool | calls/s |', '|---|---|---|---|---|---|---|---|');
  for (const r of overhead.timing) push(`| ${r.op} | ${r.callers} | ${r.contender} | ${us(r.medianNs)} µs | ${us(r.minNs)}–${us(r.maxNs)} | ${us(r.aboveFloorNs)} µs | ${r.ratioToPoolFull} | ${r.opsPerSec.toLocaleString('en-US')} |`);
  push('', '### Heap per in-flight call', '', `${overhead.heap[0]?.parked ?? 0} calls parked in flight, \`heapUsed\` after a full GC before and after.`, '');
  push('| contender | bytes per call | above a bare pending promise |', '|---|---|---|');
  for (const h of overhead.heap) push(`| ${h.contender} | ${h.bytesPerCall} | ${h.aboveFloorBytes} |`);
  push('', '## Scale', '', 'endpoint-pool (full options), `value` operation, one caller, healthy head endpoints.', '');
  push('| strategy | endpoints | median per call | ratio to 3 endpoints | spread |', '|---|---|---|---|---|');
  for (const r of scale.rows) push(`| ${r.strategy} | ${r.endpoints} | ${us(r.medianNs)} µs | ${r.ratioTo3} | ±${r.spreadPct} % |`);

  push('', '## Simulation', '', `${sim.calls.toLocaleString('en-US')} simulated calls in ${(sim.wallMs / 1000).toFixed(1)} s of wall time: ${sim.callsPerWallSec.toLocaleString('en-US')} calls per second.`, '');
  push('Columns: caller-visible failures; upstream calls per successful call; 429s caused by the client (over the hidden ceiling) and 429s it did not cause (the key\'s hidden throttling), as % of upstream calls; call latency over all calls; time for the failing endpoint\'s share of upstream attempts to fall under a tenth of its usual share after the fault starts ("off"; "never" for a contender that keeps trying it first) and to come back over half of it after the fault ends ("back"), in 250 ms bins, median over fault windows.', '');
  for (const s of sim.scenarios) {
    push(`### ${s.name}`, '', `${s.description}. ${s.results[0].offeredPerSec} calls/s offered for ${s.results[0].durationMs / 1000} s of virtual time; ${s.callsPerWallSec.toLocaleString('en-US')} simulated calls per wall second. Chart: \`${s.chart}\`.`, '');
    push('| contender | failures | upstream / success | self-inflicted 429 | other 429 | p50 | p99 | max | off | back |', '|---|---|---|---|---|---|---|---|---|---|');
    for (const r of s.results) {
      push(`| ${r.contender} | ${r.failureRatePct} % | ${r.upstreamPerSuccess} | ${r.selfInflicted429Pct} % | ${r.throttled429Pct} % | ${r.p50Ms} ms | ${r.p99Ms} ms | ${r.maxMs} ms | ${r.shift ? ms(r.shift.offMs) : '–'} | ${r.shift ? ms(r.shift.backMs) : '–'} |`);
    }
    push('');
  }
  return lines.join('\n') + '\n';
}
