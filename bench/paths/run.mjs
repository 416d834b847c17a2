/**
 * The paths users take, side by side with their peers in one run, on one or more Node
 * binaries (issue 16): an operation reading `ctx.signal`, a viem client over
 * `poolTransport` against viem's own `custom` and `fallback`, and `endpoint-pool/fetch`
 * against a bare `fetch` of the same loopback URL. Each case runs in a fresh process;
 * runs are interleaved; the result keeps every sample and the medians.
 *
 *   node bench/paths/run.mjs [--runs 5] [--ms 300] [--node /path/to/node ...] [--smoke]
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runChild } from '../lib/child.mjs';
import { median, round } from '../lib/stats.mjs';

const WORKER = fileURLToPath(new URL('../overhead/worker.mjs', import.meta.url));
const HEAP_WORKER = fileURLToPath(new URL('../overhead/heap-worker.mjs', import.meta.url));
const FETCH_WORKER = fileURLToPath(new URL('./fetch-worker.mjs', import.meta.url));
const VIEM_WORKER = fileURLToPath(new URL('./viem-worker.mjs', import.meta.url));

/** Groups compared within themselves; the first contender of each is the floor. */
export const GROUPS = {
  signal: { contenders: ['bare', 'pool-full', 'pool-signal'], op: 'value' },
};
export const HEAP = ['bare', 'pool-full', 'pool-signal', 'viem-custom', 'viem-fallback', 'viem-pool', 'viem-pool-direct'];

/** @param {{ runs: number, ms: number, nodes: string[], heapCalls: number, smoke?: boolean, log: (s: string) => void }} o */
export async function runPaths(o) {
  const out = [];
  for (const node of o.nodes) {
    const version = (await runChild(fileURLToPath(new URL('./version.mjs', import.meta.url)), {}, [], node)).version;
    const cases = [];
    for (const [group, g] of Object.entries(GROUPS)) for (const callers of [1, 100]) for (const contender of g.contenders) cases.push({ group, contender, op: g.op, callers, batch: g.batch?.[callers] });
    if (o.smoke) cases.splice(0, cases.length, ...cases.filter((c) => c.callers === 1));
    const samples = new Map(cases.map((c) => [key(c), []]));
    for (let r = 0; r < o.runs; r++) {
      o.log(`paths (${version}): run ${r + 1}/${o.runs}`);
      for (const c of cases) {
        const { group, ...args } = c;
        const res = await runChild(WORKER, { ...args, ms: c.group === 'fetch' ? o.ms * 2 : o.ms, warmupMs: Math.min(150, o.ms) }, [], node);
        samples.get(key(c)).push(res.nsPerOp);
      }
    }
    const timing = cases.map((c) => ({ ...c, medianNs: round(median(samples.get(key(c))), 1), samplesNs: samples.get(key(c)).map((x) => round(x, 1)) }));
    for (const t of timing) {
      const floor = timing.find((x) => x.group === t.group && x.callers === t.callers && x.contender === GROUPS[t.group].contenders[0]);
      t.ratioToFloor = round(t.medianNs / floor.medianNs, 3);
      t.opsPerSec = Math.round((1e9 / t.medianNs));
    }
    // viem: custom, fallback and poolTransport alternating in one process (viem-worker.mjs).
    const viem = [];
    for (const callers of o.smoke ? [1] : [1, 100]) {
      const rs = [];
      for (let r = 0; r < o.runs; r++) rs.push(await runChild(VIEM_WORKER, { callers, ms: o.smoke ? 100 : o.ms * 6 }, [], node));
      const m = (k) => round(median(rs.map((x) => x[k])), 0);
      viem.push({
        callers,
        customNs: m('customNs'),
        fallbackNs: m('fallbackNs'),
        poolNs: m('poolNs'),
        costVsFallback: round(median(rs.map((x) => x.costVsFallback)), 3),
        ratios: rs.map((x) => round(x.costVsFallback, 3)),
        customCpuNs: m('customCpuNs'),
        fallbackCpuNs: m('fallbackCpuNs'),
        poolCpuNs: m('poolCpuNs'),
        cpuVsFallback: round(median(rs.map((x) => x.cpuVsFallback)), 3),
        cpuRatios: rs.map((x) => round(x.cpuVsFallback, 3)),
        // poolTransport with viem's `custom` handed in (providers as endpoints, no wrapper per endpoint)
        directNs: m('directNs'),
        directCpuNs: m('directCpuNs'),
        directCpuVsFallback: round(median(rs.map((x) => x.directCpuVsFallback)), 3),
        directCpuRatios: rs.map((x) => round(x.directCpuVsFallback, 3)),
      });
    }
    // fetch: both clients in one process against one loopback server, alternating (fetch-worker.mjs).
    const fetch = [];
    for (const callers of o.smoke ? [1] : [1, 100]) {
      const rs = [];
      for (let r = 0; r < o.runs; r++) rs.push(await runChild(FETCH_WORKER, { callers, ms: o.smoke ? 100 : o.ms * 6 }, [], node));
      fetch.push({
        callers,
        bareNs: round(median(rs.map((x) => x.bareNs)), 0),
        pooledNs: round(median(rs.map((x) => x.pooledNs)), 0),
        ratio: round(median(rs.map((x) => x.ratio)), 3),
        ratios: rs.map((x) => round(x.ratio, 3)),
        cpuRatio: round(median(rs.map((x) => x.cpuRatio)), 3),
        cpuRatios: rs.map((x) => round(x.cpuRatio, 3)),
        roundCpuRatio: round(median(rs.map((x) => x.roundCpuRatio)), 3),
        cpuVsTimeout: round(median(rs.map((x) => x.roundCpuVsTimeout)), 3),
      });
    }
    const heap = [];
    for (const contender of HEAP) {
      const res = await runChild(HEAP_WORKER, { contender, calls: o.heapCalls }, ['--expose-gc'], node);
      heap.push({ contender, bytesPerCall: Math.round(res.bytesPerCall) });
    }
    out.push({ node: version, timing, viem, fetch, heap });
  }
  return out;
}

function key(c) {
  return `${c.group}|${c.contender}|${c.callers}`;
}

/** The ratios issue 16 asks for, per Node. */
export function pathRatios(run) {
  const t = (c, callers) => run.timing.find((x) => x.contender === c && x.callers === callers);
  return {
    node: run.node,
    signalAboveFull1: t('pool-signal', 1) && round(t('pool-signal', 1).medianNs - t('pool-full', 1).medianNs, 0),
    viemCostVsFallback1: run.viem.find((v) => v.callers === 1)?.costVsFallback,
    viemThroughputVsFallback100: run.viem.some((v) => v.callers === 100) ? round(1 / run.viem.find((v) => v.callers === 100).costVsFallback, 2) : undefined,
    viemCpuVsFallback1: run.viem.find((v) => v.callers === 1)?.cpuVsFallback,
    viemCpuVsFallback100: run.viem.find((v) => v.callers === 100)?.cpuVsFallback,
    viemDirectCpuVsFallback1: run.viem.find((v) => v.callers === 1)?.directCpuVsFallback,
    viemDirectCpuVsFallback100: run.viem.find((v) => v.callers === 100)?.directCpuVsFallback,
    fetchVsBare1: run.fetch.find((f) => f.callers === 1)?.ratio,
    fetchVsBare100: run.fetch.find((f) => f.callers === 100)?.ratio,
    fetchCpuVsBare1: run.fetch.find((f) => f.callers === 1)?.cpuRatio,
    fetchCpuVsBare100: run.fetch.find((f) => f.callers === 100)?.cpuRatio,
    fetchRoundCpuVsBare1: run.fetch.find((f) => f.callers === 1)?.roundCpuRatio,
    fetchRoundCpuVsBare100: run.fetch.find((f) => f.callers === 100)?.roundCpuRatio,
    fetchCpuVsTimeoutFetch1: run.fetch.find((f) => f.callers === 1)?.cpuVsTimeout,
    fetchCpuVsTimeoutFetch100: run.fetch.find((f) => f.callers === 100)?.cpuVsTimeout,
    heapPoolFull: run.heap.find((h) => h.contender === 'pool-full')?.bytesPerCall,
    heapViemPool: run.heap.find((h) => h.contender === 'viem-pool')?.bytesPerCall,
    heapViemCustom: run.heap.find((h) => h.contender === 'viem-custom')?.bytesPerCall,
    heapViemPoolDirect: run.heap.find((h) => h.contender === 'viem-pool-direct')?.bytesPerCall,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name, d) => {
    const i = process.argv.indexOf(name);
    return i < 0 ? d : process.argv[i + 1];
  };
  const nodes = process.argv.flatMap((a, i) => (process.argv[i - 1] === '--node' ? [a] : []));
  const smoke = process.argv.includes('--smoke');
  const res = await runPaths({ runs: Number(arg('--runs', smoke ? 1 : 5)), ms: Number(arg('--ms', smoke ? 20 : 300)), heapCalls: smoke ? 500 : 10_000, nodes: nodes.length ? nodes : [process.execPath], smoke, log: console.log });
  const file = arg('--out', undefined);
  if (file) fs.writeFileSync(file, JSON.stringify(res, null, 1) + '\n');
  for (const run of res) {
    console.log(JSON.stringify(pathRatios(run)));
    for (const t of run.timing) console.log(`${run.node} ${t.group} ${t.callers} ${t.contender} ${(t.medianNs / 1000).toFixed(2)} µs ×${t.ratioToFloor} ${t.opsPerSec}/s`);
    for (const v of run.viem) console.log(`${run.node} viem ${v.callers} custom ${(v.customNs / 1000).toFixed(2)} µs fallback ${(v.fallbackNs / 1000).toFixed(2)} µs pool ${(v.poolNs / 1000).toFixed(2)} µs ×${v.costVsFallback} (${v.ratios.join(', ')}) cpu ×${v.cpuVsFallback} (${v.cpuRatios.join(', ')}); with custom: cpu ×${v.directCpuVsFallback} (${v.directCpuRatios.join(', ')})`);
    for (const f of run.fetch) console.log(`${run.node} fetch ${f.callers} bare ${(f.bareNs / 1000).toFixed(1)} µs pooled ${(f.pooledNs / 1000).toFixed(1)} µs ×${f.ratio} (${f.ratios.join(', ')}) cpu ×${f.cpuRatio} (${f.cpuRatios.join(', ')})`);
    for (const h of run.heap) console.log(`${run.node} heap ${h.contender} ${h.bytesPerCall} B`);
  }
}
