/**
 * Twenty-seventh session, first mutation run of `src/call/limits-of-a-call.ts`: the messages
 * of a call with nowhere to go, and a call's own exclusions (bench/notes/mutation-s27.md).
 * Fake clock, public API only.
 */
import { describe, expect, test } from 'vitest';
import { failure, fail, harness } from '../support.js';

describe('NO_ENDPOINT’s message', () => {
  test('exactly six endpoints are listed whole, with no "and 0 more"', async () => {
    const names = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6'];
    const h = harness(names);
    const e = await failure(h.pool.execute(h.op, { exclude: names }));
    expect(e.code).toBe('NO_ENDPOINT');
    expect(e.message).toBe(`no endpoint admits calls: ${names.map((n) => `"${n}" excluded`).join(', ')}`);
  });

  test('a disabled endpoint is said to be disabled', async () => {
    const h = harness(['a', 'b']);
    h.eps.a!.then(fail({ class: 'transient', disableEndpoint: true }));
    await failure(h.pool.execute(h.op, { pin: 'a', retry: 'none' }));
    const e = await failure(h.pool.execute(h.op, { exclude: ['b'] }));
    expect([e.code, e.message]).toEqual(['NO_ENDPOINT', 'no endpoint admits calls: "a" disabled, "b" excluded']);
  });
});

describe('a call’s own exclusions', () => {
  test('an endpoint a call leaves out (it answered unsupported) stays usable by the next call, with the same options object or none', async () => {
    const h = harness(['a', 'b', 'c'], { strategy: 'ordered' });
    const options = { exclude: ['c'] };
    h.eps.a!.then(fail('unsupported'));
    expect(await h.pool.execute(h.op, options)).toBe('b');
    expect(options.exclude).toEqual(['c']);
    expect(await h.pool.execute(h.op, options)).toBe('a');
    // And with no exclusions of its own: the next call after one that left a out still has a.
    h.eps.a!.then(fail('unsupported'));
    expect(await h.pool.execute(h.op)).toBe('b');
    expect(await h.pool.execute(h.op)).toBe('a');
    expect(h.eps.a!.calls).toBe(4);
  });
});
