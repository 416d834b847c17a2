/**
 * An attempt's context (src/call/context.ts): a signal made only when read, an abort that
 * came first, a target that hears the abort instead of a signal (the fetch adapter's), and a
 * controller handed back for reuse after a normal end. Checked against a model on generated
 * sequences of reads (tracked and plain), watches, normal ends (the controller handed back) and aborts: what no test held
 * in the twenty-eighth session's mutation run (a second read after an abort got a new
 * signal; an early abort forgotten by a release; a released controller aborted later).
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { AttemptController, LazyContext, untrackedSignal, watchAbort, type SignalSource } from '../../src/call/context.js';

type Op = { k: 'read'; plain: boolean } | { k: 'watch' } | { k: 'end' } | { k: 'abort'; reason: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ k: fc.constant('read' as const), plain: fc.boolean() }),
  fc.constant({ k: 'watch' as const }),
  fc.constant({ k: 'end' as const }),
  fc.record({ k: fc.constant('abort' as const), reason: fc.integer({ min: 1, max: 3 }) }),
);

class Source implements SignalSource {
  acquired: AttemptController[] = [];
  released = new Set<AttemptController>();
  acquire(): AttemptController {
    const self = this;
    const c = new (class extends AttemptController {
      override release(): void {
        self.released.add(this);
      }
    })();
    this.acquired.push(c);
    return c;
  }
}

interface Target {
  heard: unknown[];
  abort(reason: unknown): void;
}

type Model = { s: 'none' } | { s: 'signal'; signal: AbortSignal; aborted: unknown; linked: Target | undefined } | { s: 'early'; reason: unknown } | { s: 'watch'; target: Target };

function run(ops: Op[]): string[] {
  const problems: string[] = [];
  const source = new Source();
  const ctx = new LazyContext('a', 1, Number.POSITIVE_INFINITY, source);
  let m: Model = { s: 'none' };
  const targets: { t: Target; expected: unknown[] }[] = [];
  /** Signals handed back for reuse: this context must never abort them after. */
  const handedBack: AbortSignal[] = [];
  const reason = (n: number) => `reason ${n}`;
  ops.forEach((op, i) => {
    const at = `op ${i} ${JSON.stringify(op)}`;
    if (op.k === 'read') {
      const before = source.acquired.length;
      const s = op.plain ? untrackedSignal(ctx) : ctx.signal;
      if (m.s === 'signal') {
        if (s !== m.signal) problems.push(`${at}: a second read gave a different signal`);
        return;
      }
      const fromSource = source.acquired.length - before;
      if (fromSource !== (op.plain ? 0 : 1)) problems.push(`${at}: ${fromSource} controllers taken from the source`);
      if (m.s === 'early') {
        if (!s.aborted || s.reason !== m.reason) problems.push(`${at}: read after an abort: aborted ${s.aborted} with ${String(s.reason)}, expected ${String(m.reason)}`);
        m = { s: 'signal', signal: s, aborted: m.reason, linked: undefined };
      } else {
        if (s.aborted) problems.push(`${at}: a fresh signal came back aborted`);
        m = { s: 'signal', signal: s, aborted: undefined, linked: m.s === 'watch' ? m.target : undefined };
      }
    } else if (op.k === 'watch') {
      const t: Target = { heard: [], abort: (r) => void t.heard.push(r) };
      const took = watchAbort(ctx, t);
      if (took !== (m.s === 'none')) problems.push(`${at}: watch answered ${took} in state ${m.s}`);
      targets.push({ t, expected: [] });
      if (took) m = { s: 'watch', target: t };
    } else if (op.k === 'end') {
      ctx.release();
      if (m.s === 'signal' && m.aborted === undefined) {
        handedBack.push(m.signal);
        m = { s: 'none' };
      } else if (m.s === 'watch') m = { s: 'none' };
    } else {
      const r = reason(op.reason);
      ctx.abort(r);
      if (m.s === 'none') m = { s: 'early', reason: r };
      else if (m.s === 'watch') {
        targets.find((x) => x.t === (m as { target: Target }).target)!.expected.push(r);
        m = { s: 'early', reason: r };
      } else if (m.s === 'signal' && m.aborted === undefined) {
        if (m.linked !== undefined) targets.find((x) => x.t === (m as { linked: Target }).linked)!.expected.push(r);
        m = { ...m, aborted: r };
      }
      if (m.s === 'signal' && (!m.signal.aborted || m.signal.reason !== m.aborted)) problems.push(`${at}: the signal held is aborted ${m.signal.aborted} with ${String(m.signal.reason)}, expected ${String(m.aborted)}`);
    }
  });
  for (const [k, x] of targets.entries()) if (JSON.stringify(x.t.heard) !== JSON.stringify(x.expected)) problems.push(`target ${k} heard ${JSON.stringify(x.t.heard)}, expected ${JSON.stringify(x.expected)}`);
  for (const s of handedBack) if (s.aborted) problems.push(`a signal handed back for reuse was aborted after (${String(s.reason)})`);
  const released = source.acquired.filter((c) => source.released.has(c));
  for (const c of released) if (!handedBack.includes(c.signal)) problems.push('a controller went back to the source although its attempt was cut short');
  return problems;
}

describe('an attempt context against its model', () => {
  test('generated sequences of reads, watches, releases and aborts (3,000)', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 12 }), (ops) => {
        expect(run(ops)).toEqual([]);
      }),
      { numRuns: 3000, seed: Number(process.env['FC_SEED'] ?? 2026120830) },
    );
  });

  test.each([
    [[{ k: 'read', plain: false }, { k: 'abort', reason: 1 }, { k: 'read', plain: false }]],
    [[{ k: 'abort', reason: 1 }, { k: 'end' }, { k: 'read', plain: false }]],
    [[{ k: 'read', plain: false }, { k: 'end' }, { k: 'abort', reason: 2 }]],
    [[{ k: 'read', plain: false }, { k: 'abort', reason: 1 }, { k: 'end' }, { k: 'read', plain: true }]],
    [[{ k: 'watch' }, { k: 'read', plain: true }, { k: 'abort', reason: 3 }, { k: 'abort', reason: 1 }]],
    [[{ k: 'watch' }, { k: 'end' }, { k: 'abort', reason: 1 }, { k: 'watch' }]],
  ] as Op[][][])('%j', (ops) => {
    expect(run(ops)).toEqual([]);
  });
});
