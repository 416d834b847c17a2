/**
 * Why callers fail on one generated key pool: runs README's configuration on a profile at
 * one load, buckets the failures by time (with the capacity the valid keys really had then
 * and the reason the pool gave), and prints what an ideal scheduler that knows every limit
 * would fail on the same arrivals (`oracleFailurePct`) with the same queue-wait bound and
 * with the whole deadline.
 *
 *   node bench/sim/keypools-diag.mjs --seed 1009 [--load 90] [--minutes 10] [--bucket 20] [--poisson]
 */
import { Pool } from '../../dist/index.js';
import { classifyApiKeyMessage } from '../../dist/keys/index.js';
import { FakeClock } from '../../dist/testing/index.js';
import { Rng } from './prng.mjs';
import { arrivalTimes, capacityAt, generateProfile, oracleFailurePct, recommendedOptions, runKeyPool, trueCapacity } from './keypools.mjs';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const seed = Number(arg('seed', 1009));
const load = Number(arg('load', 90)) / 100;
const minutes = Number(arg('minutes', 10));
const bucketMs = Number(arg('bucket', 20)) * 1000;
const profile = generateProfile(seed, minutes * 60_000);
if (process.argv.includes('--poisson')) profile.burst = { ...profile.burst, factor: 1 };
const options = (p) => recommendedOptions(p, classifyApiKeyMessage);
const deadlineMs = options(profile).deadlineMs;

console.log(JSON.stringify({ keys: profile.keys, groups: profile.groups, drifts: profile.drifts }));
const buckets = new Map();
// Per call: when it was first seen, the wait it was told, its attempts and how they ended.
const calls = new Map();
const recal = [];
const sent = new Map();
function event(now, e) {
  if (e.type === 'endpoint-recalibrated' || e.type === 'endpoint-limit-clamped') recal.push(`${(now / 1000).toFixed(1)}s ${e.endpoint} ${e.scope ?? ''} ${e.reason ?? e.type} -> ${e.perSecond}`);
  if (e.type === 'attempt-start') {
    const b = Math.floor(now / bucketMs);
    const m = sent.get(b) ?? {};
    m[e.endpoint] = (m[e.endpoint] ?? 0) + 1;
    sent.set(b, m);
  }
  if (e.callId === undefined) return;
  let c = calls.get(e.callId);
  if (c === undefined) calls.set(e.callId, (c = { at: now, told: undefined, attempts: [], done: undefined }));
  if (e.type === 'rate-limit-wait') c.told ??= Math.round(e.delayMs);
  if (e.type === 'attempt-start') c.attempts.push(`${now - c.at}:${e.endpoint}`);
  if (e.type === 'attempt-failure') c.attempts.push(`${e.class}`);
  if (e.type === 'attempt-success') c.done = now;
}
const reasons = {};
const r = await runKeyPool({
  profile, load, Pool, FakeClock, options,
  trace: { event, failed: (t, end, e) => {
    const b = Math.floor(t / bucketMs);
    buckets.set(b, (buckets.get(b) ?? 0) + 1);
    const why = `${e.code}: ${String(e.message).replace(/\d+ ms/g, 'N ms')}`;
    reasons[why] = (reasons[why] ?? 0) + 1;
  } },
});
console.log(`seed ${seed} at ${load * 100} %: failures ${r.failurePct} % of ${r.calls}, 429 ${r.selfInflicted429Pct} %, served p99 ${r.servedP99Ms} ms`, r.fates);
console.log(reasons);
const cap = trueCapacity(profile);
for (const [b, n] of [...buckets].sort((x, y) => x[0] - y[0])) {
  console.log(`  ${b * bucketMs / 1000}s: ${n} failures; capacity then ${capacityAt(profile, b * bucketMs)}/s (true capacity ${cap}/s)`);
}
if (process.argv.includes('--recal')) {
  console.log(recal.join('\n'));
  for (const [b, m] of [...sent].sort((x, y) => x[0] - y[0])) console.log(`  ${b * bucketMs / 1000}s sent/s: ${Object.entries(m).map(([k, v]) => `${k}=${(v / (bucketMs / 1000)).toFixed(2)}`).join(' ')}`);
}
const rng = new Rng(seed ^ 0x5bd1e995);
rng.fork('server');
rng.fork('pool');
const times = arrivalTimes(profile, load * cap, profile.durationMs, rng.fork('arrivals'));
for (const share of [1, 1 / 1.06]) for (const w of [0.4 * deadlineMs, 0.5 * deadlineMs, deadlineMs - 300]) console.log(`oracle at ${share.toFixed(3)} of capacity, wait bound ${w} ms: ${oracleFailurePct(profile, times, w, share)} %`);

const slow = [...calls.values()].filter((c) => c.done !== undefined && c.done - c.at > deadlineMs / 2);
console.log(`served calls over half the deadline: ${slow.length}`);
const kinds = {};
for (const c of slow) {
  const k = c.attempts.length > 2 ? 'retried' : c.told === undefined ? 'no wait told' : c.told > deadlineMs / 2 - 500 ? 'told a long wait' : 'waited longer than told';
  kinds[k] = (kinds[k] ?? 0) + 1;
}
console.log(kinds);
for (const c of slow.slice(0, Number(arg('show', 8)))) console.log(`  at ${c.at}: took ${c.done - c.at} ms, told ${c.told}, attempts ${c.attempts.join(' ')}`);
