/**
 * The vote key of a node's error answer in a quorum read, read from the `cause` chain of a
 * `PoolError` that failed on a node's answer (`PERMANENT`, `RETRY_NARROWER`): a revert is its
 * data (hex), whatever the code, since clients number the same revert differently (geth,
 * Erigon and reth answer `3`, Nethermind `-32000`, and before that `-32015` with the data in
 * words of its own: see `revertData`); any other error is its JSON-RPC code and `data`.
 * Messages are left out: clients word the same revert differently. Anything else (timeouts,
 * endpoints down) is no vote.
 */
import { isPoolError } from '../base/errors.js';

const HEX = /^0x[0-9a-f]*$/i;
/** Nethermind's "VM execution error." (`-32015`): `Reverted 0x…`, or `err: 0x… (supplied gas N)` (NethermindEth/nethermind#8813, #6024). */
const WORDED = /^(?:reverted|err:) (0x[0-9a-f]*)(?: \(supplied gas \d+\))?$/i;
/** … and a revert without data, which geth sends as `0x`: `revert`, `err: revert (supplied gas N)`. */
const EMPTY = /^(?:err: )?revert(?: \(supplied gas \d+\))?$/i;

/**
 * A revert without data that says so only in its message, with no `data` at all (Erigon
 * before erigon#17132, 2025, and BSC's Erigon: `-32000`, "execution reverted"), where geth
 * sends code 3 and `data: '0x'`.
 */
const BARE = /^\s*execution reverted\s*$/i;

/** The revert data (lower-case hex) a node's `data` carries, or `undefined` when it is not a revert's. */
export function revertData(data: string): string | undefined {
  if (HEX.test(data)) return data.toLowerCase();
  const m = WORDED.exec(data);
  if (m !== null) return m[1]!.toLowerCase();
  return EMPTY.test(data) ? '0x' : undefined;
}

export function rpcAnswerKey(error: unknown): string | undefined {
  if (!isPoolError(error) || (error.code !== 'PERMANENT' && error.code !== 'RETRY_NARROWER')) return undefined;
  let code: number | undefined;
  let data: string | undefined;
  let bare = false;
  let e: unknown = error.cause;
  for (let i = 0; i < 12 && typeof e === 'object' && e !== null; i++) {
    const r = e as Record<string, unknown>;
    if (code === undefined && typeof r['code'] === 'number') code = r['code'];
    if (data === undefined && typeof r['data'] === 'string') data = r['data'];
    // The node's own words: viem's `details`, an RPC error object's `message`.
    const said = typeof r['details'] === 'string' ? r['details'] : r['message'];
    if (typeof said === 'string' && BARE.test(said)) bare = true;
    e = r['cause'];
  }
  if (code === undefined) return undefined;
  const revert = data === undefined ? (bare ? '0x' : undefined) : revertData(data);
  return revert !== undefined ? `revert:${revert}` : `${code}:${data ?? ''}`;
}
