/**
 * The single-group path on the wire: what a store receives, what the client gets back on its
 * connection, and how connections end. Stores here are node:http servers that record what they
 * receive (what the proxy must send them is HTTP, not store behaviour); proxy.test.ts runs the same
 * paths against real VictoriaMetrics stores.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, createServer as createHttpServer, request } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { Writable } from 'node:stream';
import { createLoggerOn } from '@cachemon/core';
import { eventually, parseExposition, valueOf } from '@cachemon/testkit';
import { parseQueryProxyConfig } from '../../src/config.js';
import type { QueryProxyConfig } from '../../src/config.js';
import { startQueryProxy } from '../../src/server.js';
import type { QueryProxy } from '../../src/server.js';

interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/**
 * A store that records each request and answers by the query: `big_*` a long answer, `fail_*` a
 * 500, `slow_*` after 500 ms.
 */
async function recordingStore(name: string): Promise<{ server: Server; url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createHttpServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const query = new URLSearchParams(body || (req.url ?? '').split('?')[1]).get('query') ?? '';
      if (query.startsWith('fail_')) {
        res
          .writeHead(500, { 'content-type': 'application/json' })
          .end('{"status":"error","errorType":"internal","error":"the store is out of order"}');
        return;
      }
      const result = query.startsWith('big_')
        ? Array.from({ length: 3000 }, (_, i) => ({
            metric: { __name__: 'big', i: String(i), store: name },
            value: [1, String(i)],
          }))
        : [{ metric: { store: name }, value: [1, '1'] }];
      const text = JSON.stringify({ status: 'success', data: { resultType: 'vector', result } });
      // `big_length_*` says its length; every other answer is chunked, as VictoriaMetrics sends them.
      if (query.startsWith('big_length_'))
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      else res.writeHead(200, { 'content-type': 'application/json' });
      if (text.length > 1000) {
        res.write(text.slice(0, 1000));
        setTimeout(() => res.end(text.slice(1000)), 5);
      } else if (query.startsWith('slow_')) setTimeout(() => res.end(text), 500);
      else res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** The request went out on a connection that had carried one before. */
  readonly reused: boolean;
}

const form = (query: string) => `query=${encodeURIComponent(query)}&time=1700000000`;
const storesOf = (answer: Answer): string[] =>
  (JSON.parse(answer.body) as { data: { result: Array<{ metric: { store: string } }> } }).data.result.map(
    (r) => r.metric.store,
  );

/** Sends one request through node:http's client; `chunked`: the body without a length. */
function send(
  port: number,
  agent: Agent,
  options: { method?: string; path?: string; headers?: Record<string, string>; body?: string; chunked?: boolean },
): Promise<Answer> {
  const { method = 'GET', path = '/', headers = {}, body, chunked = false } = options;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent,
        headers:
          body === undefined || chunked ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, reused: req.reusedSocket }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const postQuery = (port: number, agent: Agent, query: string, headers: Record<string, string> = {}) =>
  send(port, agent, {
    method: 'POST',
    path: '/api/v1/query',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'accept-encoding': 'gzip', ...headers },
    body: form(query),
  });

/** A raw connection and everything it has received; `ended` once the server ended its side. */
async function rawConnection(
  port: number,
): Promise<{ socket: Socket; received: () => string; ended: Promise<void>; hasEnded: () => boolean }> {
  const socket = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
  let text = '';
  let hasEnded = false;
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  socket.on('error', () => undefined);
  const ended = new Promise<void>((resolve) =>
    socket.once('end', () => {
      hasEnded = true;
      resolve();
    }),
  );
  await new Promise((resolve) => socket.once('connect', resolve));
  return { socket, received: () => text, ended, hasEnded: () => hasEnded };
}

const rawPost = (query: string, headers = '') => {
  const body = form(query);
  return `POST /api/v1/query HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/x-www-form-urlencoded\r\n${headers}Content-Length: ${body.length}\r\n\r\n${body}`;
};

describe('the single-group path on the wire', () => {
  let short: Awaited<ReturnType<typeof recordingStore>>;
  let long: Awaited<ReturnType<typeof recordingStore>>;
  let proxy: QueryProxy;
  let port: number;
  const agents: Agent[] = [];
  const sockets: Socket[] = [];
  /** A client with one kept-alive connection. */
  const client = (): Agent => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    agents.push(agent);
    return agent;
  };
  const raw = async () => {
    const connection = await rawConnection(port);
    sockets.push(connection.socket);
    return connection;
  };
  const counter = async (name: string, labels: Record<string, string>): Promise<number | undefined> =>
    valueOf(parseExposition(await (await fetch(`${proxy.url}/metrics`)).text()), name, labels);

  before(async () => {
    short = await recordingStore('short');
    long = await recordingStore('long');
    const group = (url: string, scrape: string) => ({
      static_configs: [{ targets: [url.replace(/^http:\/\//, '')] }],
      label_filter: { static_labels_include: { scrape: [scrape] } },
      query_params: { nocache: 1 },
      timeout: '2s',
    });
    const config: QueryProxyConfig = parseQueryProxyConfig('promxy.yml', {
      promxy: { server_groups: [group(short.url, 'short'), group(long.url, 'long')] },
    });
    const logger = createLoggerOn(new Writable({ write: (_chunk, _encoding, callback) => callback() }), 'info');
    proxy = await startQueryProxy(config, { logger, version: 'test', listen: '127.0.0.1:0', loadConfig: () => config });
    port = Number(new URL(proxy.url).port);
  });

  after(async () => {
    for (const agent of agents) agent.destroy();
    for (const socket of sockets) socket.destroy();
    await proxy.close();
    for (const store of [short, long]) {
      store.server.closeAllConnections();
      await new Promise((resolve) => store.server.close(resolve));
    }
  });

  test("a single-group query: the store gets the request as the client sent it, with the group's query_params; the client its answer, routed and timed", async () => {
    const before = short.received.length;
    const answer = await postQuery(port, client(), 'arcus_up{scrape="short"}');
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['x-cachemon-route'], 'single');
    assert.match(String(answer.headers['server-timing']), /^g0;desc="group 0 \(scrape=short\)";dur=\d+\.\d\d$/);
    assert.equal(answer.headers['content-type'], 'application/json');
    assert.equal(
      answer.headers['content-length'],
      String(Buffer.byteLength(answer.body)),
      'a short answer is held and sent with its length',
    );
    assert.equal(answer.headers['connection'], 'keep-alive');
    assert.ok(answer.headers['date']);
    assert.deepEqual(storesOf(answer), ['short']);
    const got = short.received.slice(before);
    assert.equal(got.length, 1);
    assert.equal(got[0]!.method, 'POST');
    assert.equal(got[0]!.url, '/api/v1/query?nocache=1');
    assert.equal(got[0]!.body, form('arcus_up{scrape="short"}'));
    assert.equal(got[0]!.headers['content-type'], 'application/x-www-form-urlencoded');
    assert.equal(got[0]!.headers['accept-encoding'], 'gzip');
    assert.equal(got[0]!.headers['host'], new URL(short.url).host);
    assert.equal(long.received.length, 0);
    assert.equal(await counter('cachemon_query_proxy_requests_total', { endpoint: 'query', decision: 'single' }), 1);
    // Recorded by the time the answer is read: the group's time to its answer's head, and the request's.
    assert.equal(
      await counter('cachemon_query_proxy_group_request_duration_seconds_count', {
        group: 'group 0 (scrape=short)',
        endpoint: 'query',
      }),
      1,
    );
    assert.equal(await counter('cachemon_query_proxy_request_duration_seconds_count', { endpoint: 'query' }), 1);
  });

  test('one kept connection carries single-group, merged and other answers one after another, each right', async () => {
    const agent = client();
    const one = await postQuery(port, agent, 'arcus_up{scrape="short"}');
    const two = await postQuery(port, agent, 'arcus_up'); // both groups: merged
    const three = await send(port, agent, {
      path: `/api/v1/query?query=${encodeURIComponent('arcus_up{scrape="long"}')}`,
    });
    const four = await send(port, agent, { path: '/api/v1/nothing' });
    const five = await send(port, agent, { path: '/' });
    assert.deepEqual(
      [one, two, three].map((a) => a.headers['x-cachemon-route']),
      ['single', 'several', 'single'],
    );
    assert.deepEqual(storesOf(one), ['short']);
    assert.deepEqual(storesOf(two).sort(), ['long', 'short']);
    assert.deepEqual(storesOf(three), ['long']);
    assert.equal(four.status, 404);
    assert.match(four.body, /does not serve \/api\/v1\/nothing/);
    assert.match(String(five.headers['content-type']), /^text\/html/);
    assert.deepEqual(
      [one, two, three, four, five].map((a) => a.reused),
      [false, true, true, true, true],
    );
  });

  test('a chunked request body is read and forwarded; a malformed request gets a 400 and its connection is closed', async () => {
    const agent = client();
    const chunked = await send(port, agent, {
      method: 'POST',
      path: '/api/v1/query',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form('arcus_up{scrape="short"}'),
      chunked: true,
    });
    assert.equal(chunked.status, 200);
    assert.deepEqual(storesOf(chunked), ['short']);
    const next = await postQuery(port, agent, 'arcus_up{scrape="long"}');
    assert.deepEqual(storesOf(next), ['long']);
    assert.equal(next.reused, true);
    const bad = await raw();
    bad.socket.write('POST /api/v1/query HTTP/1.1\r\nHost: proxy\r\nContent-Length: x\r\n\r\n');
    await bad.ended;
    assert.match(bad.received(), /^HTTP\/1\.1 400 /);
  });

  test("a long answer is streamed, chunked or with the store's length, and arrives whole", async () => {
    const agent = client();
    const chunked = await postQuery(port, agent, 'big_chunked{scrape="short"}');
    const withLength = await postQuery(port, agent, 'big_length_x{scrape="short"}');
    const small = await postQuery(port, agent, 'arcus_up{scrape="short"}');
    assert.equal(chunked.headers['transfer-encoding'], 'chunked');
    assert.equal(chunked.headers['content-length'], undefined);
    assert.equal((JSON.parse(chunked.body) as { data: { result: unknown[] } }).data.result.length, 3000);
    assert.ok(chunked.body.length > 64 * 1024);
    assert.equal(withLength.headers['content-length'], String(Buffer.byteLength(withLength.body)));
    assert.equal((JSON.parse(withLength.body) as { data: { result: unknown[] } }).data.result.length, 3000);
    assert.deepEqual(storesOf(small), ['short']);
  });

  test("a store answering 5xx: the API's error naming the store and what it said; counted", async () => {
    const answer = await postQuery(port, client(), 'fail_now{scrape="short"}');
    assert.equal(answer.status, 503);
    const body = JSON.parse(answer.body) as { status: string; errorType: string; error: string };
    assert.equal(body.status, 'error');
    assert.equal(body.errorType, 'unavailable');
    assert.equal(
      body.error,
      `group 0 (scrape=short): no replica answered (${short.url} answered 500: the store is out of order)`,
    );
    assert.equal(answer.headers['x-cachemon-route'], 'single');
    assert.match(String(answer.headers['server-timing']), /failed/);
    assert.equal(
      await counter('cachemon_query_proxy_group_errors_total', {
        group: 'group 0 (scrape=short)',
        kind: 'unavailable',
      }),
      1,
    );
    const durations = await counter('cachemon_query_proxy_group_request_duration_seconds_count', {
      group: 'group 0 (scrape=short)',
      endpoint: 'query',
    });
    const again = await postQuery(port, client(), 'fail_now{scrape="short"}');
    assert.equal(again.status, 503);
    assert.equal(
      await counter('cachemon_query_proxy_group_request_duration_seconds_count', {
        group: 'group 0 (scrape=short)',
        endpoint: 'query',
      }),
      (durations ?? 0) + 1,
      'a failed call is timed once',
    );
  });

  test('a kept connection to the store that the store has closed: the next query goes out on a new one and is answered', async () => {
    const agent = client();
    await postQuery(port, agent, 'arcus_up{scrape="long"}');
    const before = long.received.length;
    long.server.closeIdleConnections(); // the store drops its kept-alive connections, as after its idle timeout
    await eventually(
      async () =>
        assert.equal(
          await new Promise<number>((resolve) => long.server.getConnections((_err, count) => resolve(count))),
          0,
        ),
      { timeoutMs: 2000 },
    );
    const answer = await postQuery(port, agent, 'arcus_up{scrape="long"}');
    assert.equal(answer.status, 200);
    assert.deepEqual(storesOf(answer), ['long']);
    assert.equal(long.received.length, before + 1);
  });

  test('a client that says Connection: close gets its answer with Connection: close, then the connection ends', async () => {
    const c = await raw();
    c.socket.write(rawPost('arcus_up{scrape="short"}', 'Connection: close\r\n'));
    await c.ended;
    assert.match(c.received(), /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(c.received(), /\r\nconnection: close\r\n/i);
    assert.match(c.received(), /"store":"short"/);
  });

  test('a client that half-closes before its answer is taken as gone, as node:http takes it: its store call canceled at once, counted', async () => {
    const canceled = { group: 'group 0 (scrape=short)', kind: 'canceled' };
    const before = (await counter('cachemon_query_proxy_group_errors_total', canceled)) ?? 0;
    const c = await raw();
    // The store answers after 500 ms: the client's FIN is in well before that.
    c.socket.end(rawPost('slow_up{scrape="short"}'));
    await c.ended;
    assert.equal(c.received(), '');
    await eventually(
      async () => assert.equal(await counter('cachemon_query_proxy_group_errors_total', canceled), before + 1),
      { timeoutMs: 250 },
    );
  });

  test('a request without a Host header is refused with 400, as node:http refuses it, and not forwarded', async () => {
    const before = short.received.length;
    const c = await raw();
    c.socket.write(rawPost('arcus_up{scrape="short"}').replace('Host: proxy\r\n', ''));
    await c.ended;
    assert.match(c.received(), /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.equal(short.received.length, before);
  });

  test('bad query, missing query, wrong content type, HEAD: answered by the routes as the API answers them', async () => {
    const agent = client();
    const invalid = await counter('cachemon_query_proxy_requests_total', { endpoint: 'query', decision: 'invalid' });
    const bad = await postQuery(port, agent, 'sum((');
    const missing = await send(port, agent, {
      method: 'POST',
      path: '/api/v1/query',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'x=10',
    });
    const wrongType = await send(port, agent, {
      method: 'POST',
      path: '/api/v1/query',
      headers: { 'content-type': 'text/plain' },
      body: 'query',
    });
    const head = await send(port, agent, { method: 'HEAD', path: '/-/healthy' });
    assert.equal(bad.status, 400);
    assert.match((JSON.parse(bad.body) as { error: string }).error, /^invalid parameter "query": /);
    assert.equal(missing.status, 400);
    assert.match((JSON.parse(missing.body) as { error: string }).error, /the parameter is missing/);
    assert.equal(wrongType.status, 400, 'fastify reads a text/plain body as the form; its query is empty');
    assert.equal(head.status, 200);
    assert.equal(head.body, '');
    assert.equal(
      await counter('cachemon_query_proxy_requests_total', { endpoint: 'query', decision: 'invalid' }),
      (invalid ?? 0) + 3,
    );
  });
});

describe('connections while the proxy closes', () => {
  test('close() ends idle connections at once; a query under way is answered, with Connection: close', async () => {
    let release: (() => void) | undefined;
    const store = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => {
        release = () =>
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end('{"status":"success","data":{"resultType":"vector","result":[]}}');
      });
    });
    await new Promise<void>((resolve) => store.listen(0, '127.0.0.1', resolve));
    const target = `127.0.0.1:${(store.address() as AddressInfo).port}`;
    const config = parseQueryProxyConfig('promxy.yml', {
      promxy: { server_groups: [{ static_configs: [{ targets: [target] }], timeout: '5s' }] },
    });
    const logger = createLoggerOn(new Writable({ write: (_c, _e, cb) => cb() }), 'info');
    const proxy = await startQueryProxy(config, {
      logger,
      version: 'test',
      listen: '127.0.0.1:0',
      loadConfig: () => config,
    });
    const port = Number(new URL(proxy.url).port);
    const sockets: Socket[] = [];
    try {
      const idle = await rawConnection(port);
      sockets.push(idle.socket);
      idle.socket.write('GET /-/healthy HTTP/1.1\r\nHost: proxy\r\n\r\n');
      await eventually(async () => assert.match(idle.received(), /Healthy/), { timeoutMs: 2000 });
      const busy = await rawConnection(port);
      sockets.push(busy.socket);
      busy.socket.write('GET /-/healthy HTTP/1.1\r\nHost: proxy\r\n\r\n');
      await eventually(async () => assert.match(busy.received(), /Healthy/), { timeoutMs: 2000 });
      busy.socket.write(rawPost('up'));
      await eventually(async () => assert.ok(release), { timeoutMs: 2000 });
      const closing = proxy.close();
      await eventually(async () => assert.equal(idle.hasEnded(), true), { timeoutMs: 1000 });
      assert.equal(busy.hasEnded(), false, 'the connection under way stays open');
      release!();
      await closing;
      await busy.ended;
      const answer = busy.received().split('HTTP/1.1 ')[2] ?? '';
      assert.match(answer, /^200 OK\r\n/);
      assert.match(answer, /\r\nconnection: close\r\n/i);
      assert.match(answer, /"resultType":"vector"/);
    } finally {
      for (const socket of sockets) socket.destroy();
      store.closeAllConnections();
      await new Promise((resolve) => store.close(resolve));
    }
  });
});
