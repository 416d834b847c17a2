/**
 * `poolTransport`: a viem transport over a `Pool` of viem transports.
 *
 * Each endpoint's connection is a viem transport factory (`http(url)`, `webSocket(url)`,
 * ...), or a URL turned into one with the user's own `http` (no static import of viem
 * here). A client built on it sees one transport with the same `request` surface; every
 * request becomes one `pool.execute`, and each attempt calls the chosen endpoint's
 * transport (built with `retryCount: 0`; one that kept a `retryCount` of its own is passed
 * `retryCount: 0` per request, so viem's retries never multiply the pool's) with the
 * attempt's `signal` (so a timed-out attempt aborts its fetch; viem 2.x passes a
 * per-request signal to `fetch`).
 *
 * What the caller sees: a node's answer (a revert, invalid params, nonce too low, ...) is
 * rethrown as viem's own error, so viem's revert decoding keeps working, with every URL
 * in it cut to its host (viem puts the endpoint URL, API key included, in its messages);
 * anything else (every endpoint down, rate-limited, timed out, the deadline passed) is a
 * `PoolError` whose `cause` is the last error.
 *
 * viem's per-request `retryCount`, `retryDelay` and `dedupe` options are not applied: the
 * pool owns retries, and each request is sent as asked.
 *
 * With viem's `custom` in `options.custom`, endpoints may also be EIP-1193 providers, and
 * requests to `custom` and `http` endpoint transports skip those transports' own viem
 * wrapper (./direct.ts): about 2 KB less held per request in flight and less CPU, with
 * the same errors. Without it, the same is done once viem's `custom` has been loaded at
 * run time and each endpoint transport found to be of that copy (./autoload.ts);
 * `custom: false` turns that off.
 *
 * `pin(name)` gives a transport bound to one endpoint; `withEndpoint(fn)` runs a multi-
 * request operation (read the nonce, then send) on a single endpoint and, if it fails in
 * a way another endpoint could fix, runs the whole of it again elsewhere.
 */
import { TAKES_ATTEMPT, type Classifier, type ClassifyResult, type FailedAttempt } from '../base/classify.js';
import type { AttemptContext } from '../call/context.js';
import { connectionWatch, endpointCurrent } from '../rpc/connections.js';
import { invalidOption, isPoolError, PoolError, throwIt } from '../base/errors.js';
import { POOL_ALIASES, POOL_KEYS } from '../options/resolve.js';
import { checkFunction, checkKeys, finite, type KnownKeys } from '../options/validate.js';
import type { ExecuteOptions } from '../options/options.js';
import { Pool, executorAs } from '../pool.js';
import { classifyViemError, gatherEvidence, saysMethodUnsupported } from './classify.js';
import { alreadyLanded } from './landed.js';
import { noSubscriptions, UnsupportedMemory } from './unsupported.js';
import type { RequestFn, RpcArgs, RpcRequestOptions, TransportFactory, TransportInstance, TransportParams } from './types.js';
import { replayWith, sendDirect, type Replay } from './direct.js';
import { instanceUse, NO_SIGNAL, type Built } from './instance.js';
import { loadViem } from './autoload.js';
import { endpointSetter, toEndpoints, type MadeFrom } from './endpoints.js';
import type { PoolTransport, PoolTransportOptions } from './options.js';
import { RpcReads } from '../rpc/reads.js';
import { isEndpointTaken, TAKEN_CLASS } from '../rpc/quorum.js';
import { isSendMethod } from '../rpc/methods.js';
import { isNodeSigned, notRepeatedClass, notRepeatedFailure, SendGuard, sendGuarded } from './node-signed.js';
import { FilterNotFoundError } from '../rpc/filters.js';
import { rpcAnswerKey } from '../rpc/answer-key.js';
import { redactError } from '../extras/redact.js';
import { HeadRouting, unfitOf } from '../rpc/head-poll.js';
import { fitForLatest } from '../rpc/fit-for-latest.js';
import { ChainCheck, chainCheckClass, checkChainId, NodeLeftError } from '../rpc/chain-check.js';
import { onPoolClose, poolStateOf, type CloseOptions } from '../pool-core.js';

const ANSWERS: ReadonlySet<string> = new Set(['permanent', 'retry-narrower', 'unsupported']);
/** Pool failures after which the last error may be a node's answer (not an abort, close or deadline). */
const ANSWER_CODES: ReadonlySet<string> = new Set(['PERMANENT', 'RETRY_NARROWER', 'RETRIES_EXHAUSTED', 'NO_ENDPOINT', 'PIN_UNAVAILABLE']);
const SEND_RAW = 'eth_sendRawTransaction';
const BLOCK_NUMBER: RpcArgs = { method: 'eth_blockNumber', params: [] };
const CHAIN_ID: RpcArgs = { method: 'eth_chainId', params: [] };
const HEDGED_READ: ExecuteOptions = { idempotent: true };
const TRANSPORT_KEYS: Record<keyof PoolTransportOptions, true> & KnownKeys = {
  ...POOL_KEYS,
  http: true,
  custom: true,
  passSignal: true,
  quorum: true,
  heads: true,
  coalesce: true,
  keccak256: true,
  rememberUnsupportedMs: true,
  chainId: true,
  key: true,
  name: true,
};

export function poolTransport(options: PoolTransportOptions): PoolTransport {
  if (typeof options === 'object' && options !== null) checkKeys('options', options as unknown as Record<string, unknown>, TRANSPORT_KEYS, POOL_ALIASES);
  const {
    endpoints,
    http,
    custom,
    classify: override,
    passSignal = true,
    keccak256,
    rememberUnsupportedMs = 600_000,
    key = 'endpointPool',
    name = 'Endpoint pool',
    quorum,
    coalesce,
    heads,
    chainId,
    ...poolOptions
  } = options;
  /** Where each error came from: the request's method (for overrides) and the endpoint. */
  const origin = new WeakMap<object, { method: string; endpoint: string | undefined }>();
  let unsupported: UnsupportedMemory;
  /** Cuts the URLs in a failed request's error to their host and remembers where it came from. */
  const noteFailure = (error: unknown, method: string, endpoint: string | undefined): void => {
    // viem's errors carry the request URL (and an API key in its path): cut it to the host.
    redactError(error);
    if (typeof error === 'object' && error !== null && !origin.has(error)) origin.set(error, { method, endpoint });
  };
  // The pool calls it with the failed attempt too (TAKES_ATTEMPT): a plain request's error
  // is noted here, on the pool's failure path, rather than by a handler on every request.
  /** The class of an error, with no side effect (`unwrap` asks it too, of a call's last error). */
  const classOf = (error: unknown): ClassifyResult => {
    if (isEndpointTaken(error)) return TAKEN_CLASS;
    const notRepeated = notRepeatedClass(error);
    if (notRepeated !== undefined) return notRepeated;
    const checked = chainCheckClass(error);
    if (checked !== undefined) return checked;
    const from = typeof error === 'object' && error !== null ? origin.get(error) : undefined;
    return override?.(error, from?.method) ?? classifyViemError(error);
  };
  const classify = ((error: unknown, at?: FailedAttempt): ClassifyResult => {
    if (at !== undefined && at.tag !== undefined) noteFailure(error, (at.tag as RpcArgs).method, at.endpoint);
    const c = classOf(error);
    const from = typeof error === 'object' && error !== null && !isEndpointTaken(error) ? origin.get(error) : undefined;
    // A refusal from a node that lost its name while the attempt ran says nothing of the one that has it now.
    if (from?.endpoint !== undefined && (at === undefined || endpointCurrent(at)) && (c === 'unsupported' || (typeof c === 'object' && c.class === 'unsupported'))) {
      unsupported.remember(from.method, from.endpoint, error, pool.clock.now(), !saysMethodUnsupported(gatherEvidence(error)));
    }
    return c;
  }) as Classifier & { [TAKES_ATTEMPT]?: true };
  classify[TAKES_ATTEMPT] = true;
  checkFunction('http', http, true);
  if (custom !== false) checkFunction('custom', custom, true);
  checkFunction('classify', override, true);
  checkFunction('keccak256', keccak256, true);
  if (typeof passSignal !== 'boolean') throw invalidOption('passSignal', 'a boolean', passSignal);
  finite('rememberUnsupportedMs', rememberUnsupportedMs, 0);
  const chain = checkChainId(chainId);
  const given = custom === false ? undefined : custom;
  const made: MadeFrom = new WeakMap();
  const pool = new Pool<TransportFactory>({ ...poolOptions, classify, endpoints: toEndpoints(endpoints, http, given, made) });
  unsupported = new UnsupportedMemory(rememberUnsupportedMs, connectionWatch(pool));
  const check = chain === undefined ? undefined : new ChainCheck(chain, pool.clock, poolStateOf(pool).opts.attemptTimeoutMs);
  /** `send()` once `b`'s node has answered the chain asked for (`chainId`); nothing is sent when the attempt ended or its endpoint lost the node meanwhile. */
  const onChain = (b: Built, ctx: AttemptContext, send: () => Promise<unknown>): Promise<unknown> =>
    check === undefined || check.passed(b.factory)
      ? send()
      : check.verify(b.factory, ctx.endpoint, ctx.signal, (signal) => attempt(b, CHAIN_ID, b.hears ? signal : undefined, undefined)).then(() => (ctx.signal.aborted ? throwIt(ctx.signal.reason) : endpointCurrent(ctx) ? send() : throwIt(new NodeLeftError(ctx.endpoint))));
  const replay: Replay | undefined = given === undefined ? undefined : replayWith(given);
  // Without a `custom`, viem is loaded at run time (./autoload.ts); started here, once per process.
  const auto = custom === undefined;
  if (auto) void loadViem();
  const builtOf = instanceUse(passSignal, replay, auto);
  /** The poll's own instances of the endpoint transports, built at its first tick. */
  let pollInstances: ((factory: TransportFactory) => Built) | undefined;
  const routing =
    heads === undefined
      ? undefined
      : new HeadRouting(heads, pool, (exec) => {
          const instanceOf = (pollInstances ??= instances({}));
          return pool.execute((factory, ctx) => {
            const b = instanceOf(factory);
            return onChain(b, ctx, () => attempt(b, BLOCK_NUMBER, b.hears ? ctx.signal : undefined, ctx));
          }, exec);
        }, connectionWatch(pool));
  // The pool's close() (the transport's, or the user's on `transport.pool`) ends the poll at once.
  if (routing !== undefined) onPoolClose(pool, () => routing.stop());
  const reads = new RpcReads(
    { ...(quorum !== undefined ? { quorum } : {}), ...(coalesce !== undefined ? { coalesce } : {}) },
    pool,
    rpcAnswerKey,
    routing === undefined ? undefined : unfitOf(routing),
  );
  // viem reads the transport's timeout for CCIP gateway requests; give it the attempt timeout.
  const timeout = poolOptions.attemptTimeoutMs ?? 10_000;
  const configTimeout = Number.isFinite(timeout) ? { timeout } : {};

  /** The node's answer itself when the call failed on one; otherwise the PoolError. */
  const unwrap = (error: unknown): unknown => {
    const notRepeated = notRepeatedFailure(error);
    if (notRepeated !== error) return notRepeated;
    // Later calls, every endpoint disabled by the chain check: NO_ENDPOINT, saying so.
    if (check !== undefined && isPoolError(error) && error.code === 'NO_ENDPOINT' && error.cause === undefined) return check.explain(error, poolStateOf(pool).endpoints);
    // A quorum leg's taken endpoint, or one that lost its node while asked its chain, is no node's answer: the PoolError says what happened.
    if (!isPoolError(error) || error.cause === undefined || !ANSWER_CODES.has(error.code) || isEndpointTaken(error.cause)) return error;
    if (error.code === 'PERMANENT' || error.code === 'RETRY_NARROWER') return error.cause;
    // Not `classify`: a call's last error may come from a node that has since lost its name, whose refusal must not be remembered for the one that has it now.
    const c = classOf(error.cause);
    return ANSWERS.has(typeof c === 'string' ? c : c.class) ? error.cause : error;
  };

  /** One client's instances of the endpoint transports (each built once, with no retries, and held weakly: a transport `setEndpoints` took out goes with its instance), and whether each hears a signal. */
  const instances = (params: TransportParams) => {
    const built = new WeakMap<TransportFactory, Built>();
    return (factory: TransportFactory): Built => {
      let b = built.get(factory);
      if (b === undefined) {
        b = builtOf(factory({ ...params, retryCount: 0 }), factory);
        built.set(factory, b);
      }
      return b;
    };
  };

  /**
   * One attempt on transport `t`. Written with `then` rather than `async`/`await`: each
   * async layer keeps a generator and its await closures alive while the request is in
   * flight (about 440 B), and this runs once per attempt.
   */
  const attempt = (b: Built, args: RpcArgs, signal: AbortSignal | undefined, ctx: AttemptContext | undefined): Promise<unknown> => {
    const opts: RpcRequestOptions = signal === undefined ? NO_SIGNAL : { retryCount: 0, signal };
    const sentAt = routing === undefined || ctx === undefined ? 0 : routing.sending(args.method);
    let sent: Promise<unknown>;
    try {
      sent = b.raw !== undefined ? sendDirect(b.raw, b.replay!, args, signal) : Promise.resolve(b.t.request(args, opts));
    } catch (error) {
      sent = Promise.reject(error);
    }
    const onAnswer =
      routing === undefined || ctx === undefined
        ? undefined
        : (result: unknown): unknown => {
            // Not from a node that has lost the endpoint's name since (see `endpointCurrent`).
            if (endpointCurrent(ctx)) routing.observe(ctx.endpoint, args.method, args.params, result, sentAt);
            return result;
          };
    return sent.then(onAnswer, (error: unknown) => attemptFailed(b.t, args, ctx?.endpoint, opts, error));
  };
  // Not async: its rejected promise would wait, with no handler, to be adopted (base/errors.ts `throwIt`).
  const attemptFailed = (t: TransportInstance, args: RpcArgs, endpoint: string | undefined, opts: RpcRequestOptions, error: unknown): unknown => {
    noteFailure(error, args.method, endpoint);
    if (keccak256 !== undefined && args.method === SEND_RAW) return alreadyLanded(t, args, error, keccak256, opts).then((hash) => hash ?? throwIt(error));
    throw error;
  };

  const build = (pin: string | undefined, need?: number): TransportFactory => (params) => {
    // A client of another chain than `chainId`: every node would be disabled at its first request.
    const clientChain = (params.chain as { id?: unknown } | undefined)?.id;
    if (chain !== undefined && typeof clientChain === 'number' && clientChain !== chain) throw invalidOption('chainId', `the chain of the client (${clientChain})`, chain);
    const instanceOf = instances(params);
    /** The operation of a request: one attempt on the endpoint's transport (a throw becomes a rejection, as from an async function). */
    const operation =
      (args: RpcArgs) =>
      (factory: TransportFactory, ctx: AttemptContext): Promise<unknown> => {
        try {
          const b = instanceOf(factory);
          return onChain(b, ctx, () => attempt(b, args, b.hears ? ctx.signal : undefined, ctx));
        } catch (error) {
          return Promise.reject(error);
        }
      };
    /** The operation of a node-signed send: sent once, never again after it may have reached a node (./node-signed.ts). */
    const signedOperation = (args: RpcArgs) => {
      const guard = new SendGuard(args.method);
      return (factory: TransportFactory, ctx: AttemptContext): Promise<unknown> => {
        try {
          guard.enter();
          const b = instanceOf(factory);
          return onChain(b, ctx, () => sendGuarded(guard, args.method, ctx.endpoint, ctx.signal, () => attempt(b, args, b.hears ? ctx.signal : undefined, ctx), classOf));
        } catch (error) {
          return Promise.reject(error);
        }
      };
    };
    /**
     * The operation of a plain request, shared by all of them: the request rides on the
     * call as its tag, and the endpoint's promise goes to the pool as it is (its error is
     * redacted and noted by `classify`). No closure, no extra promise per request.
     */
    const plainOperation = (factory: TransportFactory, ctx: AttemptContext): Promise<unknown> => {
      try {
        const b = instanceOf(factory);
        if (check !== undefined && !b.onChain) {
          if (!check.passed(factory)) return onChain(b, ctx, () => b.send((ctx as unknown as FailedAttempt).tag as RpcArgs, ctx));
          b.onChain = true;
        }
        return b.send((ctx as unknown as FailedAttempt).tag as RpcArgs, ctx);
      } catch (error) {
        return Promise.reject(error);
      }
    };
    // Most requests need none of the per-request machinery below (no caller signal, pin,
    // quorum, coalescing, remembered "unsupported" answer or head tracking): they go
    // straight to one `pool.execute` on the pool's shared plan, with no async layer.
    const plain = pin === undefined && need === undefined && routing === undefined;
    const run = executorAs(pool, unwrap);
    // With the pool's `hedge`, a plain read is hedged: it runs on a plan marked idempotent (rpc/reads.ts).
    const runRead = reads.hedgeReads ? executorAs(pool, unwrap, HEDGED_READ) : run;
    const slow = async (args: RpcArgs, reqOptions?: RpcRequestOptions): Promise<unknown> => {
      if (args.method === 'eth_subscribe' || args.method === 'eth_unsubscribe') throw noSubscriptions(args.method);
      // As the pool's calls, not a refusal remembered from before close().
      if (pool.closed) throw new PoolError('CLOSED', 'the pool is closed');
      const skip = unsupported.excluded(args.method, pool.endpointNames, pool.clock.now());
      if (skip !== undefined && (skip.all || (pin !== undefined && skip.names.includes(pin)))) throw skip.error;
      // One literal (the pool reads a field set to `undefined` as one not given): spreads of
      // optional parts would take V8's slow path on Node 20.
      const exec = { signal: reqOptions?.signal, pin, exclude: skip?.names } as ExecuteOptions;
      try {
        const op = isNodeSigned(args.method) ? signedOperation(args) : operation(args);
        return await reads.request(args.method, args.params, exec, reqOptions?.quorum ?? need, (e, guard, params) => {
          const o = params === undefined ? op : operation({ method: args.method, params } as RpcArgs);
          return pool.execute(guard === undefined ? o : (factory, ctx) => {
            try {
              guard(ctx.endpoint, ctx.attempt);
            } catch (error) {
              return Promise.reject(error);
            }
            return o(factory, ctx);
          }, e);
        });
      } catch (error) {
        // A filter whose endpoint left the pool: the node's "filter not found", as viem's error when it can map it.
        if (error instanceof FilterNotFoundError) {
          const map = replay ?? (auto ? (await loadViem())?.replay : undefined);
          if (map !== undefined) return map(args, { code: error.code, message: error.message });
        }
        throw unwrap(error);
      }
    };
    const request = ((args: RpcArgs, reqOptions?: RpcRequestOptions): Promise<unknown> => {
      try {
        if (plain && reqOptions?.signal === undefined && reqOptions?.quorum === undefined && !unsupported.has(args.method) && reads.isPlain(args.method) && args.method !== 'eth_subscribe' && args.method !== 'eth_unsubscribe') {
          if (keccak256 !== undefined && args.method === SEND_RAW) return run(operation(args));
          if (isNodeSigned(args.method)) return run(signedOperation(args));
          return runRead === run || isSendMethod(args.method) ? run(plainOperation, args) : runRead(plainOperation, args);
        }
      } catch (error) {
        return Promise.reject(error);
      }
      return slow(args, reqOptions);
    }) as RequestFn;
    return { config: { key, name, type: 'endpointPool', request, retryCount: 0, ...configTimeout }, request, value: { pool } };
  };

  const transport = build(undefined);
  return Object.assign(transport, {
    pool,
    setEndpoints: endpointSetter(pool, made, http, given),
    pin: (endpoint: string) => build(endpoint),
    quorum: (need: number) => build(undefined, need),
    readStats: () => reads.stats(),
    heads: () => routing?.snapshot(),
    close: (options?: CloseOptions) => {
      const closing = pool.close(options); // a bad option rejects, and stops nothing
      if (pool.closed) routing?.stop();
      return closing;
    },
    async withEndpoint<T>(fn: (transport: TransportFactory, endpoint: string) => Promise<T>, execOptions?: ExecuteOptions): Promise<T> {
      // Called inside the attempt, a non-function would fail as the operation's own TypeError.
      if (typeof fn !== 'function') throw invalidOption('fn', 'a function (transport, endpoint) => Promise', fn);
      // Once a node-signed send of `fn` was answered or may have reached a node, `fn` is not run again elsewhere.
      let guard: SendGuard | undefined;
      try {
        return await pool.execute((factory, ctx) => {
          try {
            guard?.enter();
          } catch (error) {
            return Promise.reject(error);
          }
          const direct: TransportFactory = (params) => {
            const b = builtOf(factory({ ...params, retryCount: 0 }), factory);
            const send = (args: RpcArgs) => () => attempt(b, args, b.hears ? ctx.signal : undefined, undefined);
            // An attempt that has ended (timed out, its call settled) sends nothing more, even
            // when its signal is not handed to the transport (passSignal: false).
            const request = ((args: RpcArgs) =>
              ctx.signal.aborted
                ? Promise.reject(ctx.signal.reason)
                : onChain(b, ctx, isNodeSigned(args.method) ? () => sendGuarded((guard ??= new SendGuard(args.method)), args.method, ctx.endpoint, ctx.signal, send(args), classOf) : send(args))) as RequestFn;
            return { config: { key, name, type: 'endpointPool', request, retryCount: 0 }, request, value: { pool, endpoint: ctx.endpoint } };
          };
          return fn(direct, ctx.endpoint);
        }, fitForLatest(routing, execOptions));
      } catch (error) {
        throw unwrap(error);
      }
    },
  });
}
