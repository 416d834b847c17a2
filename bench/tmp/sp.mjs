const base = { methods: undefined, retryCount: 3, retryDelay: 150, uid: 'x' };
function f(o) { const { retryCount = 3, signal } = { ...base, ...o }; return signal; }
function bench(name, mk) {
  for (let i = 0; i < 2e4; i++) f(mk());
  const t = process.hrtime.bigint();
  for (let i = 0; i < 1e5; i++) f(mk());
  console.log(name, Number(process.hrtime.bigint() - t) / 1e5);
}
const s = new AbortController().signal;
const o = {};
bench('no signal', () => ({ retryCount: 0 }));
bench('obj', () => ({ retryCount: 0, signal: o }));
bench('abortsignal', () => ({ retryCount: 0, signal: s }));
bench('obj', () => ({ retryCount: 0, signal: o }));
