/**
 * A real Pool of fake endpoints under an RpcReads, as the RPC adapters build it: each upstream
 * request is one `pool.execute` whose operation calls the quorum's `guard` first (an endpoint
 * another leg holds is `unsupported`), and `sent` lists the endpoints requests went to.
 */
import type { AttemptContext, ExecuteOptions, PoolOptions } from '../../src/index.js';
import { isEndpointTaken } from '../../src/rpc/quorum.js';
import { RpcReads, type RpcReadOptions, type Unfit } from '../../src/rpc/reads.js';
import { classify, harness, type FakeEndpoint } from '../support.js';

export function readHarness(names: string[], options: RpcReadOptions = {}, poolOptions: Partial<PoolOptions<FakeEndpoint>> = {}, unfit?: Unfit) {
  const h = harness(names, { classify: (e) => (isEndpointTaken(e) ? 'unsupported' : classify(e)), ...poolOptions });
  const reads = new RpcReads(options, h.pool, undefined, unfit);
  const sent: string[] = [];
  const send = (exec: ExecuteOptions, guard?: (endpoint: string) => void) =>
    h.pool.execute(async (ep: FakeEndpoint, ctx: AttemptContext) => {
      guard?.(ctx.endpoint);
      sent.push(ctx.endpoint);
      return h.op(ep, ctx);
    }, exec);
  return { h, reads, sent, send };
}
