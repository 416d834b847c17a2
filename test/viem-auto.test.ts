/**
 * poolTransport at its defaults: viem's `custom` loaded at run time (src/viem/autoload.ts),
 * each endpoint transport factory probed once, without a request, for being of the loaded
 * copy, and requests to `custom`/`http` transports then sent directly (src/viem/direct.ts).
 * What must hold: the errors are those of the wrapped path; nothing is sent before the
 * switch but the requests themselves (the probe never reaches a provider or the network);
 * a failed import, another copy of viem and `custom: false` keep every request wrapped;
 * requests made while viem loads go through the wrapper and are answered.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { build } from 'esbuild';
import * as viem from 'viem';
import { createClient, custom, http, type EIP1193Provider } from 'viem';
import { afterEach, describe, expect, test } from 'vitest';
import { poolTransport, type TransportFactory } from '../src/viem/index.js';
import { loadViem, setViemLoader } from '../src/viem/autoload.js';
import { FakeClock } from '../src/testing/index.js';
import { chain, closeMade, counted, pool, providerFailures, type Args, type Request } from './helpers/viem-transports.js';

afterEach(async () => {
  await closeMade();
  setViemLoader();
});

/** Lets every pending promise (the import, the probe, the switch) settle: one turn of the event loop, no timer. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
/** Waits for viem's import (the first one of the process takes a while), then for the probes. */
const loaded = async () => {
  await loadViem();
  await settle();
};

/** A provider that records the methods it is asked and answers '0x2a'. */
function recording(): { request: Request; methods: string[] } {
  const methods: string[] = [];
  return { methods, request: async ({ method }: Args) => (methods.push(method), '0x2a') };
}

const FAILURES = providerFailures('0x08c379a0');

describe('poolTransport at its defaults goes direct once viem has loaded', () => {
  test('the first request goes through the wrapper, later ones to the provider; the probe never reaches it', async () => {
    const counter = { wrapper: 0 };
    const provider = recording();
    const t = pool({ endpoints: [{ name: 'a', transport: counted(provider, counter) }] });
    const client = createClient({ transport: t });
    expect(await client.request({ method: 'eth_blockNumber' })).toBe('0x2a');
    await loaded();
    // One request and the probe went through the wrapper; nothing more will.
    expect(counter.wrapper).toBe(2);
    for (let i = 0; i < 3; i++) expect(await client.request({ method: 'eth_chainId' })).toBe('0x2a');
    expect(counter.wrapper).toBe(2);
    expect(provider.methods).toEqual(['eth_blockNumber', 'eth_chainId', 'eth_chainId', 'eth_chainId']);
  });

  test('another client of the same pool transport goes direct from its first request (the factory is known)', async () => {
    const counter = { wrapper: 0 };
    const provider = recording();
    const t = pool({ endpoints: [{ name: 'a', transport: counted(provider, counter) }] });
    await createClient({ transport: t }).request({ method: 'eth_blockNumber' });
    await loaded();
    const before = counter.wrapper;
    await createClient({ transport: t }).request({ method: 'eth_blockNumber' });
    await t.withEndpoint((transport) => createClient({ transport }).request({ method: 'eth_chainId' }));
    expect(counter.wrapper).toBe(before);
    expect(provider.methods).toEqual(['eth_blockNumber', 'eth_blockNumber', 'eth_chainId']);
  });

  test("http endpoint transports: fetch never sees the probe, and a timed-out attempt's fetch is aborted after the switch", async () => {
    const clock = new FakeClock();
    const seen: { method: string; signal: AbortSignal | null | undefined }[] = [];
    let hang = false;
    const fetchFn = async (_url: unknown, init?: RequestInit) => {
      const body = JSON.parse(String(init?.body)) as { id: number; method: string };
      seen.push({ method: body.method, signal: init?.signal });
      if (hang) return new Promise<Response>(() => undefined);
      return new Response(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: '0x2a' }), { headers: { 'content-type': 'application/json' } });
    };
    const wrapper: Record<string, number> = { a: 0, b: 0 };
    const factory = (name: string): TransportFactory => (params) => {
      const t = http(`http://${name}.invalid/`, { fetchFn })(params as never);
      return { ...t, request: ((args: Args, opts?: object) => (wrapper[name]!++, t.request(args as never, opts))) as never };
    };
    const t = pool({ clock, strategy: 'ordered', attemptTimeoutMs: 1_000, endpoints: [{ name: 'a', transport: factory('a') }, { name: 'b', transport: factory('b') }] });
    const client = createClient({ transport: t });
    await client.request({ method: 'eth_blockNumber' });
    await loaded();
    hang = true;
    const p = client.request({ method: 'eth_chainId' });
    await settle();
    hang = false;
    await clock.advance(1_000);
    expect(await p).toBe('0x2a');
    expect(seen.map((s) => s.method)).toEqual(['eth_blockNumber', 'eth_chainId', 'eth_chainId']);
    expect(seen[1]!.signal?.aborted).toBe(true);
    // a: its first request and the probe (the hung request went direct); b: its first request (the failover) and its probe.
    expect(wrapper).toEqual({ a: 2, b: 2 });
  });

  test.each(FAILURES)('errors are those of the wrapped path: %s', async (_label, make) => {
    const failing = { request: () => Promise.reject(make()) };
    const common = { maxAttempts: 1, rememberUnsupportedMs: 0 };
    const counter = { wrapper: 0 };
    const wrapped = pool({ custom: false, endpoints: [{ name: 'a', transport: custom(failing) }], ...common });
    const auto = pool({ endpoints: [{ name: 'a', transport: counted(failing, counter) }], ...common });
    const client = createClient({ transport: auto });
    await client.request({ method: 'eth_chainId' }).catch(() => undefined);
    await loaded();
    const probed = counter.wrapper;
    const a = await createClient({ transport: wrapped }).request({ method: 'eth_chainId' }).catch((e: unknown) => e);
    const b = await client.request({ method: 'eth_chainId' }).catch((e: unknown) => e);
    expect(counter.wrapper).toBe(probed);
    expect(chain(b)).toEqual(chain(a));
  });
});

describe('poolTransport at its defaults stays on the wrapper', () => {
  test('when viem cannot be loaded (a browser, a bundle): every request through the wrapper, nothing probed', async () => {
    for (const loader of [() => Promise.reject(new Error('Failed to resolve module specifier "viem"')), () => { throw new Error('no import here'); }, () => Promise.resolve({})]) {
      setViemLoader(loader as () => Promise<unknown>, null);
      const counter = { wrapper: 0 };
      const provider = recording();
      const client = createClient({ transport: pool({ endpoints: [{ name: 'a', transport: counted(provider, counter) }] }) });
      for (let i = 0; i < 3; i++) {
        expect(await client.request({ method: 'eth_blockNumber' })).toBe('0x2a');
        await settle();
      }
      expect(counter.wrapper).toBe(3);
      expect(provider.methods).toEqual(['eth_blockNumber', 'eth_blockNumber', 'eth_blockNumber']);
    }
  });

  test("when the user's transports are of viem's CommonJS build: that copy is loaded too, and errors are of the user's copy", async () => {
    const other = createRequire(import.meta.url)('viem') as typeof viem;
    expect(other.MethodNotSupportedRpcError).not.toBe(viem.MethodNotSupportedRpcError);
    const counter = { wrapper: 0 };
    const failing = { request: () => Promise.reject({ code: -32602, message: 'bad params' }) };
    const client = createClient({ transport: pool({ maxAttempts: 1, endpoints: [{ name: 'a', transport: counted(failing, counter, other.custom) }] }) });
    for (let i = 0; i < 3; i++) {
      const err = await client.request({ method: 'eth_blockNumber' }).catch((e: unknown) => e);
      // The user's own copy's class, as without the pool.
      expect(err).toBeInstanceOf(other.InvalidParamsRpcError);
      expect(err).not.toBeInstanceOf(viem.InvalidParamsRpcError);
      await loaded();
    }
    expect(counter.wrapper).toBe(2); // the first request and the probe
  });

  test('when the probe is refused by a class of neither copy: every request wrapped', async () => {
    let required = 0;
    setViemLoader(undefined, () => (required++, Promise.resolve(createRequire(import.meta.url)('viem'))));
    const counter = { wrapper: 0 };
    const provider = recording();
    const foreign = class MethodNotSupportedRpcError extends Error {
      override name = 'MethodNotSupportedRpcError';
    };
    const factory: TransportFactory = (params) => {
      const t = custom(provider)(params as never);
      const request = ((args: Args, opts?: { methods?: { exclude?: string[] } }) =>
        opts?.methods?.exclude?.includes(args.method) ? Promise.reject(new foreign('method not supported')) : (counter.wrapper++, t.request(args as never, opts as never))) as never;
      return { ...t, request };
    };
    const client = createClient({ transport: pool({ endpoints: [{ name: 'a', transport: factory }] }) });
    for (let i = 0; i < 3; i++) {
      await client.request({ method: 'eth_blockNumber' });
      await loaded();
    }
    expect(counter.wrapper).toBe(3);
    expect(required).toBe(1);
    expect(provider.methods).toEqual(['eth_blockNumber', 'eth_blockNumber', 'eth_blockNumber']);
  });

  test('when the loaded module is not what it claims (its classes differ from those its custom throws): nothing goes direct', async () => {
    const fake = async () => ({ ...viem, MethodNotSupportedRpcError: class MethodNotSupportedRpcError extends Error {} });
    setViemLoader(fake, fake);
    expect(await loadViem()).toBeUndefined();
    const counter = { wrapper: 0 };
    const provider = recording();
    const client = createClient({ transport: pool({ endpoints: [{ name: 'a', transport: counted(provider, counter) }] }) });
    for (let i = 0; i < 3; i++) {
      await client.request({ method: 'eth_blockNumber' });
      await settle();
    }
    expect(counter.wrapper).toBe(4); // three requests and the probe (refused, but neither copy passed its own check)
    expect(provider.methods).toEqual(['eth_blockNumber', 'eth_blockNumber', 'eth_blockNumber']);
  });

  test('a transport whose config has no `methods` key (a viem without the per-request override, or a hand-made one) is never probed', async () => {
    const calls: { args: Args; options: unknown }[] = [];
    const provider = recording();
    const oldStyle: TransportFactory = () => {
      const request = ((args: Args, options?: unknown) => (calls.push({ args, options }), provider.request(args))) as never;
      return { config: { key: 'custom', name: 'Custom Provider', type: 'custom', request: provider.request as never, retryCount: 0 }, request };
    };
    const client = createClient({ transport: pool({ endpoints: [{ name: 'a', transport: oldStyle }] }) });
    for (let i = 0; i < 3; i++) {
      await client.request({ method: 'eth_blockNumber' });
      await settle();
    }
    expect(calls.map((c) => c.args.method)).toEqual(['eth_blockNumber', 'eth_blockNumber', 'eth_blockNumber']);
    expect(provider.methods).toEqual(['eth_blockNumber', 'eth_blockNumber', 'eth_blockNumber']);
  });

  test('a transport that answers the probe (its wrapper ignores the `methods` option) stays wrapped', async () => {
    const probes: string[] = [];
    let wrapped = 0;
    const provider = recording();
    const ignoring: TransportFactory = (params) => {
      const t = custom(provider)(params as never);
      // Answers everything itself, never through the provider: what a wrapper without the override would do, minus the network.
      return { ...t, request: (async (args: Args) => (args.method === 'endpointPool_probe' ? (probes.push(args.method), null) : (wrapped++, provider.request(args)))) as never };
    };
    const client = createClient({ transport: pool({ endpoints: [{ name: 'a', transport: ignoring }] }) });
    for (let i = 0; i < 3; i++) {
      await client.request({ method: 'eth_blockNumber' });
      await settle();
    }
    expect(probes).toEqual(['endpointPool_probe']);
    expect(wrapped).toBe(3);
    expect(provider.methods).toEqual(['eth_blockNumber', 'eth_blockNumber', 'eth_blockNumber']);
  });

  test('custom: false never loads viem and keeps every request on the wrapper', async () => {
    let loads = 0;
    setViemLoader(() => (loads++, Promise.resolve(viem)));
    const counter = { wrapper: 0 };
    const provider = recording();
    const client = createClient({ transport: pool({ custom: false, endpoints: [{ name: 'a', transport: counted(provider, counter) }] }) });
    for (let i = 0; i < 3; i++) {
      await client.request({ method: 'eth_blockNumber' });
      await settle();
    }
    expect(loads).toBe(0);
    expect(counter.wrapper).toBe(3);
  });

  test('a custom handed in wins: viem is not loaded, requests go direct from the first', async () => {
    let loads = 0;
    setViemLoader(() => (loads++, Promise.resolve(viem)));
    const counter = { wrapper: 0 };
    const client = createClient({ transport: pool({ custom, endpoints: [{ name: 'a', transport: counted(recording(), counter) }] }) });
    await client.request({ method: 'eth_blockNumber' });
    await settle();
    expect([loads, counter.wrapper]).toEqual([0, 0]);
  });

  test('custom must be a function, false or left out', () => {
    expect(() => poolTransport({ custom: true as never, endpoints: [{ name: 'a', transport: custom(recording()) }] })).toThrow(/custom/);
    expect(() => poolTransport({ custom: false, endpoints: [{ name: 'a', provider: recording() as unknown as EIP1193Provider }] })).toThrow(/endpoints\[0\]\.provider/);
  });
});

describe('requests while viem loads', () => {
  test('go through the wrapper and are answered; those after the load go direct', async () => {
    let release!: (m: unknown) => void;
    let loads = 0;
    setViemLoader(() => (loads++, new Promise((resolve) => (release = resolve))));
    const counter = { wrapper: 0 };
    const provider = {
      pending: [] as ((v: string) => void)[],
      methods: [] as string[],
      request({ method }: Args): Promise<unknown> {
        this.methods.push(method);
        return new Promise((resolve) => this.pending.push(resolve));
      },
    };
    const t = pool({ endpoints: [{ name: 'a', transport: counted(provider, counter) }] });
    pool({ endpoints: [{ name: 'b', transport: custom(recording()) }] }); // a second pool transport: the same import
    const client = createClient({ transport: t });
    const during = [client.request({ method: 'eth_blockNumber' }), client.request({ method: 'eth_chainId' })];
    await settle();
    expect(counter.wrapper).toBe(2);
    release(viem);
    await settle();
    expect(counter.wrapper).toBe(3); // the probe
    const after = client.request({ method: 'eth_gasPrice' });
    await settle();
    expect(counter.wrapper).toBe(3);
    for (const r of provider.pending.splice(0)) r('0x1');
    expect(await Promise.all([...during, after])).toEqual(['0x1', '0x1', '0x1']);
    expect(provider.methods).toEqual(['eth_blockNumber', 'eth_chainId', 'eth_gasPrice']);
    expect(loads).toBe(1);
  });
});

describe('the run-time import is left alone by bundlers', () => {
  const dist = join(import.meta.dirname, '..', 'dist', 'viem');
  test.runIf(existsSync(join(dist, 'index.js')))('a browser bundle of endpoint-pool/viem (dist, both formats) gains none of viem, and keeps the import', async () => {
    for (const file of ['index.js', 'index.cjs']) {
      const out = await build({ entryPoints: [join(dist, file)], bundle: true, write: false, metafile: true, platform: 'browser', format: 'esm', logLevel: 'silent' });
      const inputs = Object.keys(out.metafile.inputs);
      expect(inputs.some((i) => i.includes('node_modules/viem')), file).toBe(false);
      expect(out.outputFiles[0]!.text, file).toMatch(/import\(\s*(?:\/\*[^*]*\*\/\s*)*\w+\s*\)/);
    }
  });
});
