import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { CachemonError, Errors, ExpositionBuffer } from '@cachemon/core';
import { GzipBody, gzippedExpositionBody } from '../../src/metrics/gzip-body.js';

/** The same calls on both writers: families, prefixes, samples, lines, text larger than a chunk. */
function write(out: ExpositionBuffer | GzipBody): void {
  const prefix = Buffer.from('arcus_up{node="127.0.0.1:11211",hostname="é"} ');
  const lines = Buffer.from('xx arcus_heartbeats_total{node="a"} 10\narcus_heartbeats_total{node="b"} 11\n yy');
  out.family('arcus_up', 'gauge', 'Whether the node answered.');
  for (let i = 0; i < 50; i++) out.sample(prefix, 0, prefix.length, String(i % 2));
  out.family('arcus_heartbeats_total', 'counter', 'Heartbeats.');
  for (let i = 0; i < 30; i++) out.bytes(lines, 3, lines.length - 3, 2);
  out.text(`# a comment line longer than any chunk: ${'ü'.repeat(300)}\n`);
  out.text('cachemon_build_info{version="1"} 1\n').countSamples(1);
}

test('a gzip body inflates to exactly what the exposition buffer holds, across chunk boundaries', () => {
  const plain = new ExpositionBuffer(64);
  write(plain);
  for (const chunkBytes of [64, 100, 1024, 256 * 1024]) {
    const body = new GzipBody(chunkBytes);
    write(body);
    assert.equal(body.sampleCount, plain.sampleCount, `chunk ${chunkBytes}`);
    assert.equal(body.byteLength, plain.byteLength, `chunk ${chunkBytes}`);
    const gzipped = body.finish();
    // One gzip member (a second one would need a second header), checked by gunzip's CRC and length.
    assert.equal(gzipped.indexOf(Buffer.from([0x1f, 0x8b, 8]), 1), -1, `chunk ${chunkBytes}`);
    assert.deepEqual(gunzipSync(gzipped), plain.toBuffer(), `chunk ${chunkBytes}`);
  }
});

test('an empty gzip body is a valid empty gzip stream', () => {
  assert.equal(gunzipSync(new GzipBody().finish()).length, 0);
});

test('a family written twice, or anything written after finish, is refused', () => {
  const body = new GzipBody(64);
  body.family('arcus_up', 'gauge', 'up');
  assert.throws(
    () => body.family('arcus_up', 'gauge', 'up'),
    (err: unknown) => err instanceof CachemonError && err.code === Errors.INTERNAL.code,
  );
  body.text('arcus_up 1\n');
  const first = body.finish();
  assert.equal(body.finish(), first, 'finish again gives the same body');
  assert.throws(
    () => body.text('arcus_up 1\n'.repeat(10)),
    (err: unknown) => err instanceof CachemonError && err.code === Errors.INTERNAL.code,
  );
});

test('an exposition body from gzip: sent as it is, inflated once for a scraper without gzip', async () => {
  const writer = new GzipBody(64);
  write(writer);
  const gzipped = writer.finish();
  const body = gzippedExpositionBody(gzipped);
  assert.equal(await body.gzipped(), gzipped);
  const plain = new ExpositionBuffer(64);
  write(plain);
  assert.deepEqual(body.bytes(), plain.toBuffer());
  assert.equal(body.bytes(), body.bytes(), 'inflated once');
});
