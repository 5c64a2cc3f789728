#!/usr/bin/env node
// The floor of the query proxy benchmark: the least a Node HTTP hop can cost. A bare node:http
// pass-through that does what the proxy's single path does on the wire and nothing else: the
// request forwarded to one store with the group's query parameter added to the URL, the answer's
// status, content-type, content-encoding and content-length passed back, and its body relayed as
// the proxy relays it: held until it ends (then written once, with its Content-Length) unless it
// grows past 64 KB (then streamed, the chunks of one read written together). No framework, no form
// parsing, no PromQL, no metrics, no timeouts, no handling of a store that breaks off.
//
//   node bench/query-proxy/floor.mjs <store host:port> [query params, default nocache=1] [--pipe]
//
// --pipe: the answer's body piped chunk by chunk, as the proxy did before it held answers back
// (VictoriaMetrics sends even a small answer chunked in two reads: three writes to the client).
//
// Prints its port on stdout once listening; SIGTERM closes it.
import { Agent, createServer, request } from 'node:http';

const PIPE = process.argv.includes('--pipe');
const HOLD_BYTES = 64 * 1024;
const [target, extra = 'nocache=1'] = process.argv.slice(2).filter((a) => a !== '--pipe');
if (!target) {
  process.stderr.write('usage: floor.mjs <store host:port> [query params] [--pipe]\n');
  process.exit(2);
}
const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
// As many connections to the store as the proxy allows itself (64 per store).
const agent = new Agent({ keepAlive: true, maxSockets: 64 });
const PASSED = ['content-type', 'content-encoding', 'content-length'];

/** The proxy's relay, without its error handling. */
function relay(answer, res, status, headers) {
  let held = [];
  let heldBytes = 0;
  let corked = false;
  const uncork = () => {
    corked = false;
    res.uncork();
  };
  const write = (chunk) => {
    if (!corked) {
      corked = true;
      res.cork();
      setImmediate(uncork);
    }
    if (!res.write(chunk)) {
      answer.pause();
      res.once('drain', () => answer.resume());
    }
  };
  answer.on('data', (chunk) => {
    if (held === undefined) return write(chunk);
    held.push(chunk);
    heldBytes += chunk.length;
    if (heldBytes <= HOLD_BYTES) return;
    res.writeHead(status, headers);
    const chunks = held;
    held = undefined;
    for (const piece of chunks) write(piece);
  });
  answer.on('end', () => {
    if (held === undefined) return res.end();
    const whole = Buffer.concat(held, heldBytes);
    res.writeHead(status, { ...headers, 'content-length': whole.length });
    res.end(whole);
  });
}

const server = createServer((req, res) => {
  const at = req.url.indexOf('?');
  const path = at === -1 ? `${req.url}?${extra}` : `${req.url}&${extra}`;
  const headers = {};
  for (const name of ['content-type', 'content-length', 'accept-encoding'])
    if (req.headers[name] !== undefined) headers[name] = req.headers[name];
  const upstream = request({ host, port, method: req.method, path, headers, agent }, (answer) => {
    const passed = {};
    for (const name of PASSED) if (answer.headers[name] !== undefined) passed[name] = answer.headers[name];
    if (PIPE) {
      res.writeHead(answer.statusCode, passed);
      answer.pipe(res);
      return;
    }
    relay(answer, res, answer.statusCode, passed);
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
