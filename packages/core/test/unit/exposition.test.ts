import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { execFileSync } from 'node:child_process';
import { gunzipSync, gzipSync } from 'node:zlib';
import {
  acceptsGzip,
  Errors,
  escapeHelp,
  escapeLabelValue,
  expositionBody,
  expositionPayload,
  ExpositionBuffer,
  ExpositionWriter,
  formatValue,
  gzipBody,
  isCachemonError,
  renderLabels,
} from '../../src/index.js';

describe('escaping', () => {
  const labelTable: Array<[string, string]> = [
    ['plain', 'plain'],
    ['a\\b', 'a\\\\b'],
    ['say "hi"', 'say \\"hi\\"'],
    ['two\nlines', 'two\\nlines'],
    ['\\"\n', '\\\\\\"\\n'],
    ['', ''],
  ];
  for (const [input, output] of labelTable) {
    it(`label value ${JSON.stringify(input)} -> ${JSON.stringify(output)}`, () =>
      assert.equal(escapeLabelValue(input), output));
  }

  const helpTable: Array<[string, string]> = [
    ['Items stored.', 'Items stored.'],
    ['a\\b', 'a\\\\b'],
    ['keeps "quotes"', 'keeps "quotes"'],
    ['two\nlines', 'two\\nlines'],
  ];
  for (const [input, output] of helpTable) {
    it(`help ${JSON.stringify(input)} -> ${JSON.stringify(output)}`, () => assert.equal(escapeHelp(input), output));
  }
});

describe('formatValue', () => {
  const table: Array<[number, string]> = [
    [0, '0'],
    [-0, '0'],
    [42, '42'],
    [-7, '-7'],
    [2 ** 53, '9007199254740992'],
    [1e20, '100000000000000000000'],
    [1e21, '1e+21'],
    [0.5, '0.5'],
    [0.1 + 0.2, '0.30000000000000004'],
    [1.5e-7, '1.5e-7'],
    [Number.NaN, 'NaN'],
    [Infinity, '+Inf'],
    [-Infinity, '-Inf'],
  ];
  for (const [value, text] of table) {
    it(`${String(value)} -> ${text}`, () => assert.equal(formatValue(value), text));
  }
  it('writes every finite number as String() does (the shortest round-trip form)', () => {
    // Doubles from their bits: every exponent and sign, and integers of every size.
    const bits = new DataView(new ArrayBuffer(8));
    let seed = 12345;
    const random32 = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
    for (let i = 0; i < 20000; i++) {
      bits.setUint32(0, random32());
      bits.setUint32(4, random32());
      const double = bits.getFloat64(0);
      if (Number.isFinite(double)) assert.equal(formatValue(double), String(double));
      const integer = Math.floor((random32() / 2 ** 32) * 10 ** (i % 22)) * (i % 2 ? -1 : 1);
      assert.equal(formatValue(integer), String(integer));
    }
    for (const edge of [
      Number.MIN_VALUE,
      -Number.MIN_VALUE,
      Number.MAX_VALUE,
      Number.EPSILON,
      2 ** 53 + 2,
      1e-7,
      123e-20,
      0.000001,
    ]) {
      assert.equal(formatValue(edge), String(edge));
    }
  });
});

describe('renderLabels', () => {
  it('renders in insertion order and escapes values', () => {
    assert.equal(renderLabels({ node: '10.0.0.1:11211', b: 'say "x"' }), '{node="10.0.0.1:11211",b="say \\"x\\""}');
  });

  it('renders nothing for no labels', () => assert.equal(renderLabels({}), ''));

  it('refuses an invalid label name', () => {
    assert.throws(
      () => renderLabels({ 'bad-name': 'x' }),
      (err: unknown) => isCachemonError(err, Errors.INTERNAL),
    );
    assert.throws(
      () => renderLabels({ '1x': 'x' }),
      (err: unknown) => isCachemonError(err, Errors.INTERNAL),
    );
  });
});

describe('ExpositionWriter', () => {
  it('writes families and samples in the text format', () => {
    const node = renderLabels({ node: 'a:1' });
    const writer = new ExpositionWriter()
      .family('arcus_up', 'gauge', 'Whether the node answered.')
      .sample(node, 1)
      .sample(renderLabels({ node: 'b:2' }), 0)
      .family('arcus_cmd_get_total', 'counter', 'Get commands.\nAll of them.')
      .sample(node, 12345)
      .family('arcus_latency_seconds', 'histogram', '')
      .sample('{le="0.1"}', 3, '_bucket')
      .sample('{le="+Inf"}', 4, '_bucket')
      .sample('', 0.25, '_sum')
      .sample('', 4, '_count');
    assert.equal(
      writer.toString(),
      [
        '# HELP arcus_up Whether the node answered.',
        '# TYPE arcus_up gauge',
        'arcus_up{node="a:1"} 1',
        'arcus_up{node="b:2"} 0',
        '# HELP arcus_cmd_get_total Get commands.\\nAll of them.',
        '# TYPE arcus_cmd_get_total counter',
        'arcus_cmd_get_total{node="a:1"} 12345',
        '# TYPE arcus_latency_seconds histogram',
        'arcus_latency_seconds_bucket{le="0.1"} 3',
        'arcus_latency_seconds_bucket{le="+Inf"} 4',
        'arcus_latency_seconds_sum 0.25',
        'arcus_latency_seconds_count 4',
        '',
      ].join('\n'),
    );
    assert.equal(writer.sampleCount, 7);
  });

  it('is empty before anything is written', () => {
    const writer = new ExpositionWriter();
    assert.equal(writer.toString(), '');
    assert.equal(writer.sampleCount, 0);
  });

  it('refuses a second family with the same name', () => {
    const writer = new ExpositionWriter().family('arcus_up', 'gauge', 'x').sample('', 1);
    assert.throws(
      () => writer.family('arcus_up', 'gauge', 'x'),
      (err: unknown) => isCachemonError(err, Errors.INTERNAL),
    );
  });

  it('refuses a sample before any family and an invalid metric name', () => {
    assert.throws(
      () => new ExpositionWriter().sample('', 1),
      (err: unknown) => isCachemonError(err, Errors.INTERNAL),
    );
    assert.throws(
      () => new ExpositionWriter().family('bad-name', 'gauge', ''),
      (err: unknown) => isCachemonError(err, Errors.INTERNAL),
    );
  });

  it('renders 20,000 samples of 100 families, each family once', () => {
    const labels = Array.from({ length: 200 }, (_, i) =>
      renderLabels({ node: `10.0.0.${i}:11211`, service_code: 'svc' }),
    );
    const writer = new ExpositionWriter();
    for (let f = 0; f < 100; f++) {
      writer.family(`arcus_metric_${f}`, 'gauge', 'A metric.');
      for (const label of labels) writer.sample(label, f * 1.5);
    }
    const text = writer.toString();
    assert.equal(writer.sampleCount, 20_000);
    assert.equal(text.split('\n').length, 20_000 + 200 + 1);
    assert.equal(text.match(/^# TYPE arcus_metric_\d+ gauge$/gm)?.length, 100);
    assert.ok(text.includes('arcus_metric_99{node="10.0.0.199:11211",service_code="svc"} 148.5\n'));
  });
});

describe('acceptsGzip', () => {
  const table: Array<[string | undefined, boolean]> = [
    [undefined, false],
    ['', false],
    ['gzip', true],
    ['deflate, gzip;q=1.0, *;q=0.5', true],
    ['gzip;q=0', false],
    ['identity', false],
    ['*', true],
    ['br, *;q=0', false],
    ['GZIP', true],
  ];
  for (const [header, expected] of table) {
    it(`${JSON.stringify(header)} -> ${expected}`, () => assert.equal(acceptsGzip(header), expected));
  }
});

/** Exposition-like text of about `bytes` bytes, different on every line. */
function exposition(bytes: number): Buffer {
  let text = '';
  for (let i = 0; text.length < bytes; i++)
    text += `arcus_commands_total{command="c${i % 60}",node="10.0.${i % 250}.${i % 7}:11211"} ${i * 7919}\n`;
  return Buffer.from(text.slice(0, bytes));
}

describe('gzipBody', () => {
  it('round-trips empty, small and large bodies, as one gzip member the gzip program reads', async () => {
    for (const size of [0, 1, 1000, 300_001, 2_500_003]) {
      const input = exposition(size);
      const member = await gzipBody(input);
      assert.deepEqual(gunzipSync(member), input, `size ${size}`);
      assert.deepEqual(
        execFileSync('gzip', ['-dc'], { input: member, maxBuffer: 8 * 1024 * 1024 }),
        input,
        `size ${size}: gzip -dc`,
      );
    }
    assert.equal(gunzipSync(await gzipBody('a 1\n')).toString(), 'a 1\n');
  });

  it('compresses at zlib level 1: as small as zlib gzips at that level, and exposition text ~6x', async () => {
    const input = exposition(2_000_000);
    const member = await gzipBody(input);
    assert.ok(member.length <= gzipSync(input, { level: 1 }).length, `${member.length} bytes`);
    assert.ok(member.length * 5 < input.length);
  });
});

describe('expositionBody', () => {
  it('gives its bytes as they are, and gzips them once, however often asked', async () => {
    const text = exposition(50_000);
    const body = expositionBody(text);
    assert.equal(body.bytes(), text);
    const gzipped = body.gzipped();
    assert.equal(body.gzipped(), gzipped, 'gzipped once and kept');
    assert.deepEqual(gunzipSync(await gzipped), text);
    assert.equal(await expositionPayload(body, true), await gzipped);
    assert.equal(await expositionPayload(body, false), text);
  });

  it('a string or Buffer body is sent as it is, or gzipped', async () => {
    const text = exposition(5000);
    assert.equal(await expositionPayload(text, false), text);
    assert.deepEqual(gunzipSync(await expositionPayload(text, true)), text);
    assert.deepEqual(await expositionPayload('a 1\n', false), Buffer.from('a 1\n'));
    assert.equal(gunzipSync(await expositionPayload('a 1\n', true)).toString(), 'a 1\n');
  });
});

describe('ExpositionBuffer', () => {
  it('writes what ExpositionWriter writes for the same samples, growing as it goes', () => {
    const labels = Array.from({ length: 300 }, (_, i) => renderLabels({ node: `10.0.0.${i}:11211`, hostname: 'h"1' }));
    const writer = new ExpositionWriter();
    const out = new ExpositionBuffer(64);
    for (let f = 0; f < 20; f++) {
      writer.family(`arcus_metric_${f}`, 'counter', 'A metric\nwith help.');
      out.family(`arcus_metric_${f}`, 'counter', 'A metric\nwith help.');
      for (const label of labels) {
        writer.sample(label, f * 1.5);
        const prefix = Buffer.from(`arcus_metric_${f}${label} `);
        out.sample(prefix, 0, prefix.length, formatValue(f * 1.5));
      }
    }
    const text = writer.toString();
    assert.equal(out.toBuffer().toString(), text);
    assert.equal(out.byteLength, Buffer.byteLength(text));
    assert.equal(out.sampleCount, writer.sampleCount);
  });

  it('takes text, encoded lines and parts of buffers, and counts the samples it is told of', () => {
    const out = new ExpositionBuffer(16);
    const lines = Buffer.from('xx b 2\nc 3\nyy');
    out.family('a', 'gauge', '');
    out.text('a{v="é"} 1\n').countSamples(1);
    out.bytes(lines, 3, 11, 2);
    out.bytes(Buffer.from('d 4\n'), 0, undefined, 1);
    assert.equal(out.toBuffer().toString(), '# TYPE a gauge\na{v="é"} 1\nb 2\nc 3\nd 4\n');
    assert.equal(out.sampleCount, 4);
    assert.throws(
      () => out.family('a', 'gauge', ''),
      (err: unknown) => isCachemonError(err, Errors.INTERNAL),
    );
    assert.throws(
      () => out.family('bad-name', 'gauge', ''),
      (err: unknown) => isCachemonError(err, Errors.INTERNAL),
    );
  });
});
