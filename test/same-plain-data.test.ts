/**
 * `samePlainData` over generated values: what a Refresher, `keepConnections` and `sameTransport`
 * rest on. A JSON value and its copy are equal; a change anywhere in it is seen; the answer is
 * symmetric; class instances, functions and maps are equal only to themselves.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { samePlainData } from '../src/extras/same-connection.js';

const SEED = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : 2026120638;
const json = fc.jsonValue({ maxDepth: 4 });

describe('samePlainData over generated values', () => {
  test('a JSON value equals its copy, symmetrically', () => {
    fc.assert(
      fc.property(json, (v) => {
        const copy = JSON.parse(JSON.stringify(v)) as unknown;
        return samePlainData(v, copy) && samePlainData(copy, v);
      }),
      { seed: SEED, numRuns: 2_000 },
    );
  });

  test('two generated values: equal exactly when their canonical JSON is, both ways round', () => {
    const canonical = (v: unknown): string =>
      JSON.stringify(v, (_k, x: unknown) => (x !== null && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x));
    fc.assert(
      fc.property(json, json, (a, b) => {
        // -0 and 0 are equal to ===, and print alike.
        const same = samePlainData(a, b);
        return samePlainData(b, a) === same && same === (canonical(a) === canonical(b));
      }),
      { seed: SEED, numRuns: 2_000 },
    );
  });

  test('one leaf changed anywhere in a value is seen', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), json, { minKeys: 1 }), fc.nat(), (v, pick) => {
        const copy = JSON.parse(JSON.stringify(v)) as Record<string, unknown>;
        const keys = Object.keys(copy);
        const k = keys[pick % keys.length]!;
        copy[k] = { changed: copy[k] };
        return !samePlainData(v, copy) && !samePlainData(copy, v);
      }),
      { seed: SEED, numRuns: 1_000 },
    );
  });

  test('objects that are not plain are equal only to themselves, whatever they hold', () => {
    class Conn {
      constructor(readonly url: string) {}
    }
    fc.assert(
      fc.property(fc.string(), (url) => {
        const c = new Conn(url);
        const f = () => url;
        return samePlainData(c, c) && !samePlainData(c, new Conn(url)) && !samePlainData({ f }, { f: () => url }) && !samePlainData(new Map([[url, 1]]), new Map([[url, 1]])) && samePlainData({ c }, { c });
      }),
      { seed: SEED, numRuns: 300 },
    );
  });
});

