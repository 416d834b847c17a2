/**
 * endpoint-pool's RPC adapters against viem `fallback` and ethers v6 `FallbackProvider` on
 * three scenarios, real ganache nodes on 127.0.0.1 behind counting proxies:
 *
 * - lag: four chains driven block by block (A leads, B follows, L is kept 5 blocks behind,
 *   S stops mining after block 2 of 8), REPS runs (default 3) per contender. After each block every contender gets the same
 *   pause (two poll periods) and then makes 12 reads: 4 of the newest block by number, 4
 *   `eth_blockNumber`, 4 of the `latest` block. Counted: reads answered "not found" (null),
 *   errors, and `latest` answers behind the newest block (stale) or behind it by more than 1.
 * - disagreement: three chains with the same funded accounts, one of them (X, listed first)
 *   diverged by one transfer from the account read. 20 `getBalance` reads. Counted: reads
 *   answered with X's (minority) balance, errors, upstream requests. Then a three-way split
 *   (every node different): what the caller gets.
 * - burst: 100 identical `eth_getBalance` reads at once through one endpoint; upstream
 *   JSON-RPC requests per caller request.
 *
 * Writes bench/results/rpc-peers.json and bench/results/rpc-peers.md.
 * Run: npm run build && node bench/rpc-peers.mjs
 */
import { createServer } from 'node:http';
import { writeFileSync } from 'node:fs';
import ganache from 'ganache';
import { createPublicClient, fallback, http } from 'viem';
import { FallbackProvider, FetchRequest, JsonRpcProvider, Network } from 'ethers';
import { poolTransport } from '../dist/viem/index.js';
import { PooledJsonRpcProvider } from '../dist/ethers/index.js';

const MNEMONIC = 'test test test test test test test test test test test junk';
const ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'; // account 0 of the mnemonic
const OTHER = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const network = new Network('ganache', 1337n);
const T = Number(process.env.BLOCK_MS ?? 400);
const POLL = Math.ceil(T / 5);
const REPS = Number(process.env.REPS ?? 3);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const hex = (n) => `0x${n.toString(16)}`;

async function startNode() {
  const server = ganache.server({ logging: { quiet: true }, wallet: { mnemonic: MNEMONIC, totalAccounts: 2 }, chain: { chainId: 1337 } });
  await server.listen(0, '127.0.0.1');
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
}

/** A counting pass-through proxy (JSON-RPC requests; a batch counts each request in it). */
async function startProxy(name, target) {
  const sockets = new Set();
  const p = { name, rpc: 0, url: '' };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        const j = JSON.parse(body);
        p.rpc += Array.isArray(j) ? j.length : 1;
      } catch {
        p.rpc++;
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
  p.close = () => new Promise((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); });
  return p;
}

async function raw(url, method, params = []) {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const j = await r.json();
  if (j.error) throw new Error(j.error.message);
  return j.result;
}
const num = async (url) => Number.parseInt(await raw(url, 'eth_blockNumber'), 16);

/** Uniform read interface over the contenders: block by number (null if absent), block number, latest block's number. */
function viemReader(transport) {
  const client = createPublicClient({ transport, cacheTime: 0 });
  return {
    block: (n) => client.request({ method: 'eth_getBlockByNumber', params: [hex(n), false] }),
    blockNumber: async () => Number.parseInt(await client.request({ method: 'eth_blockNumber' }), 16),
    latest: async () => Number.parseInt((await client.request({ method: 'eth_getBlockByNumber', params: ['latest', false] })).number, 16),
    balance: async () => BigInt(await client.request({ method: 'eth_getBalance', params: [ADDRESS, 'latest'] })),
  };
}
function ethersReader(provider) {
  return {
    block: (n) => provider.getBlock(n),
    blockNumber: () => provider.getBlockNumber(),
    latest: async () => (await provider.getBlock('latest')).number,
    balance: () => provider.getBalance(ADDRESS),
  };
}
function fallbackProvider(urls, quorum) {
  const providers = urls.map((url) => {
    const req = new FetchRequest(url);
    req.timeout = 2_000;
    return { provider: new JsonRpcProvider(req, network, { staticNetwork: network, cacheTimeout: -1 }), stallTimeout: 400 };
  });
  return new FallbackProvider(providers, network, { quorum, cacheTimeout: -1 });
}

async function lagScenario(nodes) {
  const [A, B, L, S] = nodes;
  const heads = { maxLagBlocks: 1, stallBlocks: 2, pollMs: POLL };
  const contenders = [
    ['viem fallback, lagging nodes listed last', (urls, named) => ({ r: viemReader(fallback(urls.map((u) => http(u)))) })],
    ['viem fallback, lagging nodes listed first', (urls, named) => ({ r: viemReader(fallback([urls[2], urls[3], urls[0], urls[1]].map((u) => http(u)))) })],
    ['viem fallback, rank: true', (urls, named) => ({ r: viemReader(fallback(urls.map((u) => http(u)), { rank: { interval: POLL } })) })],
    ['ethers FallbackProvider (quorum 1)', (urls, named) => { const p = fallbackProvider(urls, 1); return { r: ethersReader(p), close: () => p.destroy() }; }],
    ['endpoint-pool/viem, round-robin, no heads', (urls, named) => { const t = poolTransport({ endpoints: named, http, strategy: 'round-robin' }); return { r: viemReader(t), close: () => t.close() }; }],
    ['endpoint-pool/viem, heads (poll, maxLagBlocks 1, stallBlocks 2)', (urls, named) => { const t = poolTransport({ endpoints: named, http, strategy: 'round-robin', heads }); return { r: viemReader(t), close: () => t.close() }; }],
    ['endpoint-pool/ethers, heads (same)', (urls, named) => { const p = new PooledJsonRpcProvider({ endpoints: named, network, strategy: 'round-robin', heads, provider: { cacheTimeout: -1 } }); return { r: ethersReader(p), close: () => p.close() }; }],
  ];
  const runs = new Map(contenders.map(([label]) => [label, []]));
  for (let rep = 0; rep < REPS; rep++) for (const [label, make] of contenders) {
    // Same start for everyone: A, B, S level, L 5 behind.
    const base = Math.max(...(await Promise.all([A, B, S].map((n) => num(n.url))))) + 1;
    for (const n of [A, B, S]) while ((await num(n.url)) < base) await raw(n.url, 'evm_mine');
    while ((await num(L.url)) < base - 5) await raw(L.url, 'evm_mine');
    // Fresh proxies per run: what a contender keeps doing after it is closed (viem's `rank`
    // loop cannot be stopped) is never counted against the next one.
    const proxies = await Promise.all(['A', 'B', 'L', 'S'].map((name, i) => startProxy(name, nodes[i].url)));
    const { r, close } = make(proxies.map((p) => p.url), proxies.map((p) => ({ name: p.name, url: p.url })));
    await sleep(2 * POLL);
    for (const p of proxies) p.rpc = 0;
    const row = { label, reads: 0, notFound: 0, errors: 0, stale: 0, staleBy2: 0 };
    const t0 = performance.now();
    for (let step = 1; step <= 8; step++) {
      const started = performance.now();
      await Promise.all([A, B, ...(step > 2 ? [] : [S])].map((n) => raw(n.url, 'evm_mine')));
      const head = await num(A.url);
      while ((await num(L.url)) < head - 5) await raw(L.url, 'evm_mine');
      await sleep(2 * POLL);
      for (let i = 0; i < 4; i++) {
        for (const kind of ['block', 'blockNumber', 'latest']) {
          row.reads++;
          try {
            if (kind === 'block') {
              if ((await r.block(head)) === null) row.notFound++;
            } else {
              const n = await r[kind]();
              if (n < head) row.stale++;
              if (n < head - 1) row.staleBy2++;
            }
          } catch {
            row.errors++;
          }
        }
      }
      await sleep(Math.max(0, T - (performance.now() - started)));
    }
    row.wallMs = Math.round(performance.now() - t0);
    row.upstream = Object.fromEntries(proxies.map((p) => [p.name, p.rpc]));
    await close?.();
    await Promise.all(proxies.map((p) => p.close()));
    runs.get(label).push(row);
    console.log(JSON.stringify(row));
  }
  // Per contender: the median of each count over the runs, and its range.
  return contenders.map(([label]) => {
    const rs = runs.get(label);
    const stat = (f) => {
      const xs = rs.map(f).sort((a, b) => a - b);
      return { median: xs[Math.floor(xs.length / 2)], min: xs[0], max: xs[xs.length - 1] };
    };
    return {
      label,
      runs: rs.length,
      reads: rs[0].reads,
      notFound: stat((r) => r.notFound),
      errors: stat((r) => r.errors),
      stale: stat((r) => r.stale),
      staleBy2: stat((r) => r.staleBy2),
      toL: stat((r) => r.upstream.L),
      toS: stat((r) => r.upstream.S),
      upstream: stat((r) => Object.values(r.upstream).reduce((a, b) => a + b, 0)),
      each: rs,
    };
  });
}

async function disagreementScenario() {
  const nodes = await Promise.all([startNode(), startNode(), startNode()]);
  const [X, A, B] = nodes;
  // X diverges: one transfer from the account the reads ask about.
  await raw(X.url, 'eth_sendTransaction', [{ from: ADDRESS, to: OTHER, value: '0x1' }]);
  const proxies = await Promise.all([startProxy('X', X.url), startProxy('A', A.url), startProxy('B', B.url)]);
  const urls = proxies.map((p) => p.url);
  const named = proxies.map((p) => ({ name: p.name, url: p.url }));
  const majority = BigInt(await raw(A.url, 'eth_getBalance', [ADDRESS, 'latest']));
  const contenders = [
    ['viem fallback (X listed first)', () => ({ r: viemReader(fallback(urls.map((u) => http(u)))) })],
    ['ethers FallbackProvider (quorum 2)', () => { const p = fallbackProvider(urls, 2); return { r: ethersReader(p), close: () => p.destroy() }; }],
    ['endpoint-pool/viem (quorum 2, ordered: X first)', () => { const t = poolTransport({ endpoints: named, http, strategy: 'ordered', quorum: { methods: { eth_getBalance: 2 } } }); return { r: viemReader(t), close: () => t.close() }; }],
    ['endpoint-pool/ethers (quorum 2, ordered: X first)', () => { const p = new PooledJsonRpcProvider({ endpoints: named, network, strategy: 'ordered', quorum: { methods: { eth_getBalance: 2 } }, provider: { cacheTimeout: -1 } }); return { r: ethersReader(p), close: () => p.close() }; }],
  ];
  const rows = [];
  const run = async (label, make, split) => {
    const { r, close } = make();
    await sleep(50);
    for (const p of proxies) p.rpc = 0;
    const row = { label, split, reads: 20, minority: 0, errors: 0, errorCodes: [] };
    const t0 = performance.now();
    for (let i = 0; i < 20; i++) {
      try {
        const v = await r.balance();
        if (v !== majority) row.minority++;
      } catch (e) {
        row.errors++;
        const code = e?.code ?? e?.name;
        if (!row.errorCodes.includes(code)) row.errorCodes.push(code);
      }
    }
    row.wallMs = Math.round(performance.now() - t0);
    row.upstream = proxies.reduce((s, p) => s + p.rpc, 0);
    row.upstreamPerRead = +(row.upstream / 20).toFixed(2);
    await close?.();
    rows.push(row);
    console.log(JSON.stringify(row));
  };
  for (const [label, make] of contenders) await run(label, make, '2 agree, X differs');
  // Three-way split: A diverges too, differently.
  await raw(A.url, 'eth_sendTransaction', [{ from: ADDRESS, to: OTHER, value: '0x2' }]);
  for (const [label, make] of contenders) await run(label, make, 'all three differ');
  await Promise.all(proxies.map((p) => p.close()));
  await Promise.all(nodes.map((n) => n.close()));
  return rows;
}

async function burstScenario() {
  const node = await startNode();
  const proxy = await startProxy('counter', node.url);
  const n = 100;
  const named = [{ name: 'counter', url: proxy.url }];
  const contenders = [
    ['viem fallback, client.request', () => { const c = createPublicClient({ transport: fallback([http(proxy.url)]) }); return { go: () => c.request({ method: 'eth_getBalance', params: [ADDRESS, 'latest'] }), warm: () => c.getChainId() }; }],
    ['viem fallback, client.getBalance', () => { const c = createPublicClient({ transport: fallback([http(proxy.url)]) }); return { go: () => c.getBalance({ address: ADDRESS }), warm: () => c.getChainId() }; }],
    ['ethers FallbackProvider, getBalance (cache off)', () => { const p = fallbackProvider([proxy.url], 1); return { go: () => p.getBalance(ADDRESS), close: () => p.destroy(), warm: () => p.getBlockNumber() }; }],
    ['ethers FallbackProvider, getBalance (its 250 ms cache)', () => { const p = new FallbackProvider([new JsonRpcProvider(proxy.url, network, { staticNetwork: network })], network); return { go: () => p.getBalance(ADDRESS), close: () => p.destroy(), warm: () => p.getBlockNumber() }; }],
    ['endpoint-pool/viem, no coalescing', () => { const t = poolTransport({ endpoints: named, http }); const c = createPublicClient({ transport: t }); return { go: () => c.request({ method: 'eth_getBalance', params: [ADDRESS, 'latest'] }), close: () => t.close(), warm: () => c.getChainId() }; }],
    ['endpoint-pool/viem, coalesce eth_getBalance', () => { const t = poolTransport({ endpoints: named, http, coalesce: ['eth_getBalance'] }); const c = createPublicClient({ transport: t }); return { go: () => c.request({ method: 'eth_getBalance', params: [ADDRESS, 'latest'] }), close: () => t.close(), warm: () => c.getChainId() }; }],
    ['endpoint-pool/ethers, coalesce eth_getBalance (cache off)', () => { const p = new PooledJsonRpcProvider({ endpoints: named, network, coalesce: ['eth_getBalance'], provider: { cacheTimeout: -1 } }); return { go: () => p.getBalance(ADDRESS), close: () => p.close(), warm: () => p.getBlockNumber() }; }],
  ];
  const rows = [];
  for (const [label, make] of contenders) {
    const { go, close, warm } = make();
    await warm(); // connections and network detection, with another read so that no cache holds the answer
    proxy.rpc = 0;
    const settled = await Promise.allSettled(Array.from({ length: n }, () => go()));
    const row = { label, callers: n, upstream: proxy.rpc, perCaller: proxy.rpc / n, errors: settled.filter((s) => s.status === 'rejected').length };
    await close?.();
    rows.push(row);
    console.log(JSON.stringify(row));
  }
  await proxy.close();
  await node.close();
  return rows;
}

const fmt = (s) => (s.min === s.max ? `${s.median}` : `${s.median} [${s.min}–${s.max}]`);

function table(head, rows) {
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

async function main() {
  const nodes = await Promise.all([startNode(), startNode(), startNode(), startNode()]);
  const lag = await lagScenario(nodes);
  await Promise.all(nodes.map((n) => n.close()));
  const disagreement = await disagreementScenario();
  const burst = await burstScenario();
  const results = { node: process.version, blockMs: T, pollMs: POLL, lag, disagreement, burst };
  writeFileSync(new URL('./results/rpc-peers.json', import.meta.url), JSON.stringify(results, null, 2) + '\n');
  const md = [
    `# RPC peers: lag, disagreement, burst`,
    '',
    `Generated by \`node bench/rpc-peers.mjs\` (Node ${process.version}); ganache nodes on 127.0.0.1, block time ${T} ms, head poll ${POLL} ms.`,
    '',
    `## A lagging and a stalled node (96 reads over 8 blocks; median of ${REPS} runs, range in brackets)`,
    '',
    'Requests to L / S and the upstream total include the head poll where there is one.',
    '',
    table(['contender', 'not found (null)', 'errors', '`latest` behind newest', 'behind by ≥ 2', 'requests to L / S', 'upstream total'], lag.map((r) => [r.label, fmt(r.notFound), fmt(r.errors), fmt(r.stale), fmt(r.staleBy2), `${r.toL.median} / ${r.toS.median}`, r.upstream.median])),
    '',
    '## Quorum disagreement (20 getBalance reads)',
    '',
    table(['contender', 'case', 'minority answers returned', 'errors (codes)', 'upstream per read', 'wall ms'], disagreement.map((r) => [r.label, r.split, r.minority, `${r.errors}${r.errorCodes.length ? ` (${r.errorCodes.join(', ')})` : ''}`, r.upstreamPerRead, r.wallMs])),
    '',
    '## 100 identical reads at once',
    '',
    table(['contender', 'upstream requests', 'per caller', 'errors'], burst.map((r) => [r.label, r.upstream, r.perCaller, r.errors])),
    '',
  ].join('\n');
  writeFileSync(new URL('./results/rpc-peers.md', import.meta.url), md);
  console.log(md);
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
