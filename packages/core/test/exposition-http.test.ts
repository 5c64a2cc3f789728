import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import {
  createHttpServer,
  EXPOSITION_CONTENT_TYPE,
  ExpositionWriter,
  renderLabels,
  sendExposition,
  type HttpServer,
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
