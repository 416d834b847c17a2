/**
 * A quorum read across `setEndpoints`: an endpoint that leaves the pool while the read runs
 * is not named to the pool by a later leg (an unknown name in `exclude` is INVALID_OPTIONS,
 * which failed the whole read).
 */
import { describe, expect, test } from 'vitest';
import { readHarness } from './helpers/reads.js';
import { FakeEndpoint, ok, start } from './support.js';

const setup = (names = ['a', 'b', 'c']) => readHarness(names, { quorum: { stallMs: 100 } }, { strategy: 'ordered', maxAttempts: 1 });

describe('quorum reads and setEndpoints', () => {
  test('an endpoint whose leg answered leaves the pool; the leg launched after a stall still runs, and the read is met', async () => {
    const { h, reads, sent, send } = setup();
    h.eps.a!.fallback = ok('0x5', 10);
    h.eps.b!.fallback = { hang: true };
    h.eps.c!.fallback = ok('0x5', 10);
    const read = start(reads.request('eth_getBalance', [], {}, 2, send));
    await h.clock.advance(20);
    // a answered; b hangs. a leaves the pool before b stalls.
    h.pool.setEndpoints([{ name: 'b', conn: h.eps.b! }, { name: 'c', conn: h.eps.c! }]);
    await h.clock.advance(200);
    expect(sent).toEqual(['a', 'b', 'c']);
    expect(read.error).toBeUndefined();
    expect(read.value).toBe('0x5');
  });

  test("the caller's own exclude naming an endpoint that then leaves: the leg after a stall still runs; a name it got wrong still fails the read", async () => {
    const { h, reads, sent, send } = setup(['a', 'b', 'c', 'd']);
    h.eps.a!.fallback = { hang: true };
    h.eps.c!.fallback = ok('0x5', 10);
    h.eps.d!.fallback = ok('0x5', 10);
    const read = start(reads.request('eth_getBalance', [], { exclude: ['b'] }, 2, send));
    await h.clock.advance(20);
    h.pool.setEndpoints(['a', 'c', 'd'].map((name) => ({ name, conn: h.eps[name]! })));
    await h.clock.advance(200);
    expect(sent).toEqual(['a', 'c', 'd']);
    expect(read.value).toBe('0x5');
    const wrong = await reads.request('eth_getBalance', [], { exclude: ['zz'] }, 2, send).catch((e: unknown) => e);
    expect(wrong).toMatchObject({ code: 'INVALID_OPTIONS', field: 'exclude[0]' });
  });

  /**
   * A quorum read of 2 over a (answers 0x5 at 10 ms) and b (hangs, stalls at 110 ms); at 20 ms,
   * `newcomer` joins the pool as c, answering as given.
   */
  async function readWithNewcomer(newcomer: FakeEndpoint['fallback']) {
    const { h, reads, sent, send } = setup(['a', 'b']);
    h.eps.a!.fallback = ok('0x5', 10);
    h.eps.b!.fallback = { hang: true };
    const read = start(reads.request('eth_getBalance', [], {}, 2, send));
    await h.clock.advance(20);
    const c = new FakeEndpoint('c');
    c.fallback = newcomer;
    h.pool.setEndpoints([{ name: 'a', conn: h.eps.a! }, { name: 'b', conn: h.eps.b! }, { name: 'c', conn: c }]);
    return { h, sent, read };
  }

  test('an endpoint added while the read runs, touched by a leg and gone again: a later leg does not name it (seed 42570 of the swaps generator: the read failed INVALID_OPTIONS)', async () => {
    const { h, sent, read } = await readWithNewcomer({ hang: true });
    await h.clock.advance(120); // b stalls (110 ms): c's leg starts, and hangs
    // c leaves, d comes; when c's leg stalls (210 ms) the next leg goes to d.
    const d = new FakeEndpoint('d');
    d.fallback = ok('0x5', 10);
    h.pool.setEndpoints([{ name: 'a', conn: h.eps.a! }, { name: 'b', conn: h.eps.b! }, { name: 'd', conn: d }]);
    await h.clock.advance(200);
    expect(sent).toEqual(['a', 'b', 'c', 'd']);
    expect(read.error).toBeUndefined();
    expect(read.value).toBe('0x5');
  });

  test("an endpoint a leg touched leaves the pool while head routing is asked what to avoid for the next leg: that leg does not name it (swaps generator, seed 42585: asking can run a request, and the read failed INVALID_OPTIONS)", async () => {
    let h!: ReturnType<typeof setup>['h'];
    let swapped = false;
    // Head routing's answer for the next leg; asking it removes a (as a request's answer can).
    const unfit = (): readonly string[] => {
      if (!swapped && h.clock.now() > 1_000_050) {
        swapped = true;
        h.pool.setEndpoints(['b', 'c'].map((name) => ({ name, conn: h.eps[name]! })));
      }
      return [];
    };
    const r = readHarness(['a', 'b', 'c'], { quorum: { stallMs: 100 } }, { strategy: 'ordered', maxAttempts: 1 }, unfit);
    h = r.h;
    h.eps.a!.fallback = ok('0x5', 10);
    h.eps.b!.fallback = { hang: true };
    h.eps.c!.fallback = ok('0x5', 10);
    const read = start(r.reads.request('eth_getBalance', [], {}, 2, r.send));
    await h.clock.advance(300); // b stalls at 100 ms: the next leg asks what to avoid, a leaves, c serves
    expect(swapped).toBe(true);
    expect(r.sent).toEqual(['a', 'b', 'c']);
    expect(read.error).toBeUndefined();
    expect(read.value).toBe('0x5');
  });

  test('an endpoint added while the read runs may serve a later leg', async () => {
    const { h, sent, read } = await readWithNewcomer(ok('0x5', 10));
    await h.clock.advance(200);
    expect(sent).toEqual(['a', 'b', 'c']);
    expect(read.value).toBe('0x5');
  });
});
