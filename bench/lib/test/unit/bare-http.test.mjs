// The benchmarks' bare HTTP client: what it reads from a real node:http server, and its reader fed
// every way a reply can be cut.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createServer } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { gzipSync, gunzipSync } from 'node:zlib';
import { AnswerReader, BareHttpClient, NodeHttpClient } from '../../bare-http.mjs';

async function listen(server) {
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server.address().port;
}

for (const Client of [BareHttpClient, NodeHttpClient])
  test(`${Client.name}: GET over one kept connection: Content-Length, chunked and gzipped bodies, the request headers sent`, async (t) => {
    const big = 'x'.repeat(200_000) + 'end';
    let connections = 0;
    const seen = [];
    const server = createServer((req, res) => {
      seen.push({
        url: req.url,
        timeout: req.headers['x-prometheus-scrape-timeout-seconds'],
        encoding: req.headers['accept-encoding'],
      });
      if (req.url === '/fixed') {
        res.setHeader('Content-Length', 5);
        res.end('hello');
      } else if (req.url === '/chunked') {
        // No Content-Length: node:http sends it chunked, one chunk a write.
        res.write('first ');
        res.write(big);
        setImmediate(() => res.end(' last'));
      } else {
        res.setHeader('Content-Encoding', 'gzip');
        res.end(gzipSync('zipped body'));
      }
    });
    server.on('connection', () => connections++);
    const port = await listen(server);
    t.after(() => server.close());
    const client = new Client('127.0.0.1', port);
    t.after(() => client.close());

    const fixed = await client.get('/fixed', { 'X-Prometheus-Scrape-Timeout-Seconds': '5' });
    assert.equal(fixed.status, 200);
    assert.equal(fixed.body.toString(), 'hello');
    assert.ok(fixed.ms > 0);

    const chunked = await client.get('/chunked');
    assert.equal(chunked.headers['transfer-encoding'], 'chunked');
    assert.equal(chunked.body.toString(), `first ${big} last`);

    const zipped = await client.get('/gz', { 'Accept-Encoding': 'gzip' });
    assert.equal(zipped.headers['content-encoding'], 'gzip');
    assert.equal(gunzipSync(zipped.body).toString(), 'zipped body');

    assert.equal(connections, 1, 'all three requests on one connection');
    assert.deepEqual(seen, [
      { url: '/fixed', timeout: '5', encoding: undefined },
      { url: '/chunked', timeout: undefined, encoding: undefined },
      { url: '/gz', timeout: undefined, encoding: 'gzip' },
    ]);
  });

test('the reader assembles the same answer however the bytes are cut', () => {
  const body = 'a'.repeat(70) + '\r\n' + 'b'.repeat(33);
  const chunked = Buffer.from(
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n' +
      `46\r\n${body.slice(0, 70)}\r\n` +
      `${(body.length - 70).toString(16)};ext=1\r\n${body.slice(70)}\r\n` +
      '0\r\n\r\n',
  );
  const fixed = Buffer.from(`HTTP/1.1 404 Not Found\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  for (const [whole, status] of [
    [chunked, 200],
    [fixed, 404],
  ]) {
    for (const size of [1, 2, 3, 7, 64, whole.length]) {
      const reader = new AnswerReader();
      let done = false;
      for (let i = 0; i < whole.length; i += size) {
        assert.equal(done, false, `complete before the last byte (pieces of ${size})`);
        done = reader.add(whole.subarray(i, i + size));
      }
      assert.equal(done, true, `complete after the last byte (pieces of ${size})`);
      assert.equal(reader.status, status);
      assert.equal(reader.body().toString(), body, `pieces of ${size}`);
    }
  }
});

test('a reply that is no HTTP, or a connection closed mid-answer, rejects; the next request reconnects', async (t) => {
  let mode = 'garbage';
  const server = createTcpServer((socket) => {
    socket.once('data', () => {
      if (mode === 'garbage') socket.end('SSH-2.0-OpenSSH\r\n\r\n');
      else if (mode === 'cut') socket.end('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc');
      else socket.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok');
    });
  });
  const port = await listen(server);
  t.after(() => server.close());
  const client = new BareHttpClient('127.0.0.1', port);
  t.after(() => client.close());
  await assert.rejects(client.get('/'), /not an HTTP answer/);
  mode = 'cut';
  await assert.rejects(client.get('/'), /closed before the answer ended/);
  mode = 'ok';
  assert.equal((await client.get('/')).body.toString(), 'ok');
});

test('no answer within the timeout rejects', async (t) => {
  const server = createTcpServer(() => undefined);
  const port = await listen(server);
  t.after(() => server.close());
  const client = new BareHttpClient('127.0.0.1', port);
  t.after(() => client.close());
  await assert.rejects(client.get('/', {}, { timeoutMs: 100 }), /no complete answer within 100 ms/);
});
