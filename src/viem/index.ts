/**
 * `endpoint-pool/viem`: a viem transport over a pool of viem transports, and a default
 * classifier for viem's errors. Imports nothing from viem at runtime: pass your own
 * transports (`http(url)`), or URLs together with viem's `http`.
 */
export { poolTransport } from './transport.js';
export type { PoolTransport, PoolTransportOptions, ViemClassifier } from './options.js';
export type { ViemEndpoint } from './endpoints.js';
export { ChainMismatchError } from '../rpc/chain-check.js';
export { sameTransport } from './endpoints.js';
export { classifyViemError, gatherEvidence, type ErrorEvidence, type ViemClassifyOptions } from './classify.js';
export type { TransportFactory, TransportInstance, TransportParams, RequestFn, RpcArgs, RpcRequestOptions, HttpFactory } from './types.js';
export { QuorumError, type QuorumAnswer } from '../rpc/quorum-error.js';
export type { QuorumOptions, RpcReadOptions } from '../rpc/reads.js';
export type { HeadOptions, HeadSnapshot, LagReason } from '../rpc/heads.js';
