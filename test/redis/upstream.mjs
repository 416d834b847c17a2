/**
 * The fleet test's upstream: an HTTP server on 127.0.0.1 that logs when each request for a
 * key arrives, on its own clock, and answers after a few ms. Driven over IPC: it sends
 * { port } once listening; on 'log' it sends { log: [[key, t], …] } back.
 */
import { createServer } from 'node:http';

const log = [];
const server = createServer((req, res) => {
  const key = req.url.slice(1);
  log.push([key, Date.now()]);
  setTimeout(() => res.end('ok'), 5);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('message', (m) => {
  if (m === 'log') process.send({ log });
  if (m === 'stop') server.close(() => process.exit(0));
});
process.on('disconnect', () => process.exit(0));
