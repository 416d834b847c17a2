/**
 * One endpoint transport instance as `poolTransport` uses it: whether it hears the
 * attempt's signal, the options of a plain request, and how a plain request is sent
 * (through the transport's `request`, or directly: ./direct.ts).
 */
import type { AttemptContext } from '../call/context.js';
import { directRequestOf, sendDirect, type Replay } from './direct.js';
import type { RequestFn, RpcArgs, RpcRequestOptions, TransportInstance } from './types.js';

/** A transport instance, whether the attempt's signal is passed to it, and the options of a plain request without one. */
export interface Built {
  readonly t: TransportInstance;
  readonly hears: boolean;
  readonly bare: RpcRequestOptions;
  /** The transport's inner request, sent to directly (./direct.ts); `undefined`: through `t.request`. */
  readonly raw: RequestFn | undefined;
  /**
   * A plain request on this transport, one way or the other. Chosen once per instance: a
   * branch between the two in the shared operation made V8 allocate about 50 B more per
   * request on the wrapped path in most processes (docs/performance.md, "The viem path with `custom` handed in").
   */
  readonly send: (args: RpcArgs, ctx: AttemptContext) => Promise<unknown>;
}

/** Request options without a signal, shared (viem only reads them). */
export const NO_SIGNAL: RpcRequestOptions = { retryCount: 0 };
/** The same for a transport that took `retryCount: 0` when it was built. */
const NO_OPTIONS: RpcRequestOptions = {};

/**
 * Whether a transport can do anything with a per-request signal. viem's `custom(provider)`
 * hands the signal to `provider.request` as its second argument; a provider whose
 * `request` declares a single parameter (EIP-1193's shape) never reads it, and passing one
 * anyway costs more than the rest of the request on Node 20 (viem spreads it into its
 * options and adds and removes an abort listener). Every other transport (`http`, whose
 * fetch it aborts; wrappers such as `fallback`, which pass it on) gets the signal.
 */
function hearsSignal(t: TransportInstance): boolean {
  const c = t.config;
  return c.type !== 'custom' || typeof c.request !== 'function' || c.request.length >= 2;
}

/** Makes the `Built` of each instance; `replay` given: `custom` and `http` transports are sent to directly. */
export function instanceUse(passSignal: boolean, replay: Replay | undefined): (t: TransportInstance) => Built {
  return (t) => {
    const hears = passSignal && hearsSignal(t);
    // A transport that took `retryCount: 0` never retries: a plain request without a
    // signal then passes empty options (viem merges a request's options into the
    // transport's own on every request, and an empty object is the cheapest to merge).
    const bare = t.config.retryCount === 0 ? NO_OPTIONS : NO_SIGNAL;
    const raw = replay === undefined ? undefined : directRequestOf(t);
    const send =
      raw !== undefined
        ? (args: RpcArgs, ctx: AttemptContext) => sendDirect(raw, replay!, args, hears ? ctx.signal : undefined)
        : (args: RpcArgs, ctx: AttemptContext) => {
            const sent = t.request(args, hears ? { retryCount: 0, signal: ctx.signal } : bare);
            return sent instanceof Promise ? sent : Promise.resolve(sent);
          };
    return { t, hears, bare, raw, send };
  };
}
