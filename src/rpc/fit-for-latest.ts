/**
 * Head routing for a call that runs several requests on one endpoint (viem's `withEndpoint`: a
 * nonce and a balance from the same node): its endpoint is chosen as a read of `latest` would
 * choose it. Endpoints that lag, or whose head is not known yet, are avoided at each selection
 * (the call's `avoid`, with the caller's own), so one fit serves when one is free and untried
 * (without an avoid of the caller's, also when one will be before the deadline: routing's is
 * patient, call/routing.ts), and one behind when none is (its answer beats none, as for a single read). A pinned call, or
 * options the pool will refuse, are left as they are.
 */
import type { ExecuteOptions } from '../options/options.js';
import { execWith } from './exec-with.js';
import type { HeadRouting } from './head-poll.js';

const LATEST: readonly unknown[] = [];

export function fitForLatest(routing: HeadRouting | undefined, exec: ExecuteOptions | undefined): ExecuteOptions | undefined {
  if (routing === undefined || (exec !== undefined && (typeof exec !== 'object' || exec === null || exec.pin !== undefined))) return exec;
  const own: unknown = exec?.avoid;
  if (own !== undefined && typeof own !== 'function') return exec; // the pool's INVALID_OPTIONS
  // `unfit` asks the lagging endpoints for their heads (as a read's routing does) and serves the first selection.
  const fit = routing.avoid('eth_blockNumber', LATEST, routing.unfit('eth_blockNumber', LATEST))!;
  const mine = own as ((endpoint: string) => boolean) | undefined;
  return execWith(exec ?? {}, { avoid: mine === undefined ? fit : (ep) => fit(ep) || mine(ep) });
}
