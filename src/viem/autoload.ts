/**
 * The direct path (./direct.ts) at the defaults: viem's `custom`, loaded at run time.
 *
 * Sending to an endpoint transport's inner request needs viem's error mapping for failed
 * requests, and this package has no static import of viem. So when the user has not handed in
 * `custom`, the first `poolTransport` starts one dynamic `import()` of viem (written so that
 * bundlers leave it alone: a specifier that is not a literal, and the comments webpack and
 * Vite read), shared by every pool transport of the process. Until it has resolved, and
 * for good if it fails (a browser, where the bare specifier resolves to nothing; a build
 * that cannot see viem), requests go through each endpoint transport's own `request`.
 * The CommonJS build keeps the `import()` (esbuild leaves it): both builds load viem's ES
 * build first.
 *
 * The loaded copy must be the user's own: otherwise a replayed error would be of another
 * copy's classes, and `instanceof` in the user's code would fail. Each endpoint transport
 * factory is checked once, without sending anything: a request for a method that the
 * request's own `methods: { exclude }` names is refused by viem's request wrapper before
 * anything else, with its `MethodNotSupportedRpcError`, which must be the loaded copy's
 * class. When it is another copy's (an application written as CommonJS gets viem's
 * CommonJS build), viem's CommonJS build is loaded too, once, in Node, and tried the same way.
 *
 * Guards that keep this probe off the network: the transport's config must have a
 * `methods` key (viem versions whose wrapper reads `methods` put it there, and their
 * wrapper reads a per-request `methods` too), the probe also carries an aborted signal (a
 * wrapper that ignored `methods` but reads signals stops there), and a loaded copy passes
 * the same probe over a provider that records calls before it is used. Anything else (a
 * throw, an answer, another error class) keeps that transport on its wrapper.
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

/** How a copy of viem is loaded: replaceable for tests (`setViemLoader`). */
export type ViemLoader = () => Promise<unknown>;

const importer = (specifier: string): Promise<unknown> => import(/* webpackIgnore: true */ /* @vite-ignore */ specifier);
const defaultLoader: ViemLoader = () => importer('viem');

/** Node's `module` built-in, reached without an import (browsers and bundles have no `process`). */
interface NodeProcess {
  getBuiltinModule?: (id: string) => unknown;
  cwd?: () => string;
}
/**
 * viem's CommonJS build, as `require('viem')` from the working directory gets it: the copy
 * of an application written as CommonJS, which the import above (viem's ES build) is not.
 * Tried only once a probe has been refused by another copy's class. `undefined` where Node's
 * `module.createRequire` cannot be reached (browsers, Node before 20.16).
 */
function nodeRequirer(): ViemLoader | undefined {
  const proc = (globalThis as { process?: NodeProcess }).process;
  const m = typeof proc?.getBuiltinModule === 'function' ? (proc.getBuiltinModule('module') as { createRequire?: (from: string) => (id: string) => unknown } | undefined) : undefined;
  const createRequire = m?.createRequire;
  if (typeof createRequire !== 'function' || typeof proc?.cwd !== 'function') return undefined;
  const cwd = proc.cwd;
  return () => Promise.resolve().then(() => createRequire(`${cwd()}/`)('viem'));
}

let loader: ViemLoader = defaultLoader;
let requirer: ViemLoader | undefined = nodeRequirer();
let loading: Promise<LoadedViem | undefined> | undefined;
let requiring: Promise<LoadedViem | undefined> | undefined;

/** The probe's method: refused by the request's own `methods` list, so never sent. */
const PROBE: RpcArgs = { method: 'endpointPool_probe' };
let probeOptions: (RpcRequestOptions & { methods: { exclude: string[] } }) | undefined;

/** viem's ES build, imported once per process (started by the first call), or `undefined` when it cannot be. */
export function loadViem(): Promise<LoadedViem | undefined> {
  return (loading ??= start(loader));
}

/**
 * Replaces the loaders and forgets what was loaded (tests): `load` for viem's ES build,
 * `require` for its CommonJS build (`null`: none, as in a browser). No arguments: the defaults.
 */
export function setViemLoader(load?: ViemLoader, require?: ViemLoader | null): void {
  loader = load ?? defaultLoader;
  requirer = require === undefined ? nodeRequirer() : (require ?? undefined);
  loading = undefined;
  requiring = undefined;
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
  const error = await probe(own);
  return error instanceof loaded.refusal && !reached ? loaded : undefined;
}

/** Not refused: the probe was answered, or could not be made. */
const NOT_REFUSED: unique symbol = Symbol('not refused');

/**
 * Sends the probe to transport `t`'s wrapper: the error it is refused with, or
 * `NOT_REFUSED`. Resolves, never rejects.
 */
function probe(t: TransportInstance): Promise<unknown> {
  if (typeof t.config !== 'object' || t.config === null || !('methods' in t.config) || typeof t.request !== 'function') return Promise.resolve(NOT_REFUSED);
  probeOptions ??= { methods: { exclude: [PROBE.method] }, retryCount: 0, signal: AbortSignal.abort() };
  let sent: unknown;
  try {
    sent = t.request(PROBE, probeOptions);
  } catch {
    return Promise.resolve(NOT_REFUSED);
  }
  return Promise.resolve(sent).then(
    () => NOT_REFUSED,
    (error: unknown) => error,
  );
}

/**
 * The loaded copy of viem that transport `t` is of, or `undefined` (then it stays on its
 * wrapper). viem's ES build first; its CommonJS build when the probe was refused by a
 * `MethodNotSupportedRpcError` of another copy. Resolves, never rejects.
 */
export async function copyOf(t: TransportInstance): Promise<LoadedViem | undefined> {
  const esm = await loadViem();
  if (esm === undefined && requirer === undefined) return undefined;
  const error = await probe(t);
  if (esm !== undefined && error instanceof esm.refusal) return esm;
  if (requirer === undefined || !(error instanceof Error) || error.name !== 'MethodNotSupportedRpcError') return undefined;
  const cjs = await (requiring ??= start(requirer));
  return cjs !== undefined && error instanceof cjs.refusal ? cjs : undefined;
}
