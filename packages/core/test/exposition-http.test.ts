import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import {
  createHttpServer,
  EXPOSITION_CONTENT_TYPE,
  ExpositionWriter,
  renderLabels,
  sendExposition,
  serveExposition,
  type ExpositionSource,
  type HttpServer,
} from '../src/index.js';
import { captureLogger } from './support/capture-logger.js';
import { eventually } from './support/eventually.js';
import { fetchRaw } from './support/http-client.js';

function buildBody(): string {
  const writer = new ExpositionWriter().family('arcus_up', 'gauge', 'Whether the node answered.');
  for (let i = 0; i < 500; i++) writer.sample(renderLabels({ node: `10.0.0.${i % 250}:${11211 + i}` }), i % 2);
  return writer.toString();
}

describe('sendExposition', () => {
  const body = buildBody();
  let server: HttpServer;
  let url: string;

  before(async () => {
    server = await createHttpServer({ name: 'x', logger: captureLogger().logger });
    server.app.get('/metrics', async (request, reply) => {
      await sendExposition(request, reply, body);
    });
    url = (await server.listen('127.0.0.1:0')).url;
  });
  after(() => server.close());

  it('gzips when the scraper accepts gzip', async () => {
    const answer = await fetchRaw(`${url}/metrics`, { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['content-encoding'], 'gzip');
    assert.equal(answer.headers['content-type'], EXPOSITION_CONTENT_TYPE);
    assert.ok(answer.body.length < body.length / 3, `compressed to ${answer.body.length} of ${body.length} bytes`);
    assert.equal(gunzipSync(answer.body).toString('utf8'), body);
  });

  const plain: Array<[string, Record<string, string>]> = [
    ['no Accept-Encoding', {}],
    ['gzip refused with q=0', { 'accept-encoding': 'gzip;q=0, identity' }],
    ['only other codings', { 'accept-encoding': 'br' }],
  ];
  for (const [what, headers] of plain) {
    it(`sends plain text for ${what}`, async () => {
      const answer = await fetchRaw(`${url}/metrics`, { headers });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers['content-encoding'], undefined);
      assert.equal(answer.headers['content-type'], EXPOSITION_CONTENT_TYPE);
      assert.equal(answer.text, body);
    });
  }
});

describe("serveExposition: an exporter's scrape paths", () => {
  const body = buildBody();
  let server: HttpServer;
  let url: string;
  const captured = captureLogger();
  const asked: Array<{ gzip: boolean; timeout: string | undefined }> = [];

  before(async () => {
    server = await createHttpServer({ name: 'x', logger: captured.logger });
    serveExposition(
      server,
      new Map<string, ExpositionSource>([
        [
          '/metrics',
          async (timeout, gzip) => {
            asked.push({ gzip, timeout: timeout as string | undefined });
            return body;
          },
        ],
        [
          '/broken',
          async () => {
            throw new Error('the collection broke');
          },
        ],
      ]),
    );
    url = (await server.listen('127.0.0.1:0')).url;
  });
  after(() => server.close());

  it('answers GET /metrics as sendExposition does, telling the source the scrape timeout and whether gzip is accepted', async () => {
    const zipped = await fetchRaw(`${url}/metrics`, {
      headers: { 'accept-encoding': 'gzip', 'x-prometheus-scrape-timeout-seconds': '5' },
    });
    assert.equal(zipped.status, 200);
    assert.equal(zipped.headers['content-encoding'], 'gzip');
    assert.equal(zipped.headers['content-type'], EXPOSITION_CONTENT_TYPE);
    assert.equal(zipped.headers['vary'], 'Accept-Encoding');
    assert.equal(gunzipSync(zipped.body).toString(), body);
    const plain = await fetchRaw(`${url}/metrics`, { headers: { 'accept-encoding': 'identity' } });
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.equal(plain.text, body);
    assert.deepEqual(asked.slice(-2), [
      { gzip: true, timeout: '5' },
      { gzip: false, timeout: undefined },
    ]);
  });

  it('a failed collection: the JSON error, logged; other methods are not served', async () => {
    const broken = await fetchRaw(`${url}/broken`);
    assert.equal(broken.status, 500);
    assert.match(broken.headers['content-type'] ?? '', /^application\/json/);
    assert.match((JSON.parse(broken.text) as { error: string }).error, /the collection broke/);
    assert.ok(captured.records.some((r) => r['msg'] === 'request failed' && r['url'] === '/broken'));
    assert.equal((await fetchRaw(`${url}/metrics`, { method: 'POST' })).status, 404);
    assert.equal((await fetchRaw(`${url}/-/healthy`)).status, 200);
  });
});

describe('serveExposition: connections', () => {
  const body = buildBody();
  let server: HttpServer;
  let port: number;
  let asked = 0;
  /** An answer takes a while, as a collection does (fake behaviour)... */
  const aWhile = (): Promise<unknown> => new Promise((resolve) => setTimeout(resolve, 50));
  /** ...or waits for what a test holds it on. */
  let answerAfter = aWhile;

  before(async () => {
    server = await createHttpServer({ name: 'x', logger: captureLogger().logger });
    serveExposition(
      server,
      new Map<string, ExpositionSource>([
        [
          '/metrics',
          async () => {
            asked++;
            await answerAfter();
            return body;
          },
        ],
      ]),
    );
    port = Number(new URL((await server.listen('127.0.0.1:0')).url).port);
  });
  after(() => server.close());

  /** A raw connection and everything it has received; `ended` once the server ended its side. */
  async function open(): Promise<{ socket: Socket; received: () => string; ended: Promise<void> }> {
    const socket = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    socket.setNoDelay(true);
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    const ended = new Promise<void>((resolve) => socket.once('end', () => resolve()));
    await new Promise((resolve) => socket.once('connect', resolve));
    return { socket, received: () => text, ended };
  }

  async function connections(): Promise<number> {
    return new Promise((resolve, reject) =>
      server.app.server.getConnections((err, count) => (err ? reject(err) : resolve(count))),
    );
  }

  const until = (check: () => boolean | Promise<boolean>, what: string): Promise<void> =>
    eventually(async () => assert.ok(await check(), what), { intervalMs: 20 });

  it('a request that arrives a byte at a time is answered whole, and the next on the connection too', async () => {
    const { socket, received } = await open();
    const before = asked;
    const request = 'GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n';
    for (const byte of request) {
      socket.write(byte);
      await new Promise((resolve) => setImmediate(resolve));
    }
    socket.write(request);
    await until(() => received().split(body).length === 3, 'two answers');
    assert.equal(asked - before, 2);
    assert.equal(received().split('HTTP/1.1 200 OK\r\n').length, 3);
    socket.destroy();
  });

  it('a client that half-closes before its answer is taken as gone, as node:http takes it: the connection ends, unanswered, and is not kept', async () => {
    await until(async () => (await connections()) === 0, 'no connection before');
    const before = asked;
    // The answer waits until the client has seen its connection end: its FIN came first.
    let answer!: () => void;
    const held = new Promise<void>((resolve) => (answer = resolve));
    answerAfter = () => held;
    try {
      const { socket, received, ended } = await open();
      socket.end('GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n');
      await ended;
      assert.equal(received(), '');
      assert.equal(asked, before + 1, 'the scrape had begun');
      answer();
      await until(async () => (await connections()) === 0, 'the connection closed');
      socket.destroy();
    } finally {
      answer();
      answerAfter = aWhile;
    }
  });

  it('a request without a Host header is refused with 400, as node:http refuses it, and the connection closed', async () => {
    const before = asked;
    const { socket, received, ended } = await open();
    socket.write('GET /metrics HTTP/1.1\r\nAccept-Encoding: identity\r\n\r\n');
    await ended;
    assert.match(received(), /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.equal(asked, before, 'not collected');
    socket.destroy();
  });

  it('a client that keeps its side open after a Connection: close answer is dropped', async () => {
    await until(async () => (await connections()) === 0, 'no connection before');
    const { socket, received, ended } = await open();
    socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAccept-Encoding: identity\r\n\r\n');
    await ended;
    assert.ok(received().endsWith(body), 'the whole answer before the end');
    await until(async () => (await connections()) === 0, 'the half-open connection closed');
    socket.destroy();
  });
});
