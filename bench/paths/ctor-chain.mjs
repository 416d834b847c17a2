/**
 * Why the call's classes assign their fields in constructors (issue 16, ninth session):
 * the same six-class chain and fields as a call (TaggedCall, Call, Waiting, CallCore, Attempt,
 * SignalContext), built with class-field declarations (public or `#private`), with the fields
 * assigned in the constructors, with every field at the top, and two classes deep.
 *   node bench/paths/ctor-chain.mjs   (prints the median ns per `new` of each variant)
 */
const mk = {};
{ // public class fields, same chain
  class A0 { s_ = undefined; }
  class A1 extends A0 { prevTimeout = undefined; n_ = undefined; }
  class A2 extends A1 { flags = 0; ticket = undefined; lazy = undefined; beganAt = undefined; constructor(plan) { super(); this.plan = plan; } }
  class A3 extends A2 {}
  class A4 extends A3 { op; resolve; constructor(s, op, o, given) { const plan = given ?? s.plan; super(plan); this.op = op; } }
  class A5 extends A4 { tag; id; constructor(s, op, plan, tag) { const id = ++s.callSeq; super(s, op, undefined, plan); this.tag = tag; this.id = id; } }
  mk.publicFields = A5;
}
{ // private fields, chain (as the code)
  class A0 { #s = undefined; }
  class A1 extends A0 { prevTimeout = undefined; #n = undefined; }
  class A2 extends A1 { #flags = 0; #ticket = undefined; lazy = undefined; beganAt = undefined; constructor(plan) { super(); this.plan = plan; } }
  class A3 extends A2 {}
  class A4 extends A3 { #op; #resolve; constructor(s, op, o, given) { const plan = given ?? s.plan; super(plan); this.#op = op; } }
  class A5 extends A4 { tag; #id; constructor(s, op, plan, tag) { const id = ++s.callSeq; super(s, op, undefined, plan); this.tag = tag; this.#id = id; } }
  mk.privateFields = A5;
}
{ // assignments in constructors, chain, no field syntax
  class A0 { constructor() { this.s_ = undefined; } }
  class A1 extends A0 { constructor() { super(); this.prevTimeout = undefined; this.n_ = undefined; } }
  class A2 extends A1 { constructor(plan) { super(); this.flags = 0; this.ticket = undefined; this.lazy = undefined; this.beganAt = undefined; this.plan = plan; } }
  class A3 extends A2 {}
  class A4 extends A3 { constructor(s, op, o, given) { const plan = given ?? s.plan; super(plan); this.op = op; this.resolve = undefined; } }
  class A5 extends A4 { constructor(s, op, plan, tag) { const id = ++s.callSeq; super(s, op, undefined, plan); this.tag = tag; this.id = id; } }
  mk.assignChain = A5;
}
{ // fields only at the top; subclasses add none (field syntax), depth 6
  class A0 { s_ = undefined; prevTimeout = undefined; n_ = undefined; flags = 0; ticket = undefined; lazy = undefined; beganAt = undefined; plan = undefined; op = undefined; resolve = undefined; tag = undefined; id = 0; }
  class A1 extends A0 {}
  class A2 extends A1 { constructor(plan) { super(); this.plan = plan; } }
  class A3 extends A2 {}
  class A4 extends A3 { constructor(s, op, o, given) { const plan = given ?? s.plan; super(plan); this.op = op; } }
  class A5 extends A4 { constructor(s, op, plan, tag) { const id = ++s.callSeq; super(s, op, undefined, plan); this.tag = tag; this.id = id; } }
  mk.fieldsAtTop = A5;
}
{ // depth 2 with private fields
  class A0 { #s = undefined; prevTimeout = undefined; #n = undefined; #flags = 0; #ticket = undefined; lazy = undefined; beganAt = undefined; plan; #op; #resolve; constructor(s, op, given) { const plan = given ?? s.plan; this.plan = plan; this.#op = op; } }
  class A5 extends A0 { tag; #id; constructor(s, op, plan, tag) { const id = ++s.callSeq; super(s, op, plan); this.tag = tag; this.#id = id; } }
  mk.depth2private = A5;
}
const s = { callSeq: 0, plan: {} };
const plan = { hedge: undefined };
const op = () => 1;
let keep;
const runners = Object.fromEntries(Object.entries(mk).map(([k, C]) => [k, new Function('C', 's', 'op', 'plan', 'n', 'let keep; for (let i = 0; i < n; i++) keep = new C(s, op, plan, i); return keep;').bind(null, C, s, op, plan)]));
const N = 2e6;
for (let r = 0; r < 3; r++) for (const f of Object.values(runners)) f(N);
const res = Object.fromEntries(Object.keys(mk).map((k) => [k, []]));
for (let r = 0; r < 7; r++) for (const [k, f] of Object.entries(runners)) { const t = process.hrtime.bigint(); f(N); res[k].push(Number(process.hrtime.bigint() - t) / N); }
const med = (a) => a.sort((x, y) => x - y)[a.length >> 1];
console.log(process.version, Object.entries(res).map(([k, v]) => `${k} ${med(v).toFixed(1)}`).join(' | '));
