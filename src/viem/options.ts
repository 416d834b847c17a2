/**
 * The options of `poolTransport` and the transport it returns (./transport.ts).
 */
import type { ClassifyResult } from '../base/classify.js';
import type { ExecuteOptions, PoolOptions } from '../options/options.js';
import type { Pool } from '../pool.js';
import type { CloseOptions } from '../pool-core.js';
import type { HeadOptions, HeadSnapshot } from '../rpc/heads.js';
import type { RpcReadOptions, RpcReadsStats } from '../rpc/reads.js';
import type { ViemEndpoint } from './endpoints.js';
import type { CustomFactory, HttpFactory, TransportFactory } from './types.js';

/** Per-method override: return a class to decide, `undefined` to use the default. */
export type ViemClassifier = (error: unknown, method: string | undefined) => ClassifyResult | undefined;

export interface PoolTransportOptions extends Omit<PoolOptions<TransportFactory>, 'endpoints' | 'classify'>, RpcReadOptions {
  readonly endpoints: readonly ViemEndpoint[];
  /** viem's `http`, to build transports for endpoints given as URLs. */
  readonly http?: HttpFactory;
  /**
   * viem's `custom`. Wraps endpoints given as providers (`{ provider, name }`), and makes
   * requests to `custom` and `http` endpoint transports call the provider (or the HTTP
   * client) directly rather than through the transport's own viem request wrapper: about
   * 2 KB less held per request in flight and less CPU per request. A failed request's
   * error still goes through viem's mapping (a transport built with `custom` replays it),
   * so callers see the same viem errors.
   *
   * Left out, the same is done with viem's `custom` loaded at run time (a dynamic
   * `import('viem')`, started by the first `poolTransport`): once it has loaded, and for
   * each endpoint transport found, without a request, to be of that same copy of viem.
   * Until then, or where viem cannot be loaded so (browsers, bundles) or is another copy,
   * requests go through each endpoint transport's `request`. `false` turns both off: every
   * request goes through its endpoint transport's `request`, and viem is never loaded.
   * @default undefined: viem loaded at run time, as above
   */
  readonly custom?: CustomFactory | false | undefined;
  /** Overrides the default classification (`classifyViemError`) where it returns a class. @default none */
  readonly classify?: ViemClassifier;
  /**
   * Pass each attempt's signal to the underlying transport. Turn off only to keep viem's
   * HTTP batching (which groups requests by signal): timed-out attempts then run on in
   * the background. @default true
   */
  readonly passSignal?: boolean;
  /**
   * viem's `keccak256`. When given, an `eth_sendRawTransaction` answered with "already
   * known" / "nonce too low" is checked with `eth_getTransactionByHash` on the same
   * endpoint, and if the node has that very transaction the send resolves with its hash
   * (an earlier attempt landed it). @default none: such answers are rethrown as is
   */
  readonly keccak256?: (hex: `0x${string}`) => `0x${string}`;
  /**
   * How long an endpoint that answered "method not found / not supported" for a method is
   * left out of later calls of that method (viem probes `eth_fillTransaction` before each
   * send, for one). When every endpoint is left out, the remembered answer is rethrown at
   * once. 0 turns this off. @default 600000
   */
  readonly rememberUnsupportedMs?: number;
  /**
   * Head-aware routing: endpoints more than `maxLagBlocks` behind the best head (learned
   * from answers and, with `pollMs`, from an `eth_blockNumber` poll), or stalled while
   * others advance, are left out of reads of latest/pending and of blocks they do not have
   * yet, and asked last by quorum reads (see docs/viem.md). @default undefined (off)
   */
  readonly heads?: HeadOptions | undefined;
  /**
   * The chain every endpoint must serve. Each endpoint's node is asked `eth_chainId` before
   * it serves its first request (once per connection); one that answers another chain is
   * never sent a caller's request: that attempt fails with `ChainMismatchError`, the endpoint
   * is disabled (`endpoint-disabled`, until `pool.enableEndpoint(name)`) and the call moves on
   * (see docs/rpc.md). @default undefined (not checked)
   */
  readonly chainId?: number | undefined;
  /** @default 'endpointPool' */
  readonly key?: string;
  /** @default 'Endpoint pool' */
  readonly name?: string;
}

export interface PoolTransport extends TransportFactory {
  /** The pool underneath: stats, breakers, `setEndpoints` (connections are transports), `close`. */
  readonly pool: Pool<TransportFactory>;
  /** Changes the set, endpoints given as in the options; one whose URL or provider an endpoint has keeps its transport and state. */
  setEndpoints(endpoints: readonly ViemEndpoint[], groups?: readonly (readonly string[])[]): void;
  /** A transport that sends every request to the endpoint `name` and nowhere else. */
  pin(name: string): TransportFactory;
  /** A transport whose reads all need this quorum weight (see docs/rpc.md); sends are refused. */
  quorum(need: number): TransportFactory;
  /** Quorum reads started and coalesced requests so far. */
  readStats(): RpcReadsStats;
  /** What head-aware routing knows now (each endpoint's head, which lag and why); `undefined` without `heads`. */
  heads(): HeadSnapshot | undefined;
  /** Stops the head poll and closes the pool (`pool.close(options)`, which also ends the poll). */
  close(options?: CloseOptions): Promise<void>;
  /**
   * Runs `fn` with a transport bound to one endpoint the pool selects. The whole of `fn`
   * is one attempt: if it fails in a way another endpoint could fix, it runs again there.
   */
  withEndpoint<T>(fn: (transport: TransportFactory, endpoint: string) => Promise<T>, options?: ExecuteOptions): Promise<T>;
}
