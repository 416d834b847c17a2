/**
 * A seeded pseudo-random source (mulberry32) and the few distributions the simulator
 * draws from. Every random choice in a simulation comes from one of these, so a run is a
 * pure function of its seed.
 */

/** A generator of uniform numbers in [0, 1); `fork(tag)` derives an independent stream. */
export class Rng {
  #state;

  constructor(seed) {
    this.#state = seed >>> 0;
    this.next = this.next.bind(this);
  }

  next() {
    let t = (this.#state = (this.#state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** A new stream whose seed mixes this one's next draw with `tag`. */
  fork(tag) {
    let h = Math.floor(this.next() * 4294967296) ^ 0x9e3779b9;
    for (let i = 0; i < tag.length; i++) h = Math.imul(h ^ tag.charCodeAt(i), 0x01000193);
    return new Rng(h);
  }

  /** Uniform in [lo, hi). */
  uniform(lo, hi) {
    return lo + (hi - lo) * this.next();
  }

  /** Exponential with the given mean (Poisson inter-arrival times). */
  exponential(mean) {
    return -mean * Math.log(1 - this.next());
  }

  /** Log-normal with the given median and shape `sigma` (latencies). */
  lognormal(medianMs, sigma) {
    const u = 1 - this.next();
    const v = this.next();
    const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    return medianMs * Math.exp(sigma * z);
  }
}
