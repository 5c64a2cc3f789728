#!/usr/bin/env node
// The floor of the query proxy benchmark: the least a Node HTTP hop can cost. A bare node:http
// pass-through that does what the proxy's single path does on the wire and nothing else: the
// request forwarded to one store with the group's query parameter added to the URL, the answer's
// status, content-type, content-encoding and content-length passed back and its body piped. No
// framework, no form parsing, no PromQL, no metrics, no timeouts.
//
//   node bench/query-proxy/floor.mjs <store host:port> [query params, default nocache=1] [--buffer]
//
// --buffer: the answer's body collected and written in one piece with its Content-Length instead
// of piped chunk by chunk (the store sends a gzipped answer in many small chunks, each one a
// writev to the client when piped).
//
// Prints its port on stdout once listening; SIGTERM closes it.
import { Agent, createServer, request } from 'node:http';

const BUFFER = process.argv.includes('--buffer');
const [target, extra = 'nocache=1'] = process.argv.slice(2).filter((a) => a !== '--buffer');
if (!target) {
  process.stderr.write('usage: floor.mjs <store host:port> [query params]\n');
  process.exit(2);
}
const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
// As many connections to the store as the proxy allows itself (64 per store).
const agent = new Agent({ keepAlive: true, maxSockets: 64 });
const PASSED = ['content-type', 'content-encoding', 'content-length'];

const server = createServer((req, res) => {
  const at = req.url.indexOf('?');
  const path = at === -1 ? `${req.url}?${extra}` : `${req.url}&${extra}`;
  const headers = {};
  for (const name of ['content-type', 'content-length', 'accept-encoding']) if (req.headers[name] !== undefined) headers[name] = req.headers[name];
  const upstream = request({ host, port, method: req.method, path, headers, agent }, (answer) => {
    const passed = {};
    for (const name of PASSED) if (answer.headers[name] !== undefined) passed[name] = answer.headers[name];
    if (!BUFFER) {
      res.writeHead(answer.statusCode, passed);
      answer.pipe(res);
      return;
    }
    const chunks = [];
    answer.on('data', (chunk) => chunks.push(chunk));
    answer.on('end', () => {
      const body = Buffer.concat(chunks);
      res.writeHead(answer.statusCode, { ...passed, 'content-length': body.length });
      res.end(body);
    });
  });
  upstream.on('error', (err) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
    res.end(`floor: ${err.message}\n`);
  });
  req.pipe(upstream);
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
  agent.destroy();
});
