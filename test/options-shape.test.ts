/**
 * The resolved options are read on every call (`s.opts.x`); built key by key from a table
 * (options/resolve.ts), an object falls into V8's dictionary mode, where each read is a hash
 * lookup: +10-15 % CPU per call, measured by bench/paths/ab-core.mjs (thirteenth session).
 * V8's own check, reached through its natives syntax, tells whether they stayed fast.
 */
import { setFlagsFromString } from 'node:v8';
import { describe, expect, test } from 'vitest';
import { resolvePoolOptions } from '../src/options/resolve.js';
import { ALL_FEATURES } from '../src/features-all.js';
import { tableOf } from '../src/features.js';

setFlagsFromString('--allow-natives-syntax');
const hasFastProperties = new Function('o', 'return %HasFastProperties(o)') as (o: object) => boolean;

describe('resolved pool options', () => {
  test.each([
    ['every feature, defaults', tableOf([ALL_FEATURES]), {}],
    ['no feature, defaults', tableOf([]), {}],
    ['every feature, options set', tableOf([ALL_FEATURES]), { maxConcurrentCalls: 4, retryBudget: { ratio: 0.2 }, hedge: { afterMs: 50 }, strategy: 'latency' }],
  ])('keep fast properties (%s)', (_name, features, extra) => {
    const { resolved } = resolvePoolOptions({ endpoints: [{ name: 'a', conn: 1 }], classify: () => 'transient', ...extra } as never, features);
    expect(Object.keys(resolved).length).toBeGreaterThan(10);
    expect(hasFastProperties(resolved)).toBe(true);
  });
});
