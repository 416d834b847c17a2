import { expect, test } from 'vitest';
import { Pool } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';

test('smoke', async () => {
  const clock = new FakeClock();
  let n = 0;
  const events: string[] = [];
  const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'A' }, { name: 'b', conn: 'B' }], classify: () => 'transient', clock, onEvent: (e) => events.push(e.type + ('endpoint' in e ? ':' + e.endpoint : '')) });
  const p = pool.execute(async (conn) => { n++; if (conn === 'A') throw new Error('x'); return conn; });
  await clock.advance(0);
  expect(await p).toBe('B');
  console.log(events, n, clock.pendingTimers);
});
