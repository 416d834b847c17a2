/**
 * Direct requests: calling an endpoint transport's own inner request (the provider's
 * `request` under `custom(provider)`, the JSON-RPC client under `http(url)`) instead of
 * the transport's `request`, which is viem's `buildRequest` wrapper around it.
 *
 * Why: the wrapper (dedupe, retry loop, abort listener, error mapping: four async layers)
 * keeps about 2 KB alive per request in flight and costs about as much CPU as the rest of
 * the pool's path, and with `retryCount: 0` and no `dedupe` all it still does for the
 * pool is map a failed request's error to viem's error classes. So the direct path sends
 * the request itself and, only when it fails, hands the error to viem's own mapping: a
 * replay transport built once with the user's `custom` over a provider that rejects with
 * the error it is given. The caller, the classifier and listeners then see the very error
 * the wrapper would have thrown (same class, same cause chain). The replay is not given
 * the attempt's signal: a request fails because of its aborted signal only after the pool
 * has left that attempt (timed out, hedged, the caller aborted), and nobody sees that
 * error, which the wrapper would have turned into viem's abort error.
 *
 * Only `custom` and `http` transports are sent to directly (their inner request is
 * known: `(args, { signal }?)`), and only without a `methods` include/exclude list (the
 * wrapper enforces it). Every other transport keeps its wrapper.
 */
import type { CustomFactory, RequestFn, RpcArgs, RpcRequestOptions, TransportInstance } from './types.js';

/** A failed direct request, as the replay transport's provider receives it. */
interface Replayed extends RpcArgs {
  readonly error: unknown;
}

/** Maps a direct request's error through viem's wrapper: rejects with what `t.request(args)` would have. */
export type Replay = (args: RpcArgs, error: unknown) => Promise<never>;

const NO_RETRY: RpcRequestOptions = { retryCount: 0 };

/** Builds the replay once per pool transport, from viem's `custom`. */
export function replayWith(custom: CustomFactory): Replay {
  const t = custom({ request: (args) => Promise.reject((args as Replayed).error) }, { retryCount: 0, key: 'endpointPoolReplay', name: 'endpoint-pool error replay' })({ retryCount: 0 });
  return (args, error) => {
    const replayed: Replayed = { method: args.method, params: args.params, error };
    return t.request(replayed, NO_RETRY) as Promise<never>;
  };
}

/** The inner request of a transport that can be sent to directly, or `undefined`. */
export function directRequestOf(t: TransportInstance): RequestFn | undefined {
  const c = t.config as TransportInstance['config'] & { readonly methods?: unknown };
  if (c.type !== 'custom' && c.type !== 'http') return undefined;
  if (c.methods !== undefined || typeof c.request !== 'function') return undefined;
  return c.request;
}

/**
 * One direct request. A provider that throws, answers synchronously or returns a
 * thenable is handled as the wrapper would (it awaits whatever `request` returns).
 */
export function sendDirect(raw: RequestFn, replay: Replay, args: RpcArgs, signal: AbortSignal | undefined): Promise<unknown> {
  let sent: unknown;
  try {
    sent = signal === undefined ? raw(args) : raw(args, { signal });
  } catch (error) {
    return replay(args, error);
  }
  return (sent instanceof Promise ? sent : Promise.resolve(sent)).then(undefined, (error: unknown) => replay(args, error));
}
