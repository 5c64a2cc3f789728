/**
 * Raw deflate of exposition lines whose keys (`name{labels} `) repeat, without searching for the
 * repeats. A 100-node /metrics body is 2.2 MB of text and most of it is label text the writer
 * already knows to repeat: a node's key is the same key of the node before with other node
 * labels, or the line before with another `command` label. zlib finds those repeats by hashing and
 * comparing every byte (level 1: ~5 ms a scrape on two slow cores, the largest part of a scrape's
 * own CPU). Here the caller describes a node's lines of a family (a run: LineKeys, made once per
 * node) and how its node labels differ from the node before's (KeyEdits, once per pair of nodes),
 * and the encoder writes each key as back-references with the differing bytes as literals, and
 * the value as literals, in the fixed Huffman codes of RFC 1951: no search, no tree to build. The
 * output is about twice zlib's size for about half its time (bench/core/line-deflate.mjs).
 *
 * The CRC-32 of the text is kept without reading the keys either: the CRC register is linear, so
 * a key's effect on it is its own register (computed once per key, crcRegister) and a shift of
 * the register by the key's length (a table per length, crcShift).
 */
import type { DeflatedBlock } from './exposition.js';

/** Longest back-reference distance of deflate (a 32 KB window). */
export const MAX_DISTANCE = 32768;
const MIN_MATCH = 3;
const MAX_MATCH = 258;

/** Code `code` of `bits` bits, reversed (deflate writes Huffman codes from their top bit). */
function reversed(code: number, bits: number): number {
  let r = 0;
  for (let i = 0; i < bits; i++) {
    r = (r << 1) | (code & 1);
    code >>>= 1;
  }
  return r;
}

// The fixed literal/length codes (RFC 1951, 3.2.6): 0-143 8 bits, 144-255 9, 256-279 7, 280-287 8.
const LITERAL_CODE = new Int32Array(288);
const LITERAL_BITS = new Uint8Array(288);
for (let symbol = 0; symbol < 288; symbol++) {
  const [base, first, bits] = symbol < 144 ? [0x30, 0, 8] : symbol < 256 ? [0x190, 144, 9] : symbol < 280 ? [0, 256, 7] : [0xc0, 280, 8];
  LITERAL_CODE[symbol] = reversed(base + symbol - first, bits);
  LITERAL_BITS[symbol] = bits;
}
const END_OF_BLOCK = 256;

const LENGTH_BASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
const LENGTH_EXTRA = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];

/** Per match length 3..258: its code and extra bits, as written (code first), and their count. */
const LENGTH_CODE = new Int32Array(MAX_MATCH + 1);
const LENGTH_BITS = new Uint8Array(MAX_MATCH + 1);
for (let length = MIN_MATCH; length <= MAX_MATCH; length++) {
  let index = LENGTH_BASE.length - 1;
  while (LENGTH_BASE[index]! > length) index--;
  const symbol = 257 + index;
  LENGTH_CODE[length] = LITERAL_CODE[symbol]! | ((length - LENGTH_BASE[index]!) << LITERAL_BITS[symbol]!);
  LENGTH_BITS[length] = LITERAL_BITS[symbol]! + LENGTH_EXTRA[index]!;
}
/** The 30 distance codes, reversed (5 bits each). */
const DISTANCE_SYMBOL = Int32Array.from({ length: 30 }, (_, code) => reversed(code, 5));

/**
 * A distance's code and extra bits as written (code first), for 1..32768: computed rather than
 * looked up (a table of every distance is 160 KB, and missed the cache in a scrape).
 */
function distanceCode(distance: number): number {
  if (distance <= 4) return DISTANCE_SYMBOL[distance - 1]!;
  const d = distance - 1;
  const top = 31 - Math.clz32(d); // 2..14
  const code = 2 * top + ((d >>> (top - 1)) & 1);
  return DISTANCE_SYMBOL[code]! | ((d & ((1 << (top - 1)) - 1)) << 5);
}

/** How many bits distanceCode(distance) has. */
function distanceBits(distance: number): number {
  return distance <= 4 ? 5 : 4 + (31 - Math.clz32(distance - 1));
}

/** CRC-32 (zlib's: reflected polynomial 0xedb88320), one byte at a time. */
const CRC_TABLE = new Int32Array(256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  CRC_TABLE[n] = c;
}

/**
 * The CRC register after `bytes` [start, end) from a register of 0 (no inversions): with
 * crcShift, what a key does to any register. Computed once per key.
 */
export function crcRegister(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let register = 0;
  for (let i = start; i < end; i++) register = CRC_TABLE[(register ^ bytes[i]!) & 0xff]! ^ (register >>> 8);
  return register;
}

const SHIFT_TABLES: Array<Int32Array | undefined> = [];

/**
 * What `length` bytes of zeros do to a CRC register, as eight 16-entry tables (one per 4 bits of
 * the register; the register is linear in its bits): register' = t[r & 15] ^ t[16 + (r >>> 4 &
 * 15)] ^ ... ^ t[112 + (r >>> 28)] (crcShifted). A register after a key K of that length is then its
 * shift XOR crcRegister(K). Made once per length and kept: 512 bytes each, so that the few dozen
 * lengths of a body's keys stay in the CPU's cache.
 */
export function crcShift(length: number): Int32Array {
  let table = SHIFT_TABLES[length];
  if (table !== undefined) return table;
  // The image of each of the 32 register bits, then every nibble value from its bits.
  const images = new Int32Array(32);
  for (let bit = 0; bit < 32; bit++) {
    let register = 1 << bit;
    for (let n = 0; n < length; n++) register = CRC_TABLE[register & 0xff]! ^ (register >>> 8);
    images[bit] = register;
  }
  table = new Int32Array(128);
  for (let nibble = 0; nibble < 8; nibble++) {
    for (let value = 1; value < 16; value++) {
      const low = value & -value;
      table[nibble * 16 + value] = table[nibble * 16 + (value ^ low)]! ^ images[nibble * 4 + 31 - Math.clz32(low)]!;
    }
  }
  SHIFT_TABLES[length] = table;
  return table;
}

/** A CRC register moved by a crcShift table. */
export function crcShifted(shift: Int32Array, r: number): number {
  return (
    shift[r & 15]! ^
    shift[16 + ((r >>> 4) & 15)]! ^
    shift[32 + ((r >>> 8) & 15)]! ^
    shift[48 + ((r >>> 12) & 15)]! ^
    shift[64 + ((r >>> 16) & 15)]! ^
    shift[80 + ((r >>> 20) & 15)]! ^
    shift[96 + ((r >>> 24) & 15)]! ^
    shift[112 + (r >>> 28)]!
  );
}

/**
 * A run's keys (LineDeflater.run), made once per node: per line k, at table[KEY_FIELDS * k ..]:
 * its key's length, its crcRegister, what it shares with key k - 1 (links: start * 0x10000 + end,
 * 0 for a run's first line), and its head. Keys of several runs (nodes) differ in one part only
 * (the node labels): the head is the bytes before that part, `tail` the bytes after it (the same
 * for every k). One array per node: at 500 nodes of ~175 lines, five arrays a node were ~1 MB more.
 */
export interface LineKeys {
  readonly table: Int32Array;
  readonly tail: number;
}

/** Int32s per line in LineKeys.table: length, register, links, head. */
export const KEY_FIELDS = 4;

/**
 * The LineKeys of `keys` (key k's bytes at k), each its head, a varying part of `varyingLength`
 * bytes (the node labels) and a tail of `tailLength` bytes. Keys k - 1 and k are linked unless a
 * run starts at k (`runStarts`, ascending: the k where each family's lines start). Made once per
 * node; the CRC shift tables of the keys' lengths are made too, so that a scrape makes none.
 */
export function lineKeys(keys: readonly Uint8Array[], varyingLength: number, tailLength: number, runStarts: ArrayLike<number> = [0]): LineKeys {
  const table = new Int32Array(keys.length * KEY_FIELDS);
  let nextStart = 0;
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k]!;
    const at = KEY_FIELDS * k;
    table[at] = key.length;
    table[at + 1] = crcRegister(key);
    crcShift(key.length);
    while (nextStart < runStarts.length && runStarts[nextStart]! < k) nextStart++;
    const startsRun = nextStart < runStarts.length && runStarts[nextStart] === k;
    if (k > 0 && !startsRun) table[at + 2] = sharedEnds(keys[k - 1]!, 0, keys[k - 1]!.length, key, 0, key.length);
    table[at + 3] = key.length - varyingLength - tailLength;
  }
  return { table, tail: tailLength };
}

/**
 * Bytes two keys share at their start and at their end, no more than the shorter one holds in all,
 * as start * 0x10000 + end, each at most 0xffff.
 */
export function sharedEnds(a: Uint8Array, aStart: number, aLength: number, b: Uint8Array, bStart: number, bLength: number): number {
  const most = Math.min(aLength, bLength, 0xffff);
  let prefix = 0;
  while (prefix < most && a[aStart + prefix] === b[bStart + prefix]) prefix++;
  let suffix = 0;
  const aEnd = aStart + aLength - 1;
  const bEnd = bStart + bLength - 1;
  while (suffix < most - prefix && a[aEnd - suffix] === b[bEnd - suffix]) suffix++;
  return prefix * 0x10000 + suffix;
}

/** The delta of a literal span in edits (editsBetween). */
export const LITERAL = -0x80000000;

/**
 * How one key's varying part (`b`) is written from another's (`a`), for LineDeflater.run: `spans`,
 * b's spans in order as pairs (length, delta): delta LITERAL, b's bytes as they are; else a copy of
 * the bytes of `a` at (position in b) - delta. The literal spans' bytes are packed as fixed codes
 * once (`codes`: pairs (code, bits), at most 16 bits each; span j's at codeStarts[j] ..
 * codeStarts[j + 1]), since every key of a run holds the same `b`.
 */
export interface KeyEdits {
  readonly spans: Int32Array;
  /** b's length: the sum of the spans. */
  readonly length: number;
  readonly codes: Int32Array;
  readonly codeStarts: Int32Array;
}

/**
 * The KeyEdits of `b` against `a` (their spans as described there). For label texts
 * (`ensemble="e",node="10.0.0.1:11211",...`), which differ in a few label values: when both have as
 * many quotes, the texts between quotes are paired, and each pair shares its start and end; else
 * the two texts share their start and end only. Once per pair of nodes, not per line.
 */
export function editsBetween(a: Uint8Array, b: Uint8Array): KeyEdits {
  const quotesA: number[] = [];
  const quotesB: number[] = [];
  for (let i = 0; i < a.length; i++) if (a[i] === QUOTE) quotesA.push(i);
  for (let i = 0; i < b.length; i++) if (b[i] === QUOTE) quotesB.push(i);
  const spans: number[] = [];
  const add = (length: number, delta: number): void => {
    if (length === 0) return;
    const n = spans.length;
    // Joined with the span before when of the same kind and delta.
    if (n > 0 && spans[n - 1] === delta) spans[n - 2]! += length;
    else spans.push(length, delta);
  };
  /** Segment [startA, endA) of a against [startB, endB) of b: shared start, the rest, shared end. */
  const pair = (startA: number, endA: number, startB: number, endB: number): void => {
    const shared = sharedEnds(a, startA, endA - startA, b, startB, endB - startB);
    const prefix = Math.floor(shared / 0x10000);
    const suffix = shared % 0x10000;
    add(prefix, startB - startA);
    add(endB - startB - prefix - suffix, LITERAL);
    add(suffix, endB - endA);
  };
  if (quotesA.length !== quotesB.length) {
    pair(0, a.length, 0, b.length);
  } else {
    let startA = 0;
    let startB = 0;
    for (let q = 0; q < quotesA.length; q++) {
      pair(startA, quotesA[q]!, startB, quotesB[q]!);
      add(1, quotesB[q]! - quotesA[q]!);
      startA = quotesA[q]! + 1;
      startB = quotesB[q]! + 1;
    }
    pair(startA, a.length, startB, b.length);
  }
  const codes: number[] = [];
  const codeStarts = new Int32Array(spans.length / 2 + 1);
  for (let j = 0, position = 0; j < spans.length / 2; j++) {
    const length = spans[2 * j]!;
    if (spans[2 * j + 1] === LITERAL) {
      // Two 8-bit codes to a pair; a 9-bit one (bytes 144-255) alone.
      for (let i = position, end = position + length; i < end; ) {
        let code = LITERAL_CODE[b[i]!]!;
        let bits = LITERAL_BITS[b[i++]!]!;
        if (i < end && bits + LITERAL_BITS[b[i]!]! <= 16) {
          code |= LITERAL_CODE[b[i]!]! << bits;
          bits += LITERAL_BITS[b[i++]!]!;
        }
        codes.push(code, bits);
      }
    }
    position += length;
    codeStarts[j + 1] = codes.length;
  }
  return { spans: Int32Array.from(spans), length: b.length, codes: Int32Array.from(codes), codeStarts };
}

const QUOTE = 0x22;

/**
 * One block of lines, deflated with fixed codes as the caller describes the repeats (run()), and
 * text as literals (literals()). The block ends byte-aligned on a sync flush (end()), as zlib's
 * blocks do, so it stands anywhere in a deflate stream (DeflatedBlock). Its output buffer is kept
 * from one block to the next, and a block's bytes move to parts of their own whenever it is full:
 * a deflater holds that buffer (32 KB) however large its blocks.
 */
export class LineDeflater {
  #out: Buffer;
  readonly #size: number;
  /** The block's output moved out of #out so far (#spill). */
  #parts: Buffer[] = [];
  #at = 0;
  /** Bits not yet written out (fewer than 8 between calls) and their count. */
  #bits = 0;
  #count = 0;
  /** Text bytes in the block so far, its CRC register, and its sample lines. */
  #length = 0;
  #register = -1;
  #samples = 0;
  /** A key's spans (run()), kept. */
  #spans = new Int32Array(16);
  /** The keys and lines of the last run, and where its lines started in the text (by k); the other array, for the next run. */
  #lastKeys: LineKeys | undefined;
  #lastFirst = 0;
  #lastLast = 0;
  #starts = new Int32Array(256);
  #spare = new Int32Array(256);

  /** `size`: bytes of the output buffer, the most a block holds before its bytes are moved to a part. */
  constructor(size = 32 * 1024) {
    this.#size = Math.max(1024, size);
    this.#out = Buffer.allocUnsafeSlow(this.#size);
    this.begin();
  }

  /** Starts a block; what was written since the last begin() is dropped. */
  begin(): void {
    this.#at = 0;
    this.#parts = [];
    this.#lastKeys = undefined;
    // BFINAL 0, BTYPE 01 (fixed codes), from the lowest bit.
    this.#bits = 0b010;
    this.#count = 3;
    this.#length = 0;
    this.#register = -1;
    this.#samples = 0;
  }

  /** Text bytes in the block so far: where the next byte will be, for distances. */
  get length(): number {
    return this.#length;
  }

  /** Bytes [start, end) of `text` as literals (a family's HELP and TYPE lines, say). */
  literals(text: Uint8Array, start = 0, end = text.length, samples = 0): void {
    this.#reserve(end - start);
    let register = this.#register;
    for (let i = start; i < end; i++) register = CRC_TABLE[(register ^ text[i]!) & 0xff]! ^ (register >>> 8);
    this.#register = register;
    this.#literals(text, start, end);
    this.#length += end - start;
    this.#samples += samples;
  }

  /**
   * A run of sample lines (a node's lines of one family): lines k = first .. last - 1 of `keys`,
   * one after the other from `text[at]`, line k being its key (LineKeys), a value of
   * valueLengths[k] bytes and a newline (no line when valueLengths[k] < 0). Each key is written
   * from an earlier key, its repeated bytes as back-references (3 bytes or more), the rest as
   * literals:
   * - with `ref` (the keys of the run written just before in this block, lines first .. last - 1
   *   too, which are these but for the varying part) and `edits` (editsBetween of its varying part
   *   and this run's), from key k of that run: its head, then the edits, then keys.tail bytes;
   * - else (or when that run had no line k, or it is too far back, or ref is not the keys of the
   *   run just before), from the key of the line before: its links when that is line k - 1, what
   *   the two keys share when a line between is missing;
   * - a first line with neither, as literals.
   * The caller vouches for the bytes being the same: they are not checked.
   */
  run(text: Uint8Array, at: number, keys: LineKeys, valueLengths: Int32Array, first: number, last: number, ref?: LineKeys, edits?: KeyEdits): void {
    const { table, tail } = keys;
    const refTable = ref?.table;
    // Where the lines of the run just before started (by k), if `ref` is its keys; this run's, for the next.
    const refStarts = ref !== undefined && ref === this.#lastKeys && first === this.#lastFirst && last === this.#lastLast ? this.#starts : undefined;
    if (this.#spare.length < last) this.#spare = new Int32Array(Math.max(last, 2 * this.#spare.length));
    const starts = this.#spare;
    this.#spare = this.#starts;
    this.#starts = starts;
    this.#lastKeys = keys;
    this.#lastFirst = first;
    this.#lastLast = last;
    const editSpans = edits?.spans;
    const editCount = editSpans === undefined ? 0 : editSpans.length;
    const editsLength = edits === undefined ? -1 : edits.length;
    const codes = edits?.codes;
    const codeStarts = edits?.codeStarts;
    // A key's spans, triples (length, distance, edit): distance 0: literals, written byte by byte
    // (edit -1) or as the packed codes of literal edit `edit`. Room for the edits and 3 more.
    const spanRoom = 3 * (editCount / 2 + 4);
    if (this.#spans.length < spanRoom) this.#spans = new Int32Array(spanRoom);
    const spans = this.#spans;
    // The bit writer's state, in locals for the loop (stored back at the end). Codes of at most 16
    // bits are added while fewer than 16 bits wait, and 16 bits are written out once there are.
    // The writer is written out where each kind of code is made, on purpose: gathering a line's
    // codes first and writing them in one loop took 1.6 times as long (bench/core/line-deflate.mjs).
    let out = this.#out;
    let o = this.#at;
    let bits = this.#bits;
    let count = this.#count;
    let register = this.#register;
    let length = this.#length;
    let samples = 0;
    let lastK = -1;
    let lastKeyLength = 0;
    let lastLineLength = 0;
    for (let k = first; k < last; k++) {
      const valueLength = valueLengths[k]!;
      if (valueLength < 0) {
        starts[k] = -1;
        continue;
      }
      const keyLength = table[KEY_FIELDS * k]!;
      const head = table[KEY_FIELDS * k + 3]!;
      const lineLength = keyLength + valueLength + 1;
      if (o + ((lineLength * 9) >>> 3) + 16 > out.length) {
        this.#at = o;
        this.#reserve(lineLength);
        out = this.#out;
        o = this.#at;
      }
      starts[k] = length;
      // The key's spans.
      let n = 0;
      const refStart = refStarts === undefined ? -1 : refStarts[k]!;
      if (refStart >= 0 && length - refStart <= MAX_DISTANCE && head + editsLength + tail === keyLength) {
        // From the same key of the run before: its head, the varying part by the edits, its tail.
        const distance = length - refStart;
        spans[n++] = head;
        spans[n++] = distance;
        spans[n++] = -1;
        for (let e = 0; e < editCount; e += 2) {
          const editLength = editSpans![e]!;
          const delta = editSpans![e + 1]!;
          if (delta === LITERAL) {
            spans[n++] = editLength;
            spans[n++] = 0;
            spans[n++] = e >> 1;
          } else if (spans[n - 1] === -1 && spans[n - 2] === distance + delta) {
            // A copy at the same distance as the copy before: one reference.
            spans[n - 3] += editLength;
          } else {
            spans[n++] = editLength;
            spans[n++] = distance + delta;
            spans[n++] = -1;
          }
        }
        const tailDistance = distance + keyLength - refTable![KEY_FIELDS * k]!;
        if (spans[n - 1] === -1 && spans[n - 2] === tailDistance) {
          spans[n - 3] += tail;
        } else {
          spans[n++] = tail;
          spans[n++] = tailDistance;
          spans[n++] = -1;
        }
      } else if (lastK >= 0) {
        // From the key of the line before: what they share at the start and the end.
        let prefix: number;
        let suffix: number;
        if (lastK === k - 1) {
          const links = table[KEY_FIELDS * k + 2]!;
          prefix = links >>> 16;
          suffix = links & 0xffff;
        } else {
          const shared = sharedEnds(text, at - lastLineLength, lastKeyLength, text, at, keyLength);
          prefix = Math.floor(shared / 0x10000);
          suffix = shared % 0x10000;
        }
        if (prefix + suffix > keyLength || prefix + suffix > lastKeyLength) prefix = suffix = 0;
        spans[n++] = prefix;
        spans[n++] = lastLineLength;
        spans[n++] = -1;
        spans[n++] = keyLength - prefix - suffix;
        spans[n++] = 0;
        spans[n++] = -1;
        spans[n++] = suffix;
        spans[n++] = lastLineLength + keyLength - lastKeyLength;
        spans[n++] = -1;
      } else {
        spans[n++] = keyLength;
        spans[n++] = 0;
        spans[n++] = -1;
      }
      // The spans as back-references, or as literals (those shorter than 3 or out of the window too).
      let position = at;
      for (let s = 0; s < n; s += 3) {
        let spanLength = spans[s]!;
        const distance = spans[s + 1]!;
        if (spanLength === 0) continue;
        if (distance === 0 || spanLength < MIN_MATCH || distance > MAX_DISTANCE || distance < 0) {
          const edit = spans[s + 2]!;
          if (edit >= 0) {
            // A literal edit: its codes, packed once.
            for (let c = codeStarts![edit]!, end = codeStarts![edit + 1]!; c < end; c += 2) {
              bits |= codes![c]! << count;
              count += codes![c + 1]!;
              if (count >= 16) {
                out[o++] = bits;
                out[o++] = bits >>> 8;
                bits >>>= 16;
                count -= 16;
              }
            }
            position += spanLength;
            continue;
          }
          for (const end = position + spanLength; position < end; position++) {
            const byte = text[position]!;
            bits |= LITERAL_CODE[byte]! << count;
            count += LITERAL_BITS[byte]!;
            if (count >= 16) {
              out[o++] = bits;
              out[o++] = bits >>> 8;
              bits >>>= 16;
              count -= 16;
            }
          }
          continue;
        }
        position += spanLength;
        while (spanLength > 0) {
          // At most 258 a reference, and never a rest shorter than 3.
          const piece = spanLength <= MAX_MATCH ? spanLength : spanLength - MAX_MATCH < MIN_MATCH ? spanLength - MIN_MATCH : MAX_MATCH;
          bits |= LENGTH_CODE[piece]! << count;
          count += LENGTH_BITS[piece]!;
          // A distance's code and extra bits are up to 18: fewer than 8 bits may wait before them.
          while (count >= 8) {
            out[o++] = bits;
            bits >>>= 8;
            count -= 8;
          }
          bits |= distanceCode(distance) << count;
          count += distanceBits(distance);
          if (count >= 16) {
            out[o++] = bits;
            out[o++] = bits >>> 8;
            bits >>>= 16;
            count -= 16;
          }
          spanLength -= piece;
        }
      }
      // The CRC register moved over the key without reading it; then the value and the newline,
      // as literals and into the register.
      register = crcShifted(SHIFT_TABLES[keyLength] ?? crcShift(keyLength), register) ^ table[KEY_FIELDS * k + 1]!;
      for (const end = at + lineLength; position < end; position++) {
        const byte = text[position]!;
        register = CRC_TABLE[(register ^ byte) & 0xff]! ^ (register >>> 8);
        bits |= LITERAL_CODE[byte]! << count;
        count += LITERAL_BITS[byte]!;
        if (count >= 16) {
          out[o++] = bits;
          out[o++] = bits >>> 8;
          bits >>>= 16;
          count -= 16;
        }
      }
      length += lineLength;
      samples++;
      lastK = k;
      lastKeyLength = keyLength;
      lastLineLength = lineLength;
      at += lineLength;
    }
    this.#at = o;
    this.#bits = bits;
    this.#count = count;
    this.#register = register;
    this.#length = length;
    this.#samples += samples;
  }

  /** The block of everything written since begin(), ending on a sync flush; then begins anew. */
  end(): DeflatedBlock {
    if (this.#length === 0) {
      const empty: DeflatedBlock = { parts: [], crc: 0, length: 0, samples: this.#samples };
      this.begin();
      return empty;
    }
    this.#reserve(0);
    // End of block, then an empty stored block (3 header bits, aligned, LEN 0, NLEN 0xffff): zlib's sync flush.
    this.#put(LITERAL_CODE[END_OF_BLOCK]!, LITERAL_BITS[END_OF_BLOCK]!);
    this.#put(0, 3);
    const out = this.#out;
    let at = this.#at;
    if (this.#count > 0) out[at++] = this.#bits & 0xff;
    out[at++] = 0;
    out[at++] = 0;
    out[at++] = 0xff;
    out[at++] = 0xff;
    this.#at = at;
    this.#spill();
    const block: DeflatedBlock = { parts: this.#parts, crc: ~this.#register >>> 0, length: this.#length, samples: this.#samples };
    if (out.length > this.#size) this.#out = Buffer.allocUnsafeSlow(this.#size);
    this.begin();
    return block;
  }

  #put(code: number, bits: number): void {
    let value = this.#bits | (code << this.#count);
    let count = this.#count + bits;
    const out = this.#out;
    let at = this.#at;
    while (count >= 8) {
      out[at++] = value & 0xff;
      value >>>= 8;
      count -= 8;
    }
    this.#at = at;
    this.#bits = value;
    this.#count = count;
  }

  /** Bytes as literals, one #put each: for family heads, a few hundred bytes a block. */
  #literals(text: Uint8Array, start: number, end: number): void {
    for (let i = start; i < end; i++) this.#put(LITERAL_CODE[text[i]!]!, LITERAL_BITS[text[i]!]!);
  }

  /** Room for `textBytes` more bytes as literals (9 bits each at most) and a block's end. */
  #reserve(textBytes: number): void {
    const room = ((textBytes * 9) >>> 3) + 16;
    if (this.#at + room <= this.#out.length) return;
    // The whole bytes so far become a part of the block (the bits of a byte not yet whole wait
    // in #bits): the output buffer stays small, however large the block.
    this.#spill();
    if (room <= this.#out.length) return;
    // One text larger than the buffer: a buffer of its own, until end().
    this.#out = Buffer.allocUnsafeSlow(room);
  }

  /** The output bytes so far to a part of their own, in memory of its own (kept blocks outlive the buffer's next use). */
  #spill(): void {
    if (this.#at === 0) return;
    const part = Buffer.allocUnsafeSlow(this.#at);
    this.#out.copy(part, 0, 0, this.#at);
    this.#parts.push(part);
    this.#at = 0;
  }
}
