/**
 * The viem transport's, the ethers provider's and the fetch adapter's smoke, for runtimes
 * that take a bundle (workerd, Chromium): run where the bundle runs, against two endpoints
 * that the runner serves under `base`: `/hang` never answers (the runner counts its sockets
 * closing), `/fine` answers `eth_blockNumber` with 0x10 to a JSON-RPC POST and "ok" to a GET.
 *
 * Each adapter makes three requests with the hanging endpoint first (each of its attempts
 * times out and must close its request), then one with the hanging endpoint alone
 * (which must fail within its deadline); the fetch adapter then sends a POST with an
 * idempotency key (replayed on the second endpoint) and one without (not replayed):
 * at least `HANG_ATTEMPTS` sockets closed on the server in all (a retry after a stall adds some).
 *
 * The attempt timeout is 300 ms on a quiet machine and longer on a busy one: `calibrate` measures
 * the round trip to `/fine` and the timers' lag where the smoke runs, so that a healthy
 * endpoint's answer is not taken for a hang when the machine is loaded (CI runs the mangled
 * suite beside this on both cores).
 */
import { createPublicClient, http } from 'viem';
import { poolTransport } from '../../dist/viem/index.js';
import { PooledJsonRpcProvider } from '../../dist/ethers/index.js';
import { createPooledFetch } from '../../dist/fetch/index.js';

/** The requests the smoke sends to `/hang` at least: 3 + 1 per adapter, and two POSTs. */
export const HANG_ATTEMPTS = 14;

const describe = (err) => `${err?.code ?? err?.name ?? 'error'}: ${err?.shortMessage ?? err?.message ?? err}${err?.cause ? ` (cause: ${err.cause?.message ?? err.cause})` : ''}`;

/**
 * The attempt timeout for this machine, now: 300 ms, or more if a round trip to `/fine` (the
 * slowest of five, after one to open the connection) or a timer's lag (the latest of five 10 ms
 * timers) would leave a healthy answer under a fifth of it; at most 3 s.
 */
export async function calibrate(base) {
  const now = () => (globalThis.performance ?? Date).now();
  let rtt = 0;
  let lag = 0;
  await (await fetch(`${base}/fine`)).text();
  for (let i = 0; i < 5; i++) {
    const t0 = now();
    await (await fetch(`${base}/fine`)).text();
    rtt = Math.max(rtt, now() - t0);
    const t1 = now();
    await new Promise((r) => setTimeout(r, 10));
    lag = Math.max(lag, now() - t1 - 10);
  }
  const attemptTimeoutMs = Math.min(3000, Math.ceil(Math.max(300, 5 * (rtt + lag))));
  return { attemptTimeoutMs, rtt: Math.round(rtt), lag: Math.round(lag) };
}

/** Runs the checks; resolves to `{ name, ok, detail }` records. */
export async function runAdapterSmoke(base) {
  const checks = [];
  const check = (name, ok, detail = '') => checks.push({ name, ok, detail });
  const endpoints = [
    { name: 'hang', url: `${base}/hang` },
    { name: 'fine', url: `${base}/fine` },
  ];
  const { attemptTimeoutMs, rtt, lag } = await calibrate(base);
  const timing = `attempt timeout ${attemptTimeoutMs} ms (round trip ${rtt} ms, timer lag ${lag} ms)`;
  // Four attempts, not the default three: a stall of the machine past one attempt's timeout on
  // the healthy endpoint (seen once in CI, beside the suite) leaves it a second chance.
  const options = { attemptTimeoutMs, deadlineMs: 16 * attemptTimeoutMs, maxAttempts: 4 };
  const alone = { attemptTimeoutMs, deadlineMs: 5 * attemptTimeoutMs, maxAttempts: 1 };

  /** Three requests with a hanging first endpoint, then one to the hanging endpoint alone. */
  const adapter = async (name, request, expected, requestAlone) => {
    try {
      for (let i = 0; i < 3; i++) {
        const got = await request();
        check(`${name} request ${i + 1}: a hanging first endpoint, answered by the second`, got === expected, String(got));
      }
    } catch (err) {
      check(`${name} requests with a hanging first endpoint`, false, `${describe(err)}; ${timing}`);
    }
    const t0 = Date.now();
    try {
      await requestAlone();
      check(`${name}: a request to a hanging endpoint alone fails`, false, 'it resolved');
    } catch (err) {
      const ms = Date.now() - t0;
      // By its attempt's timeout, not at once for another reason, and within its deadline.
      check(`${name}: a request to a hanging endpoint alone fails by its timeout, within its deadline`, ms >= attemptTimeoutMs - 50 && ms < alone.deadlineMs, `${err?.code ?? err?.name} after ${ms} ms; ${timing}`);
    }
  };

  const transport = poolTransport({ endpoints, http, ...options });
  const lone = poolTransport({ endpoints: [endpoints[0]], http, ...alone });
  await adapter(
    'viem',
    () => createPublicClient({ transport }).getBlockNumber({ cacheTime: 0 }),
    16n,
    () => createPublicClient({ transport: lone }).getBlockNumber({ cacheTime: 0 }),
  );

  const provider = new PooledJsonRpcProvider({ endpoints, network: 1, ...options });
  const loneProvider = new PooledJsonRpcProvider({ endpoints: [endpoints[0]], network: 1, ...alone });
  await adapter(
    'ethers',
    () => provider.send('eth_blockNumber', []),
    '0x10',
    () => loneProvider.send('eth_blockNumber', []),
  );

  const pooled = createPooledFetch({ endpoints: endpoints.map((e) => e.url), ...options });
  const lonePooled = createPooledFetch({ endpoints: [endpoints[0].url], ...alone });
  await adapter(
    'fetch',
    async () => (await pooled('/x')).text(),
    'ok',
    () => lonePooled('/x'),
  );

  // A POST: with an idempotency key it is sent again, body and all, after the first endpoint
  // timed out; without one it is not (the first may have processed it).
  const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'eth_blockNumber', params: [] });
  const post = { method: 'POST', body, headers: { 'content-type': 'application/json' } };
  const keyed = createPooledFetch({ endpoints: endpoints.map((e) => e.url), idempotencyKey: true, ...options });
  try {
    const answer = await (await keyed('/', post)).json();
    check('fetch: a POST with an idempotency key, replayed on the second endpoint with its body', answer?.id === 7 && answer?.result === '0x10', JSON.stringify(answer));
  } catch (err) {
    check('fetch: a POST with an idempotency key, replayed on the second endpoint with its body', false, describe(err));
  }
  const plain = createPooledFetch({ endpoints: endpoints.map((e) => e.url), ...options });
  try {
    await plain('/', post);
    check('fetch: a plain POST is not replayed after a timeout', false, 'it resolved');
  } catch (err) {
    check('fetch: a plain POST is not replayed after a timeout (PERMANENT)', err?.code === 'PERMANENT', describe(err));
  }

  await Promise.all([transport.pool.close(), lone.pool.close(), provider.close(), loneProvider.close(), pooled.pool.close(), lonePooled.pool.close(), keyed.pool.close(), plain.pool.close()]);
  return checks;
}

/** The runner's side: answers `/fine` (JSON-RPC to a POST, "ok" otherwise); `undefined` for other paths. */
export function answerFine(req, res) {
  if (req.method !== 'POST') return void res.end('ok');
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    const answer = (m) => ({ jsonrpc: '2.0', id: m.id, result: m.method === 'eth_blockNumber' ? '0x10' : m.method === 'net_version' ? '1' : '0x1' });
    const msg = JSON.parse(body);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(Array.isArray(msg) ? msg.map(answer) : answer(msg)));
  });
}
