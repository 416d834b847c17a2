/**
 * `applySlice` / `parseGroups` (src/extras/env.ts) and the list of methods that must reach
 * one endpoint once (src/rpc/methods.ts), where the twenty-eighth session's first mutation
 * run found no test holding: blank specs and parts, spaces around a dash, the bound on a
 * range's width, the messages, what is shown of a spec, and send methods by prefix.
 */
import { describe, expect, test } from 'vitest';
import { applySlice, parseGroups } from '../../src/index.js';
import { isSendMethod } from '../../src/rpc/methods.js';

const items = ['a', 'b', 'c', 'd', 'e'];
function messageOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    return (e as Error).message;
  }
  return '(no error)';
}

describe('applySlice and parseGroups', () => {
  test('a blank spec is no spec; blank parts are skipped; spaces around a dash are allowed', () => {
    expect(applySlice(items, '   ')).toEqual(items);
    expect(applySlice(items, '1, ,3')).toEqual(['a', 'c']);
    expect(applySlice(items, '2 - 4')).toEqual(['b', 'c', 'd']);
    expect(parseGroups('  ')).toEqual([]);
    expect(parseGroups('1-2; ;4,5')).toEqual([
      [0, 1],
      [3, 4],
    ]);
    expect(parseGroups('1-2;  ')).toEqual([[0, 1]]);
  });

  test('a range is at most 100,000 indices wide', () => {
    expect(applySlice(items, '1-100001')).toEqual(items);
    expect(messageOf(() => applySlice(items, '1-100002'))).toBe('endpoint spec "1-100002": "1-100002" is too wide');
    expect(messageOf(() => applySlice(items, '50000-150001'))).toBe('endpoint spec "50000-150001": "50000-150001" is too wide');
    expect(applySlice(items, '60000-60001')).toEqual(items);
  });

  test('messages: a range backwards or from 0, and a part that is not indices', () => {
    expect(messageOf(() => applySlice(items, '3-1'))).toBe('endpoint spec "3-1": "3-1" is not a range of indices from 1 up');
    expect(messageOf(() => applySlice(items, '0'))).toBe('endpoint spec "0": "0" is not a range of indices from 1 up');
    expect(messageOf(() => applySlice(items, '1 x- 3'))).toBe('endpoint spec "1 x- 3": expected indices like "1-5" or "1,3,7", got "1 x- 3"');
  });

  test('a spec is shown when short or made of indices, else only its length (it may be a secret put in the wrong variable)', () => {
    expect(messageOf(() => applySlice(items, 'abcdefgh'))).toContain('endpoint spec "abcdefgh":');
    expect(messageOf(() => applySlice(items, 'abcdefghi'))).toContain('endpoint spec (a string of 9 characters, not indices):');
    expect(messageOf(() => applySlice(items, '1,2,3,4,5-0'))).toContain('endpoint spec "1,2,3,4,5-0":');
    const long = `${'1,'.repeat(45)}0-`;
    expect(messageOf(() => applySlice(items, long))).toContain(`(a string of ${long.length} characters, not indices)`);
  });
});

describe('isSendMethod', () => {
  test.each([
    ['eth_sendRawTransaction', true],
    ['personal_sign', true],
    ['wallet_switchEthereumChain', true],
    ['evm_mine', true],
    ['anvil_setBalance', true],
    ['hardhat_reset', true],
    ['debug_setHead', true],
    ['txpool_content', true],
    ['debug_traceTransaction', false],
    ['eth_call', false],
    ['eth_personal_', false],
    ['xpersonal_sign', false],
  ] as const)('%s: %s', (method, send) => {
    expect(isSendMethod(method)).toBe(send);
    expect(isSendMethod(method)).toBe(send); // the second answer is the remembered one
  });

  test('made-up methods past the memo bound keep their verdicts, asked again in any order', () => {
    const names = Array.from({ length: 1500 }, (_, i) => (i % 3 === 0 ? `evm_made${i}` : `eth_made${i}`));
    const first = names.map(isSendMethod);
    expect(first.filter(Boolean)).toHaveLength(500);
    expect([...names].reverse().map(isSendMethod)).toEqual([...first].reverse());
  });
});
