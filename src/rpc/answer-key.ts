/**
 * The vote key of a node's error answer in a quorum read, read from the `cause` chain of a
 * `PoolError` that failed on a node's answer (`PERMANENT`, `RETRY_NARROWER`): a revert is its
 * data (hex), whatever the code, since clients number the same revert differently (geth,
 * Erigon and reth answer `3`, Nethermind `-32000`); any other error is its JSON-RPC code and
 * `data`. Messages are left out: clients word the same revert differently. Anything else
 * (timeouts, endpoints down) is no vote.
 */
import { isPoolError } from '../base/errors.js';

export function rpcAnswerKey(error: unknown): string | undefined {
  if (!isPoolError(error) || (error.code !== 'PERMANENT' && error.code !== 'RETRY_NARROWER')) return undefined;
  let code: number | undefined;
  let data: string | undefined;
  let e: unknown = error.cause;
  for (let i = 0; i < 12 && typeof e === 'object' && e !== null; i++) {
    const r = e as Record<string, unknown>;
    if (code === undefined && typeof r['code'] === 'number') code = r['code'];
    if (data === undefined && typeof r['data'] === 'string') data = r['data'];
    e = r['cause'];
  }
  if (code === undefined) return undefined;
  return data !== undefined && /^0x[0-9a-f]*$/i.test(data) ? `revert:${data.toLowerCase()}` : `${code}:${data ?? ''}`;
}
