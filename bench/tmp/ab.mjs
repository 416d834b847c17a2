const s = new AbortController().signal;
let n = 0, t = process.hrtime.bigint();
for (let i = 0; i < 1e5; i++) if (s.aborted) n++;
console.log('aborted getter ns', Number(process.hrtime.bigint() - t) / 1e5);
const o = { retryCount: 0, signal: s };
t = process.hrtime.bigint();
for (let i = 0; i < 1e5; i++) { const x = { ...{}, ...o }; if (x.signal) n++; }
console.log('spread ns', Number(process.hrtime.bigint() - t) / 1e5);
