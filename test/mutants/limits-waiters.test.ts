/**
 * Issue 15, limiters mutation rerun: the wait queue of one quota (src/limits/waiters.ts),
 * driven directly on the fake clock with scripted slots and waiters: order of turns, the
 * look-ahead past a head that cannot leave, the single timer, leaving, going back to the
 * front, `recheck` after a ceiling falls, `poke` and `close`.
 */
import { describe, expect, test } from 'vitest';
import { LOOKAHEAD, WaitQueue, type QueueSlot, type QueuedWaiter } from '../../src/limits/waiters.js';
import { FakeClock } from '../../src/testing/index.js';

/** An endpoint's limits: free from `readyAt` on; a turn taken on it makes it wait `everyMs` again (0: never). */
class Slot implements QueueSlot {
  readyAt = 0;
  everyMs = 0;
  /** `(ahead, aheadHere)` of every `turnEtaMs` call. */
  readonly asked: [number, number][] = [];
  limitWaitMs(now: number): number {
    return Math.max(0, this.readyAt - now);
  }
  turnEtaMs(now: number, ahead: number, aheadHere: number): number {
    this.asked.push([ahead, aheadHere]);
    return Math.max(0, this.readyAt - now) + 100 * ahead;
  }
}

class Waiter implements QueuedWaiter {
  queueTicket = 0;
  /** The latest turn it would accept in `recheck` (ms from now); undefined: any. */
  latestMs: number | undefined;
  onTurn: ((now: number) => void) | undefined;
  constructor(
    readonly name: string,
    readonly slot: Slot,
    readonly log: string[],
  ) {}
  turn(now: number): void {
    this.log.push(`${this.name}@${now}`);
    if (this.slot.everyMs > 0) this.slot.readyAt = now + this.slot.everyMs;
    this.onTurn?.(now);
  }
  overdue(_now: number, etaMs: number): boolean {
    return this.latestMs !== undefined && etaMs > this.latestMs;
  }
  readmit(): void {
    this.log.push(`${this.name} readmitted`);
  }
}

function setup() {
  const clock = new FakeClock(0);
  const q = new WaitQueue(clock);
  const log: string[] = [];
  const waiter = (name: string, slot: Slot): Waiter => new Waiter(name, slot, log);
  const join = (name: string, slot: Slot, front = false): Waiter => {
    const w = waiter(name, slot);
    q.join(w, slot, front);
    return w;
  };
  return { clock, q, log, waiter, join };
}

/** A slot that serves one call every `everyMs`, first free at `readyAt`. */
function paced(everyMs: number, readyAt = 0): Slot {
  const s = new Slot();
  s.everyMs = everyMs;
  s.readyAt = readyAt;
  return s;
}

describe('WaitQueue turns', () => {
  test('one call: its turn comes when its slot is free, then the queue holds no timer', async () => {
    const { clock, q, log, join } = setup();
    const w = join('a', paced(100, 250));
    expect(q.size).toBe(1);
    expect(w.queueTicket).toBeGreaterThan(0);
    expect(clock.nextTimerInMs()).toBe(250);
    await clock.advance(249);
    expect(log).toEqual([]);
    await clock.advance(1);
    expect(log).toEqual(['a@250']);
    expect(q.size).toBe(0);
    expect(w.queueTicket).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  test('a free slot: the turn comes on the next timer tick, not inside join', async () => {
    const { clock, log, join } = setup();
    join('a', paced(100));
    expect(log).toEqual([]);
    expect(clock.nextTimerInMs()).toBe(0);
    await clock.advance(0);
    expect(log).toEqual(['a@0']);
  });

  test('calls on one slot get turns in arrival order, one per token, with one timer', async () => {
    const { clock, q, log, join } = setup();
    const s = paced(100, 100);
    for (const n of ['a', 'b', 'c']) join(n, s);
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(100);
    expect(log).toEqual(['a@100']);
    expect(q.size).toBe(2);
    expect(clock.nextTimerInMs()).toBe(100);
    await clock.advance(200);
    expect(log).toEqual(['a@100', 'b@200', 'c@300']);
    expect(q.size).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  test('a token that serves several: every call that can leave now leaves in one tick', async () => {
    const { clock, q, log, join } = setup();
    const s = new Slot(); // never limited
    s.readyAt = 50;
    for (const n of ['a', 'b', 'c']) join(n, s);
    await clock.advance(50);
    expect(log).toEqual(['a@50', 'b@50', 'c@50']);
    expect(q.size).toBe(0);
  });

  test('turn sees itself out of the queue: ticket 0 and size already counted down', async () => {
    const { clock, q, join } = setup();
    const seen: [number, number][] = [];
    const a = join('a', paced(100, 10));
    join('b', paced(100, 10));
    a.onTurn = () => seen.push([a.queueTicket, q.size]);
    await clock.advance(10);
    expect(seen).toEqual([[0, 1]]);
  });
});

describe('WaitQueue look-ahead', () => {
  test('a call behind a head that cannot leave takes a free token; the head keeps its place', async () => {
    const { clock, q, log, join } = setup();
    const busy = paced(100, 500);
    const free = paced(100, 0);
    join('head', busy);
    join('next', free);
    // Armed for the sooner of the two waits.
    expect(clock.nextTimerInMs()).toBe(0);
    await clock.advance(0);
    expect(log).toEqual(['next@0']);
    expect(q.size).toBe(1);
    expect(clock.nextTimerInMs()).toBe(500);
    join('later', free); // free is busy until 100: the head still waits until 500
    await clock.advance(100);
    expect(log).toEqual(['next@0', 'later@100']);
    await clock.advance(400);
    expect(log).toEqual(['next@0', 'later@100', 'head@500']);
  });

  test(`only ${LOOKAHEAD} calls behind the head are looked at`, async () => {
    const { clock, q, log, join } = setup();
    const busy = paced(1000, 500);
    join('head', busy);
    for (let i = 1; i < LOOKAHEAD; i++) join(`w${i}`, busy);
    join('in', paced(100, 80)); // the 8th behind the head
    join('out', paced(100, 50)); // the 9th: free sooner, but not looked at
    expect(clock.nextTimerInMs()).toBe(80);
    await clock.advance(50);
    q.poke(); // look now: 'out' could leave, but it is out of sight
    await clock.advance(29);
    expect(log).toEqual([]);
    // Once 'in' has left, 'out' is the 8th behind the head and leaves in the same tick.
    await clock.advance(1);
    expect(log).toEqual(['in@80', 'out@80']);
    expect(clock.nextTimerInMs()).toBe(420);
  });

  test('calls that left are not counted among the looked-at', async () => {
    const { clock, q, log, join } = setup();
    const busy = paced(1000, 500);
    join('head', busy);
    const ws: Waiter[] = [];
    for (let i = 1; i <= LOOKAHEAD; i++) ws.push(join(`w${i}`, busy));
    join('out', paced(100, 0)); // the 9th behind the head
    await clock.advance(0);
    expect(log).toEqual([]);
    q.leave(ws[3]!);
    q.poke();
    await clock.advance(0);
    expect(log).toEqual(['out@0']);
  });

  test('the timer is armed for the soonest wait among head and look-ahead', async () => {
    const { clock, log, join } = setup();
    join('head', paced(100, 300));
    join('b', paced(100, 200));
    expect(clock.nextTimerInMs()).toBe(200);
    join('c', paced(100, 250));
    expect(clock.nextTimerInMs()).toBe(200);
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(200);
    expect(log).toEqual(['b@200']);
    expect(clock.nextTimerInMs()).toBe(50);
    await clock.advance(100);
    expect(log).toEqual(['b@200', 'c@250', 'head@300']);
  });

  test('a head that waits less than the look-ahead arms for its own wait', async () => {
    const { clock, q, log, join } = setup();
    const head = paced(100, 300);
    join('head', head);
    join('b', paced(100, 800));
    q.poke();
    await clock.advance(0);
    expect(clock.nextTimerInMs()).toBe(300);
    await clock.advance(300);
    expect(log).toEqual(['head@300']);
  });

  test('limits that never free up are looked at again every second', async () => {
    const { clock, q, log, join } = setup();
    const never = paced(100, Number.POSITIVE_INFINITY);
    join('a', never);
    q.poke();
    await clock.advance(0);
    expect(clock.nextTimerInMs()).toBe(1000);
    await clock.advance(1000);
    expect(clock.nextTimerInMs()).toBe(1000);
    never.readyAt = 1500;
    await clock.advance(999);
    expect(log).toEqual([]);
    await clock.advance(1);
    expect(log).toEqual(['a@2000']);
  });

  test('behind a never-free head, a call with a finite wait arms the timer for it', async () => {
    const { clock, q, log, join } = setup();
    join('a', paced(100, Number.POSITIVE_INFINITY));
    join('b', paced(100, 1500));
    q.poke();
    await clock.advance(0);
    expect(clock.nextTimerInMs()).toBe(1500);
    await clock.advance(1500);
    expect(log).toEqual(['b@1500']);
  });
});

describe('WaitQueue leave, front, poke, close', () => {
  test('a call that left is skipped; leaving twice counts once; the last one out stops the timer', async () => {
    const { clock, q, log, join, waiter } = setup();
    const s = paced(100, 100);
    const a = join('a', s);
    const b = join('b', s);
    q.leave(a);
    expect(a.queueTicket).toBe(0);
    expect(q.size).toBe(1);
    q.leave(a);
    expect(q.size).toBe(1);
    q.leave(waiter('never-joined', s));
    expect(q.size).toBe(1);
    await clock.advance(100);
    expect(log).toEqual(['b@100']);
    const c = join('c', s);
    expect(clock.pendingTimers).toBe(1);
    q.leave(c);
    expect(q.size).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    // Empty again: a newcomer is armed afresh.
    join('d', s);
    expect(clock.nextTimerInMs()).toBe(100);
    void b;
  });

  test('back to the front: before the calls already waiting, at the start or after turns', async () => {
    const { clock, log, join } = setup();
    const s = paced(100, 100);
    join('a', s);
    join('b', s);
    join('first', s, true);
    await clock.advance(100);
    expect(log).toEqual(['first@100']);
    join('again', s, true); // the queue has moved on: the freed place in front is reused
    await clock.advance(300);
    expect(log).toEqual(['first@100', 'again@200', 'a@300', 'b@400']);
  });

  test('calls back at the front keep their order among themselves; `front` counts those still waiting', async () => {
    const { clock, q, log, join } = setup();
    const s = paced(100, 100);
    join('a', s);
    const x = join('x', s, true);
    const y = join('y', s, true);
    join('z', s, true);
    expect(x.queueTicket).toBeLessThan(0);
    expect(q.front).toBe(3);
    q.leave(y);
    expect([q.front, q.size]).toEqual([2, 3]);
    await clock.advance(100);
    expect(log).toEqual(['x@100']);
    expect(q.front).toBe(1);
    await clock.advance(200);
    expect(log).toEqual(['x@100', 'z@200', 'a@300']);
    expect([q.front, q.size]).toEqual([0, 0]);
  });

  test('`front` stays exact: a call behind the front ones given its turn first, a front one taken out by a recheck', async () => {
    const { clock, q, log, join } = setup();
    const slow = paced(100, 500);
    const fast = paced(100, 10);
    const x = join('x', slow, true);
    join('a', fast);
    join('b', slow);
    await clock.advance(10);
    expect(log).toEqual(['a@10']); // the look-ahead served a before x: x is still back at the front
    expect([q.front, q.size]).toEqual([1, 2]);
    x.latestMs = 100;
    q.recheck(clock.now());
    expect(log).toEqual(['a@10', 'x readmitted']);
    expect([q.front, q.size]).toEqual([0, 1]);
  });

  test('a call back at the front rechecks the calls behind it: it counts as one ahead, here and for its slot, and stays itself', () => {
    const { q, log, waiter } = setup();
    const s = paced(100, 0);
    const other = paced(100, 0);
    const a = waiter('a', s);
    a.latestMs = 50; // turn in 0 ms alone, 100 ms behind the returning call
    q.join(a, s);
    const b = waiter('b', other);
    b.latestMs = 150; // 100 ms behind a; 100 ms behind the returning call once a has left
    q.join(b, other);
    expect(log).toEqual([]); // joining at the back rechecks nothing
    const x = waiter('x', s);
    x.latestMs = -1; // overdue anywhere: only its being the returning call keeps it
    q.join(x, s, true);
    expect(log).toEqual(['a readmitted']);
    expect(s.asked.at(-1)).toEqual([1, 1]);
    expect(other.asked.at(-1)).toEqual([1, 0]);
    expect([q.front, q.size]).toEqual([1, 2]);
  });

  test('a call back at the front of a long queue is armed for its own wait', async () => {
    const { clock, log, join } = setup();
    const busy = paced(1000, 500);
    for (let i = 0; i < LOOKAHEAD + 4; i++) join(`w${i}`, busy);
    expect(clock.nextTimerInMs()).toBe(500);
    join('front', paced(100, 20), true);
    expect(clock.nextTimerInMs()).toBe(20);
    await clock.advance(20);
    expect(log).toEqual(['front@20']);
  });

  test('a call that joins behind the look-ahead does not arm the timer', async () => {
    const { clock, log, join } = setup();
    const busy = paced(1000, 500);
    for (let i = 0; i <= LOOKAHEAD; i++) join(`w${i}`, busy);
    join('late', paced(100, 20));
    expect(clock.nextTimerInMs()).toBe(500);
    await clock.advance(20);
    expect(log).toEqual([]);
  });

  test('a turn that queues again at the back is armed for (its slot waits behind itself)', async () => {
    const { clock, q, log, join } = setup();
    const s = paced(100, 10);
    const a = join('a', s);
    let again = true;
    a.onTurn = () => {
      if (!again) return;
      again = false;
      q.join(a, s); // e.g. its token went to a retry: it waits for the next one
    };
    await clock.advance(10);
    expect(q.size).toBe(1);
    expect(clock.nextTimerInMs()).toBe(100);
    await clock.advance(100);
    expect(log).toEqual(['a@10', 'a@110']);
  });

  test('poke looks again at once (limits changed); on an empty queue it arms nothing', async () => {
    const { clock, q, log, join } = setup();
    q.poke();
    expect(clock.pendingTimers).toBe(0);
    const s = paced(100, 1000);
    join('a', s);
    s.readyAt = 0; // a ceiling rose
    q.poke();
    expect(clock.pendingTimers).toBe(1);
    expect(clock.nextTimerInMs()).toBe(0);
    await clock.advance(0);
    expect(log).toEqual(['a@0']);
  });

  test('close stops the timer and empties the queue without giving turns', async () => {
    const { clock, q, log, join } = setup();
    join('a', paced(100, 100));
    join('b', paced(100, 100));
    q.close();
    expect(q.size).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(1000);
    expect(log).toEqual([]);
  });
});

describe('WaitQueue.recheck', () => {
  test('asks each waiting call, in order, with the calls ahead of it in all and on its slot', () => {
    const { q, join } = setup();
    const a = new Slot();
    const b = new Slot();
    join('1', a);
    join('2', b);
    const left = join('3', a);
    join('4', a);
    join('5', b);
    q.leave(left);
    q.recheck(0);
    expect(a.asked).toEqual([
      [0, 0],
      [2, 1],
    ]);
    expect(b.asked).toEqual([
      [1, 0],
      [3, 1],
    ]);
  });

  test('takes out the calls now too late, counts the stayers only, and readmits them after the pass in order', async () => {
    const { clock, q, log, join } = setup();
    const s = paced(100, 100);
    const ws = ['a', 'b', 'c', 'd'].map((n) => join(n, s));
    // Turn ETAs: a 100, b 200, c 300, d 400 (100 + 100 per call ahead).
    ws[1]!.latestMs = 150; // b: too late
    ws[3]!.latestMs = 350; // d: 300 once b is out
    ws[2]!.onTurn = undefined;
    const sizes: number[] = [];
    ws[1]!.readmit = () => {
      sizes.push(q.size);
      log.push('b readmitted');
    };
    q.recheck(0);
    expect(log).toEqual(['b readmitted']);
    expect(sizes).toEqual([3]);
    expect(q.size).toBe(3);
    expect(ws[1]!.queueTicket).toBe(0);
    expect(s.asked).toEqual([
      [0, 0],
      [1, 1],
      [1, 1],
      [2, 2],
    ]);
    await clock.advance(400);
    expect(log).toEqual(['b readmitted', 'a@100', 'c@200', 'd@300']);
  });

  test('all too late: the queue empties, its timer stops, each is readmitted once, in order', async () => {
    const { clock, q, log, join } = setup();
    const s = paced(100, 100);
    for (const n of ['a', 'b']) join(n, s).latestMs = 50;
    q.recheck(0);
    expect(log).toEqual(['a readmitted', 'b readmitted']);
    expect(q.size).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(500);
    expect(log).toEqual(['a readmitted', 'b readmitted']);
  });

  test('after turns were given, only the calls still waiting are asked', async () => {
    const { clock, q, join } = setup();
    const s = paced(100, 100);
    for (const n of ['a', 'b', 'c']) join(n, s);
    await clock.advance(100);
    s.asked.length = 0;
    q.recheck(clock.now());
    expect(s.asked).toEqual([
      [0, 0],
      [1, 1],
    ]);
  });
});

describe('WaitQueue joins and timer, more', () => {
  test('join without `front` queues at the back', async () => {
    const { clock, q, log, waiter } = setup();
    const s = paced(100, 100);
    for (const n of ['a', 'b', 'c']) q.join(waiter(n, s), s);
    await clock.advance(300);
    expect(log).toEqual(['a@100', 'b@200', 'c@300']);
  });

  test('a newcomer within the look-ahead of a queue that has moved on is armed for', async () => {
    const { clock, log, join } = setup();
    const busy = paced(1000, 100);
    for (let i = 0; i < LOOKAHEAD + 4; i++) join(`w${i}`, busy);
    await clock.advance(100 + 1000 * (LOOKAHEAD + 1)); // turns for w0..w9: two left
    expect(log).toHaveLength(LOOKAHEAD + 2);
    expect(clock.nextTimerInMs()).toBe(1000);
    join('fast', paced(100, clock.now() + 20));
    expect(clock.nextTimerInMs()).toBe(20);
    await clock.advance(20);
    expect(log.at(-1)).toBe(`fast@${clock.now()}`);
  });

  test('after a look, the timer is armed for the soonest of the calls behind the head, not the last looked at', async () => {
    const { clock, q, join } = setup();
    const head = paced(100, Number.POSITIVE_INFINITY);
    const b = paced(100, Number.POSITIVE_INFINITY);
    const c = paced(100, Number.POSITIVE_INFINITY);
    join('head', head);
    join('b', b);
    join('c', c);
    b.readyAt = 200;
    c.readyAt = 500;
    head.readyAt = 1000;
    q.poke();
    await clock.advance(0);
    expect(clock.nextTimerInMs()).toBe(200);
  });
});
