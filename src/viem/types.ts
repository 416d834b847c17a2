/**
 * The few shapes of viem this adapter relies on, written out structurally so that the
 * shipped code never imports viem: a viem `Transport` is a function from client settings
 * to `{ config, request, value }`, and `request(args, options)` takes a per-request
 * `signal` and `retryCount` (viem 2.x `EIP1193RequestOptions`).
 */

export interface RpcArgs {
  readonly method: string;
  readonly params?: unknown;
}

/** What viem's `buildRequest` accepts per request; the adapter sets `signal` and `retryCount`. */
export interface RpcRequestOptions {
  signal?: AbortSignal | undefined;
  retryCount?: number | undefined;
  retryDelay?: number | undefined;
  dedupe?: boolean | undefined;
  uid?: string | undefined;
  /** `endpoint-pool`'s own: the quorum weight this read needs (see docs/rpc.md). */
  quorum?: number | undefined;
}

/**
 * viem's request function. Generic in its result so that it is assignable to viem's
 * `EIP1193RequestFn` without a cast.
 */
export type RequestFn = <R = unknown>(args: RpcArgs, options?: RpcRequestOptions) => Promise<R>;

/** What a client passes when it instantiates a transport. */
export interface TransportParams {
  readonly account?: unknown;
  readonly chain?: unknown;
  readonly pollingInterval?: number | undefined;
  readonly retryCount?: number | undefined;
  readonly timeout?: number | undefined;
}

export interface TransportConfigLike {
  readonly key: string;
  readonly name: string;
  readonly type: string;
  readonly request: RequestFn;
  readonly retryCount?: number | undefined;
  readonly retryDelay?: number | undefined;
  readonly timeout?: number | undefined;
}

export interface TransportInstance {
  readonly config: TransportConfigLike;
  readonly request: RequestFn;
  readonly value?: Record<string, unknown> | undefined;
}

/**
 * A viem transport (`http(url)`, `webSocket(url)`, `custom(provider)`, ...). Written as a
 * method type so that viem's transports, whose parameter is typed with viem's own
 * `Account` and `Chain`, are assignable to it without a cast.
 */
export type TransportFactory = { bivarianceHack(params: TransportParams): TransportInstance }['bivarianceHack'];

/** viem's `http` function, handed in by the user when endpoints are given as URLs. */
export type HttpFactory = { bivarianceHack(url: string, config: { retryCount?: number }): TransportFactory }['bivarianceHack'];

/**
 * An EIP-1193 provider: what viem's `custom(provider)` wraps (an injected wallet, a
 * provider from another library, a test stub). `request` may take a second argument with
 * a `signal` (viem's `custom` passes one when it has one).
 */
export interface Eip1193Provider {
  request: { bivarianceHack(args: RpcArgs, options?: { signal?: AbortSignal | undefined }): Promise<unknown> }['bivarianceHack'];
}

/** viem's `custom` function, handed in by the user for endpoints given as providers and for direct requests. */
export type CustomFactory = { bivarianceHack(provider: Eip1193Provider, config?: { retryCount?: number; key?: string; name?: string }): TransportFactory }['bivarianceHack'];
