/**
 * In-process JSON-RPC nodes that keep filters, for the filter generator (generated6).
 *
 * Each node numbers its filters 0x1, 0x2, ... (anvil, hardhat, ganache, Nethermind) or
 * gives random ids (geth), answers `eth_getFilterChanges` with the filter's creation
 * serial (unique across nodes, so an answer tells which filter answered) and records every
 * request, so a test can see which node a filter's request reached. Faults are drawn per
 * request from the node's seeded plan: a transient error before anything happens, a lost
 * answer after a filter was made (the caller sees a failure; the filter exists), a 429, a
 * restart (every filter forgotten, the numbering starts again).
 */

export type NodeFault = 'transient' | 'lost' | 'rate' | 'restart';

export interface NodePlan {
  readonly ids: 'sequential' | 'random';
  /** Chance that a request meets a fault, and which. */
  readonly faultRate: number;
  readonly faults: readonly NodeFault[];
}

export interface NodeRequest {
  readonly method: string;
  readonly id: string | undefined;
}

export class RpcError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

let serials = 0;

export class FilterNode {
  readonly name: string;
  readonly plan: NodePlan;
  readonly requests: NodeRequest[] = [];
  /** Filters made (serial, id), in order, whoever got the answer. */
  readonly created: { serial: number; id: string }[] = [];
  /** Serials uninstalled here. */
  readonly uninstalled: number[] = [];
  /** Every id this node ever handed out. */
  readonly ever = new Set<string>();
  restarts = 0;
  #filters = new Map<string, number>();
  #next = 1;
  readonly #random: () => number;

  constructor(name: string, plan: NodePlan, random: () => number) {
    this.name = name;
    this.plan = plan;
    this.#random = random;
  }

  /** One request, as the node answers it (a rejection is a failure or the node's error). */
  handle(method: string, params: readonly unknown[]): unknown {
    const id = typeof params[0] === 'string' ? params[0] : undefined;
    this.requests.push({ method, id });
    const fault = this.plan.faults.length > 0 && this.#random() < this.plan.faultRate ? this.plan.faults[Math.floor(this.#random() * this.plan.faults.length)]! : undefined;
    if (fault === 'transient') throw new RpcError(-32603, 'internal error');
    if (fault === 'rate') throw new RpcError(-32005, 'rate limit exceeded');
    if (fault === 'restart') {
      this.#filters = new Map();
      this.#next = 1;
      this.restarts++;
    }
    const answer = this.#answer(method, id);
    if (fault === 'lost') throw new RpcError(-32603, 'answer lost');
    return answer;
  }

  #answer(method: string, id: string | undefined): unknown {
    switch (method) {
      case 'eth_chainId':
        return '0x1';
      case 'eth_blockNumber':
        return '0x10';
      case 'eth_newFilter':
      case 'eth_newBlockFilter':
      case 'eth_newPendingTransactionFilter': {
        const nid = this.plan.ids === 'sequential' ? `0x${(this.#next++).toString(16)}` : `0x${Array.from({ length: 32 }, () => Math.floor(this.#random() * 16).toString(16)).join('')}`;
        const serial = ++serials;
        this.#filters.set(nid, serial);
        this.created.push({ serial, id: nid });
        this.ever.add(nid);
        return nid;
      }
      case 'eth_getFilterChanges':
      case 'eth_getFilterLogs': {
        const serial = id === undefined ? undefined : this.#filters.get(id);
        if (serial === undefined) throw new RpcError(-32000, `filter not found (node ${this.name})`);
        return [`serial:${serial}`];
      }
      case 'eth_uninstallFilter': {
        const serial = id === undefined ? undefined : this.#filters.get(id);
        if (serial === undefined) return false;
        this.#filters.delete(id!);
        this.uninstalled.push(serial);
        return true;
      }
      default:
        throw new RpcError(-32601, 'method not found');
    }
  }
}

/** A `fetch` for ethers' provider whose URLs `http://node.test/<name>` are these nodes. */
export function nodeFetch(nodes: readonly FilterNode[]) {
  const byUrl = new Map(nodes.map((n) => [nodeUrl(n), n]));
  return async (url: string, init: { body: string }) => {
    const body = JSON.parse(init.body) as { id: number; method: string; params: unknown[] };
    let answer: unknown;
    try {
      answer = { jsonrpc: '2.0', id: body.id, result: byUrl.get(url)!.handle(body.method, body.params ?? []) };
    } catch (e) {
      const err = e as { code: number; message: string };
      answer = { jsonrpc: '2.0', id: body.id, error: { code: err.code, message: err.message } };
    }
    const text = JSON.stringify(answer);
    return { status: 200, ok: true, headers: { get: () => null }, text: async () => text };
  };
}

export const nodeUrl = (n: FilterNode): string => `http://node.test/${n.name}`;

/** The node as an EIP-1193 provider, for viem's `custom`. */
export const nodeProvider = (n: FilterNode) => ({ request: async ({ method, params }: { method: string; params?: unknown }) => n.handle(method, (params as unknown[] | undefined) ?? []) });
