/**
 * Which connection a refreshed endpoint list should carry: the pool keeps an endpoint's state
 * (breaker, counters, learned limits) only for the very connection object it has, while a
 * candidate source (a registry fetched as JSON, a config file read again) makes equal values
 * anew on every round. Handing the held object over for an equal candidate keeps the state.
 */
import { invalidOption } from '../base/errors.js';
import type { EndpointConfig } from '../options/options.js';
import { checkFunction } from '../options/validate.js';
import { PoolCore, poolStateOf } from '../pool-core.js';

/**
 * Equal as data: the same value, two URLs of the same `href`, or arrays and plain objects
 * (object literals, JSON) whose members are equal as data. Class instances and functions
 * (a viem transport, a client) are equal only to themselves.
 */
export function samePlainData(a: unknown, b: unknown, depth = 0): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || depth > 16) return false;
  if (typeof URL === 'function' && a instanceof URL) return b instanceof URL && a.href === b.href;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => samePlainData(x, b[i], depth + 1));
  if (!isPlain(a) || !isPlain(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  return keys.every((k) => Object.prototype.hasOwnProperty.call(y, k) && samePlainData(x[k], y[k], depth + 1));
}

function isPlain(o: object): boolean {
  const proto = Object.getPrototypeOf(o) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * `list` with each endpoint that the pool has under the same name, with a connection `same`
 * takes for its own, given the pool's connection object. A `same` that throws says "not the same".
 */
export function keepHeldConnections<C>(pool: PoolCore<C>, list: readonly EndpointConfig<C>[], same: (held: C, candidate: C) => boolean): EndpointConfig<C>[] {
  const byName = poolStateOf(pool).byName;
  return list.map((c) => {
    if (typeof c !== 'object' || c === null) return c; // setEndpoints names what is wrong
    const held = byName.get(c.name);
    if (held === undefined || held.conn === c.conn) return c;
    let keep = false;
    try {
      keep = same(held.conn, c.conn) === true;
    } catch {
      keep = false;
    }
    return keep ? { ...c, conn: held.conn } : c;
  });
}

/**
 * For `pool.setEndpoints` with a list made anew (a config reloaded, a registry read as JSON):
 * each entry whose name the pool has, with a connection equal to the pool's (as data, or by
 * `same`), gets the pool's own connection object, so that endpoint keeps its breaker, counters
 * and learned limits. `pool.setEndpoints(keepConnections(pool, list))`.
 */
export function keepConnections<C>(pool: PoolCore<C>, list: readonly EndpointConfig<C>[], same: (held: C, candidate: C) => boolean = samePlainData): EndpointConfig<C>[] {
  if (!(pool instanceof PoolCore)) throw invalidOption('pool', 'a Pool', pool);
  checkFunction('same', same, false);
  return Array.isArray(list) ? keepHeldConnections(pool, list, same) : (list as never);
}
