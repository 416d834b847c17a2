/**
 * The only node at the tip fails (a 503 on balances, everything, or hangs) while two healthy
 * nodes 3 blocks behind are free: the read is served by one behind, as docs/viem.md says. Until
 * the fiftieth session a read left the nodes behind out (`exclude`) for all its attempts, so
 * it failed RETRIES_EXHAUSTED ("a transient ×3") or NO_ENDPOINT ("b excluded, c excluded"),
 * the poll's answers keeping a's breaker closed (a new user's repro, t14-tip-fails.mjs).
 */
import { createClient, custom } from 'viem';
import { describe, expect, test } from 'vitest';
import { FakeClock } from '../src/testing/index.js';
import { poolTransport } from '../src/viem/index.js';
import { PooledJsonRpcProvider } from '../src/ethers/index.js';
import { isPoolError } from '../src/index.js';

const hex = (n: number): string => `0x${n.toString(16)}`;
const ZERO = '0x0000000000000000000000000000000000000000';
const HEADS: Readonly<Record<string, number>> = { a: 103, b: 100, c: 100 };
const OPTS = { heads: { maxLagBlocks: 1, pollMs: 200 }, attemptTimeoutMs: 500, deadlineMs: 5000 } as const;

type Mode = '503' | 'hang' | '503all';

/** What `a` does with a request of `method` once down; undefined: it answers. */
function fault(mode: Mode, method: string): 'fail' | 'hang' | undefined {
  if (mode !== '503all' && method !== 'eth_getBalance') return undefined;
  return mode === 'hang' ? 'hang' : 'fail';
}

/** Four reads in a row after a goes down: each one's balance (the block served) or error code. */
async function fourReads(clock: FakeClock, get: () => Promise<unknown>): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < 4; i++) {
    const read = get().then(
      (v) => String(Number(v)),
      (e: unknown) => (isPoolError(e) ? `${e.code}: ${e.message}` : String(e)),
    );
    await clock.advance(6000);
    out.push(await read);
  }
  return out;
}

describe('the only node at the tip fails: a node behind serves', () => {
  for (const mode of ['503', 'hang', '503all'] as const) {
    test(`viem, ${mode}`, async () => {
      const clock = new FakeClock(1_000_000);
      let down = false;
      const conn = (key: string) =>
        custom({
          request: ({ method }: { method: string }) => {
            const f = key === 'a' && down ? fault(mode, method) : undefined;
            if (f === 'hang') return new Promise<never>(() => {});
            if (f === 'fail') return Promise.reject(Object.assign(new Error('HTTP request failed. Status: 503'), { status: 503 }));
            if (method === 'eth_blockNumber' || method === 'eth_getBalance') return Promise.resolve(hex(HEADS[key]!));
            return Promise.reject(new Error(`unexpected ${method}`));
          },
        });
      const t = poolTransport({ endpoints: ['a', 'b', 'c'].map((name) => ({ name, transport: conn(name) })), clock, ...OPTS });
      const client = createClient({ transport: t });
      await clock.advance(500);
      expect(t.heads()!.endpoints.map((e) => [e.name, e.lagging])).toEqual([['a', undefined], ['b', 'behind'], ['c', 'behind']]);
      down = true;
      expect(await fourReads(clock, () => client.request({ method: 'eth_getBalance', params: [ZERO, 'latest'] }))).toEqual(['100', '100', '100', '100']);
      await t.close();
    });

    test(`ethers, ${mode}`, async () => {
      const clock = new FakeClock(1_000_000);
      let down = false;
      const fetch = (url: string, init: { body: string }) => {
        const key = new URL(url).hostname.split('.')[0]!;
        const body = JSON.parse(init.body) as { id: unknown; method: string };
        const f = key === 'a' && down ? fault(mode, body.method) : undefined;
        if (f === 'hang') return new Promise<never>(() => {});
        if (f === 'fail') return Promise.resolve({ status: 503, ok: false, headers: new Headers({ 'content-type': 'text/plain' }), text: async () => 'busy' });
        return Promise.resolve({ status: 200, ok: true, headers: new Headers(), text: async () => JSON.stringify({ jsonrpc: '2.0', id: body.id, result: hex(HEADS[key]!) }) });
      };
      const provider = new PooledJsonRpcProvider({ network: 1, fetch, clock, endpoints: ['a', 'b', 'c'].map((name) => ({ name, url: `https://${name}.example/rpc` })), ...OPTS });
      try {
        await clock.advance(500);
        expect(provider.heads()!.endpoints.map((e) => [e.name, e.lagging])).toEqual([['a', undefined], ['b', 'behind'], ['c', 'behind']]);
        down = true;
        expect(await fourReads(clock, () => provider.sendWith('eth_getBalance', [ZERO, 'latest']))).toEqual(['100', '100', '100', '100']);
      } finally {
        await provider.close();
      }
    });
  }
});

describe('while the node at the tip is only busy, a read waits for its turn', () => {
  // Head routing's avoid is patient (call/routing.ts): a read goes to a node behind when the fit
  // ones failed it or are out, not while they are at their in-flight cap, cooling or waiting for a
  // rate-limit turn that comes before the read's deadline. With a plain avoid three reads at once
  // over a tip at maxInFlight 1 got 103, 100, 100 (this branch's first version of the fix above).
  const setup = (a: { maxInFlight?: number; rateLimit?: { perSecond: number } }, deadlineMs = 5000) => {
    const clock = new FakeClock(1_000_000);
    const conn = (key: string) =>
      custom({
        request: ({ method }: { method: string }) => {
          if (method === 'eth_blockNumber') return Promise.resolve(hex(HEADS[key]!));
          if (method === 'eth_getBalance') return new Promise((r) => clock.setTimeout(() => r(hex(HEADS[key]!)), 10));
          return Promise.reject(new Error(`unexpected ${method}`));
        },
      });
    const t = poolTransport({ endpoints: ['a', 'b', 'c'].map((name) => ({ name, transport: conn(name), ...(name === 'a' ? a : {}) })), clock, ...OPTS, deadlineMs });
    return { clock, t, client: createClient({ transport: t }) };
  };
  const three = async (clock: FakeClock, client: ReturnType<typeof createClient>) => {
    const reads = [0, 1, 2].map(() => client.request({ method: 'eth_getBalance', params: [ZERO, 'latest'] }).then(Number, (e: unknown) => (isPoolError(e) ? e.code : String(e))));
    await clock.advance(3000);
    return Promise.all(reads);
  };

  test('at its in-flight cap: all three reads are served at the tip, one after another', async () => {
    const { clock, t, client } = setup({ maxInFlight: 1 });
    await clock.advance(500);
    expect(await three(clock, client)).toEqual([103, 103, 103]);
    await t.close();
  });

  test('rate-limited, its next turn before the deadline: served at the tip; past the deadline: by a node behind', async () => {
    const soon = setup({ rateLimit: { perSecond: 2 } });
    await soon.clock.advance(1000); // the poll's questions spent a's tokens: refilled
    expect(await three(soon.clock, soon.client)).toEqual([103, 103, 103]);
    await soon.t.close();
    const late = setup({ rateLimit: { perSecond: 0.1 } }, 1000);
    await late.clock.advance(500);
    const got = await three(late.clock, late.client);
    expect(got.filter((v) => v === 100).length).toBeGreaterThan(0); // no turn of a's within a second: a node behind serves
    expect(got.every((v) => v === 100 || v === 103)).toBe(true);
    await late.t.close();
  });
});
