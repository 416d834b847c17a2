/**
 * Where the bytes of `import { Pool }` go, by feature, down to the class member (issue 16):
 *   node bench/bundle-members.mjs [--list]
 *
 * bench/bundle.mjs attributes bytes to whole modules; but most of the core's modules also carry
 * the wiring of optional features (the shared store's answers in state.ts, the credential
 * refresh in call.ts, the rate-limit queue turns in waits.ts, the `healthiest` strategy in
 * selector.ts, every option's check). This script bundles the entry from src/ unminified (as
 * the build shortens property names), cuts it into top-level declarations and class members
 * with TypeScript's parser, minifies each piece on its own, and files it under a feature: by
 * module for the optional modules (FEATURES of bench/bundle.mjs), by member for the core's
 * (MEMBER_FEATURES below, read by hand). Pieces minified alone keep their top-level names, so
 * their sum is larger than the bundle; the figures are scaled to the bundle's minified size.
 * `--list` prints every piece.
 *
 * What a pool with default options needs is the `core` row: selection in tiers by
 * `ordered`/`round-robin`/`weighted`, breakers, retry by class with backoff, the deadline and
 * attempt timeout, events and errors.
 */
import { build, transform } from 'esbuild';
import ts from 'typescript';
import { mangleOptions } from '../scripts/mangle.mjs';
import { FEATURES } from './bundle.mjs';

const root = new URL('..', import.meta.url).pathname;

/** [module, member pattern, feature] for members of core modules that serve an optional feature. */
export const MEMBER_FEATURES = [
  ['src/state.ts', /^PoolState\.fleet$/, 'shared store (Redis)'],
  ['src/call/call.ts', /^_?Call\.(admissionDone|awaitingAdmission|static #admit)$/, 'shared store (Redis)'],
  ['src/call/call.ts', /^_?Call\.(refreshed|refreshFailed)$/, 'credential refresh'],
  ['src/call/call.ts', /^_?Call\.(hedgeAvoiding|launchHedge|static #othersRunning|static #running)$/, 'hedging'],
  ['src/state.ts', /^PoolState\.(#byLatency|trackLatency|#timeSuccesses|timesSuccesses|tracksLatency)$/, 'latency-aware selection'],
  ['src/selection/selector.ts', /^(selectByLatency|cost)$/, 'latency-aware selection'],
  ['src/selection/selector.ts', /^(selectHealthiest|healthyCoverDemand|better|rank)$/, 'strategy healthiest'],
  ['src/state.ts', /^PoolState\.(#panicFlags|inPanic|#panicking)$/, 'panic mode (maxEjectedPercent)'],
  ['src/selection/selector.ts', /^tierInPanic$/, 'panic mode (maxEjectedPercent)'],
  ['src/state.ts', /^PoolState\.(wakeParked|parked|#wakeScheduled|turnedAwayAt)$/, 'rate limits'],
  ['src/pool.ts', /^Pool\.capacity$/, 'rate limits'],
  ['src/selection/endpoint.ts', /^EndpointState\.(etaMs|turnEtaMs|limitWaitMs|rateLimited|quota|own)$/, 'rate limits'],
  ['src/call/waits.ts', /^Waiting\.(lateTurn|queueFor|turn|readmit|lostTurn|queueWaitEnds|overdue|get queueTicket|set queueTicket|waitFor|stopWaiting)$/, 'rate-limit wait queues'],
  ['src/call/waits.ts', /^WaitSlots\.(queue|queuedOn|queuedAt|queueTicket|onTimer|timer)$/, 'rate-limit wait queues'],
  ['src/call/call.ts', /^_?Call\.(tookTurn|waitTimedOut|static #stillAdmissible)$/, 'rate-limit wait queues'],
  ['src/selection/endpoint-set.ts', /^(resolveGroups|groupLimit|carryDay|sameLimit|isKeptMember)$/, 'rate limits'],
  ['src/pool.ts', /^(Pool\.report|Pool\.#recover)$/, 'learned ceilings'],
  ['src/call/outcome.ts', /^applyHints$/, 'learned ceilings'],
  ['src/pool.ts', /^adaptiveStats$/, 'adaptive rate limits'],
  ['src/pool.ts', /^Pool\.probeHealth$/, 'health probes'],
  ['src/pool.ts', /^Pool\.(enableEndpoint|#endpoint)$/, 'disabling endpoints'],
  ['src/call/waits.ts', /^Waiting\.(takePermit|grantPermit|releasePermit|permitToSend|releaseAfterSend|(get|set) (inPermitQueue|permitPrev|permitNext))$/, 'concurrency caps (maxConcurrentCalls)'],
  ['src/call/waits.ts', /^WaitSlots\.(permitPrev|permitNext)$/, 'concurrency caps (maxConcurrentCalls)'],
  ['src/state.ts', /^PoolState\.(releasePermit|permitQueue|permits)$/, 'concurrency caps (maxConcurrentCalls)'],
  ['src/call/permit-queue.ts', /./, 'concurrency caps (maxConcurrentCalls)'],
  ['src/call/call.ts', /^_?Call\.static #pinUnavailable$/, 'pinned calls'],
  ['src/selection/selector.ts', /^selectPinned$/, 'pinned calls'],
  ['src/pool.ts', /^(Pool\.stats|lower|changedAt|parkedUntil|stateOf)$/, 'stats()'],
  ['src/health/breaker.ts', /^Breaker\.snapshot$/, 'stats()'],
  ['src/health/breaker.ts', /^Breaker\.(#shouldTrip|#resetWindows|#okWindow|#failWindow)$/, 'breaker failure-rate mode'],
  ['src/call/tagged-call.ts', /./, 'adapters (executeAs, tags)'],
  ['src/call/call-ids.ts', /./, 'adapters (executeAs, tags)'],
  ['src/selection/selector.ts', /^(resolveHealth|HEALTH_KEYS)$/, 'option checking'],
  ['src/selection/endpoint-set.ts', /^(buildEndpointSet|ENDPOINT_ALIASES|ENDPOINT_KEYS|MAX_WEIGHT)$/, 'option checking'],
  ['src/call/plan.ts', /^(resolvePlan|resolveRetry|EXECUTE_ALIASES|EXECUTE_KEYS|RETRY_KEYS)$/, 'option checking'],
  ['src/health/breaker.ts', /^(resolveBreaker|BREAKER_KEYS)$/, 'option checking'],
  ['src/call/backoff.ts', /^(resolveBackoff|BACKOFF_KEYS|BACKOFF_ALIASES)$/, 'option checking'],
  ['src/pool.ts', /^Pool\.constructor$/, 'core'],
];

/** Top-level declarations and class members of `code`, each with its source text. */
function pieces(code) {
  const sf = ts.createSourceFile('bundle.js', code, ts.ScriptTarget.ES2022, true, ts.ScriptKind.JS);
  const markers = [...code.matchAll(/^\/\/ (src\/[^\n]+)$/gm)].map((m) => [m.index, m[1]]);
  const moduleAt = (pos) => {
    let cur = '<stdin>';
    for (const [i, f] of markers) if (i <= pos) cur = f;
    return cur;
  };
  const inverse = Object.fromEntries(Object.entries(mangleOptions().mangleCache).map(([k, v]) => [v, k]));
  const out = [];
  for (const st of sf.statements) {
    const mod = moduleAt(st.getStart(sf));
    let cls;
    let clsName;
    if (ts.isClassDeclaration(st)) [cls, clsName] = [st, st.name?.text];
    else if (ts.isVariableStatement(st) && st.declarationList.declarations.length === 1) {
      const d = st.declarationList.declarations[0];
      if (d.initializer && ts.isClassExpression(d.initializer)) [cls, clsName] = [d.initializer, d.name.getText(sf)];
    }
    if (cls) {
      for (const m of cls.members) {
        let key = m.name ? m.name.getText(sf) : 'constructor';
        if (ts.isConstructorDeclaration(m)) key = 'constructor';
        key = inverse[key] ?? key;
        const isStatic = m.modifiers?.some((x) => x.kind === ts.SyntaxKind.StaticKeyword) ? 'static ' : '';
        const acc = ts.isGetAccessor(m) ? 'get ' : ts.isSetAccessor(m) ? 'set ' : '';
        out.push({ mod, name: `${clsName}.${isStatic}${acc}${key}`, text: m.getText(sf), member: true });
      }
    } else {
      const name = ts.isFunctionDeclaration(st) ? st.name?.text : ts.isVariableStatement(st) ? st.declarationList.declarations.map((d) => d.name.getText(sf)).join(',') : ts.SyntaxKind[st.kind];
      out.push({ mod, name, text: st.getText(sf), member: false });
    }
  }
  return out;
}

async function minifiedSize(p) {
  const text = p.member ? `class X{${p.text}}` : p.text;
  try {
    const o = await transform(text, { minify: true, loader: 'js', format: 'esm' });
    return o.code.length - (p.member ? 'class X{}\n'.length : 0);
  } catch {
    return p.text.length;
  }
}

export async function measureMembers() {
  const entry = "import { Pool } from './src/index.ts'; globalThis.keep = Pool;";
  const base = { stdin: { contents: entry, resolveDir: root, loader: 'ts' }, bundle: true, format: 'esm', write: false, ...mangleOptions() };
  const min = await build({ ...base, minify: true });
  const bundleBytes = min.outputFiles[0].contents.length;
  const plain = await build(base);
  const list = pieces(plain.outputFiles[0].text);
  for (const p of list) {
    p.bytes = await minifiedSize(p);
    const rule = MEMBER_FEATURES.find(([mod, re]) => mod === p.mod && re.test(p.name));
    p.feature = rule ? rule[2] : (FEATURES[p.mod] ?? 'core');
  }
  const raw = list.reduce((s, p) => s + p.bytes, 0);
  const scale = bundleBytes / raw;
  const byFeature = {};
  for (const p of list) byFeature[p.feature] = (byFeature[p.feature] ?? 0) + p.bytes * scale;
  return { bundleBytes, scale, pieces: list, byFeature: Object.fromEntries(Object.entries(byFeature).sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, Math.round(v)])) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await measureMembers();
  console.log(`import { Pool }: ${r.bundleBytes} B minified; pieces minified alone sum to ${(1 / r.scale).toFixed(2)}x that, scaled back below`);
  for (const [f, b] of Object.entries(r.byFeature)) console.log(`${(b / 1024).toFixed(1).padStart(6)} KB  ${f}`);
  if (process.argv.includes('--list')) {
    console.log('');
    for (const p of [...r.pieces].sort((a, b) => b.bytes - a.bytes)) console.log(`${String(Math.round(p.bytes * r.scale)).padStart(6)}  ${p.mod}  ${p.name}  (${p.feature})`);
  }
}
