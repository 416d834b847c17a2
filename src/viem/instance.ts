/**
 * One endpoint transport instance as `poolTransport` uses it: whether it hears the
 * attempt's signal, the options of a plain request, and how a plain request is sent
 * (through the transport's `request`, or directly: ./direct.ts).
 */
import type { AttemptContext } from '../call/context.js';
import { copyOf } from './autoload.js';
import { directRequestOf, sendDirect, type Replay } from './direct.js';
import type { RequestFn, RpcArgs, RpcRequestOptions, TransportFactory, TransportInstance } from './types.js';

/** A transport instance, whether the attempt's signal is passed to it, and the options of a plain request without one. */
export interface Built {
  readonly t: TransportInstance;
  /** The endpoint's connection it was built from (the chain check's key: one question per connection). */
  readonly factory: TransportFactory;
  /** Its node has answered the chain asked for (`chainId`): a field read per request rather than the check's look-up. */
  onChain: boolean;
  readonly hears: boolean;
  readonly bare: RpcRequestOptions;
  /**
   * The transport's inner request, sent to directly (./direct.ts); `undefined`: through
   * `t.request`. Set together with `replay`, at once or when viem has been loaded
   * (./autoload.ts).
   */
  raw: RequestFn | undefined;
  /** Maps a direct request's error through viem's wrapper; set with `raw`. */
  replay: Replay | undefined;
  /**
   * A plain request on this transport, one way or the other. Chosen per instance, and
   * replaced once when it goes direct later: a branch between the two in the shared
   * operation made V8 allocate about 50 B more per request on the wrapped path in most
   * processes (docs/performance.md, "The viem path with `custom` handed in").
   */
  send: (args: RpcArgs, ctx: AttemptContext) => Promise<unknown>;
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

/** Switches `b` to direct requests on `raw`. */
function goDirect(b: Built, raw: RequestFn, replay: Replay): void {
  const hears = b.hears;
  b.raw = raw;
  b.replay = replay;
  b.send = (args, ctx) => sendDirect(raw, replay, args, hears ? ctx.signal : undefined);
}

/**
 * How requests reach an endpoint's transports:
 * - `replay` given (the user handed in `custom`): `custom` and `http` transports are sent to directly;
 * - `auto`: the same once viem has been loaded at run time and the transport's factory has
 *   been found to be of the loaded copy (./autoload.ts), through the wrapper until then;
 * - neither: always through the transport's `request`.
 * The answer for a factory is remembered: its later instances (another client, a
 * `withEndpoint` attempt) are decided at once.
 */
export function instanceUse(passSignal: boolean, replay: Replay | undefined, auto: boolean): (t: TransportInstance, factory: TransportFactory) => Built {
  /** Per factory: the replay to go direct with, `null` when it stays wrapped; absent: not decided yet. */
  const decided = new WeakMap<TransportFactory, Replay | null>();
  const pending = new WeakMap<TransportFactory, Promise<Replay | null>>();
  const decide = (t: TransportInstance, factory: TransportFactory): Promise<Replay | null> => {
    let p = pending.get(factory);
    if (p === undefined) {
      p = copyOf(t).then((loaded) => (loaded === undefined ? null : loaded.replay));
      pending.set(factory, p);
      void p.then((r) => decided.set(factory, r));
    }
    return p;
  };
  return (t, factory) => {
    const hears = passSignal && hearsSignal(t);
    // A transport that took `retryCount: 0` never retries: a plain request without a
    // signal then passes empty options (viem merges a request's options into the
    // transport's own on every request, and an empty object is the cheapest to merge).
    const bare = t.config.retryCount === 0 ? NO_OPTIONS : NO_SIGNAL;
    const b: Built = {
      t,
      factory,
      onChain: false,
      hears,
      bare,
      raw: undefined,
      replay: undefined,
      send: (args, ctx) => {
        const sent = t.request(args, hears ? { retryCount: 0, signal: ctx.signal } : bare);
        return sent instanceof Promise ? sent : Promise.resolve(sent);
      },
    };
    const raw = replay !== undefined || auto ? directRequestOf(t) : undefined;
    if (raw === undefined) return b;
    if (replay !== undefined) {
      goDirect(b, raw, replay);
      return b;
    }
    const known = decided.get(factory);
    if (known !== undefined) {
      if (known !== null) goDirect(b, raw, known);
    } else {
      void decide(t, factory).then((r) => {
        if (r !== null) goDirect(b, raw, r);
      });
    }
    return b;
  };
}
