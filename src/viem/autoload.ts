/**
 * The direct path (./direct.ts) at the defaults: viem's `custom`, loaded at run time.
 *
 * Sending to an endpoint transport's inner request needs viem's error mapping for failed
 * requests, and this package imports nothing from viem. So when the user has not handed in
 * `custom`, the first `poolTransport` starts one dynamic `import()` of viem (written so that
 * bundlers leave it alone: a specifier that is not a literal, and the comments webpack and
 * Vite read), shared by every pool transport of the process. Until it has resolved, and
 * for good if it fails (a browser, where the bare specifier resolves to nothing; a build
 * that cannot see viem), requests go through each endpoint transport's own `request`.
 *
 * The loaded copy must be the user's own: otherwise a replayed error would be of another
 * copy's classes, and `instanceof` in the user's code would fail. Each endpoint transport
 * factory is checked once, without sending anything: a request for a method that the
 * request's own `methods: { exclude }` names is refused by viem's request wrapper before
 * anything else, with its `MethodNotSupportedRpcError`, which must be the loaded copy's
 * class. Guards that keep this probe off the network: the transport's config must have
 * a `methods` key (viem versions whose wrapper reads `methods` put it there, and their
 * wrapper reads a per-request `methods` too), the probe also carries an aborted signal
 * (a wrapper that ignored `methods` but reads signals stops there), and the loaded copy
 * passes the same probe over a provider that records calls before any user transport is
 * probed. Anything else (a throw, an answer, another error class) keeps that transport on
 * its wrapper.
 */
import { replayWith, type Replay } from './direct.js';
import type { CustomFactory, RpcArgs, RpcRequestOptions, TransportInstance } from './types.js';

/** The loaded viem, as far as the direct path needs it. */
export interface LoadedViem {
  /** Maps a direct request's error as the wrapper would (built with the loaded `custom`). */
  readonly replay: Replay;
  /** The loaded copy's `MethodNotSupportedRpcError`, which the probe must be refused with. */
  readonly refusal: abstract new (...args: never[]) => unknown;
}

/** How viem is loaded: replaceable for tests (`setViemLoader`). */
export type ViemLoader = () => Promise<unknown>;

const importer = (specifier: string): Promise<unknown> => import(/* webpackIgnore: true */ /* @vite-ignore */ specifier);
const defaultLoader: ViemLoader = () => importer('viem');
let loader: ViemLoader = defaultLoader;
let loading: Promise<LoadedViem | undefined> | undefined;

/** The probe's method: refused by the request's own `methods` list, so never sent. */
const PROBE: RpcArgs = { method: 'endpointPool_probe' };
let probeOptions: (RpcRequestOptions & { methods: { exclude: string[] } }) | undefined;

/** viem, loaded once per process (started by the first call), or `undefined` when it cannot be. */
export function loadViem(): Promise<LoadedViem | undefined> {
  return (loading ??= start(loader));
}

/** Replaces the loader and forgets what was loaded (tests); no argument restores `import('viem')`. */
export function setViemLoader(next?: ViemLoader): void {
  loader = next ?? defaultLoader;
  loading = undefined;
}

function start(load: ViemLoader): Promise<LoadedViem | undefined> {
  let p: Promise<unknown>;
  try {
    p = load();
  } catch {
    return Promise.resolve(undefined);
  }
  return Promise.resolve(p).then(fromModule).then(undefined, () => undefined);
}

async function fromModule(m: unknown): Promise<LoadedViem | undefined> {
  if (typeof m !== 'object' || m === null) return undefined;
  const { custom, MethodNotSupportedRpcError: refusal } = m as { custom?: unknown; MethodNotSupportedRpcError?: unknown };
  if (typeof custom !== 'function' || typeof refusal !== 'function') return undefined;
  const loaded: LoadedViem = { replay: replayWith(custom as CustomFactory), refusal: refusal as LoadedViem['refusal'] };
  // The loaded copy itself must refuse the probe locally: a provider that records calls.
  let reached = false;
  const own = (custom as CustomFactory)({ request: () => ((reached = true), Promise.resolve(null)) }, { retryCount: 0 })({ retryCount: 0 });
  return (await refuses(own, loaded)) && !reached ? loaded : undefined;
}

/**
 * Whether transport `t` is of the loaded copy: its wrapper refuses the probe, locally,
 * with the loaded copy's class. Resolves, never rejects.
 */
export function refuses(t: TransportInstance, loaded: LoadedViem): Promise<boolean> {
  if (typeof t.config !== 'object' || t.config === null || !('methods' in t.config) || typeof t.request !== 'function') return Promise.resolve(false);
  probeOptions ??= { methods: { exclude: [PROBE.method] }, retryCount: 0, signal: AbortSignal.abort() };
  let sent: unknown;
  try {
    sent = t.request(PROBE, probeOptions);
  } catch {
    return Promise.resolve(false);
  }
  return Promise.resolve(sent).then(
    () => false,
    (error: unknown) => error instanceof loaded.refusal,
  );
}
