/**
 * Head-aware routing, transport-agnostic: what each endpoint's latest block is, which endpoints
 * lag the best head (or stall while others advance), and which block a read needs.
 * Pure: time comes in as `now`; adapters feed it answers and poll results.
 */

export interface HeadOptions {
  /** An endpoint more than this many blocks behind the best head is lagging. Default 2. */
  maxLagBlocks?: number;
  /** A head that has not advanced for this long while another endpoint's did is stalled. Default 30000. */
  stallMs?: number;
}

interface Head { block: number; advancedAt: number }

export class HeadTracker {
  readonly maxLagBlocks: number;
  readonly stallMs: number;
  readonly #heads = new Map<string, Head>();
  #best = -1;
  #bestAt = -Infinity;

  constructor(options: HeadOptions = {}) {
    this.maxLagBlocks = options.maxLagBlocks ?? 2;
    this.stallMs = options.stallMs ?? 30_000;
  }

  /** Records that `endpoint` has `block` at `now`; lower numbers than known are ignored. */
  observe(endpoint: string, block: number, now: number): void {
    if (!Number.isSafeInteger(block) || block < 0) return;
    const head = this.#heads.get(endpoint);
    if (head === undefined) this.#heads.set(endpoint, { block, advancedAt: now });
    else if (block > head.block) { head.block = block; head.advancedAt = now; }
    if (block > this.#best) { this.#best = block; this.#bestAt = now; }
  }

  /** The best head seen, or undefined before any observation. */
  best(): number | undefined { return this.#best < 0 ? undefined : this.#best; }

  head(endpoint: string): number | undefined { return this.#heads.get(endpoint)?.block; }

  forget(endpoint: string): void { this.#heads.delete(endpoint); }

  /** Endpoints more than maxLagBlocks behind the best head, or stalled while the best advanced. */
  lagging(now: number): string[] {
    const out: string[] = [];
    for (const [name, head] of this.#heads) {
      const behind = this.#best - head.block > this.maxLagBlocks;
      const stalled = now - head.advancedAt >= this.stallMs && this.#bestAt > head.advancedAt;
      if (behind || stalled) out.push(name);
    }
    return out;
  }

  /** Endpoints that cannot serve `block` (head known and below it), plus lagging ones. */
  cannotServe(block: number | 'latest', now: number): string[] {
    const lag = this.lagging(now);
    if (block === 'latest') return lag;
    for (const [name, head] of this.#heads) if (head.block < block && !lag.includes(name)) lag.push(name);
    return lag;
  }
}

/** Position of the block parameter for methods that take one. */
const BLOCK_PARAM: Readonly<Record<string, number>> = {
  eth_getBlockByNumber: 0, eth_getBlockTransactionCountByNumber: 0, eth_getUncleCountByBlockNumber: 0,
  eth_getTransactionByBlockNumberAndIndex: 0, eth_getBalance: 1, eth_getCode: 1, eth_getTransactionCount: 1,
  eth_call: 1, eth_estimateGas: 1, eth_getProof: 2, eth_getStorageAt: 2,
};

/** Which head a request needs: 'latest' (latest/pending), a block number, or undefined (none). */
export function requiredHead(method: string, params: unknown): number | 'latest' | undefined {
  if (method === 'eth_blockNumber') return 'latest';
  const at = BLOCK_PARAM[method];
  if (at === undefined) return undefined;
  const tag = Array.isArray(params) ? params[at] : undefined;
  if (tag === undefined || tag === 'latest' || tag === 'pending') return 'latest';
  if (typeof tag === 'string' && /^0x[0-9a-fA-F]+$/.test(tag)) return Number.parseInt(tag, 16);
  if (tag !== null && typeof tag === 'object' && 'blockNumber' in tag) return requiredHead(method, replaceAt(params as unknown[], at, (tag as { blockNumber: unknown }).blockNumber));
  return undefined; // earliest, safe, finalized, block hashes
}

function replaceAt(params: unknown[], at: number, value: unknown): unknown[] {
  const copy = params.slice(); copy[at] = value; return copy;
}

/** The block number an answer reveals: eth_blockNumber's result, or a block object's number. */
export function headFromAnswer(method: string, params: unknown, result: unknown): number | undefined {
  if (method === 'eth_blockNumber' && typeof result === 'string') return hex(result);
  if (method === 'eth_getBlockByNumber' && result !== null && typeof result === 'object') {
    const n = (result as { number?: unknown }).number;
    return typeof n === 'string' ? hex(n) : undefined;
  }
  void params;
  return undefined;
}

function hex(s: string): number | undefined {
  return /^0x[0-9a-fA-F]+$/.test(s) ? Number.parseInt(s, 16) : undefined;
}
