/**
 * undici 7 (Node 24's `fetch`) hands a dispatcher a handler of undici 6's API (`onConnect`,
 * `onHeaders`, `onData`, `onComplete`, `onError`), and its dispatchers call a handler by the
 * newer API (`onRequestStart`, `onResponseStart`, …, `onResponseError`) whenever it has
 * `onRequestStart`. The adapter's relay showed both APIs, so undici called `onResponseError`
 * on it, which it passed on to `fetch`'s handler, which has no such method: a `TypeError` in
 * undici, and the request never settled (every pooled request on Node 24; found running the
 * suite there). No network here: a stand-in `fetch` and global dispatchers that behave as
 * undici 7's do. Own file: what the adapter learns about the global `fetch` is module state.
 */
import { afterEach, expect, test } from 'vitest';
import { createPooledFetch } from '../src/fetch/index.js';

const GLOBAL_1 = Symbol.for('undici.globalDispatcher.1');
const GLOBAL_2 = Symbol.for('undici.globalDispatcher.2');
const g = globalThis as unknown as Record<symbol, unknown>;
const saved = { fetch: globalThis.fetch, one: g[GLOBAL_1], two: g[GLOBAL_2] };

afterEach(() => {
  globalThis.fetch = saved.fetch;
  g[GLOBAL_1] = saved.one;
  g[GLOBAL_2] = saved.two;
});

type Fn = (...args: unknown[]) => unknown;
type AnyHandler = Record<string, Fn | undefined>;

/** A dispatcher as undici 7's: a handler with `onRequestStart` is driven by the newer API, any other by the older. */
function undici7Dispatcher(log: string[], answer: 'ok' | 'error') {
  return {
    dispatch(_opts: object, h: AnyHandler): boolean {
      queueMicrotask(() => {
        if (typeof h['onRequestStart'] === 'function') {
          log.push('newer API');
          const controller = { abort: () => undefined };
          h['onRequestStart']!(controller, {});
          if (answer === 'error') return void h['onResponseError']!(controller, new Error('socket hang up'));
          h['onResponseStart']!(controller, 200, {}, 'OK');
          h['onResponseData']!(controller, new TextEncoder().encode('ok'));
          h['onResponseEnd']!(controller, {});
        } else {
          log.push('older API');
          h['onConnect']!(() => undefined);
          if (answer === 'error') return void h['onError']!(new Error('socket hang up'));
          h['onHeaders']!(200, [], () => undefined, 'OK');
          h['onData']!(new TextEncoder().encode('ok'));
          h['onComplete']!([]);
        }
      });
      return true;
    },
  };
}

/** A `fetch` as Node 24's: it calls `init.dispatcher` with a handler of the older API alone. */
function node24Fetch(): typeof fetch {
  return ((_input: unknown, init?: { dispatcher?: { dispatch(o: object, h: object): boolean } }) =>
    new Promise<Response>((resolve, reject) => {
      let body = '';
      const handler = {
        onConnect: () => undefined,
        onHeaders: () => true,
        onData: (chunk: Uint8Array) => ((body += new TextDecoder().decode(chunk)), true),
        onComplete: () => resolve(new Response(body)),
        onError: (error: unknown) => reject(new TypeError('fetch failed', { cause: error })),
        onUpgrade: () => undefined,
      };
      if (init?.dispatcher === undefined) return resolve(new Response('no dispatcher'));
      init.dispatcher.dispatch({}, handler);
    })) as typeof fetch;
}

test.each(['ok', 'error'] as const)("Node 24's fetch through undici 7's dispatchers (%s): the relay shows the older API alone, the request settles", async (answer) => {
  const log: string[] = [];
  g[GLOBAL_1] = undici7Dispatcher(log, answer);
  g[GLOBAL_2] = undici7Dispatcher(log, answer); // present, as on Node 24; its fetch reads the first
  globalThis.fetch = node24Fetch();
  const api = createPooledFetch({ endpoints: ['http://a.test'], maxAttempts: 1, attemptTimeoutMs: 2_000 });
  try {
    // The first request probes (a signal and a dispatcher); the next go through the dispatcher alone.
    for (let i = 0; i < 3; i++) {
      const out = await api('/x').then(
        (r) => r.text(),
        (e: unknown) => (e as { code: string }).code,
      );
      expect(out).toBe(answer === 'ok' ? 'ok' : 'RETRIES_EXHAUSTED');
    }
    expect(log).toEqual(['older API', 'older API', 'older API']);
  } finally {
    await api.pool.close();
  }
});
