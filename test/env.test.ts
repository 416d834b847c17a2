import { describe, expect, test } from 'vitest';
import { applySlice, isPoolError, parseGroups } from '../src/index.js';

const keys = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8', 'k9'];

describe('applySlice', () => {
  test.each<[string | undefined, string[]]>([
    [undefined, keys],
    ['', keys],
    ['  ', keys],
    ['1-5', ['k1', 'k2', 'k3', 'k4', 'k5']],
    ['1,3,7', ['k1', 'k3', 'k7']],
    ['1-3, 8', ['k1', 'k2', 'k3', 'k8']],
    ['2,2,1-2', ['k2', 'k1']],
    ['9-20', ['k9']],
    ['10-20', keys], // selects nothing that exists: never a service without endpoints
  ])('%j', (spec, expected) => {
    expect(applySlice(keys, spec)).toEqual(expected);
  });

  test.each(['a', '1-', '0', '3-1', '1;2', '1.5'])('rejects %j with a clear error', (spec) => {
    let err: unknown;
    try {
      applySlice(keys, spec);
    } catch (e) {
      err = e;
    }
    expect(isPoolError(err) && err.code).toBe('INVALID_OPTIONS');
    expect((err as Error).message).toContain(JSON.stringify(spec));
  });
});

describe('parseGroups', () => {
  test.each<[string | undefined, number[][]]>([
    [undefined, []],
    ['', []],
    ['4-9', [[3, 4, 5, 6, 7, 8]]],
    ['4-6;7,8', [[3, 4, 5], [6, 7]]],
    ['4-6;9', [[3, 4, 5]]], // one-member groups are ignored
    ['1,2;;3,4', [[0, 1], [2, 3]]],
  ])('%j', (spec, expected) => {
    expect(parseGroups(spec)).toEqual(expected);
  });

  test('an index in two groups is an error', () => {
    expect(() => parseGroups('1-3;3,4')).toThrow(/index 3 is in more than one group/);
  });
});
