/**
 * An HTTP server on 127.0.0.1 answering every request with a short body (keep-alive), for the
 * fetch benchmarks. `loopback()` starts it in this process; `loopback({ child: true })` in a
 * child process (the same node, started without this process's flags), so that a profile or a
 * CPU clock of this process holds the client's work alone. Resolves to `{ base, close }`.
 */
import http from 'node:http';
import { spawn } from 'node:child_process';

const source = `
import http from 'node:http';
const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
  res.end('ok');
});
server.keepAliveTimeout = 600_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
`;

export async function loopback({ child = false } = {}) {
  if (child) {
    const proc = spawn(process.execPath, ['--input-type=module', '-e', source], { stdio: ['pipe', 'pipe', 'inherit'] });
    const port = await new Promise((resolve, reject) => {
      proc.stdout.once('data', (d) => resolve(Number(String(d).trim())));
      proc.once('error', reject);
    });
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    return { base: `http://127.0.0.1:${port}`, close: () => (proc.stdin.end(), exited) };
  }
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
    res.end('ok');
  });
  server.keepAliveTimeout = 600_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return { base: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => (server.closeAllConnections?.(), server.close(resolve))) };
}
