/**
 * A Refresher whose candidate source makes its connection values anew each round (a registry
 * read as JSON: `{ url, key }` objects) used to install them as new endpoints every time: each
 * endpoint's breaker closed, its counters and learned limits forgotten. An endpoint kept by
 * name whose connection is equal as data now keeps the pool's object, and its state.
 */
import { describe, expect, test } from 'vitest';
import { Pool, Refresher, keepConnections, type EndpointConfig } from '../src/index.js';
import { samePlainData } from '../src/extras/same-connection.js';
import { connectionOf } from '../src/rpc/connections.js';
import { FakeClock } from '../src/testing/index.js';

type Conn = { url: string; headers?: Record<string, string>; tags?: string[] };

/** The registry's answer: fresh objects on every call, as JSON.parse gives them. */
function registry(entries: readonly { name: string; conn: Conn }[]): () => Promise<EndpointConfig<Conn>[]> {
  const json = JSON.stringify(entries);
  return async () => JSON.parse(json) as EndpointConfig<Conn>[];
}

function setup(candidates: () => Promise<EndpointConfig<Conn>[]>, extra: Partial<ConstructorParameters<typeof Refresher<Conn>>[1]> = {}) {
  const clock = new FakeClock();
  const pool = new Pool<Conn>({ endpoints: [{ name: 'seed', conn: { url: 'https://seed.example' } }], classify: () => 'transient', clock, breaker: { threshold: 1, cooldownMs: 600_000 }, strategy: 'ordered' });
  const r = new Refresher(pool, { candidates, check: async () => true, intervalMs: 60_000, ...extra });
  return { pool, r, clock };
}

const A = { name: 'a', conn: { url: 'https://a.example', headers: { 'x-key': 'k1' }, tags: ['eu', 'archive'] } };
const B = { name: 'b', conn: { url: 'https://b.example' } };

describe('Refresher: connections equal as data keep their endpoint', () => {
  test('an open breaker and the counters survive rounds of fresh objects; the pool keeps its first object', async () => {
    const { pool, r } = setup(registry([A, B]));
    await r.refresh();
    const first = connectionOf(pool, 'a');
    await pool.execute(async (c) => {
      if (c.url === A.conn.url) throw new Error('down');
      return c;
    });
    expect(pool.breakerState('a')).toMatchObject({ state: 'open' });
    for (let i = 0; i < 3; i++) await r.refresh();
    expect(pool.breakerState('a')).toMatchObject({ state: 'open' });
    expect(pool.stats().find((s) => s.name === 'b')!.successes).toBe(1);
    expect(connectionOf(pool, 'a')).toBe(first);
  });

  test('another value under the name (a rotated key, a new URL) is a new endpoint', async () => {
    let key = 'k1';
    const { pool, r } = setup(async () => [{ name: 'a', conn: { url: 'https://a.example', headers: { 'x-key': key } } }, { ...B, conn: { ...B.conn } }]);
    await r.refresh();
    await pool.execute(async (c) => {
      if (c.url === A.conn.url) throw new Error('down');
      return c;
    });
    expect(pool.breakerState('a')).toMatchObject({ state: 'open' });
    key = 'k2';
    await r.refresh();
    expect(pool.breakerState('a')).toBe('closed');
    expect(connectionOf(pool, 'a')!.headers).toEqual({ 'x-key': 'k2' });
  });

  test('sameConnection decides when given; one that throws says "not the same"', async () => {
    const urlOnly = setup(async () => [{ name: 'a', conn: { url: 'https://a.example', headers: { 'x-key': String(Math.random()) } } }], { sameConnection: (h, c) => h.url === c.url });
    await urlOnly.r.refresh();
    const held = connectionOf(urlOnly.pool, 'a');
    await urlOnly.r.refresh();
    expect(connectionOf(urlOnly.pool, 'a')).toBe(held);

    const throwing = setup(registry([A]), {
      sameConnection: () => {
        throw new Error('bug');
      },
    });
    await throwing.r.refresh();
    const before = connectionOf(throwing.pool, 'a');
    const result = await throwing.r.refresh();
    expect(result.installed).toEqual(['a']);
    expect(connectionOf(throwing.pool, 'a')).not.toBe(before);
    expect(() => new Refresher(throwing.pool, { candidates: [A], check: async () => true, sameConnection: 5 as never })).toThrow(/sameConnection/);
  });
});

describe('samePlainData', () => {
  test('data equal member by member; class instances and functions only to themselves', () => {
    const f = () => 1;
    expect(samePlainData('x', 'x')).toBe(true);
    expect(samePlainData({ a: 1, b: [1, { c: 'd' }] }, { b: [1, { c: 'd' }], a: 1 })).toBe(true);
    expect(samePlainData(Object.assign(Object.create(null) as object, { a: 1 }), { a: 1 })).toBe(true);
    expect(samePlainData(new URL('https://a.example/x'), new URL('https://a.example/x'))).toBe(true);
    expect(samePlainData(new URL('https://a.example/x'), new URL('https://a.example/y'))).toBe(false);
    expect(samePlainData({ a: 1 }, { a: 1, b: undefined })).toBe(false);
    expect(samePlainData({ a: 1, b: undefined }, { a: 1, c: undefined })).toBe(false);
    expect(samePlainData([1, 2], [1, 2, 3])).toBe(false);
    expect(samePlainData([1], { 0: 1 })).toBe(false);
    expect(samePlainData({ f }, { f })).toBe(true);
    expect(samePlainData({ f }, { f: () => 1 })).toBe(false);
    expect(samePlainData(new Map([[1, 2]]), new Map([[1, 2]]))).toBe(false);
    expect(samePlainData(null, {})).toBe(false);
    expect(samePlainData({ a: null }, { a: null })).toBe(true);
    class Client {
      constructor(readonly url: string) {}
    }
    expect(samePlainData(new Client('u'), new Client('u'))).toBe(false);
    // A cycle ends (not equal past the depth bound) instead of overflowing the stack.
    const x: Record<string, unknown> = {};
    x['self'] = x;
    const y: Record<string, unknown> = {};
    y['self'] = y;
    expect(samePlainData(x, y)).toBe(false);
  });
});

describe('keepConnections: a list made anew for pool.setEndpoints', () => {
  test('an equal connection keeps its endpoint; another value, a new name or a bad entry is passed on as given', async () => {
    const clock = new FakeClock();
    const config = JSON.stringify([{ name: 'a', conn: { url: 'https://a.example', key: 'k1' } }, { name: 'b', conn: { url: 'https://b.example', key: 'k2' } }]);
    const pool = new Pool<{ url: string; key: string }>({ endpoints: JSON.parse(config), classify: () => 'transient', clock, breaker: { threshold: 1, cooldownMs: 600_000 }, strategy: 'ordered' });
    await pool.execute(async (c) => {
      if (c.url === 'https://a.example') throw new Error('down');
      return c;
    });
    const held = connectionOf(pool, 'a');
    pool.setEndpoints(keepConnections(pool, JSON.parse(config)));
    expect(connectionOf(pool, 'a')).toBe(held);
    expect(pool.breakerState('a')).toMatchObject({ state: 'open' });
    // Without it, the same list made anew is a new endpoint.
    pool.setEndpoints(JSON.parse(config));
    expect(pool.breakerState('a')).toBe('closed');
    const list = keepConnections(pool, [{ name: 'a', conn: { url: 'https://a.example', key: 'k9' } }, { name: 'c', conn: { url: 'https://c.example', key: 'k3' } }, 5 as never, null as never]);
    expect(list[0]!.conn.key).toBe('k9');
    expect(list[2]).toBe(5);
    expect(list[3]).toBeNull();
    // By `same`: the URL alone.
    const byUrl = keepConnections(pool, [{ name: 'a', conn: { url: 'https://a.example', key: 'k9' } }], (h, c) => h.url === c.url);
    expect(byUrl[0]!.conn).toBe(connectionOf(pool, 'a'));
    expect(() => keepConnections({} as never, [])).toThrow(/^pool: expected a Pool/);
    expect(() => keepConnections(pool, [], 5 as never)).toThrow(/^same: expected a function/);
  });
});
