/**
 * `PooledJsonRpcProvider`: an ethers v6 `JsonRpcApiProvider` whose JSON-RPC requests go
 * through a `Pool` of HTTP endpoints.
 *
 * Each request ethers hands to `_send` becomes one `pool.execute` (selection, breakers,
 * limits, retries, deadline), and each attempt is a single `fetch` POST with the
 * attempt's signal. ethers' own machinery that would multiply or blur this is switched
 * off: batching (`batchMaxCount: 1`, so one request is one upstream POST and one pool
 * call), `FetchRequest`'s 429 throttling retries (not used: requests go through `fetch`
 * directly), and the network detection loop once a `network` is given (`staticNetwork`).
 * Events are polled (`polling: true`) because a filter id lives on one node only.
 *
 * A resent `eth_sendRawTransaction` answered "already known" / "nonce too low" is checked
 * with `eth_getTransactionByHash` on the same endpoint: if the node has that transaction
 * (an earlier attempt landed it, its answer lost), the send resolves with its hash.
 *
 * A node's JSON-RPC error answer is handed back to ethers as that answer, so ethers makes
 * its usual errors (`CALL_EXCEPTION` with revert data, `INSUFFICIENT_FUNDS`, ...); any other
 * failure (every endpoint down, rate-limited, the deadline passed) rejects with the
 * `PoolError`, whose `cause` is the last error.
 *
 * Quorum reads, coalescing and head-aware routing (`quorum`, `coalesce`, `heads`) are
 * shared with the viem adapter (see docs/rpc.md); `sendWith(method, params, { quorum })`
 * asks a quorum for one call.
 */
import { JsonRpcApiProvider, Network, type JsonRpcApiProviderOptions, type JsonRpcError, type JsonRpcPayload, type JsonRpcResult, type Networkish } from 'ethers';
import type { ClassifyResult, Classifier } from '../base/classify.js';
import { invalidOption, isPoolError } from '../base/errors.js';
import { checkFunction, finite } from '../options/validate.js';
import { checkUrlOption } from '../extras/url-option.js';
import { DEFAULT_MAX_RETRY_AFTER_MS } from '../fetch/retry-after.js';
import { hostOf } from '../extras/host.js';
import type { EndpointConfig, ExecuteOptions, PoolOptions } from '../options/options.js';
import { Pool } from '../pool.js';
import { wallNow } from '../base/clock.js';
import { rpcAnswerKey } from '../rpc/answer-key.js';
import { RpcReads, type Guard, type RpcReadOptions, type RpcReadsStats } from '../rpc/reads.js';
import { HeadRouting, unfitOf } from '../rpc/head-poll.js';
import { onPoolClose, poolStateOf, type CloseOptions } from '../pool-core.js';
import { ChainCheck, chainCheckClass, ChainMismatchError, checkChainId, NodeLeftError } from '../rpc/chain-check.js';
import { FilterNotFoundError } from '../rpc/filters.js';
import type { HeadOptions, HeadSnapshot } from '../rpc/heads.js';
import { classifyEthersError } from './classify.js';
import { postJsonRpc, RpcAnswerError, type FetchFn, type PostOptions, type RpcConnection } from './http.js';
import { abortRoute } from '../fetch/dispatcher.js';
import { untrackedSignal } from '../call/context.js';
import { connectionOf, connectionWatch, endpointCurrent } from '../rpc/connections.js';
import { landedHash } from './landed.js';
import { isNodeSigned, notRepeatedClass, notRepeatedFailure, SendGuard, sendGuarded } from '../viem/node-signed.js';

/** An endpoint: a URL (and optional headers) plus the pool's per-endpoint settings. */
export type EthersEndpoint = Omit<EndpointConfig<RpcConnection>, 'conn' | 'name'> & {
  readonly url: string;
  /** @default the URL's host */
  readonly name?: string;
  /** Extra request headers (an API key header). Never logged. */
  readonly headers?: Readonly<Record<string, string>>;
};

/** Per-method override: return a class to decide, `undefined` to use the default. */
export type EthersClassifier = (error: unknown, method: string) => ClassifyResult | undefined;

export interface PooledProviderOptions extends Omit<PoolOptions<RpcConnection>, 'endpoints' | 'classify'>, RpcReadOptions {
  readonly endpoints: readonly EthersEndpoint[];
  /** The network. When given, it is trusted (ethers' `staticNetwork`) and never detected. @default detected with `eth_chainId` */
  readonly network?: Networkish;
  /** Overrides the default classification (`classifyEthersError`) where it returns a class. @default none */
  readonly classify?: EthersClassifier;
  /** The `fetch` to use. @default the global `fetch`, looked up for each request */
  readonly fetch?: FetchFn;
  /** Longest `Retry-After` read from an answer; the pool cuts every cooldown to `backoff.maxMs` (10 s by default) as well. @default 60000 */
  readonly maxRetryAfterMs?: number;
  /**
   * Head-aware routing, as in the viem transport: endpoints behind the best head (learned
   * from answers and, with `pollMs`, an `eth_blockNumber` poll) or stalled are left out of
   * reads of latest/pending and of blocks they lack, and asked last by quorum reads. @default undefined (off)
   */
  readonly heads?: HeadOptions | undefined;
  /**
   * The chain every endpoint must serve: each endpoint's node is asked `eth_chainId` before
   * its first request (once per URL), and one of another chain is never sent a caller's
   * request (`ChainMismatchError`; the endpoint is disabled and the call moves on; see
   * docs/rpc.md). Without a `network`, it is the network too (no detection). @default undefined (not checked)
   */
  readonly chainId?: number | undefined;
  /** ethers' provider options, except those the pool owns (`batchMaxCount`, `staticNetwork`). @default { polling: true } */
  readonly provider?: Omit<JsonRpcApiProviderOptions, 'batchMaxCount' | 'batchStallTime' | 'batchMaxSize' | 'staticNetwork'>;
}

/** Options of one `sendWith` call. */
export interface SendOptions extends Omit<ExecuteOptions, 'idempotent' | 'hedge'> {
  /** Quorum weight this read needs (reads only). @default the method's, or none */
  readonly quorum?: number;
}

/** Pool failures whose `cause` may be a node's answer. */
const ANSWER_CODES: ReadonlySet<string> = new Set(['PERMANENT', 'RETRY_NARROWER', 'RETRIES_EXHAUSTED', 'NO_ENDPOINT', 'PIN_UNAVAILABLE']);
const ANSWERS: ReadonlySet<string> = new Set(['permanent', 'retry-narrower', 'unsupported']);
const BLOCK_NUMBER = { id: 0, method: 'eth_blockNumber', params: [] } as const;
const CHAIN_ID_BODY = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'eth_chainId', params: [] });

export class PooledJsonRpcProvider extends JsonRpcApiProvider {
  /** The pool underneath: stats, breakers, `setEndpoints`, `close`. */
  readonly pool: Pool<RpcConnection>;
  readonly #reads: RpcReads<RpcConnection>;
  readonly #fetch: FetchFn;
  /** A `fetch` was given: its requests are aborted through their signal only. */
  readonly #ownFetch: boolean;
  readonly #maxRetryAfterMs: number;
  readonly #classify: Classifier;
  readonly #routing: HeadRouting | undefined;
  readonly #chain: ChainCheck | undefined;
  /** The method each attempt's error came from, for the user's per-method `classify`. */
  readonly #origin = new WeakMap<object, string>();
  #nextId = 1;

  constructor(options: PooledProviderOptions) {
    if (typeof options !== 'object' || options === null) throw invalidOption('options', 'an object', options);
    const { endpoints, network: given, classify: override, fetch: fetchFn, maxRetryAfterMs = DEFAULT_MAX_RETRY_AFTER_MS, provider, quorum, coalesce, heads, chainId, ...poolOptions } = options;
    const chain = checkChainId(chainId);
    // Both given: they must name one chain (the network is trusted, the nodes are checked against chainId).
    if (chain !== undefined && given !== undefined && Network.from(given).chainId !== BigInt(chain)) throw invalidOption('chainId', `the chain of network (${Network.from(given).chainId})`, chain);
    const network = given ?? chain;
    super(network, { polling: true, ...provider, batchMaxCount: 1, ...(network === undefined ? {} : { staticNetwork: true }) });
    const f = fetchFn ?? (globalThis.fetch as unknown as FetchFn | undefined);
    if (typeof f !== 'function') throw invalidOption('fetch', 'a fetch function (none is global here)', f);
    // The global one is looked up per request, as the fetch adapter does: a mock or a wrapper
    // installed after the provider was made (MSW, a test's stub) is the one used.
    this.#fetch = fetchFn ?? ((url, init) => (globalThis.fetch as unknown as FetchFn)(url, init));
    this.#ownFetch = fetchFn !== undefined;
    if (maxRetryAfterMs !== Infinity) finite('maxRetryAfterMs', maxRetryAfterMs, 0);
    checkFunction('classify', override, true);
    this.#maxRetryAfterMs = maxRetryAfterMs;
    this.#classify = (error) => {
      const checked = chainCheckClass(error) ?? notRepeatedClass(error);
      if (checked !== undefined) return checked;
      const method = typeof error === 'object' && error !== null ? this.#origin.get(error) : undefined;
      const c = method === undefined ? undefined : override?.(error, method);
      return c ?? classifyEthersError(error, { nowMs: wallNow(this.pool.clock), maxRetryAfterMs });
    };
    this.pool = new Pool<RpcConnection>({ ...poolOptions, classify: this.#classify, endpoints: toEndpoints(endpoints) });
    internConnections(this.pool);
    this.#chain = chain === undefined ? undefined : new ChainCheck(chain, this.pool.clock, poolStateOf(this.pool).opts.attemptTimeoutMs);
    // Connections are plain values ({ url, headers }), often made anew for each setEndpoints: a URL is a node.
    const nodeKey = (c: RpcConnection): unknown => c.url;
    const routing = heads === undefined ? undefined : new HeadRouting(heads, this.pool, (exec) => this.#post(BLOCK_NUMBER, exec), connectionWatch(this.pool, nodeKey));
    this.#routing = routing;
    // The pool's close() (the provider's, or the user's on `provider.pool`) ends the poll at once.
    if (routing !== undefined) onPoolClose(this.pool, () => routing.stop());
    this.#reads = new RpcReads(
      { ...(quorum === undefined ? {} : { quorum }), ...(coalesce === undefined ? {} : { coalesce }) },
      this.pool,
      rpcAnswerKey,
      routing === undefined ? undefined : unfitOf(routing),
      nodeKey,
    );
  }

  override async send(method: string, params: unknown[] | Record<string, unknown>): Promise<unknown> {
    // Like ethers' JsonRpcProvider: start (and detect the network) on first use.
    this._start();
    return await super.send(method, params);
  }

  override async _send(payload: JsonRpcPayload | JsonRpcPayload[]): Promise<(JsonRpcResult | JsonRpcError)[]> {
    const list = Array.isArray(payload) ? payload : [payload];
    return Promise.all(list.map((p) => this.#one(p)));
  }

  /**
   * One request with options of its own (a quorum, a signal, a deadline). Resolves with
   * the result; a node's error answer is thrown as ethers' error for it.
   */
  async sendWith(method: string, params: unknown[] | Record<string, unknown>, options: SendOptions = {}): Promise<unknown> {
    // Spread below, a number would be dropped in silence and null would throw a TypeError.
    if (typeof options !== 'object' || options === null) throw invalidOption('options', "sendWith's options ({ quorum, deadlineMs, pin, ... })", options);
    if (typeof method !== 'string' || method === '') throw invalidOption('method', 'a JSON-RPC method name', method);
    if (typeof params !== 'object' || params === null) throw invalidOption('params', 'an array or an object of JSON-RPC params', params);
    const { quorum, ...exec } = options;
    const payload: JsonRpcPayload = { method, params, id: this.#nextId++, jsonrpc: '2.0' };
    try {
      return await this.#request(payload, exec, quorum);
    } catch (error) {
      const answer = this.#answerOf(error);
      if (answer !== undefined) throw this.getRpcError(payload, { id: payload.id, error: answer });
      throw this.#failure(error);
    }
  }

  /** Quorum reads started and coalesced requests so far. */
  readStats(): RpcReadsStats {
    return this.#reads.stats();
  }

  /**
   * Changes the set while requests run, endpoints given as in the options (`{ url, name?,
   * headers?, ... }`); one whose URL and headers an endpoint has keeps that endpoint's state.
   */
  setEndpoints(endpoints: readonly EthersEndpoint[], groups?: readonly (readonly string[])[]): void {
    this.pool.setEndpoints(toEndpoints(endpoints), groups);
  }

  /** What head-aware routing knows now (each endpoint's head, which lag and why); `undefined` without `heads`. */
  heads(): HeadSnapshot | undefined {
    return this.#routing?.snapshot();
  }

  /** Stops the provider (ethers' `destroy`), the head poll and the pool; resolves when no call is left. */
  async close(options?: CloseOptions): Promise<void> {
    const closing = this.pool.close(options); // a bad option rejects, and stops nothing
    if (this.pool.closed) this.destroy();
    await closing;
  }

  override destroy(): void {
    this.#routing?.stop();
    super.destroy();
    void this.pool.close();
  }

  async #one(p: JsonRpcPayload): Promise<JsonRpcResult | JsonRpcError> {
    try {
      return { id: p.id, result: await this.#request(p, {}, undefined) };
    } catch (error) {
      const answer = this.#answerOf(error);
      if (answer !== undefined) return { id: p.id, error: answer };
      throw this.#failure(error);
    }
  }

  #request(p: JsonRpcPayload, exec: ExecuteOptions, quorum: number | undefined): Promise<unknown> {
    return this.#reads.request(p.method, p.params, exec, quorum, (e, guard, params) => this.#post(params === undefined ? p : { ...p, params: params as JsonRpcPayload['params'] }, e, guard));
  }

  /** One `pool.execute` of `p`: each attempt one POST; answers feed head-aware routing. */
  #post(p: Pick<JsonRpcPayload, 'id' | 'method' | 'params'>, e: ExecuteOptions, guard?: Guard): Promise<unknown> {
    const body = JSON.stringify({ jsonrpc: '2.0', id: p.id, method: p.method, params: p.params });
    // A node-signed send is not sent again once it may have reached a node (viem/node-signed.ts).
    const signed = isNodeSigned(p.method) ? new SendGuard(p.method) : undefined;
    return this.pool.execute(async (conn, ctx) => {
      signed?.enter();
      guard?.(ctx.endpoint, ctx.attempt);
      const chain = this.#chain;
      if (chain !== undefined && !chain.passed(conn)) {
        const ask: Omit<PostOptions, 'signal'> = { fetch: this.#fetch, endpoint: ctx.endpoint, nowMs: wallNow(this.pool.clock), maxRetryAfterMs: this.#maxRetryAfterMs };
        await chain.verify(conn, ctx.endpoint, ctx.signal, (signal) => postJsonRpc(conn, 0, CHAIN_ID_BODY, { ...ask, signal }));
        // Nothing is sent when the attempt ended, or its endpoint lost the node, while the question was out.
        if (ctx.signal.aborted) throw ctx.signal.reason;
        if (!endpointCurrent(ctx)) throw new NodeLeftError(ctx.endpoint);
      }
      const route = abortRoute(ctx, this.#ownFetch);
      const post: PostOptions = { fetch: this.#fetch, signal: route.signal, dispatcher: route.dispatcher, endpoint: ctx.endpoint, nowMs: wallNow(this.pool.clock), maxRetryAfterMs: this.#maxRetryAfterMs };
      const sentAt = this.#routing?.sending(p.method);
      try {
        const result = await (signed === undefined ? postJsonRpc(conn, p.id, body, post) : sendGuarded(signed, p.method, ctx.endpoint, route.signal, () => postJsonRpc(conn, p.id, body, post), (e) => this.#classifyAs(e, p.method)));
        // Not from a node that has lost the endpoint's name since (see `endpointCurrent`).
        if (this.#routing !== undefined && endpointCurrent(ctx)) this.#routing.observe(ctx.endpoint, p.method, p.params, result, sentAt);
        return result;
      } catch (error) {
        let failure = error;
        if (p.method === 'eth_sendRawTransaction') {
          try {
            // A second request of the attempt: through the attempt's signal (a dispatcher serves one request).
            const hash = await landedHash(conn, p.params, error, { ...post, signal: untrackedSignal(ctx), dispatcher: undefined });
            if (hash !== undefined) return hash;
          } catch (check) {
            failure = check; // LandedCheckError: the check failed, the answer is not final
          }
        }
        if (typeof failure === 'object' && failure !== null) this.#origin.set(failure, p.method);
        throw failure;
      }
    }, e);
  }

  /**
   * What a failed call rejects with, when no node's answer: the `ChainMismatchError` itself when
   * the chain check left no endpoint (as the viem transport), a later call's `NO_ENDPOINT`
   * naming the chains, a node-signed send's refusal to repeat it; else the `PoolError`.
   */
  #failure(error: unknown): unknown {
    if (isPoolError(error) && ANSWER_CODES.has(error.code) && error.cause instanceof ChainMismatchError) return error.cause;
    const e = notRepeatedFailure(error);
    return this.#chain === undefined ? e : this.#chain.explain(e, poolStateOf(this.pool).endpoints);
  }

  /** The class of an attempt's `error` of a `method` request (the user's override sees the method). */
  #classifyAs(error: unknown, method: string): ClassifyResult {
    if (typeof error === 'object' && error !== null) this.#origin.set(error, method);
    return this.#classify(error);
  }

  /** The node's JSON-RPC error when the call ended on one, for ethers to turn into its error. */
  #answerOf(error: unknown): JsonRpcError['error'] | undefined {
    if (error instanceof FilterNotFoundError) return { code: error.code, message: error.message };
    const cause = isPoolError(error) && ANSWER_CODES.has(error.code) ? error.cause : undefined;
    if (!(cause instanceof RpcAnswerError)) return undefined;
    if (isPoolError(error) && error.code !== 'PERMANENT' && error.code !== 'RETRY_NARROWER') {
      const c = this.#classify(cause);
      if (!ANSWERS.has(typeof c === 'string' ? c : c.class)) return undefined;
    }
    return cause.rpcError;
  }
}

/**
 * Connections are plain values (`{ url, headers }`), often made anew for each `setEndpoints`
 * (a `Refresher`'s candidates, a config reloaded): the pool keeps an endpoint's state only for
 * the same connection object, so an equal value is handed over as the object it already has.
 * Else every refresh made every endpoint new (fresh breakers, limits and counters, untried by
 * the calls running, which could ask a node that had just refused them again).
 */
function internConnections(pool: Pool<RpcConnection>): void {
  const keyOf = (c: unknown): string | undefined => {
    if (typeof c !== 'object' || c === null || typeof (c as RpcConnection).url !== 'string') return undefined;
    const { url, headers } = c as RpcConnection;
    return JSON.stringify([url, headers === undefined ? null : Object.entries(headers).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))]);
  };
  const set = pool.setEndpoints.bind(pool);
  pool.setEndpoints = (list, groups) => {
    if (!Array.isArray(list)) return set(list, groups); // the pool reports the bad option
    const held = new Map<string, RpcConnection>();
    for (const name of pool.endpointNames) {
      const conn = connectionOf(pool, name);
      const key = keyOf(conn);
      if (key !== undefined) held.set(key, conn!);
    }
    set(
      list.map((e: unknown) => {
        if (typeof e !== 'object' || e === null) return e as EndpointConfig<RpcConnection>;
        const c = e as EndpointConfig<RpcConnection>;
        const key = keyOf(c.conn);
        const same = key === undefined ? undefined : held.get(key);
        return same === undefined || same === c.conn ? c : { ...c, conn: same };
      }),
      groups,
    );
  };
}

function toEndpoints(list: readonly EthersEndpoint[]): EndpointConfig<RpcConnection>[] {
  if (!Array.isArray(list)) return list as never; // the pool reports the bad option
  const used = new Set<string>();
  return list.map((e, i) => {
    if (typeof e !== 'object' || e === null) throw invalidOption(`endpoints[${i}]`, '{ url, name?, headers? }', e);
    checkUrlOption(`endpoints[${i}].url`, e.url);
    if (e.headers !== undefined && (typeof e.headers !== 'object' || e.headers === null || Array.isArray(e.headers))) throw invalidOption(`endpoints[${i}].headers`, 'an object of header names to values', e.headers);
    const { url, name: given, headers, ...rest } = e;
    // Only a missing name is derived: a wrong one (null, '') is the pool's to refuse, naming the field.
    let name = given === undefined ? (hostOf(url) ?? `rpc-${i}`) : given;
    if (given === undefined && used.has(name)) name = `${name}#${i}`;
    used.add(name);
    return { ...rest, name, conn: headers === undefined ? { url } : { url, headers } };
  });
}
