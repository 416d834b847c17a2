/**
 * What test/viem-auto.test.ts and test/viem-direct.test.ts share: pool transports closed after
 * each test, a `custom` transport whose wrapper counts its calls, an error's chain as viem and
 * the classifier read it, and the provider failures both compare between the wrapped and the
 * direct path.
 */
import { BaseError, custom } from 'viem';
import { poolTransport, type PoolTransport, type PoolTransportOptions, type TransportFactory } from '../../src/viem/index.js';

export type Args = { method: string; params?: unknown };
export type Request = (args: Args, options?: { signal?: AbortSignal }) => Promise<unknown>;

const made: PoolTransport[] = [];

/** A pool transport that `closeMade()` closes. */
export function pool(options: PoolTransportOptions): PoolTransport {
  const t = poolTransport(options);
  made.push(t);
  return t;
}

/** Closes every pool transport `pool()` made since the last call (for `afterEach`). */
export async function closeMade(): Promise<void> {
  await Promise.all(made.splice(0).map((t) => t.pool.close()));
}

/** A `custom(provider)` transport (of the given viem's `custom`) whose wrapper (`request`) counts its calls. */
export function counted(provider: { request: Request }, counter: { wrapper: number }, customOf: typeof custom = custom): TransportFactory {
  return (params) => {
    const t = customOf(provider)(params as never);
    return { ...t, request: ((args: Args, opts?: object) => (counter.wrapper++, t.request(args as never, opts))) as never };
  };
}

/** The chain of an error as classes and the fields viem and the classifier read. */
export function chain(error: unknown): unknown[] {
  const out: unknown[] = [];
  for (let e: unknown = error, i = 0; i < 8 && e !== undefined; e = (e as { cause?: unknown }).cause, i++) {
    if (typeof e !== 'object' || e === null) {
      out.push(e);
      break;
    }
    const r = e as Record<string, unknown>;
    out.push({ ctor: r.constructor, name: r['name'], code: r['code'], shortMessage: r['shortMessage'], details: r['details'], message: r['message'], data: r['data'] });
  }
  return out;
}

/** What providers reject with: one per branch of viem's error mapping, and a few that are not RPC errors; a revert carries `revertData`. */
export function providerFailures(revertData: string): [string, () => unknown][] {
  return [
    ...[-32700, -32600, -32601, -32602, -32603, -32000, -32001, -32002, -32003, -32004, -32005, -32006, 4001, 4100, 4200, 4900, 4901, 4902, 5000, 5700, 5710, 5720, 5730, 5740, 5750, 5760, 7000, 12345].map(
      (code): [string, () => unknown] => [`code ${code}`, () => ({ code, message: `failed with ${code}` })],
    ),
    ['a revert with data', () => ({ code: 3, message: 'execution reverted: nope', data: revertData })],
    ['a plain Error', () => new Error('socket hang up')],
    ['a viem BaseError', () => new BaseError('already a viem error')],
    ['a string', () => 'just text'],
  ];
}
