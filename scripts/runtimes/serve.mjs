/**
 * A tiny static server on 127.0.0.1 for the Chromium smoke: it serves the built package
 * (`/dist/`) and the smoke's own files (`/scripts/runtimes/`, without its node_modules)
 * from the repository root, and nothing else but what the caller's `handle` answers. Modules need a real origin (not file://)
 * for `import` and module Workers.
 */
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ALLOWED = ['/dist/', '/scripts/runtimes/page/', '/scripts/runtimes/smoke-core.mjs'];
const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

/**
 * Starts the server on a free port; resolves to its origin and a `close()`. `handle(req, res)`,
 * when given, is asked first and answers the requests it returns `true` for.
 */
export async function serve(handle) {
  const server = createServer(async (req, res) => {
    if (handle?.(req, res) === true) return;
    const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
    const allowed = req.method === 'GET' && ALLOWED.some((p) => path === p || (p.endsWith('/') && path.startsWith(p))) && !path.includes(`${sep}node_modules`);
    const type = TYPES[extname(path)];
    if (!allowed || type === undefined) {
      res.writeHead(404).end();
      return;
    }
    try {
      const body = await readFile(join(ROOT, path));
      res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
