/**
 * endpoint-pool/keys: helpers for pools of API keys.
 *
 * - `classifyApiKeyMessage(errOrMessage)`: Etherscan-style messages ("Max calls per sec
 *   rate limit reached (5/sec)", "Max daily rate limit reached", "Invalid API Key") to a
 *   classification, `undefined` for anything else.
 */
export { classifyApiKeyMessage } from './classify.js';
