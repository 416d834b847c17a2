/**
 * Filters stay on the node that made them.
 *
 * A filter id (`eth_newFilter`, `eth_newBlockFilter`, `eth_newPendingTransactionFilter`)
 * exists on one node only. Sent anywhere else, `eth_getFilterChanges` is answered "filter
 * not found" at best; at worst (nodes that number their filters 0x1, 0x2, ...: anvil,
 * hardhat, ganache, Nethermind) another node answers with a filter of its own that has the
 * same id, handing one client another's events and moving that filter's cursor, and
 * `eth_uninstallFilter` removes it. So the adapters remember which endpoint made each
 * filter and send its `eth_getFilterChanges`, `eth_getFilterLogs` and `eth_uninstallFilter`
 * to that endpoint and nowhere else (`pin`), through faults, open breakers and failover:
 * such a request fails with the pool's error rather than go to another node (the node may
 * come back with its filter; one that restarted answers "filter not found" itself).
 *
 * When a filter the pool knows has the id a node hands out (another node's, or one its
 * node had before a restart), the new filter gets an id of the pool's own (longer than any
 * node's), translated back to the node's on the way out. Once a filter's endpoint has left
 * the pool (`setEndpoints`), `setEndpoints` has given its name another connection (another
 * node, whose filter of that id is not this one), or its node has handed its id to a newer
 * filter (it restarted), its requests are answered as a node answers for a filter it does
 * not have: `FilterNotFoundError` (JSON-RPC code -32000, which viem turns into
 * `InvalidInputRpcError`, the error its watchers re-create a filter on); should the endpoint
 * come back under its name with its connection, they reach it again. An id the pool did not make goes where any request goes. A
 * route outlives its filter's `eth_uninstallFilter` (a later use of that id is still its
 * node's to answer, never another node's filter of that id); at most `MAX_FILTERS` are
 * kept, the least recently used forgotten first.
 */
import type { ExecuteOptions } from '../options/options.js';
import { execWith } from './exec-with.js';

const CREATE: ReadonlySet<string> = new Set(['eth_newFilter', 'eth_newBlockFilter', 'eth_newPendingTransactionFilter']);
const USE: ReadonlySet<string> = new Set(['eth_getFilterChanges', 'eth_getFilterLogs', 'eth_uninstallFilter']);
/** Both, so the check on every request (`isFilterMethod`) is one look-up. */
const FILTER: ReadonlySet<string> = new Set([...CREATE, ...USE]);
/** Routes kept (a node drops a filter nobody polled for minutes: geth after 5). */
export const MAX_FILTERS = 4096;

/** True for the filter methods the adapters route (creation and use). */
export function isFilterMethod(method: string): boolean {
  return FILTER.has(method);
}

/** A filter whose endpoint has left the pool, or whose id its node gave to a newer filter: answered as a node answers for a filter it does not have. */
export class FilterNotFoundError extends Error {
  override readonly name = 'FilterNotFoundError' as const;
  /** JSON-RPC's "invalid input" code, as geth answers an unknown filter. */
  readonly code = -32000;
  /** The endpoint that made the filter. */
  readonly endpoint: string;
  constructor(endpoint: string) {
    super('filter not found');
    this.endpoint = endpoint;
  }
}

/** The adapter's `pool.execute` of the request, with the params to send (a node's own id) and a hook on each attempt's endpoint. */
export type FilterSend<T> = (exec: ExecuteOptions, params: unknown, started: (endpoint: string) => void) => Promise<T>;

interface Route {
  readonly endpoint: string;
  /** Which node the endpoint's connection reached when the filter was made (`connOf`). */
  readonly conn: unknown;
  /** The node's own id. */
  readonly id: string;
  /** The node has handed its id to a newer filter (it restarted): this one is gone. */
  replaced?: true;
}

export class FilterRoutes {
  /** Caller's id to route, in least-recently-used order. */
  readonly #routes = new Map<string, Route>();
  #minted = 0;
  /** Which node an endpoint name reaches now (a key of its connection); without it, a name is taken to keep its node. */
  readonly #connOf: ((name: string) => unknown) | undefined;

  constructor(connOf?: (name: string) => unknown) {
    this.#connOf = connOf;
  }

  /** Runs a filter method (`isFilterMethod`): a creation remembers its endpoint, a use goes to it. */
  async request<T>(method: string, params: unknown, exec: ExecuteOptions, endpoints: readonly string[], send: FilterSend<T>): Promise<T> {
    if (CREATE.has(method)) {
      let at: string | undefined;
      let conn: unknown;
      // The connection as the attempt starts: the node that will answer.
      const id = await send(exec, params, (endpoint) => {
        at = endpoint;
        conn = this.#connOf?.(endpoint);
      });
      return (typeof id === 'string' && at !== undefined ? this.#add(id, at, conn) : id) as T;
    }
    const given = Array.isArray(params) ? (params[0] as unknown) : undefined;
    const route = typeof given === 'string' ? this.#routes.get(given) : undefined;
    if (route === undefined) return send(exec, params, noop);
    const key = given as string;
    this.#routes.delete(key);
    this.#routes.set(key, route); // the most recently used last
    if (route.replaced === true || !endpoints.includes(route.endpoint) || (this.#connOf !== undefined && this.#connOf(route.endpoint) !== route.conn)) throw new FilterNotFoundError(route.endpoint);
    return send(execWith(exec, { exclude: undefined, pin: route.endpoint }), [route.id, ...(params as unknown[]).slice(1)], noop);
  }

  /**
   * Remembers a new filter; the id the caller gets: the node's, or the pool's own when a
   * filter the pool knows has that id. A node that hands out an id again (numbering from
   * 0x1 after a restart) no longer has the filter that had it.
   */
  #add(id: string, endpoint: string, conn: unknown): string {
    let key = id;
    for (const r of this.#routes.values()) if (r.id === id && r.endpoint === endpoint && r.conn === conn) r.replaced = true;
    if (this.#routes.has(id)) key = `0x${'f'.repeat(24)}${(++this.#minted).toString(16).padStart(16, '0')}`;
    this.#routes.set(key, { endpoint, conn, id });
    if (this.#routes.size > MAX_FILTERS) this.#routes.delete(this.#routes.keys().next().value as string);
    return key;
  }
}

function noop(): void {}
