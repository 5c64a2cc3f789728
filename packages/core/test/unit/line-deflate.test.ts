import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { execFileSync } from 'node:child_process';
import * as zlib from 'node:zlib';
import { crcRegister, crcShift, crcShifted, editsBetween, ExpositionBuffer, GzipStream, KEY_FIELDS, LineDeflater, lineKeys, LITERAL, MAX_DISTANCE, sharedEnds } from '../../src/index.js';

const inflate = (parts: readonly Buffer[]): Buffer => zlib.inflateRawSync(Buffer.concat(parts), { finishFlush: zlib.constants.Z_SYNC_FLUSH });

/** A deterministic pseudo-random sequence (so a failure can be run again). */
function random(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}

/**
 * One run (a node's lines of a family): keys `${heads[k]}${base}${tail}`, values as given (null:
 * no line). Its text (missing lines left out), and its LineKeys.
 */
function makeRun(heads: readonly string[], base: string, tail: string, values: ReadonlyArray<Buffer | null>) {
  const keys = heads.map((head) => Buffer.from(`${head}${base}${tail}`, 'latin1'));
  const keysOfRun = lineKeys(keys, Buffer.byteLength(base, 'latin1'), Buffer.byteLength(tail, 'latin1'));
  const valueLengths = Int32Array.from(values, (value) => (value === null ? -1 : value.length));
  const text = Buffer.concat(keys.flatMap((key, k) => (values[k] === null ? [] : [key, values[k]!, Buffer.from('\n')])));
  return { text, keys: keysOfRun, valueLengths, base: Buffer.from(base, 'latin1') };
}

type Run = ReturnType<typeof makeRun>;

/** Writes runs one after the other, each referring to the one before when `useRef(i)`. */
function deflateRuns(runs: readonly Run[], useRef: (i: number) => boolean, deflater = new LineDeflater(64)) {
  runs.forEach((run, i) => {
    const before = runs[i - 1];
    if (before !== undefined && useRef(i)) {
      deflater.run(run.text, 0, run.keys, run.valueLengths, 0, run.valueLengths.length, before.keys, editsBetween(before.base, run.base));
    } else {
      deflater.run(run.text, 0, run.keys, run.valueLengths, 0, run.valueLengths.length);
    }
  });
  return { text: Buffer.concat(runs.map((run) => run.text)), block: deflater.end() };
}

const COMMANDS = ['get', 'set', 'getattr', 'bop_insert', 'delete'];

describe('LineDeflater', () => {
  it('deflates the runs of nodes by their repeated keys into what zlib inflates to the text, with its CRC-32', () => {
    const runs = Array.from({ length: 60 }, (_, node) =>
      makeRun(
        COMMANDS.map((command) => `arcus_commands_total{command="${command}",`),
        `ensemble="e",service_code="svc",node="10.0.0.${node}:11211",hostname="cache-${node}"`,
        '} ',
        COMMANDS.map((command) => Buffer.from(String(node * 7919 + command.length))),
      ),
    );
    const { text, block } = deflateRuns(runs, () => true);
    assert.deepEqual(inflate(block.parts), text);
    assert.equal(block.crc, zlib.crc32(text));
    assert.equal(block.length, text.length);
    assert.equal(block.samples, 300);
    const zlibSize = zlib.deflateRawSync(text, { level: 1 }).length;
    assert.ok(block.parts[0]!.length < text.length / 6, `${block.parts[0]!.length} bytes of ${text.length}`);
    assert.ok(block.parts[0]!.length < zlibSize * 3, `${block.parts[0]!.length} bytes, zlib level 1 ${zlibSize}`);
    // Without the runs before as references, each key is written from the key before it only.
    const alone = deflateRuns(runs, () => false).block;
    assert.deepEqual(inflate(alone.parts), text);
    const size = (b: typeof block) => b.parts.reduce((sum, part) => sum + part.length, 0);
    assert.ok(size(block) < size(alone) * 0.8, `${size(block)} bytes with references, ${size(alone)} without`);
    // A ref that is not the run just before is not taken (its line starts are not known).
    const skipped = new LineDeflater();
    skipped.run(runs[0]!.text, 0, runs[0]!.keys, runs[0]!.valueLengths, 0, 5);
    skipped.run(runs[1]!.text, 0, runs[1]!.keys, runs[1]!.valueLengths, 0, 5);
    skipped.run(runs[2]!.text, 0, runs[2]!.keys, runs[2]!.valueLengths, 0, 5, runs[0]!.keys, editsBetween(runs[0]!.base, runs[2]!.base));
    const three = Buffer.concat([runs[0]!.text, runs[1]!.text, runs[2]!.text]);
    assert.deepEqual(inflate(skipped.end().parts), three);
  });

  it('takes any bytes, keys, missing lines and references: random runs inflate to their text', () => {
    for (let seed = 1; seed <= 40; seed++) {
      const next = random(seed);
      const pick = (n: number) => Math.floor(next() * n);
      // Pieces that make keys share beginnings and ends; bytes of every value (the 9-bit literals
      // too); some longer than a back-reference (258).
      const piece = () => ['metric{', 'a="', 'b', '\u00e9\u00ff', '"} ', String.fromCharCode(pick(256)), 'x'.repeat(pick(2) === 0 ? 1 : 300)][pick(7)]!;
      const text = (parts: number) => Array.from({ length: parts }, piece).join('');
      const lines = 1 + pick(40);
      const heads = Array.from({ length: lines }, () => text(pick(4)));
      const tail = text(pick(3));
      const runs = Array.from({ length: 1 + pick(30) }, () =>
        makeRun(
          heads,
          text(pick(5)),
          tail,
          heads.map(() => {
            if (pick(8) === 0) return null;
            const value = Buffer.alloc(pick(12));
            for (let b = 0; b < value.length; b++) value[b] = pick(256);
            return value;
          }),
        ),
      );
      const { text: all, block } = deflateRuns(runs, () => pick(4) !== 0);
      assert.deepEqual(inflate(block.parts), all, `seed ${seed}`);
      assert.equal(block.crc, zlib.crc32(all), `seed ${seed}`);
    }
  });

  it('writes one label text from another by its quoted parts', () => {
    const edits = (a: string, b: string) => [...editsBetween(Buffer.from(a), Buffer.from(b)).spans];
    const L = LITERAL;
    // node and hostname differ: copy, the differing digit, copy, the differing digit, copy.
    assert.deepEqual(edits('e="x",node="10.0.0.1:1",host="c-1"', 'e="x",node="10.0.0.2:1",host="c-2"'), [19, 0, 1, L, 12, 0, 1, L, 1, 0]);
    // A longer value shifts what follows: its copies have another delta.
    assert.deepEqual(edits('node="10.0.0.9:1",host="c"', 'node="10.0.0.10:1",host="c"'), [13, 0, 2, L, 12, 1]);
    // Quotes in unequal numbers: the start and end they share only.
    assert.deepEqual(edits('a="1",b="2"', 'a="1\\"x",b="2"'), [4, 0, 3, L, 7, 3]);
    assert.deepEqual(edits('same', 'same'), [4, 0]);
    assert.deepEqual(edits('', 'new'), [3, L]);
  });

  it('writes a run by its links, and compares the keys around a missing line', () => {
    const heads = Array.from({ length: 400 }, (_, i) => `m{kind="k${i % 9}",node="n${Math.floor(i / 9)}",`);
    const run = makeRun(heads, 'x="y"', '} ', heads.map((_, i) => (i % 13 === 5 ? null : Buffer.from(String(i * 31)))));
    const deflater = new LineDeflater(64);
    // In parts of 50 lines; the first of each refers to nothing.
    let at = 0;
    for (let first = 0; first < heads.length; first += 50) {
      deflater.run(run.text, at, run.keys, run.valueLengths, first, first + 50);
      for (let k = first; k < first + 50; k++) if (run.valueLengths[k]! >= 0) at += run.keys.table[KEY_FIELDS * k]! + run.valueLengths[k]! + 1;
    }
    const block = deflater.end();
    assert.deepEqual(inflate(block.parts), run.text);
    assert.equal(block.crc, zlib.crc32(run.text));
    assert.equal(block.samples, 400 - 31);
    assert.ok(block.parts[0]!.length < run.text.length / 2, `${block.parts[0]!.length} bytes of ${run.text.length}`);
  });

  it('writes references of every distance class, up to the window', () => {
    const distances = [12, 13, 16, 17, 24, 25, 32, 33, 48, 49, 64, 65, 96, 97, 128, 129, 192, 193, 256, 257, 384, 385, 512, 513, 768, 769];
    for (let d = 1024; d <= MAX_DISTANCE; d *= 2) distances.push(d - 1, d, d + 1, d + d / 2, d + d / 2 + 1);
    const runs = distances.filter((d) => d <= MAX_DISTANCE).map((d) => {
      // Two lines whose second key repeats the first: its reference reaches back d bytes.
      const run = makeRun(['same{', 'same{'], 'k="v"', '} ', [Buffer.alloc(d - 12, 0x37), Buffer.from('1')]);
      return run;
    });
    const { text, block } = deflateRuns(runs, () => false);
    assert.deepEqual(inflate(block.parts), text);
    assert.equal(block.crc, zlib.crc32(text));
    // Each second key (12 bytes) went as a reference of a few bytes, not as literals.
    assert.ok(block.parts[0]!.length < text.length - 6 * runs.length, `${block.parts[0]!.length} bytes of ${text.length}`);
  });

  it('writes literals where a reference would reach past the window or claims more than the keys hold', () => {
    // The run before is more than 32 KB long: its lines are too far back to refer to.
    const far = makeRun(['far_metric{', 'filler{'], 'node="a"', '} ', [Buffer.from('1'), Buffer.from('y'.repeat(MAX_DISTANCE))]);
    const near = makeRun(['far_metric{', 'filler{'], 'node="b"', '} ', [Buffer.from('2'), Buffer.from('z')]);
    const deflater = new LineDeflater();
    deflater.run(far.text, 0, far.keys, far.valueLengths, 0, 2);
    deflater.run(near.text, 0, near.keys, near.valueLengths, 0, 2, far.keys, editsBetween(far.base, near.base));
    // Links that claim more than the keys hold (start and end overlap) are ignored rather than trusted.
    const bogus = makeRun(['abc{', 'abc{'], 'x="1"', '} ', [Buffer.from('5'), Buffer.from('6')]);
    bogus.keys.table[KEY_FIELDS + 2] = 9 * 0x10000 + 9;
    deflater.run(bogus.text, 0, bogus.keys, bogus.valueLengths, 0, 2);
    const text = Buffer.concat([far.text, near.text, bogus.text]);
    const block = deflater.end();
    assert.deepEqual(inflate(block.parts), text);
    assert.equal(block.crc, zlib.crc32(text));
    assert.equal(block.samples, 6);
  });

  it('makes blocks that a gzip body takes like any kept block, and begins anew after end()', () => {
    const deflater = new LineDeflater(16);
    const head = Buffer.from('# HELP m a family\n# TYPE m counter\n');
    deflater.literals(head);
    const runs = Array.from({ length: 100 }, (_, node) =>
      makeRun(Array.from({ length: 30 }, (_, k) => `m{kind="k${k % 7}",`), `node="n${node}"`, '} ', Array.from({ length: 30 }, (_, k) => Buffer.from(String(node * k)))),
    );
    const { text, block } = deflateRuns(runs, (i) => i % 10 !== 0, deflater);
    assert.equal(block.length, head.length + text.length);
    const stream = new GzipStream();
    const body = new ExpositionBuffer(1024, undefined, stream);
    body.text('before 1\n').countSamples(1);
    body.replay('m', block);
    body.text('after 2\n').countSamples(1);
    body.end();
    const expected = Buffer.concat([Buffer.from('before 1\n'), head, text, Buffer.from('after 2\n')]);
    assert.deepEqual(execFileSync('gzip', ['-dc'], { input: stream.end(), maxBuffer: 8 * 1024 * 1024 }), expected);
    assert.equal(body.sampleCount, 3002);
    const empty = deflater.end();
    assert.deepEqual(empty.parts, []);
    assert.equal(empty.length, 0);
    deflater.literals(Buffer.from('x 1\n'), 0, 4, 1);
    const next = deflater.end();
    assert.equal(inflate(next.parts).toString(), 'x 1\n');
    assert.equal(next.samples, 1);
  });

  it('shifts a CRC register by a key as reading the key would', () => {
    const next = random(7);
    for (const length of [0, 1, 3, 17, 100, 257]) {
      const key = Buffer.alloc(length);
      for (let i = 0; i < length; i++) key[i] = Math.floor(next() * 256);
      const before = Buffer.from('some text before');
      const table = crcShift(length);
      const register = ~zlib.crc32(before) | 0;
      const shifted = crcShifted(table, register) ^ crcRegister(key);
      assert.equal(~shifted >>> 0, zlib.crc32(Buffer.concat([before, key])), `length ${length}`);
      assert.equal(crcShift(length), table, 'kept per length');
    }
  });

  it('makes a node\'s key table: length, CRC register, links within a run (none at a run\'s start), head', () => {
    const base = 'node="10.0.0.1:11211"';
    const keys = ['a_total{command="get",', 'a_total{command="set",', 'b{'].map((head) => Buffer.from(`${head}${base}} `));
    const { table, tail } = lineKeys(keys, base.length, 2, [0, 2]);
    assert.equal(tail, 2);
    assert.deepEqual(
      Array.from({ length: 3 }, (_, k) => Array.from(table.subarray(KEY_FIELDS * k, KEY_FIELDS * (k + 1)))),
      keys.map((key, k) => [
        key.length,
        crcRegister(key),
        k === 1 ? sharedEnds(keys[0]!, 0, keys[0]!.length, key, 0, key.length) : 0,
        key.length - base.length - 2,
      ]),
    );
    assert.equal(table[KEY_FIELDS + 2], 17 * 0x10000 + 27, 'key 1 shares `a_total{command="` and `et",node=...} ` with key 0');
  });
});
