/**
 * The RPC layer's view of which node an endpoint name stands for. Its memories (heads,
 * "unsupported" answers, filter routes) are keyed by endpoint name, while `setEndpoints` may
 * give a name another connection (another node) or take it away; the pool itself then treats
 * the endpoint as new (fresh breaker, limits, counters), and so must what was learned of it.
 * Kept out of the core: only the adapters use it.
 */
import { Attempt } from '../call/attempt.js';
import { poolStateOf, type PoolCore } from '../pool-core.js';

/**
 * A function that returns the names whose connection `setEndpoints` has taken away since its
 * last call (the endpoint removed, or given another connection: by `nodeKey`, identity by
 * default, as the pool compares them to keep an endpoint's breaker), or `undefined` when none.
 * A name removed and later added again is a new node too, whenever the calls fall. One
 * comparison per call while the set is unchanged.
 */
export function connectionWatch<C>(pool: PoolCore<C>, nodeKey: (conn: C) => unknown = (c) => c): () => string[] | undefined {
  const s = poolStateOf(pool);
  let seen = s.endpoints;
  return () => {
    const current = s.endpoints;
    if (current === seen) return undefined;
    const previous = seen;
    seen = current;
    let replaced: string[] | undefined;
    for (const old of previous) {
      const now = s.byName.get(old.name);
      if (now === undefined || (now.conn !== old.conn && nodeKey(now.conn) !== nodeKey(old.conn))) (replaced ??= []).push(old.name);
    }
    return replaced;
  };
}

/** The connection an endpoint of the pool has now, `undefined` when no endpoint has the name. */
export function connectionOf<C>(pool: PoolCore<C>, name: string): C | undefined {
  return poolStateOf(pool).byName.get(name)?.conn;
}

/**
 * Whether the endpoint an attempt ran on is still the pool's, not removed or given another
 * connection by `setEndpoints` since (an answer from the node that had the name must not count
 * for the one that has it now). `true` for a context of another kind (a probe's).
 */
export function endpointCurrent(ctx: object): boolean {
  return !(ctx instanceof Attempt) || (ctx as Attempt<unknown>).ep.live;
}
