/**
 * endpoint-pool/ethers against ethers v6's own FallbackProvider, same faults, side by side.
 *
 * One ganache node on 127.0.0.1; in front of it, counting HTTP proxies that answer 429
 * (Retry-After: 5), hang, answer 503, or pass through. Both contenders get the same
 * proxies and run the same calls in the same process, alternating, REPS times:
 *
 * - faults, quorum 1: 20 sequential `getBalance` over [429, hang, 503, healthy];
 * - faults, quorum 2: the same with a second healthy route, each read needing 2 agreeing;
 * - burst: 100 identical reads at once (raw `send`, and ethers' high-level `getBalance`),
 *   with and without the pool's coalescing;
 * - sustained duplicates (virtual time, no sockets): 2 reads/ms for 1 s over 10 distinct
 *   keys, upstream answering in 50 ms, with and without coalescing.
 *
 * Counted: JSON-RPC requests reaching each proxy (a batch counts each request in it),
 * caller-visible errors, wall time. ethers' result cache (`cacheTimeout`) is turned off
 * for the fault runs so that every call is a request; it is left on for the
 * high-level burst, where it is ethers' own coalescing.
 *
 * Writes bench/results/ethers.json and bench/results/ethers.md. Run: npm run build && node bench/ethers.mjs
 */
import { createServer } from 'node:http';
import { writeFileSync } from 'node:fs';
import ganache from 'ganache';
import { FallbackProvider, FetchRequest, JsonRpcProvider, Network } from 'ethers';
import { PooledJsonRpcProvider } from '../dist/ethers/index.js';
import { FakeClock } from '../dist/testing/index.js';

const REPS = Number(process.env.REPS ?? 3);
const CALLS = 20;
const STALL_MS = 400; // FallbackProvider's default stallTimeout; the pool's attempt timeout matches it
/**
 * The request timeout given to FallbackProvider's JsonRpcProviders. With ethers' default
 * (300 s) the first call never finishes in a bench: FallbackProvider's initial sync waits
 * for getBlockNumber from every provider, the hanging one included.
 */
const FB_REQUEST_TIMEOUT_MS = 1_000;
const MNEMONIC = 'test test test test test test test test test test test junk';
const ADDRESS = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const network = new Network('ganache', 1337n);

async function startNode() {
  const server = ganache.server({ logging: { quiet: true }, wallet: { mnemonic: MNEMONIC, totalAccounts: 2 }, chain: { chainId: 1337 } });
  await server.listen(0, '127.0.0.1');
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
}

/** A counting proxy in front of `target`; `mode`: pass | 429 | 503 | hang. */
async function startProxy(target, mode) {
  const sockets = new Set();
  const p = { mode, http: 0, rpc: 0, url: '' };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      p.http++;
      try {
        const j = JSON.parse(body);
        p.rpc += Array.isArray(j) ? j.length : 1;
      } catch {
        p.rpc++;
      }
      if (p.mode === 'hang') return;
      if (p.mode === '429') {
        res.writeHead(429, { 'content-type': 'text/plain', 'retry-after': '5' });
        return res.end('too many requests');
      }
      if (p.mode === '503') {
        res.writeHead(503, { 'content-type': 'text/plain' });
        return res.end('unavailable');
      }
      fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(
        async (a) => {
          res.writeHead(a.status, { 'content-type': 'application/json' });
          res.end(await a.text());
        },
        () => req.socket.destroy(),
      );
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  p.url = `http://127.0.0.1:${server.address().port}`;
  p.reset = () => {
    p.http = 0;
    p.rpc = 0;
  };
  p.close = () =>
    new Promise((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    });
  return p;
}

function fallbackProvider(proxies, quorum, cacheTimeout) {
  const providers = proxies.map((p) => {
    const req = new FetchRequest(p.url);
    req.timeout = FB_REQUEST_TIMEOUT_MS;
    return { provider: new JsonRpcProvider(req, network, { staticNetwork: network, cacheTimeout }), stallTimeout: STALL_MS };
  });
  return new FallbackProvider(providers, network, { quorum, cacheTimeout });
}

function pooledProvider(proxies, extra = {}) {
  return new PooledJsonRpcProvider({
    endpoints: proxies.map((p) => ({ name: p.name, url: p.url })),
    network,
    attemptTimeoutMs: STALL_MS,
    maxAttempts: 4,
    breaker: { threshold: 2, cooldownMs: 60_000 },
    backoff: { initialMs: 5, maxMs: 10_000 },
    ...extra,
  });
}

async function sequential(label, provider, proxies) {
  for (const p of proxies) p.reset();
  let errors = 0;
  const t0 = performance.now();
  for (let i = 0; i < CALLS; i++) {
    try {
      await provider.getBalance(ADDRESS);
    } catch {
      errors++;
    }
  }
  const wallMs = Math.round(performance.now() - t0);
  const per = Object.fromEntries(proxies.map((p) => [p.name, p.rpc]));
  return { label, calls: CALLS, upstream: proxies.reduce((s, p) => s + p.rpc, 0), ...per, errors, wallMs };
}

async function burst(label, proxy, fn, n = 100) {
  proxy.reset();
  const t0 = performance.now();
  const results = await Promise.allSettled(Array.from({ length: n }, fn));
  const wallMs = Math.round(performance.now() - t0);
  const errors = results.filter((r) => r.status === 'rejected').length;
  return { label, callers: n, upstream: proxy.rpc, httpRequests: proxy.http, perCaller: proxy.rpc / n, errors, wallMs };
}

/** Virtual time: a fake fetch answering after `latencyMs` on a FakeClock; counts upstream requests. */
async function sustained(coalesce, { perMs = 2, ms = 1000, keys = 10, latencyMs = 50 } = {}) {
  const clock = new FakeClock(1_700_000_000_000);
  let upstream = 0;
  const fetch = () => {
    upstream++;
    return new Promise((resolve) =>
      clock.setTimeout(() => resolve({ status: 200, ok: true, headers: { get: () => null }, text: async () => '{"jsonrpc":"2.0","id":1,"result":"0x1"}' }), latencyMs),
    );
  };
  const p = new PooledJsonRpcProvider({ endpoints: [{ name: 'sim', url: 'http://sim.invalid' }], network, clock, fetch, coalesce: coalesce ? ['eth_getBalance'] : [] });
  let seed = 42;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const pending = [];
  for (let t = 0; t < ms; t++) {
    for (let i = 0; i < perMs; i++) pending.push(p.sendWith('eth_getBalance', [`0x${Math.floor(rand() * keys).toString(16).padStart(40, '0')}`, 'latest']));
    await clock.advance(1);
  }
  await clock.advance(latencyMs);
  const settled = await Promise.allSettled(pending);
  p.destroy();
  const callers = pending.length;
  return { label: coalesce ? 'coalesce' : 'no coalescing', callers, upstream, perCaller: +(upstream / callers).toFixed(4), errors: settled.filter((x) => x.status === 'rejected').length };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const node = await startNode();
  const mk = async (name, mode) => Object.assign(await startProxy(node.url, mode), { name });
  const faults = [await mk('429', '429'), await mk('hang', 'hang'), await mk('503', '503'), await mk('healthy', 'pass')];
  const faults2 = [...faults, await mk('healthy2', 'pass')];
  const counter = await mk('counter', 'pass');
  const runs = { quorum1: [], quorum2: [], burst: [] };
  const closers = [];

  for (let rep = 0; rep < REPS; rep++) {
    // Fresh providers each rep: breakers, cooldowns and ethers' per-provider state start clean.
    const fb1 = fallbackProvider(faults, 1, -1);
    const pool1 = pooledProvider(faults, { provider: { cacheTimeout: -1 } });
    runs.quorum1.push(await sequential('ethers FallbackProvider (quorum 1)', fb1, faults));
    runs.quorum1.push(await sequential('endpoint-pool/ethers', pool1, faults));
    const fb2 = fallbackProvider(faults2, 2, -1);
    const pool2 = pooledProvider(faults2, { provider: { cacheTimeout: -1 }, quorum: { methods: { eth_getBalance: 2 } } });
    runs.quorum2.push(await sequential('ethers FallbackProvider (quorum 2)', fb2, faults2));
    runs.quorum2.push(await sequential('endpoint-pool/ethers (quorum 2)', pool2, faults2));
    closers.push(fb1, pool1, fb2, pool2);

    const plain = new JsonRpcProvider(counter.url, network, { staticNetwork: network, cacheTimeout: -1 });
    const plainCached = new JsonRpcProvider(counter.url, network, { staticNetwork: network });
    // Pool defaults (10 s attempt timeout): 100 POSTs at once on a loaded 2-core machine can take longer than 400 ms.
    const burstPool = (extra) => new PooledJsonRpcProvider({ endpoints: [{ name: 'counter', url: counter.url }], network, provider: { cacheTimeout: -1 }, ...extra });
    const poolNo = burstPool({});
    const poolCo = burstPool({ coalesce: ['eth_getBalance'] });
    const params = [ADDRESS, 'latest'];
    runs.burst.push(await burst('JsonRpcProvider send (batched)', counter, () => plain.send('eth_getBalance', params)));
    runs.burst.push(await burst('JsonRpcProvider getBalance (ethers cache on)', counter, () => plainCached.getBalance(ADDRESS)));
    runs.burst.push(await burst('endpoint-pool/ethers send, no coalescing', counter, () => poolNo.send('eth_getBalance', params)));
    runs.burst.push(await burst('endpoint-pool/ethers send, coalesce', counter, () => poolCo.send('eth_getBalance', params)));
    closers.push(plain, plainCached, poolNo, poolCo);
  }

  const summarise = (rows) => {
    const byLabel = new Map();
    for (const r of rows) byLabel.set(r.label, [...(byLabel.get(r.label) ?? []), r]);
    return [...byLabel.entries()].map(([label, rs]) => {
      const out = { label };
      for (const k of Object.keys(rs[0])) if (k !== 'label' && typeof rs[0][k] === 'number') out[k] = median(rs.map((r) => r[k]));
      out.wallMsAll = rs.map((r) => r.wallMs);
      return out;
    });
  };
  const sustainedRows = [await sustained(false), await sustained(true)];
  const result = {
    date: new Date().toISOString(),
    node: process.version,
    reps: REPS,
    stallMs: STALL_MS,
    quorum1: summarise(runs.quorum1),
    quorum2: summarise(runs.quorum2),
    burst: summarise(runs.burst),
    sustained: sustainedRows,
    raw: runs,
  };
  writeFileSync(new URL('./results/ethers.json', import.meta.url), JSON.stringify(result, null, 2) + '\n');
  writeFileSync(new URL('./results/ethers.md', import.meta.url), markdown(result));
  console.table(result.quorum1.map(({ wallMsAll, ...r }) => r));
  console.table(result.quorum2.map(({ wallMsAll, ...r }) => r));
  console.table(result.burst.map(({ wallMsAll, ...r }) => r));
  console.table(sustainedRows);

  for (const c of closers) (c.close ?? c.destroy).call(c);
  for (const p of [...faults2, counter]) await p.close();
  await node.close();
  process.exit(0);
}

function table(rows, cols) {
  const head = `| ${cols.join(' | ')} |\n|${cols.map(() => '---').join('|')}|\n`;
  return head + rows.map((r) => `| ${cols.map((c) => (Array.isArray(r[c]) ? r[c].join(', ') : r[c] ?? '')).join(' | ')} |`).join('\n') + '\n';
}

function markdown(r) {
  const fcols = ['label', 'calls', 'upstream', '429', 'hang', '503', 'healthy', 'errors', 'wallMs', 'wallMsAll'];
  return `# endpoint-pool/ethers vs ethers FallbackProvider

Generated by \`node bench/ethers.mjs\` on ${r.date} (Node ${r.node}), ${r.reps} runs each, medians
(all wall times listed). One ganache node behind counting proxies on 127.0.0.1. "upstream" counts
JSON-RPC requests that reached any proxy. Pool endpoints are listed faults first (its worst case,
\`strategy: 'ordered'\`); FallbackProvider shuffles providers of equal priority. Stall timeout and
attempt timeout: ${r.stallMs} ms. FallbackProvider's JsonRpcProviders get a ${FB_REQUEST_TIMEOUT_MS} ms request
timeout: with ethers' default (300 s) its first call waits for the hanging endpoint, because its
initial sync asks every provider for the block number and waits for all of them (measured while
writing this bench: a FallbackProvider over [hanging, healthy] with a 3 s request timeout took
3.09 s for its first getBlockNumber, and had not answered after 10 s with the default).
ethers' FetchRequest retries a 429 by itself (up to 12 attempts, reading \`Retry-After: 5\` as 5 ms),
which shows in the "429" column.

## Faults (429 with Retry-After: 5, hang, 503, healthy), ${CALLS} sequential getBalance, quorum 1

${table(r.quorum1, fcols)}
## Same faults plus a second healthy route, quorum 2

${table(r.quorum2, [...fcols.slice(0, 7), 'healthy2', ...fcols.slice(7)])}
## Burst of 100 identical reads at once (one healthy node)

${table(r.burst, ['label', 'callers', 'upstream', 'httpRequests', 'perCaller', 'errors', 'wallMs'])}
## Sustained duplicate reads (virtual time): 2 reads/ms for 1 s over 10 keys, upstream answers in 50 ms

${table(r.sustained, ['label', 'callers', 'upstream', 'perCaller', 'errors'])}`;
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
