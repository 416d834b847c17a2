/**
 * The harness of the generated fault schedules (generated.test.ts, generated4.test.ts): the
 * adapters under test, one run of a scenario on loopback servers, and the properties checked
 * (listed in generated.test.ts).
 */
import { getEventListeners } from 'node:events';
import fc from 'fast-check';
import { http } from 'viem';
import { expect } from 'vitest';
import { isPoolError, type ExecuteOptions } from '../../src/index.js';
import { createPooledFetch, type PooledRequestInit } from '../../src/fetch/index.js';
import { poolTransport } from '../../src/viem/index.js';
import { classifyViemError } from '../../src/viem/classify.js';
import { PooledJsonRpcProvider, classifyEthersError, type PooledProviderOptions } from '../../src/ethers/index.js';
import { timerLag, watchLag, withLag } from '../helpers/lag.js';
import { callAddress, countingClock, faultArb, refusedUrl, scenarioArb, serveFaults, type Fault, type Scenario, type ServeOptions, type ServerStats } from './gen.js';


export interface Built {
  call(i: number, signal: AbortSignal | undefined, deadlineMs: number | undefined, retry: ExecuteOptions['retry'] | undefined): Promise<unknown>;
  close(): Promise<void>;
  /** `close({ abortAfterMs })`, where the adapter's close takes it (the harness's own adapters). */
  closeAfter?(abortAfterMs: number): Promise<void>;
  /** The signal the pool got for call `i`, when it is not the caller's own. */
  signalFor?(i: number): AbortSignal | undefined;
  /** Replaces endpoint `i`'s connection with `url` (same name) through `pool.setEndpoints`. */
  swap(i: number, url: string): void;
}

export interface PoolSettings {
  readonly attemptTimeoutMs: number;
  readonly deadlineMs: number;
  readonly maxAttempts: number | undefined;
  readonly hedge: { afterMs: number; maxHedges: number } | undefined;
  readonly breaker: { threshold: number; cooldownMs: number };
  readonly backoff: { initialMs: number; maxMs: number; jitter: 'full' };
  readonly clock: ReturnType<typeof countingClock>['clock'];
  readonly random: () => number;
  readonly strategy: Scenario['opts']['strategy'];
  readonly breakerMode: Scenario['opts']['breakerMode'];
  readonly maxConcurrentCalls: number | undefined;
  readonly permitScope: Scenario['opts']['permitScope'];
}

/** Per-endpoint settings of a scenario. */
export function endpointSettings(sc: Scenario): Record<string, unknown> {
  return {
    ...(sc.opts.perSecond !== undefined ? { rateLimit: { perSecond: sc.opts.perSecond, burst: 1 } } : {}),
    ...(sc.opts.maxInFlight !== undefined ? { maxInFlight: sc.opts.maxInFlight } : {}),
  };
}

/** Per-run choices of the fetch adapter: the request's method and body, and a token provider. */
export interface FetchExtra {
  /** GET; POST (not idempotent, not replayed once it may have reached a server); POST with an idempotency key; a stream body (one attempt). */
  readonly method: 'GET' | 'POST' | 'POST-key' | 'STREAM';
  /** A `getToken` that answers quickly, slowly (half an attempt timeout), never, throws, or answers ''. */
  readonly token: 'none' | 'ok' | 'slow' | 'hang' | 'throw' | 'empty';
  /** fetch: the request given as a `Request` (absolute URL under endpoint 0, its own signal), with `init` members left undefined. */
  readonly asRequest?: boolean;
  /** viem: the method asked, coalescing of identical reads, head-aware routing with a poll (in attempt timeouts). */
  readonly rpcMethod?: 'eth_blockNumber' | 'eth_getBalance';
  readonly coalesce?: boolean;
  readonly poll?: number | undefined;
  /** viem, ethers: `chainId` (the servers answer `eth_chainId` with 0x1, as every method), asked once per connection before its first request. */
  readonly chainId?: number | undefined;
  /**
   * With `chainId`: the endpoint (modulo their number) whose server is of another chain (its
   * `eth_chainId` answers 0x2 through its plan), unless its plan is all healthy or nothing
   * listens there (`otherChainIndex`). It must get nothing but `eth_chainId` (property 11).
   */
  readonly otherChain?: number | undefined;
}

export interface Adapter {
  readonly name: string;
  /** Extra per-run choices. */
  readonly extra: fc.Arbitrary<FetchExtra>;
  /** The same for the liveness scenarios: none that rules property 2 out. */
  readonly liveExtra: fc.Arbitrary<FetchExtra>;
  readonly fault: fc.Arbitrary<Fault>;
  /** Whether the server answers in JSON-RPC. */
  readonly rpc: boolean;
  /** Per-call deadline and retry can be given. */
  readonly perCall: boolean;
  /** Requests carry the call's number (`x-call`, or an address in the params): properties 6-8 are checked. */
  attributed(x: FetchExtra): boolean;
  build(urls: string[], s: PoolSettings, x: FetchExtra, ep: Record<string, unknown>): Built;
  /** A fault that ends a call by design (the request's fault, not the endpoint's). */
  isFinal(f: Fault, x: FetchExtra): boolean;
  /** A success value that is wrong, as a message. */
  badValue(v: unknown, x: FetchExtra): string | undefined;
  /** A rejection that is not documented, as a message. */
  badFailure(e: unknown, x: FetchExtra): string | undefined;
  /** Per-call deadline and retry for these extras (default `perCall`). */
  perCallFor?(x: FetchExtra): boolean;
  /** Round trips one healthy attempt takes one after the other (default 1): the unit grows with them. */
  roundTripsPerAttempt?(x: FetchExtra): number;
  /** Requests one attempt may send (default 1), for property 7. */
  requestsPerAttempt?(x: FetchExtra, endpoints: number): number;
  /** Attempts may run on after their call settled and after close() (passSignal: false): no open-request check. */
  background?(x: FetchExtra): boolean;
  /** Property 2 is not judged for these extras on this scenario (asked after the run). */
  mayFail?(sc: Scenario, x: FetchExtra): boolean;
  /** A failure property 2 accepts from one call of these extras (a call with nowhere to fail over, failed by what it cannot control). */
  excused?(error: unknown, x: FetchExtra): boolean;
  /**
   * `swap` hands every endpoint a new connection (the viem and ethers adapters build one per
   * endpoint), not only the swapped one: to a call running across it each is a new endpoint,
   * untried, so it may go through the failing ones a second time (docs/calls.md, `exclude`).
   */
  swapRenewsAll?: boolean;
  /** Time a healthy call may need beyond property 2's budget, in attempt timeouts (default 0): credential rotations. */
  extraUnits?(x: FetchExtra): number;
  /** A POST without a key is replayed by design (`replay: 'always'`): property 8 does not apply. */
  replaysPost?(x: FetchExtra): boolean;
  /** Serves a plan (default: `serveFaults`, HTTP). */
  serveWith?(plan: readonly Fault[], o: ServeOptions): Promise<ServerStats>;
  /** Server options for these extras (answers, interception). */
  serve?(x: FetchExtra): Partial<ServeOptions>;
  /** Violations of the adapter's own properties, asked once the run is over (before its servers close). */
  afterRun?(x: FetchExtra): string[];
  /**
   * The requests of this run as the pool handed them to a transport that sends them
   * whatever the signal says (viem's `webSocket` holds a request while its socket opens and
   * sends it then): the call each carries and when. Property 6 then asks that none is
   * handed over after its call settled, and excuses a request that reaches a server late
   * when it was handed over in time.
   */
  handOffs?(x: FetchExtra): readonly { readonly call: string | undefined; readonly at: number }[];
}

export const perCallOf = (a: Adapter, x: FetchExtra): boolean => a.perCallFor?.(x) ?? a.perCall;

/** Statuses about the endpoint (its key, its plan): the call moves on, nothing was processed. */
export const KEY_STATUSES: ReadonlySet<number> = new Set([401, 403, 405]);
export const FETCH_CODES = new Set(['DEADLINE_EXCEEDED', 'RETRIES_EXHAUSTED', 'NO_ENDPOINT', 'ABORTED', 'CLOSED', 'RATE_LIMITED', 'PERMANENT']);
export const TOKEN_CODES = new Set([...FETCH_CODES, 'AUTH', 'UNAUTHORIZED']);
export const VIEM_CODES = new Set(['DEADLINE_EXCEEDED', 'RETRIES_EXHAUSTED', 'NO_ENDPOINT', 'ABORTED', 'CLOSED', 'RATE_LIMITED']);

export function getToken(kind: FetchExtra['token'], unit: number): ((endpoint: string, signal: AbortSignal) => Promise<string>) | undefined {
  switch (kind) {
    case 'none':
      return undefined;
    case 'ok':
      return async (endpoint) => `t-${endpoint}`;
    case 'slow':
      return (endpoint, signal) =>
        new Promise((resolve, reject) => {
          const t = setTimeout(() => resolve(`t-${endpoint}`), unit / 2);
          signal.addEventListener('abort', () => (clearTimeout(t), reject(signal.reason as Error)), { once: true });
        });
    case 'hang':
      return () => new Promise<string>(() => undefined);
    case 'throw':
      return async () => {
        throw new Error('token service down');
      };
    case 'empty':
      return async () => '';
  }
}

export function fetchInit(x: FetchExtra, i: number): RequestInit {
  const headers: Record<string, string> = { 'x-call': String(i) };
  switch (x.method) {
    case 'GET':
      return { headers };
    case 'POST':
      return { method: 'POST', headers, body: '{"q":1}' };
    case 'POST-key':
      return { method: 'POST', headers: { ...headers, 'idempotency-key': `k-${i}` }, body: '{"q":1}' };
    case 'STREAM':
      return { method: 'PUT', headers, body: new ReadableStream({ start: (c) => (c.enqueue(new TextEncoder().encode('{"q":1}')), c.close()) }), duplex: 'half' } as RequestInit;
  }
}

export const fetchExtra: fc.Arbitrary<FetchExtra> = fc.record({
  asRequest: fc.boolean(),
  method: fc.constantFrom('GET', 'GET', 'POST', 'POST-key', 'STREAM'),
  token: fc.oneof({ weight: 3, arbitrary: fc.constant('none' as const) }, { weight: 2, arbitrary: fc.constantFrom('ok', 'slow', 'hang', 'throw', 'empty') }),
});

export function buildFetch(urls: string[], s: PoolSettings, x: FetchExtra, ep: Record<string, unknown>, parse: boolean): Built {
  const token = getToken(x.token, s.attemptTimeoutMs);
  const pf = createPooledFetch({ endpoints: urls.map((url, i) => ({ url, name: `e${i}`, ...ep })), ...defined(s), ...(token !== undefined ? { getToken: token } : {}) });
  const conns = [...urls];
  const handed = new Map<number, AbortSignal>();
  return {
    signalFor: (i) => handed.get(i),
    close: () => pf.pool.close(),
    closeAfter: (abortAfterMs) => pf.pool.close({ abortAfterMs }),
    swap: (i, url) => {
      conns[i] = url;
      pf.pool.setEndpoints(conns.map((conn, j) => ({ name: `e${j}`, conn, ...ep })));
    },
    call: async (i, signal, deadlineMs, retry) => {
      const pool: ExecuteOptions = { ...(deadlineMs !== undefined ? { deadlineMs } : {}), ...(retry !== undefined ? { retry } : {}) };
      let input: string | Request = '/x';
      let init: PooledRequestInit & { parse?: undefined } = { ...fetchInit(x, i), ...(signal ? { signal } : {}), pool };
      if (x.asRequest === true && x.method !== 'STREAM') {
        input = new Request(`${urls[0]}/x`, { ...fetchInit(x, i), ...(signal ? { signal } : {}) });
        // The pool watches the Request's own signal (which follows the caller's).
        if (signal) handed.set(i, input.signal);
        init = { pool, signal: undefined, method: undefined } as unknown as PooledRequestInit & { parse?: undefined };
      }
      if (parse) return pf(input, { ...init, parse: 'json' });
      const res = await pf(input, init);
      // The caller's part: release a body it will not read.
      await res.body?.cancel().catch(() => undefined);
      return res.status;
    },
  };
}

export const fetchAdapter: Adapter = {
  name: 'fetch',
  rpc: false,
  perCall: true,
  attributed: () => true,
  extra: fetchExtra,
  liveExtra: fc.record({ asRequest: fc.boolean(), method: fc.constantFrom('GET' as const, 'POST-key' as const), token: fc.constantFrom('none' as const, 'none' as const, 'ok' as const, 'slow' as const) }),
  fault: faultArb([408, 429, 500, 502, 503, 401, 403, 404], []),
  build: (urls, s, x, ep) => buildFetch(urls, s, x, ep, true),
  // A 4xx is the request's fault, except 401/403/405 (the endpoint's key or plan: another
  // endpoint); with a token provider a 401 is a refresh and a replay, once, then final.
  isFinal: (f, x) => f.k === 'status' && f.status >= 400 && f.status < 500 && f.status !== 408 && f.status !== 429 && (KEY_STATUSES.has(f.status) ? x.token !== 'none' && f.status === 401 : true),
  badValue: (v) => (JSON.stringify(v) === '{"ok":true}' ? undefined : `wrong value ${JSON.stringify(v)}`),
  badFailure: (e, x) => (isPoolError(e) && (x.token === 'none' ? FETCH_CODES : TOKEN_CODES).has(e.code) ? undefined : `not a documented PoolError: ${String(e)}`),
};

export const fetchRawAdapter: Adapter = {
  ...fetchAdapter,
  name: 'fetch (Response)',
  build: (urls, s, x, ep) => buildFetch(urls, s, x, ep, false),
  badValue: (v) => (v === 200 || (typeof v === 'number' && v >= 400) ? undefined : `wrong status ${String(v)}`),
};

export const ANSWER = 'the node answered';
export const viemAdapter: Adapter = {
  name: 'viem',
  rpc: true,
  swapRenewsAll: true,
  get liveExtra() {
    return this.extra;
  },
  extra: fc.record({
    method: fc.constant('GET' as const),
    token: fc.constant('none' as const),
    rpcMethod: fc.constantFrom('eth_blockNumber' as const, 'eth_getBalance' as const),
    coalesce: fc.boolean(),
    poll: fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom(0, 0.5, 2) }),
    chainId: fc.constantFrom(undefined, undefined, 1),
    otherChain: fc.constantFrom(undefined, 0, 1, 2, 3),
  }),
  // A node is asked its chain before its first request: two round trips in that attempt.
  roundTripsPerAttempt: (x) => (x.chainId !== undefined ? 2 : 1),
  perCall: false,
  // eth_getBalance carries the caller's number; a coalesced request carries only the first caller's.
  attributed: (x) => x.rpcMethod === 'eth_getBalance' && x.coalesce !== true,
  fault: faultArb(
    [408, 429, 500, 502, 503, 401, 403, 404, 413],
    [
      { code: -32005, message: 'limit exceeded' },
      { code: 429, message: 'Too Many Requests' },
      { code: -32603, message: 'internal error' },
      { code: -32000, message: 'header not found' },
      { code: -32601, message: 'the method eth_blockNumber does not exist/is not available' },
      { code: 3, message: 'execution reverted' },
      { code: -32000, message: 'invalid argument 0' },
    ],
  ),
  build(urls, s, x, ep) {
    const method = x.rpcMethod ?? 'eth_blockNumber';
    const t = poolTransport({
      endpoints: urls.map((url, i) => ({ url, name: `e${i}`, ...ep })),
      http,
      ...defined(s),
      ...(x.coalesce === true ? { coalesce: [method] } : {}),
      ...(x.poll !== undefined ? { heads: { pollMs: Math.ceil(x.poll * s.attemptTimeoutMs) } } : {}),
      ...(x.chainId !== undefined ? { chainId: x.chainId } : {}),
    });
    const inst = t({});
    const params = (i: number): unknown[] => (method === 'eth_getBalance' ? [callAddress(i), 'latest'] : []);
    const live = [...urls];
    return {
      close: () => t.close(),
      closeAfter: (abortAfterMs) => t.close({ abortAfterMs }),
      // Every endpoint gets a new transport (the pool built the first ones from the URLs).
      swap: (i, url) => {
        live[i] = url;
        t.pool.setEndpoints(live.map((u, j) => ({ name: `e${j}`, conn: http(u, { retryCount: 0 }), ...ep })));
      },
      call: (i, signal) => inst.request({ method, params: params(i) }, signal ? { signal } : undefined),
    };
  },
  // 413 asks for a narrower request; 404 is no endpoint at that URL (another is asked).
  isFinal: (f) => (f.k === 'status' && f.status === 413) || (f.k === 'rpc-error' && (f.code === 3 || f.message === 'invalid argument 0')),
  badValue: (v) => (v === '0x1' ? undefined : `wrong value ${JSON.stringify(v)}`),
  badFailure: (e) => {
    if (isPoolError(e)) return VIEM_CODES.has(e.code) ? undefined : `undocumented code ${e.code}: ${e.message}`;
    const c = classifyViemError(e);
    const cls = typeof c === 'string' ? c : c.class;
    return cls === 'permanent' || cls === 'unsupported' || cls === 'retry-narrower' ? undefined : `a ${cls} error that is not a PoolError (${ANSWER}?): ${String(e)}`;
  },
};

export const ETHERS_CODES = new Set([...VIEM_CODES, 'PERMANENT', 'RETRY_NARROWER']);
export const ethersAdapter: Adapter = {
  ...viemAdapter,
  name: 'ethers',
  perCall: true,
  // 413 and the node's final answers (401-405/408/410/429 go to another endpoint, as viem's).
  isFinal: (f) => (f.k === 'status' && f.status === 413) || (f.k === 'rpc-error' && (f.code === 3 || f.message === 'invalid argument 0')),
  build(urls, s, x, ep) {
    const method = x.rpcMethod ?? 'eth_blockNumber';
    const p = new PooledJsonRpcProvider({
      endpoints: urls.map((url, i) => ({ url, name: `e${i}`, ...ep })),
      network: 1,
      ...defined(s),
      ...(x.coalesce === true ? { coalesce: [method] } : {}),
      ...(x.poll !== undefined ? { heads: { pollMs: Math.ceil(x.poll * s.attemptTimeoutMs) } } : {}),
      ...(x.chainId !== undefined ? { chainId: x.chainId } : {}),
    } as PooledProviderOptions);
    const params = (i: number): unknown[] => (method === 'eth_getBalance' ? [callAddress(i), 'latest'] : []);
    const live = [...urls];
    return {
      close: () => p.close(),
      closeAfter: (abortAfterMs) => p.close({ abortAfterMs }),
      swap: (i, url) => {
        live[i] = url;
        p.pool.setEndpoints(live.map((u, j) => ({ name: `e${j}`, conn: { url: u }, ...ep })));
      },
      call: (i, signal, deadlineMs, retry) => p.sendWith(method, params(i), { ...(signal ? { signal } : {}), ...(deadlineMs !== undefined ? { deadlineMs } : {}), ...(retry !== undefined ? { retry } : {}) }),
    };
  },
  badFailure: (e) => {
    if (isPoolError(e)) return ETHERS_CODES.has(e.code) ? undefined : `undocumented code ${e.code}: ${e.message}`;
    // A node's answer, as ethers' own error for it.
    const c = classifyEthersError(e);
    const cls = typeof c === 'string' ? c : c.class;
    return cls === 'permanent' || cls === 'unsupported' || cls === 'retry-narrower' ? undefined : `a ${cls} error that is not a PoolError: ${String(e)}`;
  },
};

export function defined(s: PoolSettings): Record<string, unknown> {
  return Object.fromEntries(Object.entries(s).filter(([, v]) => v !== undefined));
}

/** A random source drawn from the scenario, so a replay selects the same way. */
export function seeded(sc: Scenario): () => number {
  let x = (JSON.stringify(sc).length * 2654435761) >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4294967296;
  };
}

/** The right answer of a request. */
export function answerFor(a: Adapter, body: string, result = '0x1'): { status: number; body: string } {
  if (!a.rpc) return { status: 200, body: '{"ok":true}' };
  const id = (JSON.parse(body) as { id?: unknown }).id;
  return { status: 200, body: JSON.stringify({ jsonrpc: '2.0', id, result }) };
}

/** Whether a JSON-RPC body asks `eth_chainId`. */
function isChainQuestion(body: string): boolean {
  try {
    return (JSON.parse(body) as { method?: unknown }).method === 'eth_chainId';
  } catch {
    return false;
  }
}

/**
 * The endpoint of another chain in this run (`FetchExtra.otherChain`), or -1: a server whose
 * plan has a fault (never one that answers every request right, which the properties count on
 * to serve, nor one with nothing listening).
 */
export function otherChainIndex(sc: Scenario, x: FetchExtra): number {
  if (x.chainId === undefined || x.otherChain === undefined) return -1;
  const i = x.otherChain % sc.endpoints.length;
  const e = sc.endpoints[i]!;
  return e.kind === 'server' && !e.plan.every(healthy) ? i : -1;
}

let rttServer: ServerStats | undefined;
/** Closes the round-trip server (afterAll). */
export const closeRtt = (): Promise<void> | undefined => rttServer?.close();
/** The slowest of three loopback round trips (fetch to a server that answers at once), in ms. */
export async function roundTrip(): Promise<number> {
  rttServer ??= await serveFaults([{ k: 'ok', f: 0 }], { closeConnections: false, unitMs: 1, rpc: false, answer: () => ({ status: 200, body: '{}' }) });
  let worst = 0;
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    await (await fetch(rttServer.url)).text();
    worst = Math.max(worst, performance.now() - t0);
  }
  return worst;
}

export const healthy = (f: Fault): boolean => f.k === 'ok' && f.f <= 0.2;

/**
 * A control for property 2: a loopback round trip to the round-trip server every half unit
 * while the calls run, beside them and outside the pool. The worst one says how long this
 * machine took to deliver an answer then: a run whose attempt's round trips at that pace
 * (plus one to open the connection) and the server's 0.2 unit exceed the attempt timeout
 * could not promise a healthy answer within it,
 * whatever the event loop's lag (the lag watch sees one stall at a time; a starved process
 * is late a little at every turn of a request, and the turns add up).
 */
export function controlRoundTrips(unit: number): { stop(): Promise<number> } {
  let worst = 0;
  let stopped = false;
  const loop = (async (): Promise<void> => {
    while (!stopped && rttServer !== undefined) {
      const t0 = performance.now();
      try {
        await (await fetch(rttServer.url)).text();
      } catch {
        // The control only measures.
      }
      worst = Math.max(worst, performance.now() - t0);
      if (!stopped) await new Promise((r) => setTimeout(r, Math.ceil(unit / 2)));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return worst;
    },
  };
}

export interface CallRecord {
  readonly i: number;
  start: number;
  end: number | undefined;
  abortedAt: number | undefined;
  ok: boolean;
  value: unknown;
  error: unknown;
  signal: AbortSignal | undefined;
}

export interface RunOutcome {
  readonly violations: string[];
  readonly unit: number;
  readonly settled: number;
  readonly ok: number;
  readonly p2: number;
  readonly codes: Record<string, number>;
  readonly calm: boolean;
  /** Whether a server of another chain was asked its chain (property 11 had something to judge). */
  readonly otherChainAsked: boolean;
}

export async function runScenario(a: Adapter, sc: Scenario, x: FetchExtra): Promise<RunOutcome> {
  const violations: string[] = [];
  const lag0 = await timerLag(5);
  // The attempt timeout: every time of the scenario is a multiple of it. It covers the timer
  // lag and four loopback round trips measured now.
  // An attempt that needs several round trips (a send and its check by hash, a two-request
  // operation) gets a unit as many times longer: property 2 counts on one attempt per unit.
  const U = (a.roundTripsPerAttempt?.(x) ?? 1) * Math.max(withLag(40, lag0, 3), Math.ceil(4 * (await roundTrip())));
  const servers: (ServerStats | undefined)[] = [];
  const urls: string[] = [];
  const wrong = otherChainIndex(sc, x);
  /** Requests other than `eth_chainId` that reached the server of another chain. */
  const sentToWrong: string[] = [];
  for (const [i, e] of sc.endpoints.entries()) {
    if (e.kind === 'refused') {
      servers.push(undefined);
      urls.push(await refusedUrl());
    } else {
      const own = a.serve?.(x);
      const s = await (a.serveWith ?? serveFaults)(e.plan, {
        closeConnections: e.closeConnections,
        unitMs: U,
        rpc: a.rpc,
        answer: (body) => answerFor(a, body),
        ...own,
        ...(i === wrong
          ? {
              answer: (body: string) => (isChainQuestion(body) ? answerFor(a, body, '0x2') : answerFor(a, body)),
              intercept: (body: string, fault: Fault) => {
                if (!isChainQuestion(body)) sentToWrong.push(body.slice(0, 120));
                return own?.intercept?.(body, fault) ?? fault;
              },
            }
          : {}),
      });
      servers.push(s);
      urls.push(s.url);
    }
  }
  // The replacement for endpoint 0, started now so that the swap itself is synchronous.
  const replacement =
    sc.swapAt === undefined
      ? undefined
      : await (a.serveWith ?? serveFaults)([{ k: 'ok', f: 0 }], { closeConnections: false, unitMs: U, rpc: a.rpc, answer: (body) => answerFor(a, body), ...a.serve?.(x) });
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  const counting = countingClock();
  const deadlineMs = sc.deadline * U;
  const backoffMax = Math.ceil(U / 2);
  const built = a.build(
    urls,
    {
      attemptTimeoutMs: U,
      deadlineMs,
      maxAttempts: sc.maxAttempts,
      hedge: sc.hedge === undefined ? undefined : { afterMs: Math.ceil(sc.hedge.after * U), maxHedges: sc.hedge.maxHedges },
      breaker: { threshold: sc.breakerThreshold, cooldownMs: 20 * U },
      backoff: { initialMs: Math.ceil(U / 8), maxMs: backoffMax, jitter: 'full' },
      clock: counting.clock,
      random: seeded(sc),
      strategy: sc.opts.strategy,
      breakerMode: sc.opts.breakerMode,
      maxConcurrentCalls: sc.opts.maxConcurrentCalls,
      permitScope: sc.opts.permitScope,
    },
    x,
    endpointSettings(sc),
  );
  const watch = watchLag();
  const control = controlRoundTrips(U);
  const t0 = performance.now();
  let closedAt: number | undefined;
  /** With `close({ abortAfterMs })`: when the running attempts are abandoned, and when close() resolved. */
  let abandonAt: number | undefined;
  let closeResolvedAt: number | undefined;
  const timers: ReturnType<typeof setTimeout>[] = [];
  let closing: Promise<void> | undefined;
  const killed = sc.killAt === undefined ? undefined : servers[1];
  if (killed !== undefined) timers.push(setTimeout(() => void killed.close(), sc.killAt! * U));
  let swappedAt: number | undefined;
  if (replacement !== undefined) {
    timers.push(
      setTimeout(() => {
        swappedAt = performance.now();
        built.swap(0, replacement.url);
      }, sc.swapAt! * U),
    );
  }
  if (sc.closeAt !== undefined) {
    timers.push(
      setTimeout(() => {
        closedAt = performance.now();
        if (sc.closeAbort !== undefined && built.closeAfter !== undefined) {
          abandonAt = closedAt + sc.closeAbort * U;
          closing = built.closeAfter(sc.closeAbort * U);
          void closing.then(() => (closeResolvedAt = performance.now()));
        } else closing = built.close();
      }, sc.closeAt * U),
    );
  }
  const records: CallRecord[] = [];
  const shared = new AbortController();
  const calls = sc.callers.map(
    (c, i) =>
      new Promise<void>((resolve) => {
        timers.push(
          setTimeout(() => {
            const ctl = c.abortAt === undefined ? undefined : sc.sharedSignal ? shared : new AbortController();
            const r: CallRecord = { i, start: performance.now(), end: undefined, abortedAt: undefined, ok: false, value: undefined, error: undefined, signal: ctl?.signal };
            records.push(r);
            const abort = (): void => {
              const now = performance.now();
              // Every call on this signal sees the abort now (if it has not already).
              for (const o of records) if (o.signal === ctl!.signal && o.abortedAt === undefined && !o.signal.aborted) o.abortedAt = now;
              ctl!.abort();
            };
            if (ctl !== undefined && c.abortAt! < 0) abort();
            else if (ctl !== undefined) timers.push(setTimeout(abort, c.abortAt! * U));
            if (ctl?.signal.aborted === true) r.abortedAt ??= r.start;
            let p: Promise<unknown>;
            try {
              p = built.call(i, ctl?.signal, perCallOf(a, x) && c.deadline !== undefined ? c.deadline * U : undefined, perCallOf(a, x) ? c.retry : undefined);
            } catch (error) {
              p = Promise.reject(error);
            }
            p.then(
              (v) => {
                r.end = performance.now();
                r.ok = true;
                r.value = v;
              },
              (e: unknown) => {
                r.end = performance.now();
                r.error = e;
              },
            ).finally(resolve);
          }, c.startAt * U),
        );
      }),
  );
  // Bounded: a call that never settles is reported, not waited on forever.
  const longest = Math.max(deadlineMs, ...sc.callers.map((c) => (c.deadline ?? 0) * U)) + 3 * U;
  const cap = withLag(longest + 2000, Math.max(lag0, watch.maxMs), 20);
  let capTimer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([Promise.all(calls), new Promise<void>((r) => (capTimer = setTimeout(r, cap)))]);
  clearTimeout(capTimer);
  const controlMs = await control.stop();
  for (const t of timers) clearTimeout(t);
  if (replacement !== undefined) servers.push(replacement);
  const closeStart = performance.now();
  await Promise.race([closing ?? built.close(), new Promise<void>((r) => (capTimer = setTimeout(r, cap)))]);
  clearTimeout(capTimer);
  const closeMs = performance.now() - closeStart;
  // What the sockets need to close (a reset or an abort travels through the event loop).
  let settleWaited = 0;
  const settleCap = withLag(200, Math.max(lag0, watch.maxMs), 10);
  while (settleWaited < settleCap && servers.some((s) => s !== undefined && s.openRequests() > 0)) {
    await new Promise((r) => setTimeout(r, 5));
    settleWaited += 5;
  }
  // Then every connection left must be one that carries a request: close the idle ones
  // (keep-alive connections the client keeps for reuse) and wait for the sockets to go.
  for (const s of servers) s?.closeIdle();
  while (settleWaited < 2 * settleCap && servers.some((s) => s !== undefined && s.openSockets() > 0)) {
    await new Promise((r) => setTimeout(r, 5));
    settleWaited += 5;
  }
  const lag = Math.max(lag0, watch.stop());
  process.off('unhandledRejection', onUnhandled);
  const margin = withLag(15, lag, 4);
  // Property 2 needs a healthy answer to come within its attempt timeout: not on a run
  // whose event loop stalled for a third of it, nor one where the attempt's round trips (one
  // more for opening the connection: every run starts on fresh servers) at the worst
  // control round trip beside the calls, plus the healthy server's 0.2 unit, exceed it
  // (fuzz5: the machine, not the pool). A slow token provider's half unit is spent inside the
  // attempt too, on a timer of its own that the lag delays once more (seed 20261214, fetch
  // liveness path 23, both cores busy: 0.7 unit plus two lags of 13 ms missed a 41 ms unit).
  const token = x.token === 'slow' ? 0.5 * U + lag : 0;
  const calm = lag < U / 3 && controlMs * ((a.roundTripsPerAttempt?.(x) ?? 1) + 1) + 0.2 * U + token < U;

  // 4 and the never-settled part of 1.
  const codes: Record<string, number> = {};
  let ok = 0;
  let p2 = 0;
  for (const r of records) {
    const c = sc.callers[r.i]!;
    const tag = `call ${r.i} (start ${Math.round(r.start - t0)} ms)`;
    if (r.end === undefined) {
      violations.push(`${tag} never settled (waited ${cap} ms)`);
      continue;
    }
    const took = r.end - r.start;
    const key = r.ok ? 'ok' : isPoolError(r.error) ? r.error.code : String((r.error as Error)?.name);
    codes[key] = (codes[key] ?? 0) + 1;
    if (r.ok) {
      ok++;
      const bad = a.badValue(r.value, x);
      if (bad !== undefined) violations.push(`${tag}: ${bad}`);
    } else {
      const bad = a.badFailure(r.error, x);
      if (bad !== undefined) violations.push(`${tag}: ${bad}`);
    }
    // 1. The deadline.
    const own = perCallOf(a, x) && c.deadline !== undefined ? c.deadline * U : deadlineMs;
    if (took > own + margin) violations.push(`${tag} took ${Math.round(took)} ms, deadline ${own} ms + margin ${margin} ms (${key})`);
    // 5. The caller's abort.
    if (r.abortedAt !== undefined && r.abortedAt < r.end) {
      const after = r.end - r.abortedAt;
      if (after > margin) violations.push(`${tag} settled ${Math.round(after)} ms after its caller aborted (margin ${margin} ms)`);
      // A call started on a closed pool may say CLOSED first.
      const closedFirst = closedAt !== undefined && closedAt <= r.abortedAt && isPoolError(r.error) && r.error.code === 'CLOSED';
      if (!r.ok && !closedFirst && !(isPoolError(r.error) && r.error.code === 'ABORTED')) violations.push(`${tag} aborted but failed with ${key}`);
    }
    // 2. Liveness while one endpoint is healthy.
    if (calm && mustSucceed(a, sc, c, U, backoffMax, own, margin, x)) {
      p2++;
      if (!r.ok && a.excused?.(r.error, x) !== true) violations.push(`${tag} failed with ${key} (${(r.error as Error)?.message}) while endpoint ${healthyIndex(sc)} is healthy (lag ${Math.round(lag)} ms, control round trip ${Math.round(controlMs)} ms, unit ${U} ms); cause: ${String((r.error as { cause?: unknown })?.cause)}`);
    } else if (!r.ok && process.env['FC_DEBUG'] === '1' && healthyIndex(sc) !== -1 && c.abortAt === undefined && sc.closeAt === undefined) {
      console.log(`not checked (calm ${calm}, lag ${Math.round(lag)}, control ${Math.round(controlMs)}, U ${U}, deadline ${own}): ${tag} ${key}: ${(r.error as Error)?.message}`);
    }
  }
  // 6-8 (fetch, whose requests say which call sent them): no request after its call
  // settled, no more requests than the call's attempts allow, and a request that must not
  // be replayed reaches at most one server in a way that may have processed it.
  if (a.attributed(x)) {
    for (const r of records) {
      if (r.end === undefined) continue;
      const c = sc.callers[r.i]!;
      const hits = pooledHits(servers.flatMap((s, e) => (s === undefined ? [] : s.log.filter((h) => h.call === String(r.i)).map((h) => ({ ...h, e })))));
      if (r.abortedAt !== undefined && r.abortedAt <= r.start && hits.length > 0) violations.push(`call ${r.i}: its signal was aborted before it started, yet ${hits.length} request(s) reached a server`);
      const late = hits.filter((h) => h.at > r.end! + margin);
      // The hand-offs, where the adapter logs them: a request handed over in time may arrive
      // after its transport's socket opened, a handshake later, which no timer lag bounds.
      const handed = a.handOffs?.(x).filter((h) => h.call === String(r.i));
      const handedLate = handed?.filter((h) => h.at > r.end! + margin) ?? [];
      if (handedLate.length > 0) violations.push(`call ${r.i}: ${handedLate.length} request(s) handed to the transport ${Math.round(handedLate[0]!.at - r.end)} ms after the call settled (margin ${margin} ms)`);
      const excused = handed === undefined ? 0 : Math.max(0, handed.length - handedLate.length - (hits.length - late.length));
      if (late.length > excused) violations.push(`call ${r.i}: ${late.length - excused} request(s) reached e${late[0]!.e} ${Math.round(late[0]!.at - r.end)} ms after the call settled (margin ${margin} ms, lag ${Math.round(lag)} ms${handed === undefined ? '' : `, ${handed.length - handedLate.length} handed over in time`})`);
      const n = sc.endpoints.length;
      const retry = perCallOf(a, x) ? c.retry : undefined;
      let cap = retry === 'none' || x.method === 'STREAM' ? 1 : retry === 'until-deadline' ? Infinity : typeof retry === 'object' ? retry.maxAttempts : (sc.maxAttempts ?? Math.max(3, n));
      // With `maxAttempts` unset, an endpoint the call tried that `setEndpoints` then replaced
      // adds one attempt (docs/options.md): its replacement is an endpoint the call has not
      // tried (seed 20261205, fetch liveness path 1: e0, e1, the new e0, e2, e3 is five).
      if (retry === undefined && x.method !== 'STREAM' && sc.maxAttempts === undefined && swappedAt !== undefined && r.start < swappedAt) {
        const renewed = new Set(hits.filter((h) => h.e < n && (a.swapRenewsAll === true || h.e === 0) && h.at <= swappedAt! + margin).map((h) => h.e));
        cap += renewed.size;
      }
      cap *= a.requestsPerAttempt?.(x, n) ?? 1;
      // A 401 with a token provider is replayed once at no retry cost.
      if (x.token !== 'none') cap += hits.filter((h) => h.fault.k === 'status' && h.fault.status === 401).length;
      if (hits.length > cap) violations.push(`call ${r.i}: ${hits.length} requests, its attempts allow ${cap} (${hits.map((h) => `e${h.e}:${h.fault.k}@${Math.round(h.at - r.start)}`).join(', ')}; ended @${Math.round(r.end - r.start)}, swap @${swappedAt === undefined ? '-' : Math.round(swappedAt - r.start)}, unit ${U} ms)`);
      if (x.method === 'POST' && a.replaysPost?.(x) !== true) {
        const processed = hits.filter((h) => !(h.fault.k === 'status' && (h.fault.status === 408 || h.fault.status === 429 || KEY_STATUSES.has(h.fault.status))));
        if (processed.length > 1) violations.push(`call ${r.i}: a POST without a key reached ${processed.length} servers that may have processed it (${processed.map((h) => `e${h.e}:${h.fault.k}`).join(', ')})`);
      }
    }
  }
  // 9. No request reaches an endpoint after `setEndpoints` replaced it.
  const old = servers[0];
  if (swappedAt !== undefined && old !== undefined) {
    const after = old.log.filter((h) => h.at > swappedAt! + margin);
    if (after.length > 0) violations.push(`e0 was replaced ${Math.round(after[0]!.at - swappedAt)} ms before ${after.length} request(s) reached its old server`);
  }
  // 3. Nothing left behind.
  if (closeMs >= cap) violations.push(`close() did not resolve within ${cap} ms`);
  // 10. close({ abortAfterMs }) ends every call, and resolves, by the time it names.
  if (abandonAt !== undefined) {
    // A call made after that time fails CLOSED at once.
    for (const r of records) if (r.end !== undefined && r.end > Math.max(abandonAt, r.start) + margin) violations.push(`call ${r.i}: settled ${Math.round(r.end - Math.max(abandonAt, r.start))} ms after close({ abortAfterMs }) abandoned the attempts (margin ${margin} ms)`);
    if (closeResolvedAt === undefined || closeResolvedAt > abandonAt + margin) violations.push(`close({ abortAfterMs }) resolved ${closeResolvedAt === undefined ? 'never' : `${Math.round(closeResolvedAt - abandonAt)} ms`} after its time (margin ${margin} ms)`);
  }
  servers.forEach((s, i) => {
    if (s === undefined) return;
    if (a.background?.(x) === true) return;
    if (s.openRequests() > 0) violations.push(`server e${i}: ${s.openRequests()} request(s) still open ${settleWaited} ms after close() and the last call`);
    else if (s.openSockets() > 0) violations.push(`server e${i}: ${s.openSockets()} connection(s) still open with no request, after the idle ones were closed: ${s.describeSockets()}`);
  });
  if (counting.pending() > 0) violations.push(`${counting.pending()} pool timer(s) pending after close()`);
  for (const r of records) {
    const sig = built.signalFor?.(r.i) ?? r.signal;
    if (sig !== undefined && getEventListeners(sig, 'abort').length > 0) violations.push(`call ${r.i}: ${getEventListeners(sig, 'abort').length} abort listener(s) left on its signal`);
  }
  for (const u of unhandled) violations.push(`unhandled rejection: ${String(u)}`);
  // 11. A node of another chain is sent nothing but `eth_chainId`.
  if (sentToWrong.length > 0) violations.push(`e${wrong}, a node of another chain, got ${sentToWrong.length} request(s) besides eth_chainId, the first: ${sentToWrong[0]}`);
  violations.push(...(a.afterRun?.(x) ?? []));
  await Promise.all(servers.map((s) => s?.close()));
  return { violations, unit: U, settled: records.length, ok, p2, codes, calm, otherChainAsked: wrong !== -1 && servers[wrong]!.hits > 0 };
}

/** An endpoint that answers every request right and quickly, to the end (endpoint 1 is stopped at `killAt`); -1 if none. */
export function healthyIndex(sc: Scenario): number {
  return sc.endpoints.findIndex((e, i) => e.kind === 'server' && e.plan.every(healthy) && !(i === 1 && sc.killAt !== undefined));
}

/** Property 2's precondition for one call. */
export function mustSucceed(a: Adapter, sc: Scenario, c: Scenario['callers'][number], U: number, backoffMax: number, deadline: number, margin: number, x: FetchExtra): boolean {
  if (healthyIndex(sc) === -1 || c.abortAt !== undefined || sc.closeAt !== undefined) return false;
  if (a.mayFail?.(sc, x) === true) return false;
  // Queues (permits, rate limits, in-flight caps) make a call wait on the others: no time bound.
  if (sc.opts.maxConcurrentCalls !== undefined || sc.opts.perSecond !== undefined || sc.opts.maxInFlight !== undefined) return false;
  if (sc.endpoints.some((e) => e.kind === 'server' && e.plan.some((f) => a.isFinal(f, x)))) return false;
  // Every endpoint needs the token: a provider that fails fails them all.
  if (x.token === 'hang' || x.token === 'throw' || x.token === 'empty') return false;
  // A POST without a key ends at the first failure that may have reached a server.
  const neverProcessed = (f: Fault): boolean => healthy(f) || (f.k === 'status' && (f.status === 408 || f.status === 429 || KEY_STATUSES.has(f.status)));
  if (x.method === 'POST' && a.replaysPost?.(x) !== true && sc.endpoints.some((e) => e.kind === 'server' && !e.plan.every(neverProcessed))) return false;
  const endpoints = sc.endpoints.length;
  const retry = perCallOf(a, x) ? c.retry : undefined;
  if ((retry === 'none' || x.method === 'STREAM') && endpoints > 1) return false;
  const attempts = retry === 'until-deadline' ? Infinity : typeof retry === 'object' ? retry.maxAttempts : (sc.maxAttempts ?? Math.max(3, endpoints));
  // Endpoints the call may have to get through: each failing one once, and once more after a
  // swap that renewed them all while it ran (seed 17120430, ethers: e1, e2, then the new e1).
  // A coalesced read may join an identical one in flight (docs/rpc.md): its attempts are that
  // one's, started as early as the first caller, so before a swap the later caller came after
  // (seed 2026120431, viem path 12 and ethers path 1: callers starting after the swap joined a
  // call that had tried e1 before it, and took its RETRIES_EXHAUSTED).
  const startAt = x.coalesce === true ? Math.min(...sc.callers.map((o) => o.startAt)) : c.startAt;
  const n = a.swapRenewsAll === true && sc.swapAt !== undefined && startAt < sc.swapAt ? 2 * endpoints - 1 : endpoints;
  if (attempts < n) return false;
  // A slow token provider: one refresh per endpoint, half an attempt timeout each.
  const tokens = x.token === 'slow' ? 0.5 * U * n : 0;
  return deadline >= n * U + (n - 1) * backoffMax + 0.2 * U + tokens + (a.extraUnits?.(x) ?? 0) * U + 2 * margin;
}

/** What `check` counted over its runs. */
export interface CheckTotals {
  runs: number;
  calm: number;
  calls: number;
  ok: number;
  p2: number;
  codes: Record<string, number>;
  unit: number;
  /** Runs whose server of another chain was asked its chain. */
  otherChain: number;
}

export async function check(a: Adapter, seed: number, runs: number, liveness = false, file = 'test/faults/generated.test.ts', shape: (sc: Scenario) => Scenario = (sc) => sc): Promise<CheckTotals> {
  let firstViolations: string[] | undefined;
  const totals: CheckTotals = { runs: 0, calm: 0, calls: 0, ok: 0, p2: 0, codes: {}, unit: 0, otherChain: 0 };
  const result = await fc.check(
    fc.asyncProperty(scenarioArb(liveness ? a.fault.filter((f) => !a.isFinal(f, { method: 'GET', token: 'none' })) : a.fault, liveness).map(shape), liveness ? a.liveExtra : a.extra, async (sc, x) => {
      const o = await runScenario(a, sc, x);
      totals.runs++;
      if (o.calm) totals.calm++;
      if (o.otherChainAsked) totals.otherChain++;
      totals.calls += o.settled;
      totals.ok += o.ok;
      totals.p2 += o.p2;
      totals.unit = Math.max(totals.unit, o.unit);
      for (const [k, v] of Object.entries(o.codes)) totals.codes[k] = (totals.codes[k] ?? 0) + v;
      if (o.violations.length > 0) firstViolations ??= o.violations;
      return o.violations.length === 0;
    }),
    { seed, numRuns: runs, endOnFailure: process.env['FC_SHRINK'] !== '1', ...(process.env['FC_PATH'] !== undefined ? { path: process.env['FC_PATH'] } : {}) },
  );
  if (process.env['FC_VERBOSE'] === '1') console.log(a.name, JSON.stringify(totals));
  if (result.failed) {
    const [sc, x] = result.counterexample!;
    const o = await runScenario(a, sc, x);
    expect.fail(
      [
        `${a.name}: property failed (seed ${result.seed}); replay: FC_SEED=${result.seed} FC_PATH=${result.counterexamplePath ?? ''} npx vitest run ${file}`,
        'violations (first run):',
        ...(firstViolations ?? []).map((v) => `  - ${v}`),
        // A run that threw rather than reported (the scenario itself failed): what it threw.
        ...(firstViolations === undefined ? [`thrown (first run): ${result.errorInstance instanceof Error ? (result.errorInstance.stack ?? result.errorInstance.message) : String(result.errorInstance)}`] : []),
        'violations (replayed):',
        ...o.violations.map((v) => `  - ${v}`),
        JSON.stringify(sc),
        JSON.stringify(x),
      ].join('\n'),
    );
  }
  return totals;
}


export const seedOf = (fixed: number): number => (process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : fixed);

/** What one generated run reports to `checkRuns`. */
export interface TalliedRun {
  readonly violations: readonly string[];
  readonly calm: boolean;
  readonly p2: number;
  readonly codes: Readonly<Record<string, number>>;
}

/**
 * Checks `run` over `numRuns` scenarios drawn from `arb` (`FC_PATH` replays one path),
 * tallies calm runs, second-pool calls and codes (printed under `FC_VERBOSE=1`), and fails
 * with the first failing run's violations and the command that replays it.
 */
export async function checkRuns<S>(label: string, file: string, arb: fc.Arbitrary<S>, run: (sc: S) => Promise<TalliedRun>, seed: number, numRuns: number): Promise<void> {
  let first: readonly string[] | undefined;
  const totals = { runs: 0, calm: 0, p2: 0, codes: {} as Record<string, number> };
  const result = await fc.check(
    fc.asyncProperty(arb, async (sc) => {
      const o = await run(sc);
      totals.runs++;
      if (o.calm) totals.calm++;
      totals.p2 += o.p2;
      for (const [k, v] of Object.entries(o.codes)) totals.codes[k] = (totals.codes[k] ?? 0) + v;
      if (o.violations.length > 0) first ??= o.violations;
      return o.violations.length === 0;
    }),
    { seed, numRuns, endOnFailure: true, ...(process.env['FC_PATH'] !== undefined ? { path: process.env['FC_PATH'] } : {}) },
  );
  if (process.env['FC_VERBOSE'] === '1') console.log(label, JSON.stringify(totals));
  if (result.failed) {
    expect.fail(
      [
        `${label}: property failed (seed ${result.seed}); replay: FC_SEED=${result.seed} FC_PATH=${result.counterexamplePath ?? ''} npx vitest run ${file}`,
        ...(first ?? []).map((v) => `  - ${v}`),
        JSON.stringify(result.counterexample?.[0]),
      ].join('\n'),
    );
  }
}

/** What `launchCallers` records of each generated caller's call. */
export interface CallerRecord {
  i: number;
  start: number;
  end?: number;
  ok: boolean;
  error?: unknown;
}

/**
 * Starts each caller `startAt` units in, on the pooled fetch of its pool (`pool` modulo the
 * pools), and resolves with every call's record once all have settled. The start timers go
 * to `timers`, for the caller to clear.
 */
export async function launchCallers(
  callers: readonly { readonly pool: number; readonly startAt: number }[],
  pools: readonly ((path: string, init: { parse: 'json' }) => Promise<unknown>)[],
  unit: number,
  timers: ReturnType<typeof setTimeout>[],
): Promise<CallerRecord[]> {
  const records: CallerRecord[] = [];
  await Promise.all(
    callers.map(
      (c, i) =>
        new Promise<void>((resolve) =>
          timers.push(
            setTimeout(() => {
              const r: CallerRecord = { i, start: performance.now(), ok: false };
              records.push(r);
              pools[c.pool % pools.length]!('/x', { parse: 'json' })
                .then(
                  () => (r.ok = true),
                  (e: unknown) => (r.error = e),
                )
                .finally(() => ((r.end = performance.now()), resolve()));
            }, c.startAt * unit),
          ),
        ),
    ),
  );
  return records;
}

/**
 * Deno's `fetch` sends a request a second time, by itself, when a kept-alive connection closes
 * before the answer (docs/fetch.md; Node and Bun never do): the server of a `destroy` may see
 * one more copy of that attempt's request. That copy is the runtime's, not the pool's: left
 * out of what the pool is held to (how many requests a call made, where a POST went).
 */
function pooledHits<H extends { readonly e: number; readonly at: number; readonly fault: Fault }>(hits: readonly H[]): H[] {
  if (typeof (globalThis as { Deno?: unknown }).Deno !== 'object') return [...hits];
  const resent = new Set<H>();
  for (const h of hits) {
    if (h.fault.k !== 'destroy') continue;
    // At once: Deno sends the copy as soon as the connection closes (a pool's retry of the same endpoint waits its backoff).
    const next = hits.filter((o) => o.e === h.e && o.at >= h.at && o.at - h.at < 250 && o !== h && !resent.has(o)).sort((a, b) => a.at - b.at)[0];
    if (next !== undefined) resent.add(next);
  }
  return hits.filter((h) => !resent.has(h));
}
