/**
 * The contenders of the overhead benchmark. Each factory wraps an operation `op`
 * (`() => Promise`) and returns `{ call, close }`: `call()` runs `op` once through the
 * contender, `close()` releases its timers. Peers are configured the way their docs
 * suggest for the same job (retry + breaker + timeout), with limits set so that nothing
 * ever trips during the measurement. Libraries are imported lazily so that a worker only
 * loads the one it measures.
 */
// `POOL_DIST`: another build's index.js (a file URL), for side-by-side runs.
const POOL = globalThis.process?.env?.POOL_DIST ?? new URL('../../dist/index.js', import.meta.url).href;

const classify = () => 'transient';
const noopSink = { increment() {}, observe() {} };
const threeEndpoints = (extra = {}) => ['a', 'b', 'c'].map((name, i) => ({ name, conn: i, ...extra }));
const manyEndpoints = (n, extra) => Array.from({ length: n }, (_, i) => ({ name: `ep${i}`, conn: i, ...extra }));

export const contenders = {
  /** The floor: the operation awaited directly. */
  async bare(op) {
    return { call: op, close() {} };
  },

  /** endpoint-pool with everything on: timeouts, deadline, breaker, a never-limiting token bucket, a metrics sink. */
  async 'pool-full'(op) {
    const { Pool } = await import(POOL);
    const pool = new Pool({
      endpoints: threeEndpoints({ rateLimit: { perSecond: 1e6 } }),
      classify,
      attemptTimeoutMs: 10_000,
      deadlineMs: 30_000,
      breaker: { threshold: 5, cooldownMs: 5_000 },
      metrics: noopSink,
    });
    return { call: () => pool.execute(() => op()), close: () => pool.close() };
  },

  /** Same as pool-full, but the operation reads `ctx.signal` (so an AbortController is made per attempt). */
  async 'pool-full-signal'(op) {
    const { Pool } = await import(POOL);
    const pool = new Pool({
      endpoints: threeEndpoints({ rateLimit: { perSecond: 1e6 } }),
      classify,
      attemptTimeoutMs: 10_000,
      deadlineMs: 30_000,
      metrics: noopSink,
    });
    return { call: () => pool.execute((_conn, ctx) => (ctx.signal, op())), close: () => pool.close() };
  },

  /** pool-full with `args.endpoints` endpoints under `args.strategy` (the scale benchmark). */
  async 'pool-scale'(op, args) {
    const { Pool } = await import(POOL);
    const pool = new Pool({
      endpoints: manyEndpoints(args.endpoints, { rateLimit: { perSecond: 1e6 } }),
      strategy: args.strategy,
      classify,
      attemptTimeoutMs: 10_000,
      deadlineMs: 30_000,
      metrics: noopSink,
    });
    return { call: () => pool.execute(() => op()), close: () => pool.close() };
  },

  /** endpoint-pool with every option at its default (which still means a 10 s attempt timeout and a 30 s deadline). */
  async 'pool-default'(op) {
    const { Pool } = await import(POOL);
    const pool = new Pool({ endpoints: threeEndpoints(), classify });
    return { call: () => pool.execute(() => op()), close: () => pool.close() };
  },

  /** cockatiel: wrap(retry, circuitBreaker, timeout, bulkhead). */
  async cockatiel(op) {
    return cockatielPolicy(op, true);
  },

  /** cockatiel without the timeout policy (its timeout is the expensive part). */
  async 'cockatiel-no-timeout'(op) {
    return cockatielPolicy(op, false);
  },

  /** opossum: one breaker with its own timeout. */
  async opossum(op) {
    const { default: CircuitBreaker } = await import('opossum');
    const breaker = new CircuitBreaker(op, { timeout: 10_000, errorThresholdPercentage: 50, resetTimeout: 5_000 });
    return { call: () => breaker.fire(), close: () => breaker.shutdown() };
  },

  /** p-retry inside p-limit. */
  async 'p-retry+p-limit'(op) {
    const { default: pRetry } = await import('p-retry');
    const { default: pLimit } = await import('p-limit');
    const limit = pLimit(1_000_000);
    return { call: () => limit(() => pRetry(op, { retries: 2 })), close() {} };
  },

  /** viem: fallback over two custom transports, through client.request. */
  async 'viem-fallback'(op) {
    const { createClient, fallback, custom } = await import('viem');
    const request = async () => op();
    const client = createClient({ transport: fallback([custom({ request }), custom({ request })]) });
    return { call: () => client.request({ method: 'eth_blockNumber' }), close() {} };
  },
};

async function cockatielPolicy(op, withTimeout) {
  const c = await import('cockatiel');
  const policies = [
    c.retry(c.handleAll, { maxAttempts: 2, backoff: new c.ExponentialBackoff() }),
    c.circuitBreaker(c.handleAll, { halfOpenAfter: 5_000, breaker: new c.ConsecutiveBreaker(5) }),
  ];
  if (withTimeout) policies.push(c.timeout(10_000, c.TimeoutStrategy.Aggressive));
  policies.push(c.bulkhead(1_000_000));
  const policy = c.wrap(...policies);
  return { call: () => policy.execute(() => op()), close() {} };
}

/** The two operations measured. */
export const operations = {
  /** Resolves at once. */
  value: () => async () => 42,
  /** Resolves on the next turn of the event loop. */
  immediate: () => () => new Promise((resolve) => setImmediate(resolve, 42)),
};

/**
 * The paths users take (bench/paths/): an operation reading `ctx.signal`, viem clients,
 * and fetch against a loopback server. Same `{ call, close }` shape.
 */
export const pathContenders = {
  /** pool-full-signal with every core option on, listed here so the paths run compares it side by side. */
  'pool-signal': (op) => contenders['pool-full-signal'](op),

  /** viem: one `custom` transport, through client.request (the floor of every viem path). */
  async 'viem-custom'(op) {
    const { createClient, custom } = await import('viem');
    const request = async () => op();
    const client = createClient({ transport: custom({ request }) });
    return { call: () => client.request({ method: 'eth_blockNumber' }), close() {} };
  },

  'viem-fallback': (op) => contenders['viem-fallback'](op),

  /** endpoint-pool/viem: poolTransport over the same two custom transports, every option at its default. */
  async 'viem-pool'(op) {
    const { createClient, custom } = await import('viem');
    const { poolTransport } = await import(VIEM);
    const request = async () => op();
    const transport = poolTransport({ endpoints: [{ name: 'a', transport: custom({ request }) }, { name: 'b', transport: custom({ request }) }] });
    const client = createClient({ transport });
    return { call: () => client.request({ method: 'eth_blockNumber' }), close: () => transport.pool.close() };
  },

  /**
   * endpoint-pool/viem with viem's `custom` handed in: the same two providers given as
   * endpoints (`{ name, provider }`), so each request calls its provider directly rather
   * than through a `custom` transport's own request wrapper.
   */
  async 'viem-pool-direct'(op) {
    const { createClient, custom } = await import('viem');
    const { poolTransport } = await import(VIEM);
    const request = async () => op();
    const transport = poolTransport({ custom, endpoints: [{ name: 'a', provider: { request } }, { name: 'b', provider: { request } }] });
    const client = createClient({ transport });
    return { call: () => client.request({ method: 'eth_blockNumber' }), close: () => transport.pool.close() };
  },

  /** A bare `fetch` of a loopback URL (server in this process; `server: 'child'`: in a child process), body read. */
  async 'fetch-bare'(_op, args) {
    const server = await loopback({ child: args?.server === 'child' });
    const url = `${server.base}/x`;
    return { call: async () => (await fetch(url)).text(), close: server.close };
  },

  /** endpoint-pool/fetch over the same kind of server, defaults, body read. */
  async 'fetch-pooled'(_op, args) {
    const { createPooledFetch } = await import(FETCH);
    const server = await loopback({ child: args?.server === 'child' });
    const pooled = createPooledFetch({ endpoints: [server.base] });
    return { call: async () => (await pooled('/x')).text(), close: async () => (await pooled.pool.close(), server.close()) };
  },
};

const VIEM = new URL('../../dist/viem/index.js', import.meta.url).href;
const FETCH = new URL('../../dist/fetch/index.js', import.meta.url).href;

const loopback = async (options) => (await import('../lib/loopback.mjs')).loopback(options);
