/**
 * The endpoints of `poolTransport` as the pool's: each becomes a viem transport factory,
 * given as one, built from a URL with the user's `http`, or from an EIP-1193 provider with
 * the user's `custom`.
 */
import type { EndpointConfig } from '../options/options.js';
import { invalidOption } from '../base/errors.js';
import { checkUrlOption } from '../extras/url-option.js';
import { hostOf } from '../extras/host.js';
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

export function toEndpoints(list: readonly ViemEndpoint[], http: HttpFactory | undefined, custom: CustomFactory | undefined): EndpointConfig<TransportFactory>[] {
  if (!Array.isArray(list)) return list as never; // the pool reports the bad option
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
      return { ...rest, conn: custom(provider, { retryCount: 0 }) };
    }
    checkUrlOption(`endpoints[${i}].url`, (e as { url?: unknown }).url);
    if (http === undefined) throw invalidOption(`endpoints[${i}].url`, "viem's http in options.http to build a transport from a URL", 'no http');
    const { url, name: given, ...rest } = e;
    // Only a missing name is derived: a wrong one (null, '') is the pool's to refuse, naming the field.
    let name = given === undefined ? (hostOf(url) ?? `rpc-${i}`) : given;
    if (given === undefined && used.has(name)) name = `${name}#${i}`;
    used.add(name);
    return { ...rest, name, conn: http(url, { retryCount: 0 }) };
  });
}

