/**
 * Twenty-seventh session, triage of the first mutation run of `src/call/timeouts.ts`
 * (bench/notes/mutation-s26.md): the shared attempt-timeout timer's state as entries come and
 * go. Under any clock but Node's system clock the timer keeps the process alive exactly while
 * the queue holds an entry; under the system clock it never does until the process would
 * exit (`beforeExit` runs the holds), and then only if attempts are still queued. And it stays
 * one timer: appending entries or removing them does not arm the host timer again.
 */
import { afterEach, describe, expect, test, vi } from 'vitest';
import { exitHolds, systemClock, type TimerHandle } from '../../src/base/clock.js';
import { TimeoutQueue, type TimeoutEntry } from '../../src/call/timeouts.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { seeded } from '../helpers/prng.js';

/** A FakeClock that counts the host timers armed. */
class CountingClock extends FakeClock {
  armed = 0;
  override setTimeout(fn: () => void, ms: number, background?: boolean): TimerHandle {
    this.armed++;
    return super.setTimeout(fn, ms, background);
  }
}

interface Probe extends TimeoutEntry {
  readonly name: number;
  expired: number[];
}

function probe(name: number, onExpire?: (now: number) => void): Probe {
  const e: Probe = {
    name, expired: [], dueAt: 0, prevTimeout: undefined, nextTimeout: undefined, queued: false, heapIndex: -1,
    expire(now) {
      e.expired.push(now);
      onExpire?.(now);
    },
  };
  return e;
}

describe('the shared attempt timer under a clock other than the system clock', () => {
  test('generated adds, removals, re-adds from expiry handlers and time steps: one timer, foreground exactly while the queue holds an entry, every entry expired once at its due time', async () => {
    const runs = 300;
    for (let run = 0; run < runs; run++) {
      const rand = seeded(2026120560 + run);
      const clock = new CountingClock(Math.floor(rand() * 1e6));
      const q = new TimeoutQueue(clock);
      const queued = new Set<Probe>();
      const all: Probe[] = [];
      const order: number[] = [];
      let names = 0;
      const check = (where: string): void => {
        const ctx = `run ${run}, ${where}`;
        expect(clock.pendingTimers, ctx).toBeLessThanOrEqual(1);
        if (queued.size === 0) {
          expect(clock.pendingForegroundTimers, ctx).toBe(0);
          return;
        }
        expect(clock.pendingForegroundTimers, ctx).toBe(1);
        const earliest = Math.min(...[...queued].map((e) => e.dueAt));
        // Never armed later than the earliest entry.
        expect(clock.now() + clock.nextTimerInMs()!, ctx).toBeLessThanOrEqual(earliest);
      };
      const add = (dueAt: number): Probe => {
        const name = names++;
        // A third of the entries, when they expire, add another (a retry's attempt), some due earlier than queued ones.
        const chained = rand() < 0.33;
        const e = probe(name, (now) => {
          queued.delete(e);
          order.push(e.dueAt);
          if (chained && names < 400) add(now + Math.floor(rand() * 60));
        });
        q.add(e, dueAt);
        queued.add(e);
        all.push(e);
        return e;
      };
      const steps = 20 + Math.floor(rand() * 60);
      for (let s = 0; s < steps; s++) {
        const r = rand();
        const now = clock.now();
        if (r < 0.45) {
          // Mostly one shared timeout (appended in order), some shorter (the heap), some equal to a queued one.
          const pick = rand();
          const queuedDues = [...queued].map((e) => e.dueAt);
          const dueAt = pick < 0.5 ? now + 100 : pick < 0.8 || queuedDues.length === 0 ? now + Math.floor(rand() * 100) : queuedDues[Math.floor(rand() * queuedDues.length)]!;
          add(dueAt);
          check(`after add due ${dueAt - now}`);
        } else if (r < 0.7) {
          const list = [...queued];
          if (list.length > 0) {
            const e = list[Math.floor(rand() * list.length)]!;
            q.remove(e);
            queued.delete(e);
            q.remove(e); // twice is harmless
            check('after remove');
          }
        } else {
          await clock.advance(Math.floor(rand() * 40));
          check('after advance');
        }
      }
      await clock.advance(1_000);
      check('at the end');
      expect(queued.size).toBe(0);
      for (const e of all) {
        expect(e.expired.length, `run ${run}`).toBeLessThanOrEqual(1);
        if (e.expired.length === 1) expect(e.expired[0], `run ${run}`).toBe(e.dueAt);
        expect(e.queued).toBe(false);
      }
      expect(order, `run ${run}`).toEqual([...order].sort((a, b) => a - b));
      // Every entry either expired or was removed; the counts add up.
      expect(all.filter((e) => e.expired.length === 1).length).toBe(order.length);
    }
  });

  test('one caller after another on one attempt timeout arms the host timer about once per timeout, not per call', async () => {
    const clock = new CountingClock();
    const q = new TimeoutQueue(clock);
    for (let i = 0; i < 1_000; i++) {
      const e = probe(i);
      q.add(e, clock.now() + 100);
      expect(clock.pendingForegroundTimers).toBe(1);
      q.remove(e);
      expect(clock.pendingForegroundTimers).toBe(0);
      await clock.advance(1);
    }
    // 1,000 calls over 1,000 ms with a 100 ms timeout: the timer fires about ten times, finds
    // nothing due, and is armed again by the next call.
    expect(clock.armed).toBeLessThanOrEqual(12);
    expect(clock.armed).toBeGreaterThanOrEqual(9);
  });

  test('many callers at once on one attempt timeout: one timer for all of them', () => {
    const clock = new CountingClock();
    const q = new TimeoutQueue(clock);
    const entries = Array.from({ length: 100 }, (_, i) => probe(i));
    for (const e of entries) q.add(e, 100);
    expect(clock.armed).toBe(1);
    // Ends in any order: the timer stays armed for the first due time, foreground while any is queued.
    for (const e of [...entries.slice(50), ...entries.slice(0, 50)]) {
      expect(clock.pendingForegroundTimers).toBe(1);
      q.remove(e);
    }
    expect(clock.pendingForegroundTimers).toBe(0);
    expect(clock.armed).toBe(1);
  });

  test('the heap alone keeps the timer in the foreground when the list empties', () => {
    const clock = new CountingClock();
    const q = new TimeoutQueue(clock);
    const long = probe(0);
    const short = probe(1);
    q.add(long, 1_000);
    q.add(short, 10); // due before the list's tail: the heap
    expect(short.heapIndex).toBe(0);
    q.remove(long);
    expect(clock.pendingForegroundTimers).toBe(1);
    q.remove(short);
    expect(clock.pendingForegroundTimers).toBe(0);
  });

  test('an entry appended while the timer was released references it again', () => {
    const clock = new CountingClock();
    const q = new TimeoutQueue(clock);
    const a = probe(0);
    q.add(a, 100);
    q.remove(a);
    expect(clock.pendingForegroundTimers).toBe(0);
    expect(clock.pendingTimers).toBe(1);
    q.add(probe(1), 150); // later than the armed timer: no new timer, the old one referenced
    expect(clock.armed).toBe(1);
    expect(clock.pendingForegroundTimers).toBe(1);
  });

  test('an entry due exactly when the armed timer fires is served by it: no second timer', () => {
    const clock = new CountingClock();
    const q = new TimeoutQueue(clock);
    const a = probe(0);
    q.add(a, 100);
    q.remove(a);
    q.add(probe(1), 100);
    expect(clock.armed).toBe(1);
    expect(clock.pendingForegroundTimers).toBe(1);
  });

  test('an expiry that adds an entry due before the rest arms the timer once for it', async () => {
    const clock = new CountingClock();
    const q = new TimeoutQueue(clock);
    const log: string[] = [];
    const c = probe(2, (now) => log.push(`c@${now}`));
    q.add(probe(0, (now) => (log.push(`a@${now}`), q.add(c, now + 10))), 100);
    q.add(probe(1, (now) => log.push(`b@${now}`)), 120);
    await clock.advance(100);
    // The first timer, then one for c (due at 110, before b): not armed again after the expiry loop.
    expect(clock.armed).toBe(2);
    await clock.advance(100);
    expect(log).toEqual(['a@100', 'c@110', 'b@120']);
  });
});

describe('the shared attempt timer under the system clock on Node', () => {
  const queues: TimeoutQueue[] = [];
  afterEach(() => {
    for (const q of queues.splice(0)) q.stop();
    vi.restoreAllMocks();
  });

  test('never referenced while entries come and go; the exit hold references it only while entries are queued, and removing the last releases it', () => {
    const holds = exitHolds(systemClock);
    expect(holds).toBeInstanceOf(Set);
    const refs: boolean[] = [];
    const setRef = systemClock.setRef!.bind(systemClock);
    vi.spyOn(systemClock, 'setRef').mockImplementation((h, on) => {
      refs.push(on);
      setRef(h, on);
    });
    const backgrounds: (boolean | undefined)[] = [];
    const setTimeout = systemClock.setTimeout.bind(systemClock);
    vi.spyOn(systemClock, 'setTimeout').mockImplementation((fn, ms, background) => {
      backgrounds.push(background);
      return setTimeout(fn, ms, background);
    });
    const before = new Set(holds);
    const q = new TimeoutQueue(systemClock);
    queues.push(q);
    const now = systemClock.now();
    const a = probe(0);
    const b = probe(1);
    const c = probe(2);
    q.add(a, now + 60_000);
    q.add(b, now + 60_000);
    q.add(c, now + 30_000); // the heap, armed sooner
    expect(backgrounds).toEqual([true, true]);
    expect(refs).toEqual([]);
    const mine = [...holds!].filter((h) => !before.has(h));
    expect(mine).toHaveLength(1);
    const hold = mine[0]!;
    // The process would exit with attempts queued: the hold references the timer.
    hold();
    expect(refs).toEqual([true]);
    q.remove(a);
    q.remove(c);
    expect(refs).toEqual([true]);
    q.remove(b);
    expect(refs).toEqual([true, false]);
    // Nothing queued: the hold leaves the timer alone.
    hold();
    expect(refs).toEqual([true, false]);
    // Only the list, or only the heap, is enough for the hold.
    const d = probe(3);
    q.add(d, now + 90_000);
    hold();
    expect(refs).toEqual([true, false, true]);
    q.remove(d);
    expect(refs).toEqual([true, false, true, false]);
    q.stop();
    expect(holds!.has(hold)).toBe(false);
  });

  test('a queue holding only heap entries is held at exit too', () => {
    const holds = exitHolds(systemClock)!;
    const refs: boolean[] = [];
    vi.spyOn(systemClock, 'setRef').mockImplementation((_, on) => void refs.push(on));
    const before = new Set(holds);
    const q = new TimeoutQueue(systemClock);
    queues.push(q);
    const now = systemClock.now();
    const listed = probe(0);
    const heaped = probe(1);
    q.add(listed, now + 60_000);
    q.add(heaped, now + 30_000);
    q.remove(listed);
    const hold = [...holds].find((h) => !before.has(h))!;
    hold();
    expect(refs).toEqual([true]);
    q.remove(heaped);
    expect(refs).toEqual([true, false]);
  });
});
