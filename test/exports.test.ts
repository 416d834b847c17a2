/**
 * The public runtime surface, entry by entry, as built in dist/ (`npm test` builds first):
 * every name each subpath exports, with what kind of value it is. A change to this list
 * is a change to the public API, so it has to show up in review as a snapshot update
 * (`npx vitest run test/exports.test.ts -u`), never by accident. ESM and CJS must agree.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, test } from 'vitest';

const root = join(import.meta.dirname, '..');
const require = createRequire(import.meta.url);
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, string | { import: { default: string }; require: { default: string } }> };
const entries = Object.entries(pkg.exports).filter((e): e is [string, { import: { default: string }; require: { default: string } }] => typeof e[1] !== 'string');

function kind(value: unknown): string {
  if (typeof value === 'function') return /^class\b/.test(Function.prototype.toString.call(value)) ? 'class' : 'function';
  return value === null ? 'null' : typeof value;
}

/** `name: kind`, sorted, for one loaded module. */
function surface(mod: Record<string, unknown>): string[] {
  return Object.keys(mod)
    .sort()
    .map((k) => `${k}: ${kind(mod[k])}`);
}

describe('public runtime exports', () => {
  test('ESM: every entry point, name by name', async () => {
    const all: Record<string, string[]> = {};
    for (const [key, target] of entries) {
      all[key] = surface((await import(pathToFileURL(join(root, target.import.default)).href)) as Record<string, unknown>);
    }
    expect(all).toMatchInlineSnapshot(`
      {
        ".": [
          "DEFAULTS: object",
          "METRICS: object",
          "Pool: class",
          "PoolCore: class",
          "PoolError: class",
          "Refresher: class",
          "applySlice: function",
          "authRefresh: object",
          "callRouting: object",
          "concurrencyLimits: object",
          "failureRates: object",
          "healthProbes: object",
          "healthSelection: object",
          "hedging: object",
          "isPoolError: function",
          "keepConnections: function",
          "latencySelection: object",
          "panicMode: object",
          "parseGroups: function",
          "presets: object",
          "randomSelection: object",
          "rateLimits: object",
          "retryBudgets: object",
          "reusableSignals: object",
          "samePlainData: function",
          "sharedQuotas: object",
          "systemClock: object",
          "systemRandom: function",
        ],
        "./ethers": [
          "BadResponseError: class",
          "ChainMismatchError: class",
          "PooledJsonRpcProvider: class",
          "QuorumError: class",
          "RpcAnswerError: class",
          "classifyEthersError: function",
        ],
        "./fetch": [
          "DEFAULT_MAX_RETRY_AFTER_MS: number",
          "HttpStatusError: class",
          "NotReplayableError: class",
          "ResponseBodyError: class",
          "classifyFetchError: function",
          "classifyResponse: function",
          "classifyStatus: function",
          "createPooledFetch: function",
          "isHttpStatusError: function",
          "joinUrl: function",
          "parseRetryAfter: function",
        ],
        "./keys": [
          "classifyApiKeyMessage: function",
        ],
        "./otel": [
          "otelSink: function",
        ],
        "./prometheus": [
          "prometheusName: function",
          "prometheusSink: function",
        ],
        "./redis": [
          "RedisStoreError: class",
          "createRedisHealth: function",
          "createRedisStore: function",
          "fromIoredis: function",
          "fromNodeRedis: function",
        ],
        "./testing": [
          "FakeClock: class",
          "RecordingMetrics: class",
        ],
        "./viem": [
          "ChainMismatchError: class",
          "QuorumError: class",
          "classifyViemError: function",
          "gatherEvidence: function",
          "poolTransport: function",
          "sameTransport: function",
        ],
      }
    `);
  });

  test.each(entries.map(([key, target]) => [key, target] as const))('CJS %s exports the same names as ESM', async (_key, target) => {
    const esm = surface((await import(pathToFileURL(join(root, target.import.default)).href)) as Record<string, unknown>);
    const cjs = surface(require(join(root, target.require.default)) as Record<string, unknown>);
    expect(cjs).toEqual(esm);
  });
});
