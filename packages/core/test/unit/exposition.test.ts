import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { execFileSync } from 'node:child_process';
import * as zlib from 'node:zlib';
import { gunzipSync } from 'node:zlib';
import {
  acceptsGzip,
  BlockDeflater,
  crc32Combine,
  Errors,
  escapeHelp,
  escapeLabelValue,
  expositionBody,
  expositionPayload,
  expositionPayloadParts,
  ExpositionBuffer,
  ExpositionWriter,
  formatValue,
  gzipBody,
  GzipStream,
  isCachemonError,
  renderLabels,
} from '../../src/index.js';
import { deflatePart } from '../../src/exposition.js';

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
    for (const edge of [Number.MIN_VALUE, -Number.MIN_VALUE, Number.MAX_VALUE, Number.EPSILON, 2 ** 53 + 2, 1e-7, 123e-20, 0.000001]) {
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

  it('endParts() gives the member as its parts, kept blocks among them as they are, not joined', () => {
    const deflater = BlockDeflater.create()!;
    const kept = exposition(90_000);
    deflater.write(kept, 1);
    const block = deflater.end();
    const stream = new GzipStream();
    const body = new ExpositionBuffer(4096, undefined, stream);
    body.text('before 1\n');
    body.replay('kept', block);
    body.text('after 2\n');
    body.end();
    const parts = stream.endParts();
    assert.ok(parts.length >= 3, `header, pieces and trailer: ${parts.length} parts`);
    for (const part of block.parts) assert.ok(parts.includes(part), 'a kept block part is sent as it is, not copied');
    assert.deepEqual(execFileSync('gzip', ['-dc'], { input: Buffer.concat(parts), maxBuffer: 8 * 1024 * 1024 }), Buffer.concat([Buffer.from('before 1\n'), kept, Buffer.from('after 2\n')]));
    assert.throws(() => stream.endParts(), (err) => isCachemonError(err, Errors.INTERNAL));
  });
});

describe('expositionBody', () => {
  it('made from gzipped parts: the parts go out as they are; joined, or inflated, only when asked', () => {
    const text = exposition(50_000);
    const stream = new GzipStream();
    stream.write(text.subarray(0, 20_000));
    stream.write(text.subarray(20_000));
    const parts = stream.endParts();
    const body = expositionBody({ gzippedParts: parts });
    assert.equal(body.gzippedParts(), parts);
    assert.deepEqual(expositionPayloadParts(body, true), parts);
    assert.deepEqual(body.gzipped(), Buffer.concat(parts));
    assert.equal(body.gzipped(), body.gzipped(), 'joined once and kept');
    assert.deepEqual(body.bytes(), text);
    assert.deepEqual(expositionPayload(body, false), text);
    assert.deepEqual(expositionPayloadParts(body, false), [text]);
  });

  it('made from bytes: one gzipped part, made once; a string or Buffer body is one part', () => {
    const text = exposition(5000);
    const body = expositionBody({ bytes: text });
    const [only, ...rest] = body.gzippedParts();
    assert.equal(rest.length, 0);
    assert.equal(only, body.gzipped());
    assert.deepEqual(gunzipSync(only!), text);
    assert.deepEqual(gunzipSync(Buffer.concat(expositionPayloadParts('a 1\n', true))).toString(), 'a 1\n');
    assert.deepEqual(expositionPayloadParts(text, false), [text]);
    assert.throws(() => expositionBody({}), (err) => isCachemonError(err, Errors.INTERNAL));
  });
});

describe('deflatePart', () => {
  const zlibOwn = (piece: Uint8Array) => zlib.deflateRawSync(piece, { level: 1, finishFlush: zlib.constants.Z_SYNC_FLUSH });

  it('gives the bytes zlib gives a fresh stream, piece after piece, whatever came before', () => {
    const random = Buffer.alloc(300_000);
    for (let i = 0; i < random.length; i++) random[i] = (i * 2654435761) >>> 23;
    // Small, empty, text, and random data whose deflated form outgrows the kept 64 KB output
    // buffer (and then the grown one is used for the rest).
    const pieces = [exposition(700), Buffer.alloc(0), random, exposition(2_000_000), Buffer.from('x'), random.subarray(0, 70_000), exposition(5000)];
    for (const piece of pieces) {
      const part = deflatePart(piece);
      assert.deepEqual(part, zlibOwn(piece), `a piece of ${piece.length} bytes`);
      assert.deepEqual(zlib.inflateRawSync(part, { finishFlush: zlib.constants.Z_SYNC_FLUSH }), Buffer.from(piece));
    }
  });

  it('gzipBody, on the same kept stream, makes gzip members the gzip program reads, between parts', () => {
    const random = Buffer.alloc(200_000);
    for (let i = 0; i < random.length; i++) random[i] = (i * 2654435761) >>> 23;
    // The last but one outgrows 1 MB of output: the grown buffer is given up after it.
    const large = Buffer.concat(Array.from({ length: 7 }, (_, i) => random.map((b) => b ^ i)));
    const bodies = [Buffer.alloc(0), Buffer.from('a'), exposition(164_000), random, large, exposition(2_200_000)];
    const members = bodies.map((body) => {
      const member = gzipBody(body);
      deflatePart(exposition(1000)); // a part between bodies leaves nothing behind in the next one
      return member;
    });
    members.forEach((member, i) => {
      assert.deepEqual(execFileSync('gzip', ['-dc'], { input: member, maxBuffer: 16 * 1024 * 1024 }), bodies[i], `body ${i}`);
      assert.ok(member.length <= zlib.gzipSync(bodies[i]!, { level: 1 }).length + 8, `body ${i}: as small as zlib's gzip`);
    });
  });

  it('returns parts of their own: a later part does not overwrite an earlier one', () => {
    const first = deflatePart(exposition(3000));
    const copy = Buffer.from(first);
    deflatePart(exposition(9000));
    assert.deepEqual(first, copy);
    assert.equal(first.buffer.byteLength, first.length, 'a part holds no more memory than its bytes');
  });
});

describe('BlockDeflater', () => {
  it('makes a block of what is written piece by piece, which a gzip body takes like any kept block', () => {
    const deflater = BlockDeflater.create();
    assert.ok(deflater, 'zlib streams can be kept on this Node');
    deflater.write(Buffer.from('dropped by begin()'), 1);
    deflater.begin();
    // Text around random bytes, whose deflated form outgrows the kept 64 KB output buffer.
    const random = Buffer.alloc(150_000);
    for (let i = 0; i < random.length; i++) random[i] = (i * 2654435761) >>> 23;
    const text = Buffer.concat([exposition(150_000), random, exposition(150_000)]);
    const stream = new GzipStream();
    const body = new ExpositionBuffer(1024, undefined, stream);
    body.family('first', 'gauge', 'written as usual');
    body.text('first 1\n').countSamples(1);
    for (let at = 0; at < text.length; at += 1000) deflater.write(text.subarray(at, at + 1000), 2);
    const block = deflater.end();
    assert.equal(block.length, text.length);
    assert.equal(block.samples, 900);
    assert.equal(block.crc, zlib.crc32(text));
    assert.deepEqual(zlib.inflateRawSync(Buffer.concat(block.parts), { finishFlush: zlib.constants.Z_SYNC_FLUSH }), text);
    body.replay('second', block);
    body.text('third 3\n');
    body.end();
    const expected = Buffer.concat([Buffer.from('# HELP first written as usual\n# TYPE first gauge\nfirst 1\n'), text, Buffer.from('third 3\n')]);
    assert.deepEqual(execFileSync('gzip', ['-dc'], { input: stream.end(), maxBuffer: 8 * 1024 * 1024 }), expected);
    assert.equal(body.sampleCount, 901);
    // end() began anew: the next block holds only what follows.
    deflater.write(Buffer.from('x 1\n'), 1);
    assert.deepEqual(zlib.inflateRawSync(Buffer.concat(deflater.end().parts), { finishFlush: zlib.constants.Z_SYNC_FLUSH }).toString(), 'x 1\n');
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

describe('crc32Combine', () => {
  const crc32 = (zlib as unknown as { crc32: (data: Uint8Array, value?: number) => number }).crc32;

  it('gives the CRC-32 of two runs joined, from their CRCs and the second length', () => {
    const input = exposition(300_000);
    for (const split of [0, 1, 2, 7, 8, 255, 256, 65_537, 299_999, 300_000]) {
      const a = input.subarray(0, split);
      const b = input.subarray(split);
      assert.equal(crc32Combine(crc32(a), crc32(b), b.length), crc32(input), `split at ${split}`);
    }
  });

  it('joins many runs in a row, as a body of kept blocks does', () => {
    const input = exposition(50_000);
    let crc = 0;
    for (let at = 0, size = 1; at < input.length; at += size, size = (size * 7 + 3) % 4099) {
      const run = input.subarray(at, at + size);
      crc = crc32Combine(crc, crc32(run), run.length);
    }
    assert.equal(crc, crc32(input));
  });
});

describe('ExpositionBuffer blocks', () => {
  /** Writes family `name` with `lines` as a block of `out` (piece size small, so blocks span pieces). */
  const familyBlock = (out: ExpositionBuffer, name: string, lines: readonly string[]) => {
    out.beginBlock();
    out.family(name, 'counter', `${name} help.`);
    for (const line of lines) out.bytes(Buffer.from(line), 0, undefined, 1);
    return out.endBlock();
  };
  const linesOf = (name: string, n: number, salt: number) => Array.from({ length: n }, (_, i) => `${name}{node="10.0.0.${i}:11211"} ${i * salt}\n`);

  it('sends a kept block again in a later body: the same text as writing it, one gzip member', () => {
    const a = linesOf('arcus_a_total', 300, 7);
    const b = linesOf('arcus_b_total', 40, 3);
    const first = new GzipStream();
    const out1 = new ExpositionBuffer(1024, undefined, first);
    assert.equal(out1.blocks, true);
    out1.text('# leading text\n');
    const blockA = familyBlock(out1, 'arcus_a_total', a);
    familyBlock(out1, 'arcus_b_total', b);
    out1.text('# trailing\n');
    out1.end();
    const text1 = gunzipSync(first.end()).toString();
    assert.equal(blockA.samples, 300);
    assert.ok(blockA.parts.length > 1, 'a block larger than a piece has several parts');
    for (const part of blockA.parts) assert.ok(part.buffer.byteLength < 2 * part.length, `a kept part holds ${part.buffer.byteLength} bytes for its ${part.length}`);

    // The second body: a changed first line before, A kept, B changed, C new.
    const second = new GzipStream();
    const out2 = new ExpositionBuffer(1024, undefined, second);
    out2.text('# other leading text\n');
    out2.replay('arcus_a_total', blockA);
    const b2 = linesOf('arcus_b_total', 41, 5);
    familyBlock(out2, 'arcus_b_total', b2);
    out2.text('c 1\n').countSamples(1);
    out2.end();
    const body2 = second.end();
    const text2 = gunzipSync(body2).toString();

    const head = (name: string) => `# HELP ${name} ${name} help.\n# TYPE ${name} counter\n`;
    assert.equal(text1, `# leading text\n${head('arcus_a_total')}${a.join('')}${head('arcus_b_total')}${b.join('')}# trailing\n`);
    assert.equal(text2, `# other leading text\n${head('arcus_a_total')}${a.join('')}${head('arcus_b_total')}${b2.join('')}c 1\n`);
    assert.equal(out2.sampleCount, 300 + 41 + 1);
    assert.equal(out2.byteLength, Buffer.byteLength(text2));
    // The gzip program checks the CRC and length the kept block's CRC was joined into.
    assert.equal(execFileSync('gzip', ['-dc'], { input: body2 }).toString(), text2);
  });

  it('refuses a replayed family written already, nested blocks, and blocks without a GzipStream', () => {
    const stream = new GzipStream();
    const out = new ExpositionBuffer(1024, undefined, stream);
    const block = familyBlock(out, 'arcus_a_total', linesOf('arcus_a_total', 3, 1));
    assert.throws(() => out.replay('arcus_a_total', block), (err) => isCachemonError(err, Errors.INTERNAL));
    out.beginBlock();
    assert.throws(() => out.beginBlock(), (err) => isCachemonError(err, Errors.INTERNAL));
    assert.throws(() => out.end(), (err) => isCachemonError(err, Errors.INTERNAL));
    out.endBlock();
    assert.throws(() => out.endBlock(), (err) => isCachemonError(err, Errors.INTERNAL));

    const plain = new ExpositionBuffer(1024);
    assert.equal(plain.blocks, false);
    assert.throws(() => plain.beginBlock(), (err) => isCachemonError(err, Errors.INTERNAL));
    const whole = new ExpositionBuffer(1024, undefined, new GzipStream({ whole: true }));
    assert.equal(whole.blocks, false, 'a stream that gzips the whole at the end cannot take deflated blocks');
  });
});
