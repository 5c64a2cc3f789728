import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createHttpServer } from '../src/http.js';
import type { HttpServer } from '../src/http.js';
import { captureLogger } from './support/capture-logger.js';

/** Sends `text` as it is on a connection of its own; resolves with the status and the parsed body. */
async function raw(port: number, text: string): Promise<{ status: number; body: unknown }> {
  const socket = connect(port, '127.0.0.1');
  let received = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => (received += chunk));
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  socket.write(text);
  await once(socket, 'close');
  return {
    status: Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1]),
    body: JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4)),
  };
}

const REQUESTS = {
  'no route': 'GET /nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
  'a URL the router cannot decode': 'GET /-/%ff HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
  'not HTTP': 'GARBAGE\r\n\r\n',
  'a bad Content-Length': 'POST /-/reload HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
  'headers past the limit': `GET /-/healthy HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
};

describe("every error the server answers outside its routes' handlers is in the daemon's shape", () => {
  let coded: HttpServer;
  let shaped: HttpServer;
  let codedPort: number;
  let shapedPort: number;

  before(async () => {
    const { logger } = captureLogger('info');
    coded = await createHttpServer({ name: 'test', logger });
    shaped = await createHttpServer({
      name: 'test',
      logger,
      errorBody: (status, code, message) => JSON.stringify({ shape: 'own', status, code, message }),
      headersTooLargeAdvice: 'send less',
    });
    codedPort = (await coded.listen('127.0.0.1:0')).port;
    shapedPort = (await shaped.listen('127.0.0.1:0')).port;
  });

  after(async () => {
    await coded?.close();
    await shaped?.close();
  });

  it('by default: status, code and error', async () => {
    const answers: Record<string, { status: number; body: unknown }> = {};
    for (const [what, text] of Object.entries(REQUESTS)) answers[what] = await raw(codedPort, text);
    assert.deepEqual(answers, {
      'no route': {
        status: 404,
        body: { status: 'error', code: 'CACHEMON_NOT_FOUND', error: 'no route for GET /nothing' },
      },
      'a URL the router cannot decode': {
        status: 400,
        body: {
          status: 'error',
          code: 'CACHEMON_BAD_REQUEST',
          error: "the URL is not valid: '/-/%ff' is not a valid url component",
        },
      },
      'not HTTP': {
        status: 400,
        body: {
          status: 'error',
          code: 'CACHEMON_BAD_REQUEST',
          error: 'the request is not valid HTTP: Invalid method encountered',
        },
      },
      'a bad Content-Length': {
        status: 400,
        body: {
          status: 'error',
          code: 'CACHEMON_BAD_REQUEST',
          error: 'the request is not valid HTTP: Invalid character in Content-Length',
        },
      },
      'headers past the limit': {
        status: 431,
        body: {
          status: 'error',
          code: 'CACHEMON_HEADERS_TOO_LARGE',
          error: "the request's headers are larger than 16384 bytes",
        },
      },
    });
  });

  it("with errorBody: the daemon's own, for each of them", async () => {
    for (const [what, text] of Object.entries(REQUESTS)) {
      const { status, body } = await raw(shapedPort, text);
      assert.equal((body as { shape: string }).shape, 'own', what);
      assert.equal((body as { status: number }).status, status, what);
    }
    const big = await raw(shapedPort, REQUESTS['headers past the limit']);
    assert.equal(
      (big.body as { message: string }).message,
      "the request's headers are larger than 16384 bytes; send less",
    );
  });
});
