/**
 * FilterRoutes (src/rpc/filters.ts) on its own, fast: until now only the real-time fault
 * files (faults/generated6, fuzz6) reached it, too slow for a mutation run.
 */
import { describe, expect, test } from 'vitest';
import type { ExecuteOptions } from '../../src/index.js';
import { FilterNotFoundError, FilterRoutes, MAX_FILTERS, isFilterMethod } from '../../src/rpc/filters.js';

/** A send that answers as `answer` says, recording what it was handed; `at` is the attempt's endpoint. */
function sender(answer: (params: unknown) => unknown, at: string | string[] = 'a') {
  const calls: { exec: ExecuteOptions; params: unknown }[] = [];
  const send = async (exec: ExecuteOptions, params: unknown, started: (endpoint: string) => void): Promise<unknown> => {
    calls.push({ exec, params });
    for (const e of Array.isArray(at) ? at : [at]) started(e);
    return answer(params);
  };
  return { calls, send };
}

const ENDPOINTS = ['a', 'b', 'c'];

describe('isFilterMethod', () => {
  test.each([
    ['eth_newFilter', true],
    ['eth_newBlockFilter', true],
    ['eth_newPendingTransactionFilter', true],
    ['eth_getFilterChanges', true],
    ['eth_getFilterLogs', true],
    ['eth_uninstallFilter', true],
    ['eth_getLogs', false],
    ['eth_subscribe', false],
    ['', false],
  ])('%s: %s', (method, is) => {
    expect(isFilterMethod(method)).toBe(is);
  });
});

describe('a filter goes back to the endpoint that made it', () => {
  test('creation remembers the endpoint of the attempt that answered (the last one started); uses are pinned there with the node id, exclude dropped', async () => {
    const r = new FilterRoutes();
    const made = sender(() => '0x1', ['a', 'b']);
    await expect(r.request('eth_newFilter', [{}], { deadlineMs: 5 }, ENDPOINTS, made.send)).resolves.toBe('0x1');
    expect(made.calls[0]!.exec).toEqual({ deadlineMs: 5 });
    const use = sender(() => ['log']);
    for (const m of ['eth_getFilterChanges', 'eth_getFilterLogs', 'eth_uninstallFilter']) {
      await expect(r.request(m, ['0x1', 'extra'], { exclude: ['b'], deadlineMs: 7 }, ENDPOINTS, use.send)).resolves.toEqual(['log']);
    }
    expect(use.calls.map((c) => [c.exec.pin, c.exec.exclude, c.exec.deadlineMs, c.params])).toEqual([
      ['b', undefined, 7, ['0x1', 'extra']],
      ['b', undefined, 7, ['0x1', 'extra']],
      ['b', undefined, 7, ['0x1', 'extra']],
    ]);
  });

  test('an id the pool did not make, a non-string id and no params go where any request goes, as given', async () => {
    const r = new FilterRoutes();
    const use = sender(() => 'x');
    const exec = { exclude: ['c'] };
    await r.request('eth_getFilterChanges', ['0x9'], exec, ENDPOINTS, use.send);
    await r.request('eth_getFilterChanges', [9], exec, ENDPOINTS, use.send);
    await r.request('eth_getFilterChanges', undefined, exec, ENDPOINTS, use.send);
    expect(use.calls.map((c) => c.exec)).toEqual([exec, exec, exec]);
    expect(use.calls.map((c) => c.params)).toEqual([['0x9'], [9], undefined]);
  });

  test('a creation that answers no string, or reached no endpoint, is handed back as it came and remembered nowhere', async () => {
    const r = new FilterRoutes();
    await expect(r.request('eth_newBlockFilter', [], {}, ENDPOINTS, sender(() => 5).send)).resolves.toBe(5);
    await expect(r.request('eth_newBlockFilter', [], {}, ENDPOINTS, sender(() => '0x7', []).send)).resolves.toBe('0x7');
    const use = sender(() => 'x');
    await r.request('eth_getFilterChanges', ['0x7'], {}, ENDPOINTS, use.send);
    expect(use.calls[0]!.exec.pin).toBeUndefined();
  });
});

describe('ids that collide', () => {
  test("another node's filter of the same id gets a pool id of its own, translated back to the node's", async () => {
    const r = new FilterRoutes();
    expect(await r.request('eth_newFilter', [{}], {}, ENDPOINTS, sender(() => '0x1', 'a').send)).toBe('0x1');
    const second = await r.request('eth_newFilter', [{}], {}, ENDPOINTS, sender(() => '0x1', 'b').send);
    expect(second).toBe(`0x${'f'.repeat(24)}${'1'.padStart(16, '0')}`);
    const third = await r.request('eth_newFilter', [{}], {}, ENDPOINTS, sender(() => '0x1', 'c').send);
    expect(third).toBe(`0x${'f'.repeat(24)}${'2'.padStart(16, '0')}`);
    const use = sender(() => 'x');
    await r.request('eth_getFilterChanges', [second], {}, ENDPOINTS, use.send);
    await r.request('eth_getFilterChanges', ['0x1'], {}, ENDPOINTS, use.send);
    expect(use.calls.map((c) => [c.exec.pin, c.params])).toEqual([
      ['b', ['0x1']],
      ['a', ['0x1']],
    ]);
  });

  test('a node handing out an id again (it restarted): the old filter is gone, the new one reached under a pool id', async () => {
    const r = new FilterRoutes();
    await r.request('eth_newFilter', [{}], {}, ENDPOINTS, sender(() => '0x1', 'a').send);
    await r.request('eth_newFilter', [{}], {}, ENDPOINTS, sender(() => '0x2', 'b').send);
    const again = await r.request('eth_newFilter', [{}], {}, ENDPOINTS, sender(() => '0x1', 'a').send);
    expect(again).not.toBe('0x1');
    const use = sender(() => 'x');
    await expect(r.request('eth_getFilterChanges', ['0x1'], {}, ENDPOINTS, use.send)).rejects.toBeInstanceOf(FilterNotFoundError);
    await r.request('eth_getFilterChanges', [again], {}, ENDPOINTS, use.send);
    // b's filter of another id is untouched.
    await r.request('eth_getFilterChanges', ['0x2'], {}, ENDPOINTS, use.send);
    expect(use.calls.map((c) => [c.exec.pin, c.params])).toEqual([
      ['a', ['0x1']],
      ['b', ['0x2']],
    ]);
  });
});

describe('an endpoint that left the pool', () => {
  test("its filters are answered 'filter not found' (code -32000, naming the endpoint) and reach it again when it is back", async () => {
    const r = new FilterRoutes();
    await r.request('eth_newFilter', [{}], {}, ENDPOINTS, sender(() => '0x1', 'c').send);
    const use = sender(() => 'x');
    const err = await r.request('eth_getFilterChanges', ['0x1'], {}, ['a', 'b'], use.send).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FilterNotFoundError);
    expect(err).toMatchObject({ name: 'FilterNotFoundError', code: -32000, endpoint: 'c', message: 'filter not found' });
    expect(use.calls).toEqual([]);
    await r.request('eth_getFilterChanges', ['0x1'], {}, ENDPOINTS, use.send);
    expect(use.calls[0]!.exec.pin).toBe('c');
  });
});

describe('at most MAX_FILTERS routes', () => {
  test('the least recently used is forgotten first; a use makes a route the most recent', async () => {
    const r = new FilterRoutes();
    const id = (i: number) => `0x${i.toString(16)}`;
    for (let i = 0; i < MAX_FILTERS; i++) await r.request('eth_newFilter', [{}], {}, ENDPOINTS, sender(() => id(i), 'a').send);
    const use = sender(() => 'x');
    // Touch the oldest: the second oldest becomes the least recently used.
    await r.request('eth_getFilterChanges', [id(0)], {}, ENDPOINTS, use.send);
    await r.request('eth_newFilter', [{}], {}, ENDPOINTS, sender(() => id(MAX_FILTERS), 'b').send);
    await r.request('eth_getFilterChanges', [id(0)], {}, ENDPOINTS, use.send);
    await r.request('eth_getFilterChanges', [id(1)], {}, ENDPOINTS, use.send);
    await r.request('eth_getFilterChanges', [id(2)], {}, ENDPOINTS, use.send);
    await r.request('eth_getFilterChanges', [id(MAX_FILTERS)], {}, ENDPOINTS, use.send);
    expect(use.calls.map((c) => c.exec.pin)).toEqual(['a', 'a', undefined, 'a', 'b']);
  });
});
