/**
 * When two nodes' answers to a quorum read agree (the default of `quorum.equals`).
 *
 * Clients send the same block, transaction or receipt differently: object keys in another
 * order (Go clients sort them), and optional fields one client sends and another does not
 * (`totalDifficulty`, dropped from the specification and from geth 1.14.11 but still sent by
 * other clients and providers; a legacy transaction's `chainId`; a client's own extra
 * fields). Two answers agree when they are equal JSON values up to that: keys in any order,
 * and a field only one of the two has left out of the comparison. Every field both have must
 * be equal, at any depth; arrays must have the same length and equal items in order.
 *
 * `eth_blockNumber`: heights at most one block apart agree (`nearHeights`).
 */

/** Whether `a` and `b` are the same answer (see the module comment). */
export function sameAnswer(a: unknown, b: unknown): boolean {
  return same(a, b, 0);
}

/** Deeper than any JSON-RPC answer; a cycle (no parsed answer has one) stops here as unequal. */
const MAX_DEPTH = 64;

function same(a: unknown, b: unknown, depth: number): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || depth > MAX_DEPTH) return false;
  const arrays = Array.isArray(a);
  if (arrays !== Array.isArray(b)) return false;
  if (arrays) {
    const x = a as unknown[];
    const y = b as unknown[];
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (!same(x[i], y[i], depth + 1)) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  for (const k in x) {
    if (!Object.hasOwn(x, k) || !Object.hasOwn(y, k)) continue;
    const v = x[k];
    const w = y[k];
    // As in JSON, a field set to undefined is a field not sent.
    if (v === undefined || w === undefined) continue;
    if (!same(v, w, depth + 1)) return false;
  }
  return true;
}

/**
 * The default agreement of `eth_blockNumber` answers: two nodes a block apart are not in
 * disagreement (one has seen the newest block a moment before the other), else a quorum
 * of two would fail at every block boundary. Anything but two quantities must be equal.
 */
export function nearHeights(a: unknown, b: unknown): boolean {
  const x = height(a);
  const y = height(b);
  return x !== undefined && y !== undefined ? Math.abs(x - y) <= 1 : sameAnswer(a, b);
}

function height(v: unknown): number | undefined {
  if (typeof v !== 'string' || !/^0x[0-9a-f]{1,13}$/i.test(v)) return undefined;
  return Number(v);
}
