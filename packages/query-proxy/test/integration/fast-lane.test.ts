/**
 * The fast lane (src/fast-lane.ts) on the wire: the single-group path answered on the client's
 * socket, everything else passed to node:http on the same connection, in order. Stores here are
 * node:http servers that record what they receive (what the lane must send them is HTTP, not
 * store behaviour); proxy.test.ts runs the same paths against real VictoriaMetrics stores.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { Writable } from 'node:stream';
import { createLoggerOn } from '@cachemon/core';
import { eventually, parseExposition, valueOf } from '@cachemon/testkit';
import { parseQueryProxyConfig } from '../../src/config.js';
import type { QueryProxyConfig } from '../../src/config.js';
import { AnswerFramer } from '@cachemon/core';
import { startQueryProxy } from '../../src/server.js';
import type { QueryProxy } from '../../src/server.js';

interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A store that records each request and answers by the query: `big_*` a long answer, `fail_*` a 500. */
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
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"status":"error","errorType":"internal","error":"the store is out of order"}');
        return;
      }
      const result = query.startsWith('big_') ? Array.from({ length: 3000 }, (_, i) => ({ metric: { __name__: 'big', i: String(i), store: name }, value: [1, String(i)] })) : [{ metric: { store: name }, value: [1, '1'] }];
      const text = JSON.stringify({ status: 'success', data: { resultType: 'vector', result } });
      // `big_length_*` says its length; every other answer is chunked, as VictoriaMetrics sends them.
      if (query.startsWith('big_length_')) res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      else res.writeHead(200, { 'content-type': 'application/json' });
      if (text.length > 1000) {
        res.write(text.slice(0, 1000));
        setTimeout(() => res.end(text.slice(1000)), 5);
      } else res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

interface Answer {
  readonly status: number;
  readonly headers: ReadonlyMap<string, string>;
  readonly body: string;
}

/** A client on one raw connection: requests written as given, answers read in order. */
class RawClient {
  readonly socket: Socket;
  private buffer = Buffer.alloc(0);
  private waiting: Array<{ framer: AnswerFramer; pieces: Buffer[]; resolve: (answer: Answer) => void; reject: (err: Error) => void }> = [];
  closed = false;

  constructor(port: number) {
    this.socket = connect({ host: '127.0.0.1', port });
    this.socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.read();
    });
    this.socket.on('close', () => {
      this.closed = true;
      for (const w of this.waiting.splice(0)) w.reject(new Error('the connection closed before the answer ended'));
    });
    this.socket.on('error', () => undefined);
  }

  private read(): void {
    while (this.waiting.length > 0 && this.buffer.length > 0) {
      const w = this.waiting[0]!;
      const used = w.framer.push(this.buffer);
      this.buffer = this.buffer.subarray(used);
      if (!w.framer.done) return;
      this.waiting.shift();
      w.resolve({ status: w.framer.status, headers: w.framer.headers, body: Buffer.concat(w.pieces).toString('utf8') });
    }
  }

  /** Writes `requests` in one write; resolves with their answers. */
  send(...requests: string[]): Promise<Answer[]> {
    const answers = requests.map(
      (request) =>
        new Promise<Answer>((resolve, reject) => {
          const pieces: Buffer[] = [];
          this.waiting.push({ framer: new AnswerFramer((piece) => pieces.push(Buffer.from(piece)), request.startsWith('HEAD ')), pieces, resolve, reject });
        }),
    );
    this.socket.write(requests.join(''));
    return Promise.all(answers);
  }

  close(): void {
    this.socket.destroy();
  }
}

const form = (query: string) => `query=${encodeURIComponent(query)}&time=1700000000`;
const post = (query: string, headers = '') => {
  const body = form(query);
  return `POST /api/v1/query HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/x-www-form-urlencoded\r\nAccept-Encoding: gzip\r\n${headers}Content-Length: ${body.length}\r\n\r\n${body}`;
};
const get = (path: string, headers = '') => `GET ${path} HTTP/1.1\r\nHost: proxy\r\n${headers}\r\n`;
const storesOf = (answer: Answer): string[] => (JSON.parse(answer.body) as { data: { result: Array<{ metric: { store: string } }> } }).data.result.map((r) => r.metric.store);

describe('the fast lane', () => {
  let short: Awaited<ReturnType<typeof recordingStore>>;
  let long: Awaited<ReturnType<typeof recordingStore>>;
  let proxy: QueryProxy;
  let port: number;
  const clients: RawClient[] = [];
  const logLines: string[] = [];
  const client = (): RawClient => {
    const c = new RawClient(port);
    clients.push(c);
    return c;
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
    const config: QueryProxyConfig = parseQueryProxyConfig('promxy.yml', { promxy: { server_groups: [group(short.url, 'short'), group(long.url, 'long')] } });
    const logger = createLoggerOn(
      new Writable({
        write(chunk, _encoding, callback) {
          logLines.push(String(chunk));
          callback();
        },
      }),
      'info',
    );
    proxy = await startQueryProxy(config, { logger, version: 'test', listen: '127.0.0.1:0', loadConfig: () => config });
    port = Number(new URL(proxy.url).port);
  });

  after(async () => {
    for (const c of clients) c.close();
    await proxy.close();
    for (const store of [short, long]) {
      store.server.closeAllConnections();
      await new Promise((resolve) => store.server.close(resolve));
    }
  });

  test('a single-group query: the store gets the request as the client sent it, with the group\'s query_params; the client its answer, routed and timed', async () => {
    const before = short.received.length;
    const [answer] = await client().send(post('arcus_up{scrape="short"}'));
    assert.equal(answer!.status, 200);
    assert.equal(answer!.headers.get('x-cachemon-route'), 'single');
    assert.match(answer!.headers.get('server-timing') ?? '', /^g0;desc="group 0 \(scrape=short\)";dur=\d+\.\d\d$/);
    assert.equal(answer!.headers.get('content-type'), 'application/json');
    assert.equal(answer!.headers.get('content-length'), String(Buffer.byteLength(answer!.body)), 'a short answer is held and sent with its length');
    assert.equal(answer!.headers.get('connection'), 'keep-alive');
    assert.ok(answer!.headers.get('date'));
    assert.deepEqual(storesOf(answer!), ['short']);
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
    assert.equal(await counter('cachemon_query_proxy_fast_lane_requests_total', { endpoint: 'query' }), 1, 'answered by the lane');
    // Recorded once the answer is written: the group's time to its answer's head, and the request's.
    assert.equal(await counter('cachemon_query_proxy_group_request_duration_seconds_count', { group: 'group 0 (scrape=short)', endpoint: 'query' }), 1);
    assert.equal(await counter('cachemon_query_proxy_request_duration_seconds_count', { endpoint: 'query' }), 1);
  });

  test('one connection, requests one after another and pipelined: the lane\'s and node:http\'s answers come back in order', async () => {
    const c = client();
    const one = await c.send(post('arcus_up{scrape="short"}'));
    const two = await c.send(post('arcus_up')); // both groups: merged by the routes
    const three = await c.send(get(`/api/v1/query?query=${encodeURIComponent('arcus_up{scrape="long"}')}`));
    assert.deepEqual([one, two, three].map(([a]) => a!.headers.get('x-cachemon-route')), ['single', 'several', 'single']);
    assert.deepEqual(storesOf(two[0]!).sort(), ['long', 'short']);
    assert.deepEqual(storesOf(three[0]!), ['long']);
    // Pipelined in one write: lane, routes, lane, a 404 of the routes, the UI, lane.
    const answers = await c.send(
      post('arcus_up{scrape="long"}'),
      post('arcus_up'),
      post('arcus_up{scrape="short"}'),
      get('/api/v1/nothing'),
      get('/'),
      get(`/api/v1/query?query=${encodeURIComponent('arcus_up{scrape="short"}')}`),
    );
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 404, 200, 200]);
    assert.deepEqual(storesOf(answers[0]!), ['long']);
    assert.deepEqual(storesOf(answers[1]!).sort(), ['long', 'short']);
    assert.deepEqual(storesOf(answers[2]!), ['short']);
    assert.match(answers[3]!.body, /does not serve \/api\/v1\/nothing/);
    assert.match(answers[4]!.headers.get('content-type') ?? '', /^text\/html/);
    assert.deepEqual(storesOf(answers[5]!), ['short']);
    assert.equal(c.closed, false);
    // Five of these nine went the lane's way (the merged ones, the 404 and the UI the routes').
    assert.equal(await counter('cachemon_query_proxy_fast_lane_requests_total', { endpoint: 'query' }), 1 + 5);
  });

  test('a request that arrives in pieces (head cut, body in a later packet) is still the lane\'s', async () => {
    const c = client();
    const before = await counter('cachemon_query_proxy_fast_lane_requests_total', { endpoint: 'query' });
    const request = post('arcus_up{scrape="long"}');
    const cut = request.indexOf('\r\n\r\n');
    const answered = c.send(request.slice(0, 20));
    for (const piece of [request.slice(20, cut + 2), request.slice(cut + 2, cut + 4), request.slice(cut + 4)]) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      c.socket.write(piece);
    }
    const [answer] = await answered;
    assert.deepEqual(storesOf(answer!), ['long']);
    assert.equal(await counter('cachemon_query_proxy_fast_lane_requests_total', { endpoint: 'query' }), (before ?? 0) + 1);
  });

  test('a request the lane does not read (a chunked body) is node:http\'s, and so is the rest of that connection; answers stay right', async () => {
    const c = client();
    const body = form('arcus_up{scrape="short"}');
    const chunked = `POST /api/v1/query HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    const [first] = await c.send(chunked);
    assert.equal(first!.status, 200);
    assert.deepEqual(storesOf(first!), ['short']);
    const [second, third] = await c.send(post('arcus_up{scrape="long"}'), get('/-/healthy'));
    assert.deepEqual(storesOf(second!), ['long']);
    assert.equal(third!.status, 200);
    // A malformed request is answered by node:http (400) and the connection closed, as before.
    const bad = client();
    const [refused] = await bad.send('POST /api/v1/query HTTP/1.1\r\nHost: proxy\r\nContent-Length: x\r\n\r\n');
    assert.equal(refused!.status, 400);
    await eventually(async () => assert.equal(bad.closed, true), { timeoutMs: 2000 });
  });

  test('a long answer is streamed, chunked or with the store\'s length, and arrives whole', async () => {
    const c = client();
    const [chunked, withLength, small] = await c.send(post('big_chunked{scrape="short"}'), post('big_length_x{scrape="short"}'), post('arcus_up{scrape="short"}'));
    assert.equal(chunked!.headers.get('transfer-encoding'), 'chunked');
    assert.equal(chunked!.headers.get('content-length'), undefined);
    assert.equal((JSON.parse(chunked!.body) as { data: { result: unknown[] } }).data.result.length, 3000);
    assert.ok(chunked!.body.length > 64 * 1024);
    assert.equal(withLength!.headers.get('content-length'), String(Buffer.byteLength(withLength!.body)));
    assert.equal((JSON.parse(withLength!.body) as { data: { result: unknown[] } }).data.result.length, 3000);
    assert.deepEqual(storesOf(small!), ['short']);
  });

  test('a store answering 5xx: the API\'s error naming the store and what it said; counted', async () => {
    const [answer] = await client().send(post('fail_now{scrape="short"}'));
    assert.equal(answer!.status, 503);
    const body = JSON.parse(answer!.body) as { status: string; errorType: string; error: string };
    assert.equal(body.status, 'error');
    assert.equal(body.errorType, 'unavailable');
    assert.equal(body.error, `group 0 (scrape=short): no replica answered (${short.url} answered 500: the store is out of order)`);
    assert.equal(answer!.headers.get('x-cachemon-route'), 'single');
    assert.match(answer!.headers.get('server-timing') ?? '', /failed/);
    assert.equal(await counter('cachemon_query_proxy_group_errors_total', { group: 'group 0 (scrape=short)', kind: 'unavailable' }), 1);
    const durations = await counter('cachemon_query_proxy_group_request_duration_seconds_count', { group: 'group 0 (scrape=short)', endpoint: 'query' });
    const [again] = await client().send(post('fail_now{scrape="short"}'));
    assert.equal(again!.status, 503);
    assert.equal(await counter('cachemon_query_proxy_group_request_duration_seconds_count', { group: 'group 0 (scrape=short)', endpoint: 'query' }), (durations ?? 0) + 1, 'a failed call is timed once');
  });

  test('a kept connection to the store that the store has closed: the next query goes out on a new one and is answered', async () => {
    const c = client();
    await c.send(post('arcus_up{scrape="long"}'));
    long.server.closeIdleConnections(); // the store drops its kept-alive connections, as after its idle timeout
    await new Promise((resolve) => setTimeout(resolve, 50));
    const [answer] = await c.send(post('arcus_up{scrape="long"}'));
    assert.equal(answer!.status, 200);
    assert.deepEqual(storesOf(answer!), ['long']);
  });

  test('a client that says Connection: close gets its answer with Connection: close, then the connection ends', async () => {
    const c = client();
    const [answer] = await c.send(post('arcus_up{scrape="short"}', 'Connection: close\r\n'));
    assert.equal(answer!.status, 200);
    assert.equal(answer!.headers.get('connection'), 'close');
    await eventually(async () => assert.equal(c.closed, true), { timeoutMs: 2000 });
  });

  test('requests and bodies the lane does not take are answered as the routes answer them: bad query, missing query, wrong content type, HEAD', async () => {
    const c = client();
    const [bad, missing, wrongType, head] = await c.send(
      post('sum(('),
      'POST /api/v1/query HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 4\r\n\r\nx=10',
      'POST /api/v1/query HTTP/1.1\r\nHost: proxy\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nquery',
      'HEAD /-/healthy HTTP/1.1\r\nHost: proxy\r\n\r\n',
    );
    assert.equal(bad!.status, 400);
    assert.match(JSON.parse(bad!.body).error, /^invalid parameter "query": /);
    assert.equal(missing!.status, 400);
    assert.match(JSON.parse(missing!.body).error, /the parameter is missing/);
    assert.equal(wrongType!.status, 400, 'fastify reads a text/plain body as the form; its query is empty');
    assert.equal(head!.status, 200);
    assert.equal(head!.body, '');
    assert.equal(await counter('cachemon_query_proxy_requests_total', { endpoint: 'query', decision: 'invalid' }), 3);
  });
});

describe('the fast lane while the proxy closes', () => {
  test('close() ends idle connections at once; a query under way is answered, with Connection: close', async () => {
    let release: (() => void) | undefined;
    const store = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => {
        release = () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"success","data":{"resultType":"vector","result":[]}}');
      });
    });
    await new Promise<void>((resolve) => store.listen(0, '127.0.0.1', resolve));
    const target = `127.0.0.1:${(store.address() as AddressInfo).port}`;
    const config = parseQueryProxyConfig('promxy.yml', { promxy: { server_groups: [{ static_configs: [{ targets: [target] }], timeout: '5s' }] } });
    const logger = createLoggerOn(new Writable({ write: (_c, _e, cb) => cb() }), 'info');
    const proxy = await startQueryProxy(config, { logger, version: 'test', listen: '127.0.0.1:0', loadConfig: () => config });
    const port = Number(new URL(proxy.url).port);
    try {
      const idle = new RawClient(port);
      await idle.send(get('/-/healthy'));
      const busy = new RawClient(port);
      // Its connection carried a request of the routes first: node:http drops that idle inner
      // connection when it closes, and the lane's query under way must not go with it.
      await busy.send(get('/-/healthy'));
      const answer = busy.send(post('up'));
      await eventually(async () => assert.ok(release), { timeoutMs: 2000 });
      const closing = proxy.close();
      await eventually(async () => assert.equal(idle.closed, true), { timeoutMs: 1000 });
      release!();
      const [got] = await answer;
      assert.equal(got!.status, 200);
      assert.equal(got!.headers.get('connection'), 'close');
      await closing;
      // The proxy has ended the connection; the client sees it a moment later.
      await eventually(async () => assert.equal(busy.closed, true), { timeoutMs: 1000 });
    } finally {
      store.closeAllConnections();
      await new Promise((resolve) => store.close(resolve));
    }
  });
});
