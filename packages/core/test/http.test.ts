import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Agent, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, it } from 'node:test';
import bcrypt from 'bcryptjs';
import {
  CachemonError,
  createHttpServer,
  Errors,
  isCachemonError,
  postWithoutBody,
  type HttpServer,
  type WebConfig,
} from '../src/index.js';
import { captureLogger } from './support/capture-logger.js';
import { fetchRaw, parseJson } from './support/http-client.js';

const open: HttpServer[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((server) => server.close()));
});

function webConfig(partial: Partial<WebConfig>): WebConfig {
  return { source: 'web.yml', tls: undefined, headers: {}, basicAuthUsers: new Map(), ...partial };
}

async function start(options: { webConfig?: WebConfig; bodyLimitBytes?: number } = {}) {
  const { logger, records } = captureLogger('info');
  const server = await createHttpServer({ name: 'cachemon-test', logger, ...options });
  server.app.get('/boom', async () => {
    throw new Error('kaboom');
  });
  server.app.get('/timeout', async () => {
    throw new CachemonError(Errors.NODE_TIMEOUT, 'node 10.0.0.1:11211 did not answer within 2s');
  });
  server.app.post('/echo', async (request) => ({ got: request.body }));
  let enteredSlow = (): void => undefined;
  /** Resolves when a request to /slow is being handled (in flight). */
  const slowEntered = new Promise<void>((resolve) => (enteredSlow = resolve));
  server.app.get('/slow', async () => {
    enteredSlow();
    await sleep(300);
    return 'slow done';
  });
  open.push(server);
  const bound = await server.listen('127.0.0.1:0');
  return { server, records, url: bound.url, bound, slowEntered };
}

function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

describe('createHttpServer', () => {
  it('answers /-/healthy and reports the bound address', async () => {
    const { url, bound } = await start();
    assert.equal(bound.host, '127.0.0.1');
    assert.ok(bound.port > 0);
    assert.equal(url, `http://127.0.0.1:${bound.port}`);
    const answer = await fetchRaw(`${url}/-/healthy`);
    assert.equal(answer.status, 200);
    assert.equal(answer.text, 'cachemon-test is Healthy.\n');
    assert.match(String(answer.headers['content-type']), /^text\/plain/);
  });

  it('answers /-/ready with 503 until set ready, then 200; polling it logs nothing', async () => {
    const { server, url, records } = await start();
    const before = await fetchRaw(`${url}/-/ready`);
    assert.equal(before.status, 503);
    assert.deepEqual(parseJson(before), {
      status: 'error',
      code: 'CACHEMON_NOT_READY',
      error: 'cachemon-test is not ready.',
    });
    server.setReady(true);
    const after = await fetchRaw(`${url}/-/ready`);
    assert.equal(after.status, 200);
    assert.equal(after.text, 'cachemon-test is Ready.\n');
    server.setReady(false);
    assert.equal((await fetchRaw(`${url}/-/ready`)).status, 503);
    assert.deepEqual(
      records.filter((r) => r['level'] === 'error'),
      [],
    );
  });

  it('answers an unknown route with 404 JSON', async () => {
    const { url } = await start();
    const answer = await fetchRaw(`${url}/nope?x=1`);
    assert.equal(answer.status, 404);
    assert.match(String(answer.headers['content-type']), /^application\/json/);
    assert.deepEqual(parseJson(answer), {
      status: 'error',
      code: 'CACHEMON_NOT_FOUND',
      error: 'no route for GET /nope',
    });
  });

  it('answers a CachemonError with its status and code', async () => {
    const { url } = await start();
    const answer = await fetchRaw(`${url}/timeout`);
    assert.equal(answer.status, 504);
    assert.deepEqual(parseJson(answer), {
      status: 'error',
      code: 'CACHEMON_NODE_TIMEOUT',
      error: 'node 10.0.0.1:11211 did not answer within 2s',
    });
  });

  it('answers an unexpected error with 500 JSON and logs it', async () => {
    const { url, records } = await start();
    const answer = await fetchRaw(`${url}/boom`);
    assert.equal(answer.status, 500);
    assert.deepEqual(parseJson(answer), {
      status: 'error',
      code: 'CACHEMON_INTERNAL',
      error: 'internal error: kaboom',
    });
    const logged = records.find((r) => r['msg'] === 'request failed');
    assert.equal(logged?.['level'], 'error');
    assert.equal((logged?.['err'] as { message?: string } | undefined)?.message, 'kaboom');
  });

  it('does not log every request', async () => {
    const { url, records } = await start();
    for (let i = 0; i < 3; i++) await fetchRaw(`${url}/-/healthy`);
    await fetchRaw(`${url}/nope`);
    assert.deepEqual(
      records.filter((r) => 'reqId' in r || 'req' in r || 'res' in r),
      [],
    );
    assert.deepEqual(
      records.map((r) => r['msg']),
      [`Server listening at ${url}`],
    );
  });

  it('accepts a body under the limit and refuses a larger one with 413 JSON', async () => {
    const { url } = await start({ bodyLimitBytes: 1024 });
    const headers = { 'content-type': 'application/json' };
    const small = await fetchRaw(`${url}/echo`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ a: 'x'.repeat(100) }),
    });
    assert.equal(small.status, 200);
    assert.deepEqual(parseJson(small), { got: { a: 'x'.repeat(100) } });
    const large = await fetchRaw(`${url}/echo`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ a: 'x'.repeat(2000) }),
    });
    assert.equal(large.status, 413);
    assert.equal(parseJson(large)['code'], 'CACHEMON_BODY_TOO_LARGE');
  });

  it('answers malformed JSON and an unsupported content type with JSON errors', async () => {
    const { url } = await start();
    const bad = await fetchRaw(`${url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":',
    });
    assert.equal(bad.status, 400);
    assert.equal(parseJson(bad)['code'], 'CACHEMON_BAD_REQUEST');
    assert.equal(parseJson(bad)['status'], 'error');
    const media = await fetchRaw(`${url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-nope' },
      body: 'x',
    });
    assert.equal(media.status, 415);
    assert.equal(parseJson(media)['code'], 'CACHEMON_UNSUPPORTED_MEDIA_TYPE');
  });

  it('postWithoutBody: a route that takes no body ignores any body and content type a client sends', async () => {
    const { logger } = captureLogger('info');
    const server = await createHttpServer({ name: 'cachemon-test', logger, bodyLimitBytes: 1024 });
    open.push(server);
    let calls = 0;
    postWithoutBody(server.app, '/-/reload', async () => ({ status: 'success', calls: ++calls }));
    server.app.post('/echo', async (request) => ({ got: request.body }));
    const { url } = await server.listen('127.0.0.1:0');
    const sent: Array<{ headers?: Record<string, string>; body?: string }> = [
      {},
      { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' }, // curl -d '', wget --post-data=''
      { headers: { 'content-type': 'application/json' }, body: '' },
      { headers: { 'content-type': 'application/json' }, body: '{"not":' },
      { headers: { 'content-type': 'application/x-nope' }, body: 'whatever' },
    ];
    for (const [i, request] of sent.entries()) {
      const answer = await fetchRaw(`${url}/-/reload`, { method: 'POST', ...request });
      assert.equal(answer.status, 200, JSON.stringify(request));
      assert.deepEqual(parseJson(answer), { status: 'success', calls: i + 1 });
    }
    // Still within the body limit, and only for that route: the others parse bodies as before.
    const large = await fetchRaw(`${url}/-/reload`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'x'.repeat(2000),
    });
    assert.equal(large.status, 413);
    assert.equal(calls, sent.length);
    const echo = await fetchRaw(`${url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    assert.deepEqual(parseJson(echo), { got: { a: 1 } });
    const media = await fetchRaw(`${url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-nope' },
      body: 'x',
    });
    assert.equal(media.status, 415);
  });

  it('adds the headers of the web config to every answer', async () => {
    const { url } = await start({ webConfig: webConfig({ headers: { 'X-Frame-Options': 'deny' } }) });
    assert.equal((await fetchRaw(`${url}/-/healthy`)).headers['x-frame-options'], 'deny');
    assert.equal((await fetchRaw(`${url}/nope`)).headers['x-frame-options'], 'deny');
  });

  it('refuses a listen address in use with LISTEN_FAILED', async () => {
    const blocker = createServer();
    blocker.listen(0, '127.0.0.1');
    await once(blocker, 'listening');
    const port = (blocker.address() as AddressInfo).port;
    try {
      const { logger } = captureLogger();
      const server = await createHttpServer({ name: 'x', logger });
      open.push(server);
      await assert.rejects(server.listen(`127.0.0.1:${port}`), (err: unknown) => {
        return (
          isCachemonError(err, Errors.LISTEN_FAILED) &&
          err.message.includes(`127.0.0.1:${port}`) &&
          /EADDRINUSE/.test(err.message)
        );
      });
    } finally {
      blocker.close();
    }
  });

  it('listens on one address of a host name, its first IPv4 one, as Go daemons do', async () => {
    const { logger } = captureLogger();
    const asked: string[] = [];
    const server = await createHttpServer({
      name: 'x',
      logger,
      resolveHost: async (host) => {
        asked.push(host);
        return [
          { address: '::1', family: 6 },
          { address: '127.0.0.1', family: 4 },
        ];
      },
    });
    open.push(server);
    const bound = await server.listen('localhost:0');
    assert.deepEqual(asked, ['localhost']);
    assert.equal(bound.url, `http://127.0.0.1:${bound.port}`);
    // One server: nothing opened for the name's other address (fastify, given the name, would have).
    assert.deepEqual(
      server.app.addresses().map((a) => (a as { address: string }).address),
      ['127.0.0.1'],
    );
    await assert.rejects(fetchRaw(`http://[::1]:${bound.port}/-/healthy`), /ECONNREFUSED/);
    assert.equal((await fetchRaw(`${bound.url}/-/healthy`)).status, 200);
  });

  it('takes the first address of a name without IPv4, and refuses a name that does not resolve', async () => {
    const { logger } = captureLogger();
    const v6 = await createHttpServer({ name: 'x', logger, resolveHost: async () => [{ address: '::1', family: 6 }] });
    open.push(v6);
    const bound = await v6.listen('ip6-localhost:0');
    assert.equal(bound.url, `http://[::1]:${bound.port}`);
    assert.equal((await fetchRaw(`${bound.url}/-/healthy`)).status, 200);

    const none = await createHttpServer({ name: 'x', logger });
    open.push(none);
    await assert.rejects(none.listen('no-such-host.invalid:0'), (err: unknown) => {
      return (
        isCachemonError(err, Errors.LISTEN_FAILED) &&
        err.message.startsWith('cannot listen on no-such-host.invalid:0: ') &&
        /ENOTFOUND/.test(err.message)
      );
    });
  });
});

describe('basic auth', () => {
  const users = new Map([['prometheus', bcrypt.hashSync('s3cret', 4)]]);

  it('lets the right credentials through', async () => {
    const { url } = await start({ webConfig: webConfig({ basicAuthUsers: users }) });
    const answer = await fetchRaw(`${url}/-/healthy`, { headers: { authorization: basic('prometheus', 's3cret') } });
    assert.equal(answer.status, 200);
  });

  const refused: Array<[string, Record<string, string>]> = [
    ['missing credentials', {}],
    ['a wrong password', { authorization: basic('prometheus', 'guess') }],
    ['an unknown user', { authorization: basic('mallory', 's3cret') }],
    ['a malformed header', { authorization: 'Basic !!!' }],
  ];
  for (const [what, headers] of refused) {
    it(`answers ${what} with 401 JSON and WWW-Authenticate`, async () => {
      const { url } = await start({ webConfig: webConfig({ basicAuthUsers: users }) });
      for (const path of ['/-/healthy', '/-/ready', '/nope']) {
        const answer = await fetchRaw(`${url}${path}`, { headers });
        assert.equal(answer.status, 401, path);
        assert.equal(answer.headers['www-authenticate'], 'Basic');
        assert.equal(parseJson(answer)['code'], 'CACHEMON_UNAUTHORIZED');
      }
    });
  }
});

describe('close', () => {
  it('lets an in-flight request finish, then stops accepting', async () => {
    const { server, url, slowEntered } = await start();
    const inFlight = fetchRaw(`${url}/slow`);
    await slowEntered;
    const started = performance.now();
    await server.close();
    const answer = await inFlight;
    assert.equal(answer.status, 200);
    assert.equal(answer.text, 'slow done');
    assert.ok(performance.now() - started >= 200, 'close returned before the request finished');
    await assert.rejects(fetchRaw(`${url}/-/healthy`), /ECONNREFUSED/);
  });

  it('does not wait for idle keep-alive connections', async () => {
    const { server, url } = await start();
    const agent = new Agent({ keepAlive: true, keepAliveMsecs: 60_000 });
    try {
      assert.equal((await fetchRaw(`${url}/-/healthy`, { agent })).status, 200);
      assert.equal((await fetchRaw(`${url}/-/healthy`, { agent })).status, 200);
      const started = performance.now();
      await server.close();
      assert.ok(performance.now() - started < 1000, `close took ${(performance.now() - started).toFixed(0)} ms`);
    } finally {
      agent.destroy();
    }
  });

  it('finishes a request on a kept-alive connection and does not hang on that connection afterwards', async () => {
    const { server, url, slowEntered } = await start();
    const agent = new Agent({ keepAlive: true, keepAliveMsecs: 60_000 });
    try {
      assert.equal((await fetchRaw(`${url}/-/healthy`, { agent })).status, 200);
      const inFlight = fetchRaw(`${url}/slow`, { agent });
      await slowEntered;
      const started = performance.now();
      await server.close();
      const answer = await inFlight;
      assert.equal(answer.status, 200);
      assert.ok(performance.now() - started < 2000, `close took ${(performance.now() - started).toFixed(0)} ms`);
    } finally {
      agent.destroy();
    }
  });
});
