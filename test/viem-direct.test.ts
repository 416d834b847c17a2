/**
 * poolTransport with viem's `custom` handed in: endpoints given as EIP-1193 providers, and
 * requests to `custom`/`http` endpoint transports sent to the inner request directly
 * (src/viem/direct.ts). What must not change: the errors callers see (viem's classes,
 * URLs cut to the host), signals and aborts, pin, withEndpoint and the "unsupported"
 * memory. The http side of it also runs through the whole of test/viem.test.ts.
 */
import { createClient, custom, encodeErrorResult, http, parseAbi, createPublicClient, type EIP1193Provider } from 'viem';
import { afterEach, describe, expect, test } from 'vitest';
import { isPoolError } from '../src/index.js';
import { poolTransport, type TransportFactory } from '../src/viem/index.js';
import { FakeClock } from '../src/testing/index.js';
import { chain, closeMade, counted, pool, providerFailures, type Args, type Request } from './helpers/viem-transports.js';

afterEach(closeMade);

const abi = parseAbi(['function value() view returns (uint256)', 'error Error(string)']);
const revertData = encodeErrorResult({ abi, errorName: 'Error', args: ['nope'] });

const FAILURES = providerFailures(revertData);

describe('poolTransport({ custom }): direct requests fail with the very errors of the wrapped path', () => {
  test.each(FAILURES)('%s', async (_label, make) => {
    const failing = { request: () => Promise.reject(make()) };
    const common = { maxAttempts: 1, rememberUnsupportedMs: 0 };
    const wrapped = pool({ endpoints: [{ name: 'a', transport: custom(failing) }], ...common });
    const direct = pool({ custom, endpoints: [{ name: 'a', provider: failing }], ...common });
    const a = await createClient({ transport: wrapped }).request({ method: 'eth_chainId' }).catch((e: unknown) => e);
    const b = await createClient({ transport: direct }).request({ method: 'eth_chainId' }).catch((e: unknown) => e);
    expect(chain(b)).toEqual(chain(a));
  });

  test('a provider that throws synchronously, or answers with a plain value, is taken as viem takes it', async () => {
    const throwing = { request: (): Promise<unknown> => { throw { code: -32602, message: 'bad params' }; } };
    const plainValue = { request: (() => '0x7') as unknown as Request };
    const t = pool({ custom, endpoints: [{ name: 'a', provider: throwing }, { name: 'b', provider: plainValue }], maxAttempts: 1 });
    const err = await createClient({ transport: t.pin('a') }).request({ method: 'eth_chainId' }).catch((e: unknown) => e);
    expect((err as Error).name).toBe('InvalidParamsRpcError');
    expect(await createClient({ transport: t.pin('b') }).request({ method: 'eth_chainId' })).toBe('0x7');
  });

  test('a revert through a provider endpoint is decoded by viem', async () => {
    const reverting = { request: async ({ method }: Args) => (method === 'eth_call' ? Promise.reject({ code: 3, message: 'execution reverted: nope', data: revertData }) : '0x1') };
    const t = pool({ custom, endpoints: [{ name: 'a', provider: reverting }] });
    const err = await createPublicClient({ transport: t }).readContract({ address: '0x0000000000000000000000000000000000000001', abi, functionName: 'value' }).catch((e: unknown) => e);
    expect((err as Error).name).toBe('ContractFunctionExecutionError');
    expect((err as { shortMessage: string }).shortMessage).toContain('nope');
  });

  test('URLs in a provider error are cut to the host for the caller and for listeners', async () => {
    const leaky = { request: () => Promise.reject({ code: -32603, message: 'upstream https://rpc.example.com/v3/KEY_IN_PATH failed' }) };
    const seen: unknown[] = [];
    const t = pool({ custom, endpoints: [{ name: 'a', provider: leaky }, { name: 'b', provider: leaky }], maxAttempts: 2 });
    t.pool.on('attempt-failure', (e) => seen.push(e.error));
    const err = await createClient({ transport: t }).request({ method: 'eth_chainId' }).catch((e: unknown) => e);
    expect(isPoolError(err)).toBe(true);
    expect(seen).toHaveLength(2);
    const text = [err, ...seen].flatMap((e) => chain(e).map((c) => JSON.stringify(c, (k, v) => (k === 'ctor' ? undefined : v)))).join('\n');
    expect(text).toContain('https://rpc.example.com');
    expect(text).not.toContain('KEY_IN_PATH');
  });
});

describe('poolTransport({ custom }): what is sent directly', () => {
  test("custom endpoint transports are called on their provider, not through the transport's request", async () => {
    const counter = { wrapper: 0 };
    const calls: Args[] = [];
    const provider = { request: async (args: Args) => (calls.push(args), '0x2a') };
    const withCustom = pool({ custom, endpoints: [{ name: 'a', transport: counted(provider, counter) }] });
    expect(await createClient({ transport: withCustom }).request({ method: 'eth_blockNumber' })).toBe('0x2a');
    expect(counter.wrapper).toBe(0);
    expect(calls).toEqual([{ method: 'eth_blockNumber' }]);
    // Without `custom`, the same endpoint goes through its wrapper as before.
    const without = pool({ endpoints: [{ name: 'a', transport: counted(provider, counter) }] });
    expect(await createClient({ transport: without }).request({ method: 'eth_blockNumber' })).toBe('0x2a');
    expect(counter.wrapper).toBe(1);
  });

  test("http endpoint transports are called on viem's JSON-RPC client directly (fetchFn sees the request)", async () => {
    const bodies: unknown[] = [];
    const fetchFn = async (_url: unknown, init?: RequestInit) => {
      const body = JSON.parse(String(init?.body)) as { id: number };
      bodies.push(body);
      return new Response(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: '0x2a' }), { headers: { 'content-type': 'application/json' } });
    };
    const counter = { wrapper: 0 };
    const factory: TransportFactory = (params) => {
      const t = http('http://rpc.invalid/KEY', { fetchFn })(params as never);
      return { ...t, request: ((args: Args, opts?: object) => (counter.wrapper++, t.request(args as never, opts))) as never };
    };
    const t = pool({ custom, endpoints: [{ name: 'a', transport: factory }] });
    expect(await createClient({ transport: t }).request({ method: 'eth_blockNumber' })).toBe('0x2a');
    expect(bodies).toHaveLength(1);
    expect(counter.wrapper).toBe(0);
  });

  test('a transport with a methods list keeps its wrapper (it enforces the list)', async () => {
    const provider = { request: async () => '0x1' };
    const t = pool({ custom, endpoints: [{ name: 'a', transport: custom(provider, { methods: { exclude: ['eth_chainId'] } }) }], maxAttempts: 1 });
    const err = await createClient({ transport: t }).request({ method: 'eth_chainId' }).catch((e: unknown) => e);
    expect((err as Error).name).toBe('MethodNotSupportedRpcError');
  });
});

describe('poolTransport({ custom }): signals on provider endpoints', () => {
  test("a provider that takes options gets the attempt's signal; a timed-out attempt is aborted and the call fails over", async () => {
    const clock = new FakeClock();
    const signals: (AbortSignal | undefined)[] = [];
    const hanging = { request: (_args: Args, options?: { signal?: AbortSignal }) => (signals.push(options?.signal), new Promise(() => undefined)) };
    const answering = { request: async () => '0x2a' };
    const t = pool({ custom, clock, strategy: 'ordered', attemptTimeoutMs: 1_000, endpoints: [{ name: 'a', provider: hanging }, { name: 'b', provider: answering }] });
    const p = createClient({ transport: t }).request({ method: 'eth_blockNumber' });
    await clock.advance(1_000);
    expect(await p).toBe('0x2a');
    expect(signals).toHaveLength(1);
    expect(signals[0]).toBeInstanceOf(AbortSignal);
    expect(signals[0]!.aborted).toBe(true);
  });

  test('an EIP-1193 request(args) is called with the arguments alone', async () => {
    const calls: unknown[][] = [];
    const provider = {
      request: function (this: unknown, _args: Args) {
        calls.push([...arguments]);
        return Promise.resolve('0x1');
      },
    };
    const t = pool({ custom, endpoints: [{ name: 'a', provider }] });
    expect(await createClient({ transport: t }).request({ method: 'eth_blockNumber' })).toBe('0x1');
    expect(calls).toEqual([[{ method: 'eth_blockNumber' }]]);
  });

  test("the caller's own signal aborts a call waiting on a provider", async () => {
    const hanging = { request: () => new Promise(() => undefined) };
    const t = pool({ custom, endpoints: [{ name: 'a', provider: hanging }] });
    const ac = new AbortController();
    const aborted = t({}).request({ method: 'eth_blockNumber' }, { signal: ac.signal }).catch((e: unknown) => e);
    ac.abort();
    expect(await aborted).toMatchObject({ code: 'ABORTED' });
  });
});

describe('poolTransport({ custom }): pin, withEndpoint and remembered answers on provider endpoints', () => {
  const answering = (answer: string, calls: string[]) => ({ request: async ({ method }: Args) => (calls.push(method), answer) });

  test('pin sends to the pinned provider only', async () => {
    const a: string[] = [];
    const b: string[] = [];
    const t = pool({ custom, endpoints: [{ name: 'a', provider: answering('0xa', a) }, { name: 'b', provider: answering('0xb', b) }] });
    const pinned = createClient({ transport: t.pin('b') });
    expect(await pinned.request({ method: 'eth_blockNumber' })).toBe('0xb');
    expect(await pinned.request({ method: 'eth_chainId' })).toBe('0xb');
    expect([a, b]).toEqual([[], ['eth_blockNumber', 'eth_chainId']]);
  });

  test('withEndpoint runs the operation on one provider; a failure another endpoint could fix reruns it there', async () => {
    const a: string[] = [];
    const b: string[] = [];
    const failingSend = {
      request: async ({ method }: Args) => {
        a.push(method);
        if (method === 'eth_sendRawTransaction') throw { code: -32603, message: 'internal error' };
        return '0x9';
      },
    };
    const t = pool({ custom, strategy: 'ordered', endpoints: [{ name: 'a', provider: failingSend }, { name: 'b', provider: answering('0x5', b) }] });
    const result = await t.withEndpoint(async (transport, endpoint) => {
      const c = createClient({ transport });
      const nonce = await c.request({ method: 'eth_getTransactionCount' as 'eth_chainId' });
      const hash = await c.request({ method: 'eth_sendRawTransaction' as 'eth_chainId' });
      return { endpoint, nonce, hash };
    });
    expect(result).toEqual({ endpoint: 'b', nonce: '0x5', hash: '0x5' });
    expect(a).toEqual(['eth_getTransactionCount', 'eth_sendRawTransaction']);
    expect(b).toEqual(['eth_getTransactionCount', 'eth_sendRawTransaction']);
  });

  test('"method not found" from a provider is a viem MethodNotFoundRpcError, remembered for that method', async () => {
    const a: string[] = [];
    const refusing = { request: async ({ method }: Args) => (a.push(method), Promise.reject({ code: -32601, message: 'method not found' })) };
    const t = pool({ custom, strategy: 'ordered', endpoints: [{ name: 'a', provider: refusing }, { name: 'b', provider: answering('0x2a', []) }] });
    const client = createClient({ transport: t });
    expect(await client.request({ method: 'eth_blockNumber' })).toBe('0x2a');
    expect(await client.request({ method: 'eth_blockNumber' })).toBe('0x2a');
    expect(a).toEqual(['eth_blockNumber']);
    const only = pool({ custom, endpoints: [{ name: 'a', provider: refusing }] });
    const err = await createClient({ transport: only }).request({ method: 'eth_blockNumber' }).catch((e: unknown) => e);
    expect((err as Error).name).toBe('MethodNotFoundRpcError');
  });
});

describe('poolTransport: provider endpoints as options', () => {
  test("a provider endpoint without options.custom is an INVALID_OPTIONS error naming the field", () => {
    expect(() => poolTransport({ endpoints: [{ name: 'a', provider: { request: async () => '0x1' } }] })).toThrow(/endpoints\[0\]\.provider/);
  });

  test('a provider without request, and a custom that is not a function, are refused', () => {
    expect(() => poolTransport({ custom, endpoints: [{ name: 'a', provider: {} as never }] })).toThrow(/endpoints\[0\]\.provider/);
    expect(() => poolTransport({ custom: 'custom' as never, endpoints: [{ name: 'a', provider: { request: async () => 1 } }] })).toThrow(/custom/);
  });

  test("viem's EIP1193Provider type and viem's custom are accepted without a cast", () => {
    const provider = { request: async () => '0x1' } as unknown as EIP1193Provider;
    const t = pool({ custom, endpoints: [{ name: 'a', provider }] });
    expect(t.pool.endpointNames).toEqual(['a']);
  });
});
