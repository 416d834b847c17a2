/**
 * Twenty-sixth session, mutation run of `src/selection/endpoint-set.ts`, `hedge.ts` and
 * `latency.ts` (the three files the issue 15 rerun did not reach): what the survivors showed
 * no test holding. An endpoint kept by name across `setEndpoints` takes its new priority,
 * weight and in-flight limit; the weight's upper bound is inclusive; an endpoint entry that is
 * not there (`undefined`, a hole) is refused by name; the latency strategy's failure penalty
 * follows the pool's attempt timeout unless set.
 */
import { describe, expect, test } from 'vitest';
import { Pool, PoolError, type EndpointConfig } from '../../src/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { message } from './support.js';

const classify = () => 'transient' as const;

/** Which endpoint each of `n` calls, made one after the other, went to. */
async function served(pool: Pool<string>, n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(await pool.execute(async (conn) => conn));
  return out;
}

describe('setEndpoints with an endpoint kept by name and connection', () => {
  test('a new priority takes effect', async () => {
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }, { name: 'b', conn: 'b' }], classify });
    expect(await served(pool, 2)).toEqual(['a', 'a']);
    pool.setEndpoints([{ name: 'a', conn: 'a', priority: 'low' }, { name: 'b', conn: 'b' }]);
    expect(await served(pool, 2)).toEqual(['b', 'b']);
    expect(pool.stats().map((s) => [s.name, s.priority])).toEqual([['a', 'low'], ['b', 'high']]);
  });

  test('a new weight takes effect in the rotation', async () => {
    const endpoints = (w: number): EndpointConfig<string>[] => [{ name: 'a', conn: 'a', weight: w }, { name: 'b', conn: 'b' }];
    const pool = new Pool<string>({ endpoints: endpoints(1), classify, strategy: 'round-robin' });
    const before = await served(pool, 8);
    expect(before.filter((x) => x === 'a')).toHaveLength(4);
    pool.setEndpoints(endpoints(3));
    const after = await served(pool, 8);
    expect(after.filter((x) => x === 'a')).toHaveLength(6);
  });

  test('a new maxInFlight takes effect', async () => {
    const clock = new FakeClock();
    const endpoints = (m: number): EndpointConfig<string>[] => [{ name: 'a', conn: 'a', maxInFlight: m }, { name: 'b', conn: 'b' }];
    const pool = new Pool<string>({ endpoints: endpoints(1), classify, clock });
    const slow = (conn: string) => new Promise<string>((resolve) => clock.setTimeout(() => resolve(conn), 100));
    const two = async () => {
      const p = Promise.all([pool.execute(slow), pool.execute(slow)]);
      await clock.advance(100);
      return p;
    };
    expect(await two()).toEqual(['a', 'b']);
    pool.setEndpoints(endpoints(2));
    expect(await two()).toEqual(['a', 'a']);
  });
});

describe('endpoint entries', () => {
  test('a weight of 1000 is accepted, 1001 refused', () => {
    expect(() => new Pool({ endpoints: [{ name: 'a', conn: 1, weight: 1000 }], classify })).not.toThrow();
    expect(message(() => new Pool({ endpoints: [{ name: 'a', conn: 1, weight: 1001 }], classify }))).toBe('endpoints[0].weight: expected a positive integer up to 1000, got 1001');
  });

  test('an entry that is not there is refused by its index, not a TypeError', () => {
    for (const endpoints of [[undefined], [{ name: 'a', conn: 1 }, undefined], Array.from({ length: 2 }, (_, i) => (i === 0 ? { name: 'a', conn: 1 } : undefined))]) {
      let thrown: unknown;
      try {
        new Pool({ endpoints: endpoints as never, classify });
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(PoolError);
      const e = thrown as PoolError;
      expect(e.code).toBe('INVALID_OPTIONS');
      expect(e.field).toBe(`endpoints[${endpoints.length - 1}]`);
      expect(e.message).toBe(`endpoints[${endpoints.length - 1}]: expected an endpoint object, got undefined`);
    }
  });
});

describe("the latency strategy's failure penalty", () => {
  // b has no history: its estimate is the cold start, 5 s. a fails at once; its estimate is then
  // the penalty, by default the attempt timeout. The next call goes to the lower estimate (of
  // two candidates drawn at random: the draws alternate, so both are drawn).
  async function nextAfterAFails(options: { attemptTimeoutMs?: number; latency?: { failurePenaltyMs: number } }): Promise<string> {
    const latency = { coldStartMs: 5000, ...options.latency };
    let draw = 0;
    const random = () => (draw++ % 2 === 0 ? 0.25 : 0.75);
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }, { name: 'b', conn: 'b' }], classify, strategy: 'latency', random, ...options, latency });
    await expect(pool.execute(() => Promise.reject(new Error('refused')), { pin: 'a', retry: 'none' })).rejects.toMatchObject({ endpoint: 'a' });
    return pool.execute(async (conn) => conn);
  }

  test('defaults to the pool attempt timeout', async () => {
    // A penalty of 1 s (the attempt timeout) is under b's 5 s: a gets the next call.
    expect(await nextAfterAFails({ attemptTimeoutMs: 1000 })).toBe('a');
    // The default timeout (10 s) is over it: b does.
    expect(await nextAfterAFails({})).toBe('b');
  });

  test('latency.failurePenaltyMs overrides it', async () => {
    expect(await nextAfterAFails({ attemptTimeoutMs: 1000, latency: { failurePenaltyMs: 8000 } })).toBe('b');
    expect(await nextAfterAFails({ latency: { failurePenaltyMs: 100 } })).toBe('a');
  });
});
