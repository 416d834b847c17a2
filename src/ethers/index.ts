/**
 * `endpoint-pool/ethers`: an ethers v6 provider whose JSON-RPC requests go through a pool
 * of endpoints, and a classifier for ethers' errors. Needs `ethers` (v6) installed: it is
 * an optional peer dependency of this package.
 */
export { PooledJsonRpcProvider, type PooledProviderOptions, type EthersEndpoint, type EthersClassifier, type SendOptions } from './provider.js';
export { classifyEthersError, type EthersClassifyOptions } from './classify.js';
export { RpcAnswerError, BadResponseError, type RpcConnection, type FetchFn } from './http.js';
export { ChainMismatchError } from '../rpc/chain-check.js';
export { QuorumError, type QuorumAnswer } from '../rpc/quorum-error.js';
export type { QuorumOptions, RpcReadOptions, RpcReadsStats } from '../rpc/reads.js';
export type { HeadOptions, HeadSnapshot, LagReason } from '../rpc/heads.js';
