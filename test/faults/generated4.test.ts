/**
 * Generated fault schedules for what generated.test.ts does not draw (same harness, same
 * nine properties, see there), on loopback servers and the real clock:
 *
 * - viem (`poolTransport` over viem `http`): `pin(name)`, `withEndpoint(fn)` with a
 *   two-request operation (re-run elsewhere as a whole), `quorum(2)` reads, `passSignal:
 *   false` (attempts run on in the background: no open-request check after close(), the
 *   rest holds); `chainId` in a third of the runs, here and over `webSocket` (a node asked its
 *   chain before its first request, through the same fault plan; the sends below draw it too;
 *   over http, with it, a server of another chain in four runs in five: property 11);
 * - sends (`eth_sendRawTransaction`) through viem (with `keccak256`) and ethers: the servers
 *   share one chain: a send a node processed has landed (later sends of it answer "already
 *   known"), or, in a "conflict" run, another transaction took the nonce ("nonce too low"
 *   and not found by hash). Checked besides the nine: a send resolves only with the hash of a
 *   transaction that landed, and never fails with the node's "already known" / "nonce too
 *   low" when it landed (the adapters look it up by hash);
 * - fetch: `throwOnHttpError` (a resolved Response is then a 2xx), `replay: 'always'`
 *   (property 8 does not apply), servers that check bearer tokens and rotate them mid-traffic,
 *   once or twice (the second right after the next token is handed out: fuzz5 R1); every
 *   request with a stale token gets 401: refresh, replay. Liveness is judged on rotating runs
 *   too, except where two rotations in a row may each fall within a round trip of a token.
 *
 * Seeded: `FC_SEED` (with `FC_PATH`) replays a run; `FC_ADAPTER4_RUNS` sets runs (default 12).
 */
import fc from 'fast-check';
import { http, keccak256, webSocket, type Transport } from 'viem';
import { socketClientCache } from 'viem/utils';
import { afterAll, describe, expect, test } from 'vitest';
import { isPoolError, type ExecuteOptions } from '../../src/index.js';
import { createPooledFetch, type PooledRequestInit } from '../../src/fetch/index.js';
import { poolTransport } from '../../src/viem/index.js';
import { PooledJsonRpcProvider, type PooledProviderOptions } from '../../src/ethers/index.js';
import { callAddress, callInBody, faultArb, serveWsFaults, type Fault, type Scenario, type ServerStats } from './gen.js';
import {
  check,
  closeRtt,
  defined,
  ethersAdapter,
  fetchRawAdapter,
  runScenario,
  seedOf,
  viemAdapter,
  type Adapter,
  type Built,
  type FetchExtra,
} from './harness.js';

const RUNS = Number(process.env['FC_ADAPTER4_RUNS'] ?? 12);
const FILE = 'test/faults/generated4.test.ts';

/** The extras of this file's adapters. */
interface X4 extends FetchExtra {
  /** viem: the way the call is made. */
  readonly op?: 'plain' | 'pin' | 'with' | 'quorum';
  /** viem `pin`: the endpoint pinned (index, modulo the endpoints). */
  readonly pinAt?: number;
  readonly passSignal?: boolean;
  /** Sends: another transaction took the nonce (nothing this run sends can land). */
  readonly conflict?: boolean;
  /** fetch: `throwOnHttpError`, `replay: 'always'`, servers that check rotating bearer tokens (rotation after n units). */
  readonly throwOnHttpError?: boolean;
  readonly replayAlways?: boolean;
  readonly rotateAt?: number | undefined;
  /** The first token handed out after the rotation is stale at once: the servers rotate again (fuzz5 R1). */
  readonly rotateAgain?: boolean;
}
const x4 = (x: FetchExtra): X4 => x as X4;

const healthyFault = (f: Fault): boolean => f.k === 'ok' && f.f <= 0.2;
const isHealthyEndpoint = (sc: Scenario, i: number): boolean => {
  const e = sc.endpoints[i];
  return e !== undefined && e.kind === 'server' && e.plan.every(healthyFault) && !(i === 1 && sc.killAt !== undefined);
};

// viem: pin, withEndpoint, quorum, passSignal -------------------------------------------

/** viem `withEndpoint` with a two-request operation (both on the endpoint the attempt holds). */
function twoRequests(
  t: ReturnType<typeof poolTransport>,
  args: (i: number, tag?: string) => { method: string; params: unknown[] },
  i: number,
  signal: AbortSignal | undefined,
  deadlineMs: number | undefined,
  retry: ExecuteOptions['retry'],
): Promise<unknown> {
  return t.withEndpoint(
    async (transport) => {
      const c = transport({});
      const a = await c.request(args(i));
      const b = await c.request(args(i, 'pending'));
      return a === b ? b : `mismatch ${String(a)} ${String(b)}`;
    },
    { ...(signal ? { signal } : {}), ...(deadlineMs !== undefined ? { deadlineMs } : {}), ...(retry !== undefined ? { retry } : {}) },
  );
}

const viemOps: Adapter = {
  ...viemAdapter,
  name: 'viem ops (pin, withEndpoint, quorum, passSignal)',
  extra: fc.record({
    method: fc.constant('GET' as const),
    token: fc.constant('none' as const),
    rpcMethod: fc.constant('eth_getBalance' as const),
    op: fc.constantFrom('plain' as const, 'pin' as const, 'with' as const, 'with' as const, 'quorum' as const),
    pinAt: fc.nat({ max: 3 }),
    passSignal: fc.boolean(),
    chainId: fc.constantFrom(undefined, undefined, 1),
    otherChain: fc.constantFrom(undefined, 0, 1, 2, 3),
  }),
  get liveExtra() {
    return this.extra;
  },
  perCallFor: (x) => x4(x).op === 'with',
  attributed: () => true,
  // withEndpoint's operation sends two requests; a quorum read runs legs on several endpoints.
  requestsPerAttempt: (x, n) => (x4(x).op === 'with' ? 2 : x4(x).op === 'quorum' ? n : 1),
  // A node is asked its chain (chainId) before its first request: one more round trip then.
  roundTripsPerAttempt: (x) => (x4(x).op === 'with' ? 2 : 1) + (x.chainId !== undefined ? 1 : 0),
  background: (x) => x4(x).passSignal === false,
  // A pinned call has nowhere to fail over: an answer from its healthy endpoint that comes later
  // than the attempt timeout on a busy machine ends it (the breaker opens; CI of the forty-ninth
  // session, seed 20261212: attempt 1 on e0 timed out after 46 ms, unit 45 ms, measured lag
  // 12 ms, while the CI's type check and runtime smokes ran beside it). Only that failure: the
  // pool kept its timeout, and nothing but the clock failed the call.
  excused: (error, x) => x4(x).op === 'pin' && isPoolError(error) && error.code === 'PIN_UNAVAILABLE' && isPoolError(error.cause) && error.cause.code === 'ATTEMPT_TIMEOUT',
  mayFail: (sc, x) => {
    const o = x4(x);
    // A pin is resolved when its call starts: a call pinned to e0 that runs across the swap
    // holds an endpoint that left the pool, and any attempt that fails after the swap (a
    // timeout on a busy machine) ends it with PIN_UNAVAILABLE, there being nowhere to retry
    // (CI, seed 20261212 path 0: attempt 1 on e0 timed out at 48 ms, unit 42 ms; docs/calls.md).
    if (o.op === 'pin') return !isHealthyEndpoint(sc, o.pinAt! % sc.endpoints.length) || (sc.swapAt !== undefined && o.pinAt! % sc.endpoints.length === 0);
    // A quorum of 2 needs two healthy endpoints (answers alike).
    if (o.op === 'quorum') return sc.endpoints.filter((_e, i) => isHealthyEndpoint(sc, i)).length < 2;
    return false;
  },
  build(urls, s, x, ep): Built {
    const o = x4(x);
    const t = poolTransport({ endpoints: urls.map((url, i) => ({ url, name: `e${i}`, ...ep })), http, ...defined(s), passSignal: o.passSignal !== false, ...(o.chainId !== undefined ? { chainId: o.chainId } : {}) });
    const inst = t({});
    const pinned = o.op === 'pin' ? t.pin(`e${o.pinAt! % urls.length}`)({}) : undefined;
    const quorum = o.op === 'quorum' ? t.quorum(2)({}) : undefined;
    const live = [...urls];
    const args = (i: number, tag = 'latest') => ({ method: 'eth_getBalance', params: [callAddress(i), tag] });
    return {
      close: () => t.close(),
      swap: (i, url) => {
        live[i] = url;
        t.pool.setEndpoints(live.map((u, j) => ({ name: `e${j}`, conn: http(u, { retryCount: 0 }), ...ep })));
      },
      call: (i, signal, deadlineMs, retry) => {
        const opts = signal ? { signal } : undefined;
        switch (o.op) {
          case 'pin':
            return pinned!.request(args(i), opts);
          case 'quorum':
            return quorum!.request(args(i), opts);
          case 'with':
            // A multi-request operation: both requests on the endpoint the attempt holds.
            return twoRequests(t, args, i, signal, deadlineMs, retry);
          default:
            return inst.request(args(i), opts);
        }
      },
    };
  },
  badFailure: (e, x) => {
    if (isPoolError(e) && (e.code === 'PIN_UNAVAILABLE' || e.code === 'QUORUM_NOT_MET') && x4(x).op !== 'plain' && x4(x).op !== 'with') return undefined;
    return viemAdapter.badFailure(e, x);
  },
};

/** withEndpoint with passSignal: false alone: the cell where an ended attempt's operation goes on. */
const viemWithBackground: Adapter = {
  ...viemOps,
  name: 'viem withEndpoint, passSignal: false',
  extra: fc.record({
    method: fc.constant('GET' as const),
    token: fc.constant('none' as const),
    rpcMethod: fc.constant('eth_getBalance' as const),
    op: fc.constant('with' as const),
    passSignal: fc.constant(false),
  }),
  // Answers that come after the attempt timed out are what lets an ended operation go on.
  fault: fc.oneof({ weight: 3, arbitrary: fc.record({ k: fc.constant('ok' as const), f: fc.constantFrom(1.5, 3) }) }, { weight: 2, arbitrary: viemAdapter.fault }),
};

/** The requests the pool handed to the webSocket transports in the run being made (runs are sequential). */
const wsHandOffs: { call: string | undefined; at: number }[] = [];

/** `factory` with every request its instances are handed logged in `wsHandOffs`. */
function logHandOffs(factory: Transport): Transport {
  return (params) => {
    const inst = factory(params);
    const request: typeof inst.request = (args, opts) => {
      wsHandOffs.push({ call: callInBody(JSON.stringify(args)), at: performance.now() });
      return inst.request(args, opts);
    };
    return { ...inst, request };
  };
}

/** viem's `webSocket` transports over this file's WebSocket servers: plain requests, pin, withEndpoint. */
const viemWs: Adapter = {
  ...viemOps,
  name: 'viem over webSocket (plain, pin, withEndpoint)',
  extra: fc.record({
    method: fc.constant('GET' as const),
    token: fc.constant('none' as const),
    rpcMethod: fc.constant('eth_getBalance' as const),
    op: fc.constantFrom('plain' as const, 'pin' as const, 'with' as const),
    pinAt: fc.nat({ max: 3 }),
    passSignal: fc.constant(true),
    chainId: fc.constantFrom(undefined, undefined, 1),
  }),
  serveWith: (plan, o) => serveWsFaults(plan, o),
  // viem's webSocket ignores a request's signal (a request runs to viem's own timeout) and
  // its socket clients (a cache of viem's, reconnecting) are the user's to close: the servers'
  // open requests and connections after close() are viem's, not the pool's. Pool timers and
  // signal listeners are still checked.
  background: () => true,
  // A request the pool hands to viem while its socket is still opening is sent once it
  // opens, after the call may have settled (an abort, a deadline, a hedge's answer): 81 ms
  // later for the process's first socket on a quiet machine (bench/notes/leftovers.md).
  handOffs: () => wsHandOffs,
  build(urls, s, x, ep): Built {
    const o = x4(x);
    const wsUrls = urls.map((u) => u.replace(/^http:/, 'ws:'));
    wsHandOffs.length = 0;
    // viem keeps one socket per URL in a cache of its own; the user closes them (here after the pool).
    const ws = (u: string) => logHandOffs(webSocket(u, { timeout: 5 * s.attemptTimeoutMs, keepAlive: false, reconnect: { attempts: 3, delay: Math.ceil(s.attemptTimeoutMs / 2) } }));
    const t = poolTransport({ endpoints: wsUrls.map((u, i) => ({ name: `e${i}`, transport: ws(u), ...ep })), ...defined(s), ...(o.chainId !== undefined ? { chainId: o.chainId } : {}) });
    const inst = t({});
    const pinned = o.op === 'pin' ? t.pin(`e${o.pinAt! % urls.length}`)({}) : undefined;
    const live = [...wsUrls];
    const args = (i: number, tag = 'latest') => ({ method: 'eth_getBalance', params: [callAddress(i), tag] });
    return {
      close: async () => {
        await t.close();
        const mine = new Set([...wsUrls, ...live]);
        const closeSockets = (): void => {
          for (const [id, client] of [...socketClientCache.entries()]) {
            if (mine.has((JSON.parse(id) as { url?: string }).url ?? '')) (client as { close(): void }).close();
          }
        };
        closeSockets();
        // A socket still connecting enters viem's cache once open: close those too.
        await new Promise((r) => setTimeout(r, s.attemptTimeoutMs));
        closeSockets();
      },
      swap: (i, url) => {
        live[i] = url.replace(/^http:/, 'ws:');
        t.pool.setEndpoints(live.map((u, j) => ({ name: `e${j}`, conn: ws(u), ...ep })));
      },
      call: (i, signal, deadlineMs, retry) => {
        const opts = signal ? { signal } : undefined;
        if (o.op === 'pin') return pinned!.request(args(i), opts);
        if (o.op === 'with') {
          return twoRequests(t, args, i, signal, deadlineMs, retry);
        }
        return inst.request(args(i), opts);
      },
    };
  },
};

// Sends: one chain behind every server --------------------------------------------------

/** The chain of the run being made (runs are sequential). */
const chain = { landed: new Set<string>(), hashes: new Set<string>(), conflict: false };

const DUP_TEXT = /already known|nonce too low/i;
/** A fault after which the node has the transaction (its answer may be lost on the way). */
const processes = (f: Fault): boolean => f.k === 'ok' || f.k === 'trickle' || f.k === 'hang' || f.k === 'reset-mid' || f.k === 'truncated' || f.k === 'endless' || f.k === 'malformed';

function parseRpc(body: string): { method?: string; params?: unknown[]; id?: unknown } {
  try {
    return JSON.parse(body) as { method?: string; params?: unknown[]; id?: unknown };
  } catch {
    return {};
  }
}

/** The raw transaction of caller `i`: a hex string that carries the caller's number (see gen.ts `callInBody`). */
const rawOf = (i: number): `0x${string}` => `${callAddress(i)}${'ab'.repeat(8)}` as `0x${string}`;

function sendServe(): ReturnType<NonNullable<Adapter['serve']>> {
  return {
    answer: (body) => {
      const p = parseRpc(body);
      const raw = p.params?.[0];
      const result = p.method === 'eth_sendRawTransaction' && typeof raw === 'string' ? keccak256(raw as `0x${string}`) : '0x1';
      return { status: 200, body: JSON.stringify({ jsonrpc: '2.0', id: p.id, result }) };
    },
    // A lookup by hash is answered from the chain at once, outside the plan.
    bypass: (body) => {
      const p = parseRpc(body);
      if (p.method !== 'eth_getTransactionByHash') return undefined;
      const hash = p.params?.[0];
      const tx = typeof hash === 'string' && chain.hashes.has(hash) ? { hash, nonce: '0x0' } : null;
      if (process.env['FC_DEBUG'] === '1') console.log(`lookup ${String(hash).slice(0, 10)} ${tx !== null} at ${Math.round(performance.now())}`);
      return { status: 200, body: JSON.stringify({ jsonrpc: '2.0', id: p.id, result: tx }) };
    },
    intercept: (body, fault) => {
      const p = parseRpc(body);
      const raw = p.params?.[0];
      if (p.method !== 'eth_sendRawTransaction' || typeof raw !== 'string') return fault;
      const answers = fault.k === 'ok' || fault.k === 'trickle';
      if (process.env['FC_DEBUG'] === '1') console.log(`send ${raw.slice(-20)} ${fault.k} landed ${chain.landed.has(raw)} at ${Math.round(performance.now())}`);
      if (chain.conflict) return answers ? { k: 'rpc-error', code: -32000, message: 'nonce too low' } : fault;
      if (chain.landed.has(raw)) return answers ? { k: 'rpc-error', code: -32000, message: 'already known' } : fault;
      if (processes(fault)) {
        chain.landed.add(raw);
        chain.hashes.add(keccak256(raw as `0x${string}`));
      }
      return fault;
    },
  };
}

const sendExtra = fc.record({
  method: fc.constant('GET' as const),
  token: fc.constant('none' as const),
  conflict: fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  chainId: fc.constantFrom(undefined, undefined, 1),
  otherChain: fc.constantFrom(undefined, 0, 1, 2, 3),
});

/** What the send checks add to an adapter's value and failure checks. */
function sendChecks(base: Adapter): Pick<Adapter, 'badValue' | 'badFailure'> {
  return {
    badValue: (v) => (typeof v === 'string' && chain.hashes.has(v) ? undefined : `a send resolved with ${JSON.stringify(v)}, not the hash of a transaction that landed`),
    badFailure: (e, x) => {
      if (!chain.conflict && !isPoolError(e) && DUP_TEXT.test(textOf(e))) return `a send failed with the node's duplicate answer though its transaction landed (the lookup by hash finds it): ${textOf(e).slice(0, 160)}`;
      return base.badFailure(e, x);
    },
  };
}

function textOf(e: unknown): string {
  const parts: string[] = [];
  for (let c: unknown = e, i = 0; typeof c === 'object' && c !== null && i < 8; c = (c as { cause?: unknown }).cause, i++) {
    for (const k of ['shortMessage', 'details', 'message']) {
      const v = (c as Record<string, unknown>)[k];
      if (typeof v === 'string') parts.push(v);
    }
  }
  return parts.join(' | ');
}

const SEND_ERRORS = [
  { code: -32005, message: 'limit exceeded' },
  { code: -32603, message: 'internal error' },
  { code: -32000, message: 'header not found' },
];

const viemSends: Adapter = {
  ...viemAdapter,
  name: 'viem sends (keccak256)',
  extra: sendExtra,
  get liveExtra() {
    return this.extra;
  },
  fault: faultArb([408, 429, 500, 502, 503, 401, 403], SEND_ERRORS),
  attributed: () => true,
  // A send and, after a duplicate answer, its lookup by hash.
  requestsPerAttempt: () => 2,
  roundTripsPerAttempt: (x) => 2 + (x.chainId !== undefined ? 1 : 0),
  mayFail: (_sc, x) => x4(x).conflict === true,
  serve: () => sendServe(),
  build(urls, s, x, ep): Built {
    chain.landed.clear();
    chain.hashes.clear();
    chain.conflict = x4(x).conflict === true;
    const t = poolTransport({ endpoints: urls.map((url, i) => ({ url, name: `e${i}`, ...ep })), http, keccak256, ...defined(s), ...(x.chainId !== undefined ? { chainId: x.chainId } : {}) });
    const inst = t({});
    const live = [...urls];
    return {
      close: () => t.close(),
      swap: (i, url) => {
        live[i] = url;
        t.pool.setEndpoints(live.map((u, j) => ({ name: `e${j}`, conn: http(u, { retryCount: 0 }), ...ep })));
      },
      call: (i, signal) => inst.request({ method: 'eth_sendRawTransaction', params: [rawOf(i)] }, signal ? { signal } : undefined),
    };
  },
  ...sendChecks(viemAdapter),
};

const ethersSends: Adapter = {
  ...ethersAdapter,
  name: 'ethers sends',
  extra: sendExtra,
  get liveExtra() {
    return this.extra;
  },
  fault: viemSends.fault,
  attributed: () => true,
  requestsPerAttempt: () => 2,
  roundTripsPerAttempt: (x) => 2 + (x.chainId !== undefined ? 1 : 0),
  mayFail: viemSends.mayFail!,
  serve: () => sendServe(),
  build(urls, s, x, ep): Built {
    chain.landed.clear();
    chain.hashes.clear();
    chain.conflict = x4(x).conflict === true;
    const p = new PooledJsonRpcProvider({ endpoints: urls.map((url, i) => ({ url, name: `e${i}`, ...ep })), network: 1, ...defined(s), ...(x.chainId !== undefined ? { chainId: x.chainId } : {}) } as PooledProviderOptions);
    const live = [...urls];
    return {
      close: () => p.close(),
      swap: (i, url) => {
        live[i] = url;
        p.pool.setEndpoints(live.map((u, j) => ({ name: `e${j}`, conn: { url: u }, ...ep })));
      },
      call: (i, signal, deadlineMs, retry) =>
        p.sendWith('eth_sendRawTransaction', [rawOf(i)], { ...(signal ? { signal } : {}), ...(deadlineMs !== undefined ? { deadlineMs } : {}), ...(retry !== undefined ? { retry } : {}) }),
    };
  },
  ...sendChecks(ethersAdapter),
};

// fetch: throwOnHttpError, replay 'always', rotating tokens ------------------------------

/** The token generation the servers accept now (rotated by the run). */
const tokens = { gen: 0 };
/** This run's rotation: when it happened and when tokens were handed out (performance.now()), and the unit. */
const rotation: { at: number | undefined; issued: number[]; unit: number; again: boolean } = { at: undefined, issued: [], unit: 0, again: false };

const fetchMore: Adapter = {
  ...fetchRawAdapter,
  name: 'fetch (throwOnHttpError, replay always, rotating tokens)',
  extra: fc
    .record({
      asRequest: fc.boolean(),
      method: fc.constantFrom('GET' as const, 'GET' as const, 'POST' as const, 'POST-key' as const, 'STREAM' as const),
      throwOnHttpError: fc.boolean(),
      replayAlways: fc.boolean(),
      rotateAt: fc.option(fc.constantFrom(0.5, 1, 2, 4), { nil: undefined }),
      rotateAgain: fc.boolean(),
      token: fc.constantFrom('none' as const, 'ok' as const, 'slow' as const),
    })
    .map((r) => (r.rotateAt !== undefined && r.token === 'none' ? { ...r, token: 'ok' as const } : r)),
  get liveExtra() {
    return fc.record({
      asRequest: fc.boolean(),
      method: fc.constantFrom('GET' as const, 'POST-key' as const),
      throwOnHttpError: fc.boolean(),
      replayAlways: fc.boolean(),
      rotateAt: fc.option(fc.constantFrom(0.5, 1, 2, 4), { nil: undefined }),
      rotateAgain: fc.boolean(),
      token: fc.constantFrom('ok' as const, 'slow' as const),
    });
  },
  // Documented limit (docs/fetch.md): an attempt refreshes at most twice, so two rotations in
  // a row, each within one round trip of the token before, may end a call UNAUTHORIZED: with
  // rotateAgain, a token handed out in the unit before the first rotation (its request may
  // meet the rotation, and its refresh the second). Every other rotating run is judged.
  mayFail: (_sc, x) => x4(x).rotateAgain === true && rotation.at !== undefined && rotation.issued.some((t) => t > rotation.at! - rotation.unit && t <= rotation.at!),
  // Each rotation may cost a healthy call one more 401 (a round trip, under a quarter unit)
  // and one more refresh (half a unit when slow).
  extraUnits: (x) => (x4(x).rotateAt === undefined ? 0 : x4(x).rotateAgain === true ? 2 : 1) * (x.token === 'slow' ? 0.75 : 0.25),
  serve: (x) =>
    x4(x).rotateAt === undefined
      ? {}
      : {
          // A request with a stale (or no) token is refused before anything is processed.
          check: (headers: Record<string, string | string[] | undefined>) => headers['authorization'] === `Bearer t${tokens.gen}`,
        },
  build(urls, s, x, ep): Built {
    const o = x4(x);
    tokens.gen = 0;
    Object.assign(rotation, { at: undefined, issued: [], unit: s.attemptTimeoutMs, again: o.rotateAgain === true });
    const getToken =
      o.token === 'none'
        ? undefined
        : async (_endpoint: string, signal: AbortSignal): Promise<string> => {
            if (o.token === 'slow') await new Promise<void>((resolve, reject) => {
              const t = setTimeout(resolve, s.attemptTimeoutMs / 2);
              signal.addEventListener('abort', () => (clearTimeout(t), reject(signal.reason as Error)), { once: true });
            });
            const token = `t${tokens.gen}`;
            rotation.issued.push(performance.now());
            // The first token after the rotation is stale at once.
            if (rotation.again && rotation.at !== undefined) {
              rotation.again = false;
              tokens.gen++;
            }
            return token;
          };
    const pf = createPooledFetch({
      endpoints: urls.map((url, i) => ({ url, name: `e${i}`, ...ep })),
      ...defined(s),
      ...(getToken !== undefined ? { getToken } : {}),
      throwOnHttpError: o.throwOnHttpError === true,
      ...(o.replayAlways === true ? { replay: 'always' as const } : {}),
    });
    const rotating = o.rotateAt === undefined ? undefined : setTimeout(() => ((rotation.at = performance.now()), tokens.gen++), o.rotateAt * s.attemptTimeoutMs);
    const conns = [...urls];
    const handed = new Map<number, AbortSignal>();
    return {
      // The pool watches a Request's own signal (which follows the caller's).
      signalFor: (i) => handed.get(i),
      close: () => (clearTimeout(rotating), pf.pool.close()),
      swap: (i, url) => {
        conns[i] = url;
        pf.pool.setEndpoints(conns.map((conn, j) => ({ name: `e${j}`, conn, ...ep })));
      },
      call: async (i, signal, deadlineMs, retry) => {
        const pool = { ...(deadlineMs !== undefined ? { deadlineMs } : {}), ...(retry !== undefined ? { retry } : {}) };
        const init = { ...fetchInit(x, i), ...(signal ? { signal } : {}), pool } as PooledRequestInit & { parse?: undefined };
        const input = o.asRequest === true && x.method !== 'STREAM' ? new Request(`${urls[0]}/x`, { ...fetchInit(x, i), ...(signal ? { signal } : {}) }) : '/x';
        if (input instanceof Request && signal) handed.set(i, input.signal);
        const res = input instanceof Request ? await pf(input, { pool } as PooledRequestInit & { parse?: undefined }) : await pf(input, init);
        await res.body?.cancel().catch(() => undefined);
        return res.status;
      },
    };
  },
  badValue: (v, x) => (v === 200 || (x4(x).throwOnHttpError !== true && typeof v === 'number' && v >= 400) ? undefined : `wrong status ${String(v)}${x4(x).throwOnHttpError === true ? ' (throwOnHttpError)' : ''}`),
  // replay: 'always' sends a POST again by design: property 8 is for the default.
  replaysPost: (x) => x4(x).replayAlways === true,
  attributed: () => true,
};

function fetchInit(x: FetchExtra, i: number): RequestInit {
  const headers: Record<string, string> = { 'x-call': String(i) };
  const post = x.method === 'POST' && x4(x).replayAlways === true ? 'POST-always' : x.method;
  switch (post) {
    case 'GET':
      return { headers };
    case 'POST':
    case 'POST-always':
      return { method: 'POST', headers, body: '{"q":1}' };
    case 'POST-key':
      return { method: 'POST', headers: { ...headers, 'idempotency-key': `k-${i}` }, body: '{"q":1}' };
    default:
      return { method: 'PUT', headers, body: new ReadableStream({ start: (c) => (c.enqueue(new TextEncoder().encode('{"q":1}')), c.close()) }), duplex: 'half' } as RequestInit;
  }
}

afterAll(() => closeRtt());

describe('generated faults, fourth round: what generated.test.ts does not draw', () => {
  test('viem: pin, withEndpoint, quorum, passSignal', () => check(viemOps, seedOf(20261211), RUNS, false, FILE), 120_000);
  test('liveness: viem pin, withEndpoint, passSignal', () => check(viemOps, seedOf(20261212), RUNS, true, FILE), 120_000);
  test('viem: withEndpoint with passSignal: false', () => check(viemWithBackground, seedOf(20261219), RUNS + 6, false, FILE), 120_000);
  test('viem over webSocket', () => check(viemWs, seedOf(20261220), RUNS, false, FILE), 120_000);
  test('liveness: viem over webSocket', () => check(viemWs, seedOf(20261223), RUNS, true, FILE), 120_000);
  // The CI flake of NOTES-ci7 ("a request 84 ms after the call settled"): a request handed to
  // viem while its socket opens, sent when it opens, after the caller aborted. Property 6
  // holds by the hand-offs; the arrival alone would break it however wide the lag margin.
  test('viem over webSocket: a request handed over while the socket opens may arrive after an abort', async () => {
    const served: ServerStats[] = [];
    const slowOpen: Adapter = { ...viemWs, serveWith: async (plan, o) => (served.push(await serveWsFaults(plan, { ...o, upgradeDelayMs: 2 * o.unitMs })), served.at(-1)!) };
    const opts = { strategy: 'ordered', breakerMode: 'fail-fast', maxConcurrentCalls: undefined, permitScope: 'call', perSecond: undefined, maxInFlight: undefined } as const;
    const sc: Scenario = {
      endpoints: [{ kind: 'server', plan: [{ k: 'ok', f: 0 }], closeConnections: false }],
      deadline: 4,
      maxAttempts: undefined,
      hedge: undefined,
      breakerThreshold: 5,
      callers: [{ startAt: 0, abortAt: 0.25, deadline: undefined, retry: undefined }],
      killAt: undefined,
      swapAt: undefined,
      sharedSignal: false,
      closeAt: undefined,
      opts,
    };
    const o = await runScenario(slowOpen, sc, { method: 'GET', token: 'none', rpcMethod: 'eth_getBalance', op: 'plain', passSignal: true } as X4);
    expect(o.violations).toEqual([]);
    expect(o.codes).toEqual({ ABORTED: 1 });
    // The one request reached the server, two units after the start: long after the abort.
    expect(served[0]!.log.map((h) => h.call)).toEqual(['0']);
  }, 30_000);
  test('viem: eth_sendRawTransaction with keccak256', () => check(viemSends, seedOf(20261213), RUNS, false, FILE), 120_000);
  test('ethers: eth_sendRawTransaction', () => check(ethersSends, seedOf(20261214), RUNS, false, FILE), 120_000);
  test('liveness: sends through viem and ethers', async () => {
    await check(viemSends, seedOf(20261215), Math.ceil(RUNS / 2), true, FILE);
    await check(ethersSends, seedOf(20261216), Math.ceil(RUNS / 2), true, FILE);
  }, 120_000);
  test('fetch: throwOnHttpError, replay always, rotating tokens', () => check(fetchMore, seedOf(20261217), RUNS, false, FILE), 120_000);
  // More runs: they are cheap, and a rotation right after a refresh (fuzz5 R1) needs a few to meet a call.
  test('liveness: fetch with rotating tokens', () => check(fetchMore, seedOf(20261218), RUNS + 8, true, FILE), 120_000);
});

