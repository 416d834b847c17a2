/**
 * Real Ethereum nodes for integration tests: ganache servers on 127.0.0.1 (ephemeral
 * ports, same mnemonic, so the same funded accounts on every node; each node is its own
 * chain), and a fault proxy that can stand in front of any of them.
 */
import ganache from 'ganache';
import { defineChain, type Chain } from 'viem';
import { startLoopback, type Loopback } from './loopback.js';

export const MNEMONIC = 'test test test test test test test test test test test junk';
export const CHAIN_ID = 1337;
export const chain: Chain = defineChain({
  id: CHAIN_ID,
  name: 'ganache',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: ['http://127.0.0.1:0'] } },
});

export interface Node {
  readonly url: string;
  /** Stops the node; open keep-alive connections see a reset, new ones a refusal. */
  kill(): Promise<void>;
}

export async function startNode(): Promise<Node> {
  const server = ganache.server({
    logging: { quiet: true },
    wallet: { mnemonic: MNEMONIC, totalAccounts: 3 },
    chain: { chainId: CHAIN_ID },
  });
  await server.listen(0, '127.0.0.1');
  const { port } = server.address() as { port: number };
  let closed = false;
  return {
    url: `http://127.0.0.1:${port}`,
    async kill() {
      if (closed) return;
      closed = true;
      await server.close();
    },
  };
}

export type ProxyMode = 'pass' | '429' | '503' | 'hang' | 'dead';

export interface FaultProxy extends Loopback {
  mode: ProxyMode;
  /** Forward this many `eth_sendRawTransaction` requests, then drop the connection instead of answering. */
  dropSendsAfterForward: number;
  /** Sends forwarded whose answer was dropped. */
  dropped: number;
}

/** An HTTP proxy to `target` whose behaviour the test sets through `mode`. */
export async function startProxy(target: string): Promise<FaultProxy> {
  const state = { mode: 'pass' as ProxyMode, dropSendsAfterForward: 0, dropped: 0 };
  const lb = await startLoopback((req, res, body) => {
    const mode = proxy.mode;
    if (mode === 'hang') return;
    if (mode === 'dead') return req.socket.destroy();
    if (mode === '429' || mode === '503') {
      res.writeHead(Number(mode), { 'content-type': 'text/plain', ...(mode === '429' ? { 'retry-after': '5' } : {}) });
      return res.end(mode === '429' ? 'too many requests' : 'unavailable');
    }
    const isSend = body.includes('"eth_sendRawTransaction"');
    fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(
      async (answer) => {
        const text = await answer.text();
        if (isSend && proxy.dropSendsAfterForward > 0) {
          proxy.dropSendsAfterForward--;
          proxy.dropped++;
          return req.socket.destroy(); // the node has the transaction; the client never hears back
        }
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(text);
      },
      () => req.socket.destroy(),
    );
  });
  const proxy = Object.assign(lb, state);
  return proxy;
}
