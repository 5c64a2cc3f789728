import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { execFileSync } from 'node:child_process';
import { gunzipSync } from 'node:zlib';
import {
  acceptsGzip,
  Errors,
  escapeHelp,
  escapeLabelValue,
  ExpositionBuffer,
  ExpositionWriter,
  formatValue,
  gzipBody,
  GzipStream,
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
    it(`label value ${JSON.stringify(input)} -> ${JSON.stringify(output)}`, () => assert.equal(escapeLabelValue(input), output));
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
});

describe('renderLabels', () => {
  it('renders in insertion order and escapes values', () => {
    assert.equal(renderLabels({ node: '10.0.0.1:11211', b: 'say "x"' }), '{node="10.0.0.1:11211",b="say \\"x\\""}');
  });

  it('renders nothing for no labels', () => assert.equal(renderLabels({}), ''));

  it('refuses an invalid label name', () => {
    assert.throws(() => renderLabels({ 'bad-name': 'x' }), (err: unknown) => isCachemonError(err, Errors.INTERNAL));
    assert.throws(() => renderLabels({ '1x': 'x' }), (err: unknown) => isCachemonError(err, Errors.INTERNAL));
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
    assert.throws(() => writer.family('arcus_up', 'gauge', 'x'), (err: unknown) => isCachemonError(err, Errors.INTERNAL));
  });

  it('refuses a sample before any family and an invalid metric name', () => {
    assert.throws(() => new ExpositionWriter().sample('', 1), (err: unknown) => isCachemonError(err, Errors.INTERNAL));
    assert.throws(() => new ExpositionWriter().family('bad-name', 'gauge', ''), (err: unknown) => isCachemonError(err, Errors.INTERNAL));
  });

  it('renders 20,000 samples of 100 families, each family once', () => {
    const labels = Array.from({ length: 200 }, (_, i) => renderLabels({ node: `10.0.0.${i}:11211`, service_code: 'svc' }));
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

describe('gzipBody', () => {
  /** Exposition-like text of about `bytes` bytes, different on every line. */
  const body = (bytes: number): Buffer => {
    let text = '';
    for (let i = 0; text.length < bytes; i++) text += `arcus_commands_total{command="c${i % 60}",node="10.0.${i % 250}.${i % 7}:11211"} ${i * 7919}\n`;
    return Buffer.from(text.slice(0, bytes));
  };

  it('round-trips empty, small and large bodies', () => {
    for (const size of [0, 1, 1000, 300_001, 2_500_003]) {
      const input = body(size);
      assert.deepEqual(gunzipSync(gzipBody(input)), input, `size ${size}`);
    }
  });

  it('shrinks exposition text at its fast level (this text: ~6x; real bodies: ~25x)', () => {
    const input = body(2_000_000);
    assert.ok(gzipBody(input).length * 5 < input.length);
  });
});

/** Exposition-like text of about `bytes` bytes, different on every line. */
function exposition(bytes: number): Buffer {
  let text = '';
  for (let i = 0; text.length < bytes; i++) text += `arcus_commands_total{command="c${i % 60}",node="10.0.${i % 250}.${i % 7}:11211"} ${i * 7919}\n`;
  return Buffer.from(text.slice(0, bytes));
}

/** `input` written to a GzipStream in pieces of the given sizes (cycled). */
function gzipInPieces(input: Buffer, sizes: readonly number[], whole = false): Buffer {
  const stream = new GzipStream({ whole });
  for (let at = 0, i = 0; at < input.length; i++) {
    const size = sizes[i % sizes.length]!;
    stream.write(input.subarray(at, at + size));
    at += size;
  }
  return stream.end();
}

describe('GzipStream', () => {
  it('makes one gzip member of pieces of any size, the same bytes as gzipping the whole', () => {
    for (const [size, pieces] of [
      [0, [1]],
      [1, [1]],
      [5000, [1, 7, 4096]],
      [300_001, [65_536]],
      [2_500_003, [262_144, 1, 524_288]],
    ] as const) {
      const input = exposition(size);
      for (const whole of [false, true]) {
        const gzipped = gzipInPieces(input, pieces, whole);
        assert.deepEqual(gunzipSync(gzipped), input, `size ${size}${whole ? ', gzipped whole' : ''}`);
        assert.deepEqual([...gzipped.subarray(0, 3)], [0x1f, 0x8b, 8], 'a gzip header with deflate');
        assert.equal(gzipped.readUInt32LE(gzipped.length - 4), size, 'ISIZE');
      }
    }
  });

  it('is read by the gzip program, which checks the CRC and the length', () => {
    const input = exposition(700_000);
    assert.deepEqual(execFileSync('gzip', ['-dc'], { input: gzipInPieces(input, [262_144]) }), input);
    const corrupt = gzipInPieces(input, [262_144]);
    corrupt.writeUInt32LE((corrupt.readUInt32LE(corrupt.length - 8) ^ 1) >>> 0, corrupt.length - 8);
    assert.throws(() => execFileSync('gzip', ['-dc'], { input: corrupt, stdio: ['pipe', 'pipe', 'ignore'] }), 'a wrong CRC is noticed');
  });

  it('compresses within 1 % of gzipping the whole body at once, with pieces of 256 KB', () => {
    const input = exposition(4_000_000);
    const whole = gzipBody(input).length;
    const pieces = gzipInPieces(input, [262_144]).length;
    assert.ok(pieces <= whole * 1.01, `pieces ${pieces} bytes, whole ${whole}`);
  });

  it('counts the bytes written, and refuses a write or an end after end()', () => {
    const stream = new GzipStream();
    stream.write(Buffer.from('abc'));
    stream.write(Buffer.alloc(0));
    assert.equal(stream.bytesWritten, 3);
    assert.equal(gunzipSync(stream.end()).toString(), 'abc');
    assert.throws(() => stream.write(Buffer.from('x')), (err) => isCachemonError(err, Errors.INTERNAL));
    assert.throws(() => stream.end(), (err) => isCachemonError(err, Errors.INTERNAL));
  });
});

describe('ExpositionBuffer with a sink', () => {
  /** The same writes to a growing buffer and to one that hands pieces of `pieceBytes` to a sink. */
  const both = (pieceBytes: number, write: (out: ExpositionBuffer) => void) => {
    const grown = new ExpositionBuffer(64);
    write(grown);
    const pieces: Buffer[] = [];
    const streamed = new ExpositionBuffer(pieceBytes, undefined, (piece) => {
      pieces.push(Buffer.from(piece)); // the piece is only valid during the call
    });
    write(streamed);
    streamed.end();
    return { grown, streamed, pieces };
  };

  it('hands the same bytes to the sink, in pieces no larger than the buffer unless one write is', () => {
    const big = exposition(5000);
    const prefix = Buffer.from('arcus_up{node="a"} ');
    const { grown, streamed, pieces } = both(1024, (out) => {
      out.family('arcus_up', 'gauge', 'Whether the node answered.');
      for (let i = 0; i < 200; i++) out.sample(prefix, 0, prefix.length, String(i));
      out.bytes(big, 0, big.length, 10); // larger than a piece: passed through
      out.text('é'.repeat(400)); // 800 bytes of UTF-8
      out.text('x'.repeat(2000)); // larger than a piece as text
      out.bytes(big, 10, 30, 1);
    });
    const body = Buffer.concat(pieces);
    assert.deepEqual(body, grown.toBuffer());
    assert.equal(streamed.byteLength, body.length);
    assert.equal(streamed.sampleCount, grown.sampleCount);
    assert.equal(streamed.sampleCount, 211);
    assert.ok(pieces.some((piece) => piece.length === big.length), 'the large write went through whole');
    assert.ok(pieces.filter((piece) => piece.length !== big.length && piece.length !== 2000).every((piece) => piece.length <= 1024));
  });

  it('writes into the backing buffer it was given, and has no toBuffer()', () => {
    const backing = Buffer.alloc(4096);
    const pieces: Buffer[] = [];
    const out = new ExpositionBuffer(4096, backing, (piece) => pieces.push(Buffer.from(piece)));
    assert.equal(out.backing, backing);
    out.text('# TYPE a gauge\na 1\n');
    assert.throws(() => out.toBuffer(), (err) => isCachemonError(err, Errors.INTERNAL));
    out.end();
    assert.equal(Buffer.concat(pieces).toString(), '# TYPE a gauge\na 1\n');
    assert.equal(backing.toString('utf8', 0, 19), '# TYPE a gauge\na 1\n');
  });
});
