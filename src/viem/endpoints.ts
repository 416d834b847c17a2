/**
 * The endpoints of `poolTransport` as the pool's: each becomes a viem transport factory,
 * given as one, built from a URL with the user's `http`, or from an EIP-1193 provider with
 * the user's `custom`.
 */
import type { EndpointConfig } from '../options/options.js';
import { invalidOption } from '../base/errors.js';
import { checkUrlOption } from '../extras/url-option.js';
import { hostOf } from '../extras/host.js';
import { samePlainData } from '../extras/same-connection.js';
import { connectionOf } from '../rpc/connections.js';
import type { Pool } from '../pool.js';
import type { CustomFactory, Eip1193Provider, HttpFactory, TransportFactory } from './types.js';

/**
 * An endpoint given as a viem transport, as a URL (then `http` is required) or as an
 * EIP-1193 provider (then `custom` is required).
 */
export type ViemEndpoint = Omit<EndpointConfig<TransportFactory>, 'conn' | 'name'> &
  (
    | { readonly transport: TransportFactory; readonly name: string }
    | { readonly url: string; readonly name?: string }
    | { readonly provider: Eip1193Provider; readonly name: string }
  );

/**
 * What each transport this adapter built was built from (a URL, a provider), so that a later
 * `setEndpoints` given the same URL or provider hands over the transport it already has.
 */
export type MadeFrom = WeakMap<TransportFactory, string | object>;

/**
 * `transport.setEndpoints`: endpoints given as in the options. A URL or provider that an
 * endpoint has now keeps its transport, so the pool keeps that endpoint's breaker, limits,
 * counters and what the RPC layer learned of it (heads, refusals): a list made anew each time
 * (a `Refresher`, a reloaded config) changes only what changed.
 */
export function endpointSetter(pool: Pool<TransportFactory>, made: MadeFrom, http: HttpFactory | undefined, custom: CustomFactory | undefined) {
  return (list: readonly ViemEndpoint[], groups?: readonly (readonly string[])[]): void => {
    const held = new Map<string | object, TransportFactory>();
    for (const name of pool.endpointNames) {
      const conn = connectionOf(pool, name);
      const from = conn === undefined ? undefined : made.get(conn);
      if (from !== undefined) held.set(from, conn!);
    }
    pool.setEndpoints(toEndpoints(list, http, custom, made, held), groups);
  };
}

export function toEndpoints(
  list: readonly ViemEndpoint[],
  http: HttpFactory | undefined,
  custom: CustomFactory | undefined,
  made: MadeFrom,
  held?: Map<string | object, TransportFactory>,
): EndpointConfig<TransportFactory>[] {
  if (!Array.isArray(list)) return list as never; // the pool reports the bad option
  const build = (from: string | object, make: () => TransportFactory): TransportFactory => {
    const t = held?.get(from);
    if (t === undefined) {
      const fresh = make();
      made.set(fresh, from);
      return fresh;
    }
    held!.delete(from); // each held transport goes to one endpoint
    return t;
  };
  const used = new Set<string>();
  return list.map((e, i) => {
    if (typeof e !== 'object' || e === null) throw invalidOption(`endpoints[${i}]`, '{ name, transport }, { url, name? } or { name, provider }', e);
    if ('transport' in e) {
      if (typeof e.transport !== 'function') throw invalidOption(`endpoints[${i}].transport`, 'a viem transport (http(url), webSocket(url), custom(...))', e.transport);
      const { transport, ...rest } = e;
      used.add(e.name);
      return { ...rest, conn: transport };
    }
    if ('provider' in e) {
      const { provider, ...rest } = e;
      if (typeof provider !== 'object' || provider === null || typeof (provider as { request?: unknown }).request !== 'function') {
        throw invalidOption(`endpoints[${i}].provider`, 'an EIP-1193 provider (an object with request(args))', provider);
      }
      if (custom === undefined) throw invalidOption(`endpoints[${i}].provider`, "viem's custom in options.custom to wrap a provider", 'no custom');
      used.add(e.name);
      return { ...rest, conn: build(provider, () => custom(provider, { retryCount: 0 })) };
    }
    checkUrlOption(`endpoints[${i}].url`, (e as { url?: unknown }).url);
    if (http === undefined) throw invalidOption(`endpoints[${i}].url`, "viem's http in options.http to build a transport from a URL", 'no http');
    const { url, name: given, ...rest } = e;
    // Only a missing name is derived: a wrong one (null, '') is the pool's to refuse, naming the field.
    let name = given === undefined ? (hostOf(url) ?? `rpc-${i}`) : given;
    if (given === undefined && used.has(name)) name = `${name}#${i}`;
    used.add(name);
    return { ...rest, name, conn: build(url, () => http(url, { retryCount: 0 })) };
  });
}


/** What makes two `http` transports the same node, read off an instance; `null`: not an `http` transport. */
const described = new WeakMap<TransportFactory, object | null>();

function describe(t: TransportFactory): object | null {
  let d = described.get(t);
  if (d === undefined) {
    try {
      const { config, value } = t({ retryCount: 0 });
      d = config.type !== 'http' || value === undefined ? null : { url: value['url'], fetchOptions: value['fetchOptions'], key: config.key, name: config.name, timeout: config.timeout, methods: (config as { methods?: unknown }).methods };
    } catch {
      d = null;
    }
    described.set(t, d);
  }
  return d;
}

/**
 * Whether two viem transports stand for the same node: the same object, or two `http`
 * transports of the same URL, fetch options (headers), key, name, timeout and methods. For a
 * `Refresher` over `transport.pool` whose candidates build `http(url)` anew each round:
 * `sameConnection: sameTransport` keeps each endpoint's transport, and so its state.
 */
export function sameTransport(a: TransportFactory, b: TransportFactory): boolean {
  if (a === b) return true;
  const x = describe(a);
  const y = x === null ? null : describe(b);
  return x !== null && y !== null && samePlainData(x, y);
}
