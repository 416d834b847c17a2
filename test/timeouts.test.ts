import { describe, expect, test } from 'vitest';
import { OwnedAttempt, type Attempt, type AttemptOwner } from '../src/call/attempt.js';
import { TimeoutQueue, type TimeoutEntry } from '../src/call/timeouts.js';
import type { EndpointState } from '../src/selection/endpoint.js';
import { FakeClock } from '../src/testing/index.js';

function entry(log: string[], name: string): TimeoutEntry {
  return { dueAt: 0, prevTimeout: undefined, nextTimeout: undefined, queued: false, heapIndex: -1, expire: (now) => log.push(`${name}@${now}`) };
}

describe('TimeoutQueue', () => {
  test('expires entries in due order on one shared timer, whatever the insertion order', async () => {
    const clock = new FakeClock();
    const q = new TimeoutQueue(clock);
    const log: string[] = [];
    q.add(entry(log, 'b'), 200);
    q.add(entry(log, 'c'), 300);
    q.add(entry(log, 'a'), 100);
    q.add(entry(log, 'c2'), 300);
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(1000);
    expect(log).toEqual(['a@100', 'b@200', 'c@300', 'c2@300']);
  });

  test('a removed entry never expires; an empty queue leaves at most a timer that keeps nothing alive', async () => {
    const clock = new FakeClock();
    const q = new TimeoutQueue(clock);
    const log: string[] = [];
    const a = entry(log, 'a');
    const b = entry(log, 'b');
    q.add(a, 100);
    q.add(b, 200);
    q.remove(a);
    q.remove(a); // twice is harmless
    expect(clock.pendingForegroundTimers).toBe(1);
    q.remove(b);
    expect(clock.pendingForegroundTimers).toBe(0);
    await clock.advance(1000);
    expect(log).toEqual([]);
    expect(clock.pendingTimers).toBe(0); // it fired, found nothing, and did not re-arm
  });

  test('re-arms for the new head when the head leaves early', async () => {
    const clock = new FakeClock();
    const q = new TimeoutQueue(clock);
    const log: string[] = [];
    const a = entry(log, 'a');
    q.add(a, 100);
    q.add(entry(log, 'b'), 500);
    q.remove(a);
    await clock.advance(100);
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(400);
    expect(log).toEqual(['b@500']);
  });

  test('an earlier entry re-arms the timer sooner; stop() clears it', async () => {
    const clock = new FakeClock();
    const q = new TimeoutQueue(clock);
    const log: string[] = [];
    q.add(entry(log, 'late'), 1000);
    q.add(entry(log, 'early'), 10);
    await clock.advance(10);
    expect(log).toEqual(['early@10']);
    q.stop();
    expect(clock.pendingTimers).toBe(0);
  });

  test('regression: an entry added by an expiry handler does not push back an earlier queued entry', async () => {
    // Found by the property tests: a retry scheduled from an expiring attempt armed the
    // timer for its own (later) due time, and a call queued in between missed its deadline.
    const clock = new FakeClock();
    const q = new TimeoutQueue(clock);
    const log: string[] = [];
    const later = entry(log, 'later');
    const first: TimeoutEntry = {
      ...entry(log, 'first'),
      expire: (now) => {
        log.push(`first@${now}`);
        q.add(later, now + 54);
      },
    };
    q.add(first, 386);
    q.add(entry(log, 'between'), 407);
    await clock.advance(500);
    expect(log).toEqual(['first@386', 'between@407', 'later@440']);
  });

  /**
   * A plain entry, or an attempt (whose next link and heap index share one field, and whose
   * due time is derived: its start plus its owner's attempt timeout, here 0).
   */
  const kinds: [string, (fired: number[], dueAt: number) => TimeoutEntry][] = [
    ['plain entries', (fired, dueAt) => {
      const e: TimeoutEntry = { dueAt, prevTimeout: undefined, nextTimeout: undefined, queued: false, heapIndex: -1, expire: () => fired.push(e.dueAt) };
      return e;
    }],
    ['attempts', (fired, dueAt) => {
      const owner = { deadlineAt: Number.POSITIVE_INFINITY, beganAt: 0, attemptTimeoutMs: 0, attemptTimedOut: (a: Attempt<unknown>) => fired.push(a.dueAt) } as unknown as AttemptOwner<unknown>;
      const ep = { breaker: { generation: 0 }, authGeneration: 0 } as unknown as EndpointState<unknown>;
      return new OwnedAttempt(owner, ep, 1, 0, dueAt);
    }],
  ];

  test.each(kinds)('random due times, random removals (list and heap alike), %s: the rest expire in due order, each once', async (_, make) => {
    let seed = 7;
    const rand = (n: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 50; round++) {
      const clock = new FakeClock();
      const q = new TimeoutQueue(clock);
      const fired: number[] = [];
      const entries = Array.from({ length: 40 }, () => make(fired, 1 + rand(500)));
      for (const e of entries) q.add(e, e.dueAt);
      const removed = new Set(entries.filter(() => rand(3) === 0));
      for (const e of removed) q.remove(e);
      await clock.advance(1_000);
      const expected = entries.filter((e) => !removed.has(e)).map((e) => e.dueAt).sort((a, b) => a - b);
      expect(fired).toEqual(expected);
      expect(entries.every((e) => !e.queued && e.heapIndex === -1 && e.prevTimeout === undefined && e.nextTimeout === undefined)).toBe(true);
      expect(clock.pendingForegroundTimers).toBe(0);
    }
  });
});
