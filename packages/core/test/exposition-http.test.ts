import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import {
  createHttpServer,
  EXPOSITION_CONTENT_TYPE,
  expositionLane,
  ExpositionWriter,
  renderLabels,
  sendExposition,
  type ExpositionSource,
  type HttpServer,
  type WebConfig,
} from '../src/index.js';
import { captureLogger } from './support/capture-logger.js';
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

describe('expositionLane: scrape paths answered on the socket, past the routes', () => {
  const body = buildBody();
  let server: HttpServer;
  let url: string;
  const captured = captureLogger();
  const asked: Array<{ gzip: boolean; timeout: string | undefined }> = [];

  before(async () => {
    server = await createHttpServer({ name: 'x', logger: captured.logger });
    // The routes would answer differently: anything seen from them did not go the lane's way.
    server.app.get('/metrics', async (_request, reply) => reply.code(418).send('routes'));
    server.app.post('/metrics', async (_request, reply) => reply.code(418).send('routes'));
    const installed = server.fastLane(
      expositionLane(
        captured.logger,
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
      ),
    );
    assert.equal(installed, true);
    url = (await server.listen('127.0.0.1:0')).url;
  });
  after(() => server.close());

  it('answers GET /metrics as sendExposition does: gzip when accepted, the content type, Vary', async () => {
    const zipped = await fetchRaw(`${url}/metrics`, { headers: { 'accept-encoding': 'gzip', 'x-prometheus-scrape-timeout-seconds': '5' } });
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

  it('a failed collection: the routes\' JSON error, logged; other methods and paths are the routes\'', async () => {
    const broken = await fetchRaw(`${url}/broken`);
    assert.equal(broken.status, 500);
    assert.match(broken.headers['content-type'] ?? '', /^application\/json/);
    assert.match((JSON.parse(broken.text) as { error: string }).error, /the collection broke/);
    assert.ok(captured.records.some((r) => r['msg'] === 'request failed' && r['url'] === '/broken'));
    assert.equal((await fetchRaw(`${url}/metrics`, { method: 'POST' })).status, 418);
    assert.equal((await fetchRaw(`${url}/-/healthy`)).status, 200);
  });

  it('behind a web config there is no lane: every request passes the routes', async () => {
    const guarded = await createHttpServer({ name: 'x', logger: captured.logger, webConfig: { source: 'web.yml', tls: undefined, headers: {}, basicAuthUsers: new Map() } satisfies WebConfig });
    try {
      assert.equal(guarded.fastLane(expositionLane(captured.logger, new Map())), false);
    } finally {
      await guarded.close();
    }
  });
});
