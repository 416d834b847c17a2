/**
 * What crosses the wire between the Redis store and its scripts: the admission script's
 * arguments, a fleet change's arguments, the parsed reply, and the clock offset that turns
 * Redis's slot times into local ones.
 */
import type { SharedChange, SharedLimit, SharedState } from '../limits/store.js';
import { RedisStoreError } from './errors.js';

/**
 * The offset between Redis's clock and this process's (Redis ms − local ms), NTP style: from
 * the sample with the shortest round trip, renewed every 10 s (clocks drift), so that a
 * slow answer does not shift the slots it brings (a late slot bunches with the next ones).
 */
export class ClockOffset {
  #offset = 0;
  /** Round trip of the sample in use (Infinity for a provisional one). */
  #rtt = Infinity;
  #at = -Infinity;
  #known = false;

  get known(): boolean {
    return this.#known;
  }

  get value(): number {
    return this.#offset;
  }

  /** `provisional`: a biased sample (two round trips), kept only until a real one comes. */
  sample(redisNow: number, sentAt: number, receivedAt: number, provisional = false): number {
    const rtt = provisional ? Infinity : Math.max(0, receivedAt - sentAt);
    if (!this.#known || rtt <= this.#rtt || receivedAt - this.#at > 10_000) {
      // A provisional sample assumes the answer took no time: slots then look late, never early.
      this.#offset = redisNow - (provisional ? receivedAt : (sentAt + receivedAt) / 2);
      this.#rtt = rtt;
      this.#at = receivedAt;
      this.#known = true;
    }
    return this.#offset;
  }
}

export function argsFor(limit: SharedLimit, guardMs: number): { args: string[]; guard: string } {
  const perSecond = limit.perSecond;
  const mode = perSecond === undefined ? 'none' : limit.mode;
  const burst = limit.burst ?? Math.max(1, Math.ceil(perSecond ?? 1));
  return { args: [mode, String(perSecond ?? 0), String(burst), String(limit.marginMs), String(limit.perDay ?? 0), String(limit.dailyStopFraction), String(limit.dailyResetUtcHour)], guard: String(guardMs) };
}

export function changeArgs(change: SharedChange, learnedTtlMs: number, disabledTtlMs: number): string[] {
  switch (change?.type) {
    case 'ceiling':
      if (!(change.perSecond > 0) || !Number.isFinite(change.perSecond)) break;
      return ['ceiling', String(change.perSecond), String(learnedTtlMs)];
    case 'parked':
      if (!(change.forMs > 0) || !Number.isFinite(change.forMs)) break;
      return ['parked', String(Math.ceil(change.forMs)), '0'];
    case 'disabled':
    case 'enabled':
      if (typeof change.endpoint !== 'string') break;
      return [change.type, change.endpoint, String(disabledTtlMs)];
  }
  throw new TypeError(`RedisStore.report: expected a change ({ type: 'ceiling' | 'parked' | 'disabled' | 'enabled', … }), got ${JSON.stringify(change)}`);
}

/** The report script's arguments for one endpoint of a limit parked for `forMs`. */
export function keyParkArgs(endpoint: string, forMs: number): string[] {
  if (typeof endpoint !== 'string' || endpoint === '' || !(forMs > 0) || !Number.isFinite(forMs)) {
    throw new TypeError(`RedisStore.parkEndpoint: expected an endpoint name and a duration > 0 in ms, got ${JSON.stringify(endpoint)} and ${String(forMs)}`);
  }
  return ['key-parked', endpoint, String(Math.ceil(forMs))];
}

export interface Answer {
  readonly refusedMs: number;
  readonly version: string;
  /** Redis's clock when it answered, in ms. */
  readonly redisNow: number;
  /** Meaningful only when `version` differs from the one sent. */
  readonly state: SharedState;
  readonly slots: readonly number[];
}

/**
 * The longest refusal the admission script gives: a daily count until the reset, a parked
 * quota until the reset (a day at most), plus the hour the keys' expiry allows. A longer one
 * is a wrong answer: taken, it would keep the endpoint out for that long.
 */
export const MAX_REFUSAL_MS = 25 * 3_600_000;

/**
 * The admission script's reply, checked: a reply of another shape, or with values the
 * script cannot give (a slot beyond the horizon `horizonMs` it was sent, a refusal longer
 * than `MAX_REFUSAL_MS`), is a `STORE_REPLY` error, i.e. one failed admission (the pool
 * degrades) rather than a slot or a cooldown that would answer every later admission.
 */
export function parseAnswer(reply: unknown, horizonMs: number): Answer {
  const bad = (): never => {
    throw new RedisStoreError('STORE_REPLY', 'the admission script answered with something other than its reply array');
  };
  if (!Array.isArray(reply) || reply.length < 4 || !Array.isArray(reply[2])) return bad();
  const refusedMs = Number(reply[0]);
  const redisNow = Number(reply[3]);
  if (!Number.isFinite(refusedMs) || refusedMs < 0 || refusedMs > MAX_REFUSAL_MS || !Number.isFinite(redisNow)) return bad();
  const slots: number[] = [];
  for (let i = 4; i < reply.length; i++) {
    const w = Number(reply[i]);
    // The script rounds a slot's wait up: at most one past the horizon.
    if (!Number.isFinite(w) || w < 0 || w > horizonMs + 1) return bad();
    slots.push(w);
  }
  const pairs = reply[2] as unknown[];
  const version = String(reply[1]);
  let ceilingPerSecond: number | undefined;
  let parkedForMs = 0;
  const disabled = new Map<string, number>();
  const parkedEndpoints = new Map<string, number>();
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    const field = String(pairs[i]);
    const value = Number(pairs[i + 1]);
    if (!Number.isFinite(value)) continue;
    if (field === 'c') ceilingPerSecond = value > 0 ? value : undefined;
    else if (field === 'p') parkedForMs = value;
    else if (field.startsWith('d:')) disabled.set(field.slice(2), value);
    else if (field.startsWith('k:')) parkedEndpoints.set(field.slice(2), value);
  }
  return { refusedMs, version, state: { ceilingPerSecond, parkedForMs, disabled, parkedEndpoints }, slots, redisNow };
}
