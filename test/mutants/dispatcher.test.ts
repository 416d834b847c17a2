/**
 * src/fetch/dispatcher.ts against scripted undici dispatchers and handlers, with no network:
 * each handler API (undici 6's `onConnect(abort)`, undici 7+'s `onRequestStart(controller)`),
 * each layout of undici's global dispatchers (Node 20/22: `.1` only; Node 24: `.1` and `.2`
 * reading the newer API; Node 26: `.2` for the newer API), every callback relayed with its
 * arguments and its answer, the abort before, during and after a hop's connection, a redirect's
 * second hop, and what `fetchPlan` learns. The loopback tests (test/fetch-dispatcher*.test.ts)
 * run the one layout of the Node that runs them; this file runs them all (the newer handler API,
 * Node 26's, is otherwise not run under Node 20 at all). Own file: `fetchPlan`'s memory is
 * module state.
 */
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { RequestAborter, abortRoute, fetchPlan } from '../../src/fetch/dispatcher.js';
import { LazyContext } from '../../src/call/context.js';

const G1 = Symbol.for('undici.globalDispatcher.1');
const G2 = Symbol.for('undici.globalDispatcher.2');
const g = globalThis as unknown as Record<symbol, unknown>;
let saved: unknown[] = [];
beforeEach(() => {
  saved = [g[G1], g[G2]];
});
afterEach(() => {
  g[G1] = saved[0];
  g[G2] = saved[1];
});

/** A global dispatcher that records what it was handed. */
function target(extra: Record<string, unknown> = {}) {
  const handed: { opts: object; handler: Record<string, (...a: unknown[]) => unknown> }[] = [];
  return { handed, dispatch: (opts: object, handler: object) => handed.push({ opts, handler: handler as never }) > 0, ...extra };
}

/** Installs undici's global dispatchers as scripted targets: '.1' always, '.2' when `both`. */
function layout(both: boolean) {
  const t1 = target();
  const t2 = both ? target() : undefined;
  g[G1] = t1;
  g[G2] = t2;
  return { t1, t2: t2! };
}

/** A handler that records every call with its arguments and answers `answer` where undici reads one. */
function handler(methods: readonly string[], answer: unknown = 'answer') {
  const calls: unknown[][] = [];
  const h: Record<string, (...a: unknown[]) => unknown> = {};
  for (const m of methods)
    h[m] = (...a: unknown[]) => {
      calls.push([m, ...a]);
      return answer;
    };
  return { h, calls };
}

const LEGACY = ['onConnect', 'onHeaders', 'onData', 'onComplete', 'onError', 'onUpgrade'] as const;
const LEGACY_EXTRA = ['onResponseStarted', 'onBodySent', 'onRequestSent'] as const;
const MODERN = ['onRequestStart', 'onResponseStart', 'onResponseData', 'onResponseEnd', 'onResponseError', 'onRequestUpgrade'] as const;

describe('the older handler API (undici 6: Node 20, 22)', () => {
  test('the first hop is relayed by the aborter itself; every callback reaches the handler with its arguments and its answer', () => {
    const t = layout(false).t1;
    const a = new RequestAborter();
    const { h, calls } = handler([...LEGACY, ...LEGACY_EXTRA], false);
    expect(a.dispatch({ path: '/x' }, h)).toBe(true);
    expect(t.handed).toHaveLength(1);
    expect(t.handed[0]!.opts).toEqual({ path: '/x' });
    const r = t.handed[0]!.handler;
    expect(r).toBe(a); // one object per request
    const cut = () => undefined;
    const resume = () => undefined;
    r['onConnect']!(cut, 'ctx');
    expect(r['onHeaders']!(200, ['h'], resume, 'OK')).toBe(false);
    expect(r['onData']!('chunk')).toBe(false);
    r['onResponseStarted']!();
    r['onBodySent']!('sent');
    r['onRequestSent']!();
    r['onComplete']!(['t']);
    expect(calls).toEqual([
      ['onConnect', cut, 'ctx'],
      ['onHeaders', 200, ['h'], resume, 'OK'],
      ['onData', 'chunk'],
      ['onResponseStarted'],
      ['onBodySent', 'sent'],
      ['onRequestSent'],
      ['onComplete', ['t']],
    ]);
    const b = new RequestAborter();
    const other = handler(LEGACY);
    b.dispatch({}, other.h);
    t.handed[1]!.handler['onError']!('boom');
    t.handed[1]!.handler['onUpgrade']!(101, ['u'], 'socket');
    expect(other.calls).toEqual([
      ['onError', 'boom'],
      ['onUpgrade', 101, ['u'], 'socket'],
    ]);
  });

  test("the optional callbacks are skipped when the handler has none (Node 20's fetch handler lacks some)", () => {
    const t = layout(false).t1;
    const a = new RequestAborter();
    const { h, calls } = handler(LEGACY);
    a.dispatch({}, h);
    const r = t.handed[0]!.handler;
    expect(() => {
      r['onResponseStarted']!();
      r['onBodySent']!('x');
      r['onRequestSent']!();
    }).not.toThrow();
    expect(calls).toEqual([]);
  });

  test('an abort closes the connection with its reason, once; none after the hop ended', () => {
    const t = layout(false).t1;
    const cuts: unknown[] = [];
    const a = new RequestAborter();
    a.dispatch({}, handler(LEGACY).h);
    t.handed[0]!.handler['onConnect']!((reason: unknown) => cuts.push(reason));
    a.abort('timeout');
    a.abort('again');
    expect(cuts).toEqual(['timeout']);

    const b = new RequestAborter();
    b.dispatch({}, handler(LEGACY).h);
    const bCuts: unknown[] = [];
    t.handed[1]!.handler['onConnect']!((reason: unknown) => bCuts.push(reason));
    t.handed[1]!.handler['onComplete']!([]);
    b.abort('late');
    expect(bCuts).toEqual([]);

    const c = new RequestAborter();
    c.dispatch({}, handler(LEGACY).h);
    const cCuts: unknown[] = [];
    t.handed[2]!.handler['onConnect']!((reason: unknown) => cCuts.push(reason));
    t.handed[2]!.handler['onError']!(new Error('reset'));
    c.abort('late');
    expect(cCuts).toEqual([]);
  });

  test('an abort before the connection closes it as soon as the hop has one', () => {
    const t = layout(false).t1;
    const a = new RequestAborter();
    const { h, calls } = handler(LEGACY);
    a.dispatch({}, h);
    a.abort('deadline');
    a.abort('later'); // the first reason stands
    const cuts: unknown[] = [];
    t.handed[0]!.handler['onConnect']!((reason: unknown) => cuts.push(reason));
    expect(cuts).toEqual(['deadline']);
    expect(calls.map((c) => c[0])).toEqual(['onConnect']);
  });

  test("a redirect: the next hop gets a relay of its own, and the abort reaches that hop's connection, not the ended first one", () => {
    const t = layout(false).t1;
    const a = new RequestAborter();
    a.dispatch({}, handler(LEGACY).h);
    const first: unknown[] = [];
    t.handed[0]!.handler['onConnect']!((reason: unknown) => first.push(reason));
    const second: unknown[] = [];
    const { h, calls } = handler(LEGACY);
    a.dispatch({}, h);
    const r2 = t.handed[1]!.handler;
    expect(r2).not.toBe(a);
    r2['onConnect']!((reason: unknown) => second.push(reason));
    // The first hop ends after the second has its connection (undici's redirect order may vary).
    t.handed[0]!.handler['onComplete']!([]);
    r2['onData']!('body');
    a.abort('timeout');
    expect(second).toEqual(['timeout']);
    expect(first).toEqual([]);
    expect(calls.map((c) => c[0])).toEqual(['onConnect', 'onData']);
  });

  test('no global dispatcher: a clear error', () => {
    g[G1] = undefined;
    g[G2] = undefined;
    expect(() => new RequestAborter().dispatch({}, handler(LEGACY).h)).toThrow(new TypeError('pooled fetch: fetch called init.dispatcher, but undici has no global dispatcher'));
  });
});

describe('the newer handler API (undici 7+: Node 26)', () => {
  test('goes to the dispatcher for that API; every callback reaches the handler; the abort goes to the controller', () => {
    const { t1, t2 } = layout(true);
    const a = new RequestAborter();
    const { h, calls } = handler(MODERN);
    a.dispatch({}, h);
    expect(t1.handed).toHaveLength(0);
    const r = t2.handed[0]!.handler;
    expect(r).toBe(a);
    const aborted: unknown[] = [];
    const controller = { abort: (reason: unknown) => aborted.push(reason) };
    r['onRequestStart']!(controller, 'ctx');
    r['onResponseStart']!(controller, 200, ['h'], 'OK');
    r['onResponseData']!(controller, 'chunk');
    a.abort('timeout');
    expect(aborted).toEqual(['timeout']);
    r['onResponseError']!(controller, 'aborted');
    expect(calls).toEqual([
      ['onRequestStart', controller, 'ctx'],
      ['onResponseStart', controller, 200, ['h'], 'OK'],
      ['onResponseData', controller, 'chunk'],
      ['onResponseError', controller, 'aborted'],
    ]);

    const b = new RequestAborter();
    const other = handler(MODERN);
    b.dispatch({}, other.h);
    const rb = t2.handed[1]!.handler;
    const bAborted: unknown[] = [];
    const c2 = { abort: (reason: unknown) => bAborted.push(reason) };
    rb['onRequestStart']!(c2, undefined);
    rb['onResponseEnd']!(c2, ['t']);
    b.abort('late');
    expect(bAborted).toEqual([]);
    const c = new RequestAborter();
    const up = handler(MODERN);
    c.dispatch({}, up.h);
    const rc = t2.handed[2]!.handler;
    const c3 = { abort: (reason: unknown) => bAborted.push(reason) };
    rc['onRequestStart']!(c3, undefined);
    rc['onRequestUpgrade']!(c3, 101, ['u'], 'socket');
    c.abort('late');
    expect(bAborted).toEqual([]);
    expect(other.calls.map((x) => x[0])).toEqual(['onRequestStart', 'onResponseEnd']);
    expect(up.calls).toEqual([
      ['onRequestStart', c3, undefined],
      ['onRequestUpgrade', c3, 101, ['u'], 'socket'],
    ]);
  });

  test("where undici has only '.1' (undici 7 as a package), a handler of the newer API goes there", () => {
    const { t1 } = layout(false);
    new RequestAborter().dispatch({}, handler(MODERN).h);
    expect(t1.handed).toHaveLength(1);
    expect(typeof t1.handed[0]!.handler['onRequestStart']).toBe('function');
  });

  test("a handler of the older API where undici reads the newer (Node 24): relayed by a relay showing the older API alone, to '.1'", () => {
    const { t1, t2 } = layout(true);
    const a = new RequestAborter();
    const { h, calls } = handler(LEGACY);
    a.dispatch({}, h);
    expect(t2.handed).toHaveLength(0);
    const r = t1.handed[0]!.handler;
    expect(r).not.toBe(a);
    for (const m of MODERN) expect(r[m]).toBeUndefined();
    const cuts: unknown[] = [];
    r['onConnect']!((reason: unknown) => cuts.push(reason));
    a.abort('timeout');
    expect(cuts).toEqual(['timeout']);
    expect(calls.map((c) => c[0])).toEqual(['onConnect']);
    // The aborter never relays there itself: a redirect's hop gets a relay of that API too.
    a.dispatch({}, handler(LEGACY).h);
    expect(t1.handed[1]!.handler).not.toBe(a);
    expect(t1.handed[1]!.handler['onRequestStart']).toBeUndefined();
  });
});

describe('isMockActive (read by Node 22+ fetch before it dispatches)', () => {
  test("answers for the global dispatcher fetch would use: '.2' where there is one, else '.1'", () => {
    const a = new RequestAborter();
    g[G1] = undefined;
    g[G2] = undefined;
    expect(a.isMockActive).toBe(false);
    g[G1] = target({ isMockActive: true });
    expect(a.isMockActive).toBe(true);
    g[G2] = target({ isMockActive: false });
    expect(a.isMockActive).toBe(false);
    g[G2] = target({ isMockActive: true });
    g[G1] = target({ isMockActive: false });
    expect(a.isMockActive).toBe(true);
  });
});

describe('fetchPlan: what a probing aborter learns about a global fetch', () => {
  test('unknown: probe; seen calling the dispatcher: dispatcher; seen answering without: signal; not a function: signal', () => {
    layout(false);
    const honouring = () => undefined;
    const ignoring = () => undefined;
    expect(fetchPlan(undefined)).toBe('signal');
    expect(fetchPlan(honouring)).toBe('probe');
    const p = new RequestAborter(honouring);
    p.dispatch({}, handler(LEGACY).h);
    p.answered();
    expect(fetchPlan(honouring)).toBe('dispatcher');
    const q = new RequestAborter(ignoring);
    q.answered();
    expect(fetchPlan(ignoring)).toBe('signal');
    expect(fetchPlan(honouring)).toBe('dispatcher');
    // A handler of a shape not known: passed on untouched, and that fetch goes back to signals.
    const odd = { onSomethingNew: () => undefined };
    new RequestAborter().dispatch({}, odd);
    expect(fetchPlan(honouring)).toBe('signal');
    // No global fetch at all is never 'dispatcher' (what it honours is forgotten now: `undefined`).
    expect(fetchPlan(undefined)).toBe('signal');
  });

  test('an aborter that is not probing learns nothing', () => {
    layout(false);
    const f = () => undefined;
    const a = new RequestAborter();
    a.dispatch({}, handler(LEGACY).h);
    a.answered();
    expect(fetchPlan(f)).toBe('probe');
  });

  test("abortRoute: a request to a fetch of the caller's own carries the signal alone", () => {
    const ctx = new LazyContext('a', 1, Infinity);
    const route = abortRoute(ctx as never, true);
    expect(route.dispatcher).toBeUndefined();
    expect(route.signal).toBeInstanceOf(AbortSignal);
  });
});
