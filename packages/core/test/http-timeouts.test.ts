import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { after, describe, it } from 'node:test';
import { createHttpServer, HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS } from '../src/http.js';
import { captureLogger } from './support/capture-logger.js';

/** Opens a connection and sends `text` a byte at a time every `everyMs`; resolves with when it was closed and what came back. */
async function trickle(
  port: number,
  text: string,
  everyMs: number,
): Promise<{ closedAfterMs: number; received: string }> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  const started = performance.now();
  let received = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (received += chunk));
  socket.on('error', () => undefined);
  let at = 0;
  const timer = setInterval(() => {
    if (at < text.length && !socket.destroyed) socket.write(text[at++]!);
  }, everyMs);
  await once(socket, 'close');
  clearInterval(timer);
  return { closedAfterMs: performance.now() - started, received };
}

describe('every daemon times slow clients out alike', () => {
  it('defaults: 10 s for the headers, 60 s for the whole request', () => {
    assert.equal(HEADERS_TIMEOUT_MS, 10_000);
    assert.equal(REQUEST_TIMEOUT_MS, 60_000);
  });

  it('a client trickling its headers is cut at the headers timeout, not tens of seconds later', async () => {
    const { logger } = captureLogger('info');
    const server = await createHttpServer({ name: 'test', logger, headersTimeoutMs: 1000, requestTimeoutMs: 3000 });
    after(() => server.close());
    const { port } = await server.listen('127.0.0.1:0');
    const header = `GET /-/healthy HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(200)}\r\n\r\n`;
    // A byte every 50 ms: the headers would take 13 s.
    const { closedAfterMs, received } = await trickle(port, header, 50);
    assert.match(received, /^HTTP\/1\.1 408 /);
    assert.deepEqual(JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4)), {
      status: 'error',
      code: 'CACHEMON_REQUEST_TIMEOUT',
      error: 'the request was not received in time: its headers within 1 s, the whole of it within 3 s',
    });
    // Checked every 100 ms (a tenth of the timeout); a busy machine may add some.
    assert.ok(closedAfterMs >= 950 && closedAfterMs < 2500, `cut after ${closedAfterMs.toFixed(0)} ms`);
  });
});
