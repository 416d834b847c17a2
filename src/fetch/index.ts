/**
 * `endpoint-pool/fetch`: HTTP status classification and a `fetch`-shaped function over a
 * pool of base URLs. No runtime dependency; uses the global `fetch` unless given one.
 */
export { createPooledFetch, type PooledFetch, type PooledFetchOptions, type PooledRequestInit, type ParseBody, type BaseUrlEndpoint, type FetchFn } from './pooled-fetch.js';
export { joinUrl } from './input.js';
export {
  HttpStatusError,
  ResponseBodyError,
  isHttpStatusError,
  classifyStatus,
  classifyResponse,
  classifyFetchError,
  type ClassifyResponseOptions,
  type ResponseLike,
} from './classify.js';
export { parseRetryAfter, DEFAULT_MAX_RETRY_AFTER_MS } from './retry-after.js';
export { NotReplayableError } from './replay.js';
