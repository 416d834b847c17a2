// The same checks on the page and in a module Worker; the verdict goes into the DOM
// (#result: data-done, data-ok and the report's text), where the runner reads it.
import { formatSmoke, runSmoke } from '../smoke-core.mjs';

const runtime = navigator.userAgent.match(/(?:Headless)?Chrome\/[\d.]+/)?.[0] ?? navigator.userAgent;
const onPage = await runSmoke();
document.getElementById('page').textContent = formatSmoke(`${runtime} (page)`, onPage);

const inWorker = await new Promise((resolve) => {
  const worker = new Worker(new URL('./worker.mjs', import.meta.url), { type: 'module' });
  worker.onmessage = (e) => resolve(e.data);
  worker.onerror = (e) => {
    e.preventDefault();
    resolve({ ok: false, results: [{ name: 'worker', ok: false, ms: 0, error: e.message || 'the Worker or one of its imports failed to load' }] });
  };
});
document.getElementById('worker').textContent = formatSmoke(`${runtime} (module Worker)`, inWorker);

const result = document.getElementById('result');
result.dataset.ok = String(onPage.ok && inWorker.ok);
result.textContent = `${document.getElementById('page').textContent}\n${document.getElementById('worker').textContent}`;
result.dataset.done = 'true';
