/**
 * The viem transport's, the ethers provider's and the fetch adapter's smoke, for runtimes
 * that take a bundle (workerd, Chromium): run where the bundle runs, against two endpoints
 * that the runner serves under `base`: `/hang` never answers (the runner counts its sockets
 * closing), `/fine` answers `eth_blockNumber` with 0x10 to a JSON-RPC POST and "ok" to a GET.
 *
 * Each adapter makes three requests with the hanging endpoint first (each of its attempts
 * times out at 300 ms and must close its request), then one with the hanging endpoint alone
 * (which must fail within its deadline); the fetch adapter then sends a POST with an
 * idempotency key (replayed on the second endpoint) and one without (not replayed):
 * `HANG_ATTEMPTS` sockets closed on the server in all.
 */
import { createPublicClient, http } from 'viem';
import { poolTransport } from '../../dist/viem/index.js';
import { PooledJsonRpcProvider } from '../../dist/ethers/index.js';
import { createPooledFetch } from '../../dist/fetch/index.js';

/** The requests the smoke sends to `/hang`: 3 + 1 per adapter, and two POSTs. */
export const HANG_ATTEMPTS = 14;

const describe = (err) => `${err?.code ?? err?.name ?? 'error'}: ${err?.shortMessage ?? err?.message ?? err}${err?.cause ? ` (cause: ${err.cause?.message ?? err.cause})` : ''}`;

/** Runs the checks; resolves to `{ name, ok, detail }` records. */
export async function runAdapterSmoke(base) {
  const checks = [];
  const check = (name, ok, detail = '') => checks.push({ name, ok, detail });
  const endpoints = [
    { name: 'hang', url: `${base}/hang` },
    { name: 'fine', url: `${base}/fine` },
  ];
  const options = { attemptTimeoutMs: 300, deadlineMs: 5000 };
  const alone = { attemptTimeoutMs: 300, deadlineMs: 1500, maxAttempts: 1 };

  /** Three requests with a hanging first endpoint, then one to the hanging endpoint alone. */
  const adapter = async (name, request, expected, requestAlone) => {
    try {
      for (let i = 0; i < 3; i++) {
        const got = await request();
        check(`${name} request ${i + 1}: a hanging first endpoint, answered by the second`, got === expected, String(got));
      }
    } catch (err) {
      check(`${name} requests with a hanging first endpoint`, false, describe(err));
    }
    const t0 = Date.now();
    try {
      await requestAlone();
      check(`${name}: a request to a hanging endpoint alone fails`, false, 'it resolved');
    } catch (err) {
      const ms = Date.now() - t0;
      // By its attempt's timeout (300 ms), not at once for another reason, and within its deadline.
      check(`${name}: a request to a hanging endpoint alone fails by its timeout, within its deadline`, ms >= 250 && ms < 1500, `${err?.code ?? err?.name} after ${ms} ms`);
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
