/**
 * Prometheus text exposition format 0.0.4. This is the hot path of every scrape (tens of
 * thousands of samples every 5 s), so label sets are rendered once by the caller and the writer
 * only concatenates.
 */
import * as zlib from 'node:zlib';
import { constants, deflateRawSync, gunzipSync, gzipSync } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CachemonError, Errors } from './errors.js';

export type MetricType = 'counter' | 'gauge' | 'untyped' | 'histogram' | 'summary';

export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_VALUE_SPECIAL = /[\\"\n]/;
const HELP_SPECIAL = /[\\\n]/;

export function escapeLabelValue(value: string): string {
  if (!LABEL_VALUE_SPECIAL.test(value)) return value;
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

export function escapeHelp(help: string): string {
  if (!HELP_SPECIAL.test(help)) return help;
  return help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/**
 * A sample value as the exposition format writes it: `+Inf`, `-Inf`, `NaN`, else JS's shortest
 * round-trip form (integers as digits). Through JSON.stringify, which writes the same text as
 * String() for a finite number without V8's number-to-string cache: String() leaves each result
 * referenced from that cache, and at a scrape's few hundred conversions a second an entry stays
 * for tens of seconds, so every duration and latency text outlived two young-generation
 * collections and went to the old generation, to be freed only by a full collection (a third of
 * what the cache exporter promoted; bench/cache-exporter README).
 */
export function formatValue(value: number): string {
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  if (value !== value) return 'NaN';
  return JSON.stringify(value);
}

/** `{a="x",b="y"}` in insertion order, or '' for no labels. */
export function renderLabels(labels: Readonly<Record<string, string>>): string {
  let out = '';
  for (const name in labels) {
    if (!LABEL_NAME.test(name)) throw new CachemonError(Errors.INTERNAL, `invalid label name "${name}"`);
    out += `${out === '' ? '{' : ','}${name}="${escapeLabelValue(labels[name] as string)}"`;
  }
  return out === '' ? '' : `${out}}`;
}

/**
 * The HELP (unless `help` is empty) and TYPE lines that start a family, as ExpositionBuffer and
 * ExpositionWriter write them. Throws for an invalid metric name.
 */
export function familyHead(name: string, type: MetricType, help: string): string {
  if (!METRIC_NAME.test(name)) throw new CachemonError(Errors.INTERNAL, `invalid metric name "${name}"`);
  return `${help === '' ? '' : `# HELP ${name} ${escapeHelp(help)}\n`}# TYPE ${name} ${type}\n`;
}

export class ExpositionWriter {
  readonly #parts: string[] = [];
  readonly #families = new Set<string>();
  #current: string | undefined;
  #samples = 0;

  /** Starts a metric family; a repeated name throws, since scrapers reject duplicate families. */
  family(name: string, type: MetricType, help: string): this {
    if (this.#families.has(name)) throw new CachemonError(Errors.INTERNAL, `metric family "${name}" written twice`);
    this.#parts.push(familyHead(name, type, help));
    this.#families.add(name);
    this.#current = name;
    return this;
  }

  /**
   * One sample of the current family. `labelText` comes from renderLabels (cache it per label set);
   * `suffix` is for histogram and summary series (`_bucket`, `_sum`, `_count`).
   */
  sample(labelText: string, value: number, suffix = ''): this {
    if (this.#current === undefined) throw new CachemonError(Errors.INTERNAL, 'sample written before any family');
    this.#parts.push(`${this.#current}${suffix}${labelText} ${formatValue(value)}\n`);
    this.#samples++;
    return this;
  }

  get sampleCount(): number {
    return this.#samples;
  }

  toString(): string {
    return this.#parts.join('');
  }
}

/**
 * Level 1: exposition text is so repetitive that the fastest level already shrinks it ~25x
 * (level 6: ~28x) at a quarter of the CPU (2 MB: ~2.5 ms instead of ~10 ms). A scrape is latency-
 * and CPU-bound on the exporter's machine, not bandwidth-bound on loopback or a LAN.
 */
const GZIP_LEVEL = constants.Z_BEST_SPEED;

/**
 * gzip of an exposition body, on this thread. Measured side by side with the cache exporter
 * benchmark (100 nodes, 2.2 MB bodies, two cores): the thread pool's gzip took as long at the
 * median and much longer at p99, and deflating parts at once on the pool and here (pigz-style)
 * gained under 1 ms at the median while its zlib streams' memory made V8 collect the old
 * generation three times as often; p99 was worst of the three. Blocking the event loop for the
 * ~2.5 ms per 2 MB it takes is the cheaper cost.
 */
export function gzipBody(body: Buffer): Buffer {
  const stream = crc32 === undefined ? undefined : keptStream();
  if (stream === undefined) return gzipSync(body, { level: GZIP_LEVEL });
  // On the kept zlib stream (see KeptDeflateStream): no zlib state and output buffers made and
  // dropped for every body.
  stream.reset();
  stream.write(body, constants.Z_FINISH);
  return stream.gzipMember(crc32!(body), body.length);
}

/** zlib.crc32 (Node 20.15 and later); without it GzipStream gzips the whole body at end(). */
const crc32 = (zlib as { crc32?: (data: Uint8Array, value?: number) => number }).crc32;

/** The CRC-32 polynomial, reflected, as zlib has it. */
const CRC_POLY = 0xedb88320;

/** a(x) * b(x) modulo the CRC polynomial (zlib's multmodp). */
function multModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if ((a & m) !== 0) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = (b & 1) !== 0 ? (b >>> 1) ^ CRC_POLY : b >>> 1;
  }
  return p >>> 0;
}

/** x^(2^k) modulo the polynomial, k = 0..31. */
const X2N = ((): Uint32Array => {
  const table = new Uint32Array(32);
  let p = 0x40000000; // x^1
  table[0] = p;
  for (let n = 1; n < 32; n++) table[n] = p = multModP(p, p);
  return table;
})();

/**
 * The CRC-32 of A followed by B, from the CRC-32 of A, that of B and B's length (zlib's
 * crc32_combine): a block kept from an earlier body joins the new body's CRC without being read.
 */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  // x^(8 * lengthB) mod p: lengthB's bits, each doubling the power (k starts at 3 for the 8).
  let power = 0x80000000; // x^0
  let k = 3;
  for (let n = lengthB; n > 0; n = Math.floor(n / 2), k++) {
    if (n % 2 === 1) power = multModP(X2N[k & 31]!, power);
  }
  return (multModP(power, crcA >>> 0) ^ crcB) >>> 0;
}

/** A gzip member header: deflate, no name or time, unknown OS. */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
/** The last block: empty, final, fixed codes (what zlib writes at Z_FINISH after a flush). */
const FINAL_EMPTY_BLOCK = [0x03, 0x00] as const;

/** A gzip member's trailer, at `at` of `member`: the data's CRC-32 and its size modulo 2^32. */
function writeGzipTrailer(member: Buffer, at: number, crc: number, size: number): void {
  member.writeUInt32LE(crc >>> 0, at);
  member.writeUInt32LE(size % 2 ** 32, at + 4);
}

/**
 * A run of a body deflated on its own: raw deflate parts, each ending on a sync flush and using no
 * history from before it, so it can stand anywhere in a deflate stream, and the CRC-32 and length
 * of the bytes it holds. What the writer of a body keeps to send an unchanged block again
 * without compressing it (ExpositionBuffer.replay).
 */
export interface DeflatedBlock {
  readonly parts: readonly Buffer[];
  readonly crc: number;
  readonly length: number;
  /** Sample lines in it. */
  readonly samples: number;
}

/**
 * The part of Node's zlib binding that compresses synchronously into a given buffer (what
 * `zlib.deflateRawSync` uses inside): write(flush, in, inOff, inLen, out, outOff, outLen), after
 * which the stream's write state holds [avail_out, avail_in].
 */
interface ZlibHandle {
  writeSync(flush: number, input: Uint8Array, inOff: number, inLen: number, out: Uint8Array, outOff: number, outLen: number): void;
  reset(): void;
}

/**
 * One raw deflate stream kept for as long as its owner lives, driven synchronously through the
 * stream's internal handle (what `zlib.deflateRawSync` does inside), its output gathered in one
 * kept buffer and copied out at its exact size. `deflateRawSync` makes a zlib stream (~270 KB of
 * state) and a 16 KB or larger output buffer for every call and throws them away; those buffers
 * live outside V8's heap and are freed only by a garbage collection. At 100 nodes a scrape
 * deflates ~60 family blocks, and the ~1.5 MB each scrape left behind made V8 run a full
 * collection every ~4 s of scraping, whose incremental marking steps (up to 8 ms) landed in
 * scrapes; with kept streams, one every ~15 s. Where a Node's zlib stream has no handle of the
 * shape expected, create() returns undefined and the caller uses `deflateRawSync`.
 */
class KeptDeflateStream {
  readonly #stream: zlib.DeflateRaw;
  readonly #handle: ZlibHandle;
  readonly #state: Uint32Array;
  #out = Buffer.allocUnsafeSlow(64 * 1024);
  /** Output bytes gathered in #out since reset(). */
  #used = 0;

  private constructor(stream: zlib.DeflateRaw, handle: ZlibHandle, state: Uint32Array) {
    this.#stream = stream;
    this.#handle = handle;
    this.#state = state;
    // The error is read from the stream where the failure is noticed (#check); emitted a tick
    // later, unheard, it would end the process.
    stream.on('error', () => undefined);
  }

  /**
   * Throws when zlib failed in the last call. Node then destroys the stream (and closes its handle)
   * at once but emits 'error' only on the next tick, and leaves the write state of the call before:
   * carrying on would read made-up lengths, or call into the closed handle, which aborts.
   */
  #check(): void {
    if (!this.#stream.destroyed) return;
    const cause = this.#stream.errored ?? undefined;
    throw new CachemonError(Errors.INTERNAL, `zlib failed: ${cause?.message ?? 'stream destroyed'}`, { cause });
  }

  /**
   * A kept stream, or undefined where the zlib binding is not as expected. `memLevel`: zlib's (1-9,
   * default 8); it also sets how many symbols zlib gathers before it encodes them as a block.
   */
  static create(memLevel = 8): KeptDeflateStream | undefined {
    // chunkSize 64 (the least): the stream's own output buffer is never used.
    const stream = zlib.createDeflateRaw({ level: GZIP_LEVEL, memLevel, chunkSize: 64 });
    const internals = stream as unknown as { _handle?: Partial<ZlibHandle>; _writeState?: unknown };
    const handle = internals._handle;
    const state = internals._writeState;
    if (typeof handle?.writeSync !== 'function' || typeof handle.reset !== 'function' || !(state instanceof Uint32Array) || state.length < 2) {
      stream.close();
      return undefined;
    }
    return new KeptDeflateStream(stream, handle as ZlibHandle, state);
  }

  /** True once zlib failed (Node destroys the stream at once): of no further use. */
  get broken(): boolean {
    return this.#stream.destroyed;
  }

  /** Starts a new raw deflate stream, with no history; output gathered so far is dropped. */
  reset(): void {
    this.#check();
    this.#handle.reset();
    this.#check();
    this.#used = 0;
  }

  /**
   * Compresses `piece` (Z_NO_FLUSH: zlib may hold back its last bytes), then flushes (Z_SYNC_FLUSH)
   * or finishes the stream (Z_FINISH) when `flush` says so.
   */
  write(piece: Uint8Array, flush: number): void {
    this.#check();
    let out = this.#out;
    let inOff = 0;
    let inLen = piece.length;
    for (;;) {
      this.#handle.writeSync(flush, piece, inOff, inLen, out, this.#used, out.length - this.#used);
      this.#check();
      const availOut = this.#state[0]!;
      const availIn = this.#state[1]!;
      this.#used = out.length - availOut;
      inOff += inLen - availIn;
      inLen = availIn;
      // zlib has done all it can when it leaves output space unused; with none left, it may have
      // more to write (the rest of a flush, say), and is called again with more room.
      if (availOut !== 0) break;
      const grown = Buffer.allocUnsafeSlow(out.length * 2);
      out.copy(grown, 0, 0, this.#used);
      this.#out = out = grown;
    }
  }

  /** The output since reset(), in memory of its own (kept blocks outlive the next reset). */
  output(): Buffer {
    const part = Buffer.allocUnsafeSlow(this.#used);
    this.#out.copy(part, 0, 0, this.#used);
    this.#shrink();
    return part;
  }

  /** A gzip member of the output since reset() (a finished stream) and the data's CRC-32 and size. */
  gzipMember(crc: number, size: number): Buffer {
    const member = Buffer.allocUnsafeSlow(GZIP_HEADER.length + this.#used + 8);
    GZIP_HEADER.copy(member, 0);
    this.#out.copy(member, GZIP_HEADER.length, 0, this.#used);
    writeGzipTrailer(member, member.length - 8, crc, size);
    this.#shrink();
    return member;
  }

  /** An output buffer grown past 1 MB for one large body is not kept for the next ones. */
  #shrink(): void {
    if (this.#out.length > KEPT_OUTPUT_BYTES) this.#out = Buffer.allocUnsafeSlow(64 * 1024);
  }
}

const KEPT_OUTPUT_BYTES = 1024 * 1024;

let keptDeflateStream: KeptDeflateStream | undefined | null = null;

/** The process's kept deflate stream (made again after a zlib error), or undefined on a Node without one. */
function keptStream(): KeptDeflateStream | undefined {
  if (keptDeflateStream === null || keptDeflateStream?.broken === true) keptDeflateStream = KeptDeflateStream.create();
  return keptDeflateStream;
}

/** One piece deflated on its own (see DeflatedBlock), at the level of GzipStream, in memory of its own. */
export function deflatePart(piece: Uint8Array): Buffer {
  const stream = keptStream();
  if (stream !== undefined) {
    stream.reset();
    stream.write(piece, constants.Z_SYNC_FLUSH);
    return stream.output();
  }
  // Output space of an eighth of the piece: exposition text shrinks ~10x, so one buffer mostly.
  const part = deflateRawSync(piece, { level: GZIP_LEVEL, finishFlush: constants.Z_SYNC_FLUSH, chunkSize: Math.max(16 * 1024, piece.length >> 3) });
  // Parts are kept from one body to the next: not as views of zlib's 16 KB or larger output
  // buffer, for parts of a few hundred bytes.
  if (part.buffer.byteLength < 2 * part.length) return part;
  const exact = Buffer.allocUnsafeSlow(part.length);
  part.copy(exact);
  return exact;
}

/**
 * A DeflatedBlock made while its bytes arrive: each write() is compressed at once, on one zlib
 * stream kept for the life of this object, so that when the block is complete (end()) only the
 * last few hundred bytes are left to compress. For a metric family whose lines come node by node
 * while a collection waits for slower nodes. create() returns undefined where no such stream can
 * be kept (see KeptDeflateStream) or the CRC-32 cannot be computed piece by piece. The cache
 * exporter's stats families are compressed by LineDeflater (line-deflate.ts) instead, in about half
 * the time; this is zlib's way, which the benchmarks' compressing floor measures.
 */
export class BlockDeflater {
  readonly #stream: KeptDeflateStream;
  #crc = 0;
  #length = 0;
  #samples = 0;

  private constructor(stream: KeptDeflateStream) {
    this.#stream = stream;
    this.begin();
  }

  static create(): BlockDeflater | undefined {
    if (crc32 === undefined) return undefined;
    // memLevel 6: zlib encodes what it gathered as a block every 4 K symbols instead of 16 K, so
    // end() has at most that left to encode. For the five command families of a 100-node body fed
    // node by node: end() 0.09 ms instead of 0.37 ms, writes 0.3 ms slower in all, 0.4 % larger.
    const stream = KeptDeflateStream.create(6);
    return stream === undefined ? undefined : new BlockDeflater(stream);
  }

  /** Starts a new block; what was written since the last begin() is dropped. */
  begin(): void {
    this.#stream.reset();
    this.#crc = 0;
    this.#length = 0;
    this.#samples = 0;
  }

  /** Bytes of the block (`samples` sample lines in them); the caller may reuse them at once. */
  write(piece: Uint8Array, samples = 0): void {
    this.#samples += samples;
    if (piece.length === 0) return;
    this.#stream.write(piece, constants.Z_NO_FLUSH);
    this.#crc = crc32!(piece, this.#crc);
    this.#length += piece.length;
  }

  /** Bytes written since begin(). */
  get length(): number {
    return this.#length;
  }

  /** True once zlib reported an error: of no further use (make another). */
  get broken(): boolean {
    return this.#stream.broken;
  }

  /** The block of everything written since begin(), ending on a sync flush; then begins anew. */
  end(): DeflatedBlock {
    this.#stream.write(EMPTY_PIECE, constants.Z_SYNC_FLUSH);
    const block: DeflatedBlock = { parts: this.#length === 0 ? [] : [this.#stream.output()], crc: this.#crc, length: this.#length, samples: this.#samples };
    this.begin();
    return block;
  }
}

const EMPTY_PIECE = new Uint8Array(0);

/**
 * gzip of a body handed over piece by piece, on this thread, without ever holding the whole body:
 * a 13 MB exposition body becomes its ~1.4 MB compressed form while it is written. Each piece is
 * deflated on its own and ends on a sync flush (byte aligned, not final), so the pieces join into
 * one deflate stream, as pigz joins its blocks; the CRC-32 runs on across pieces. The result is
 * one ordinary gzip member. A piece starts without the previous 32 KB as history: with pieces of
 * 256 KB the body is ~0.5 % larger than gzipBody's, for the same CPU. Pieces start afresh so that
 * any of them can be kept and sent again (part(), append()): each is deflated on the process's kept
 * stream (KeptDeflateStream), reset before it.
 *
 * Blocks deflated earlier (DeflatedBlock) are appended as they are: their CRC joins with
 * crc32Combine. Only when `blocks` is true (a Node with zlib.crc32, not `whole`).
 */
export class GzipStream {
  readonly #parts: Buffer[] = [GZIP_HEADER];
  /** Copies of the pieces, gzipped whole at end(): a Node without zlib.crc32, or `whole`. */
  readonly #pending: Buffer[] | undefined;
  #crc = 0;
  #size = 0;
  #ended = false;

  /** `whole`: gather the pieces and gzip them at end() (what a Node without zlib.crc32 gets). */
  constructor(options: { whole?: boolean } = {}) {
    this.#pending = options.whole === true || crc32 === undefined ? [] : undefined;
  }

  /** True when deflated blocks can be made and appended (part(), append()). */
  get blocks(): boolean {
    return this.#pending === undefined;
  }

  /** Compresses `piece` now; the caller may reuse its bytes as soon as this returns. */
  write(piece: Uint8Array): void {
    this.#check();
    if (piece.length === 0) return;
    this.#size += piece.length;
    if (this.#pending !== undefined) {
      this.#pending.push(Buffer.from(piece));
      return;
    }
    this.#crc = crc32!(piece, this.#crc);
    this.#parts.push(deflatePart(piece));
  }

  /** `piece` deflated on its own, for a DeflatedBlock; not appended. */
  part(piece: Uint8Array): Buffer {
    this.#check();
    if (!this.blocks) throw new CachemonError(Errors.INTERNAL, 'GzipStream makes no deflated blocks without zlib.crc32');
    return deflatePart(piece);
  }

  /** CRC-32 of `piece` continuing `crc` (for a DeflatedBlock's). */
  static crc32(piece: Uint8Array, crc: number): number {
    if (crc32 === undefined) throw new CachemonError(Errors.INTERNAL, 'zlib.crc32 is not available');
    return crc32(piece, crc);
  }

  /** Appends a block deflated earlier (by part()), as it is. */
  append(block: DeflatedBlock): void {
    this.#check();
    if (!this.blocks) throw new CachemonError(Errors.INTERNAL, 'GzipStream takes no deflated blocks without zlib.crc32');
    if (block.length === 0) return;
    for (const part of block.parts) this.#parts.push(part);
    this.#crc = crc32Combine(this.#crc, block.crc, block.length);
    this.#size += block.length;
  }

  /** Bytes written so far. */
  get bytesWritten(): number {
    return this.#size;
  }

  /** The gzip member of everything written, as one buffer (endParts() joined). */
  end(): Buffer {
    const parts = this.endParts();
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  /**
   * The gzip member of everything written, as the parts it was made of (header, deflated pieces
   * and blocks, trailer), in order: for a socket to write in one writev. Joining them copied the
   * whole body once more per scrape, into memory of its own.
   */
  endParts(): readonly Buffer[] {
    if (this.#ended) throw new CachemonError(Errors.INTERNAL, 'GzipStream ended twice');
    this.#ended = true;
    // An ended stream keeps none of the body: the parts go to the caller and the stream lets go of
    // them. Something that still refers to the stream after its scrape (not identified; an object
    // V8 had moved to the old generation) kept a whole body alive through minor collections
    // until the next full one, and with it every part of every body: ~0.5 MB/s of ArrayBuffer
    // memory at 100 nodes, and a full collection every ~15 s whose marking fell on scrapes and
    // made the slowest of them (bench/cache-exporter/README.md, "Whose CPU the slowest scrapes
    // wait for").
    if (this.#pending !== undefined) return [gzipBody(Buffer.concat(this.#pending.splice(0), this.#size))];
    const trailer = Buffer.alloc(10);
    trailer[0] = FINAL_EMPTY_BLOCK[0];
    trailer[1] = FINAL_EMPTY_BLOCK[1];
    writeGzipTrailer(trailer, 2, this.#crc, this.#size);
    this.#parts.push(trailer);
    return this.#parts.splice(0);
  }

  #check(): void {
    if (this.#ended) throw new CachemonError(Errors.INTERNAL, 'GzipStream written after end()');
  }
}

/** True unless the client refuses gzip (absent, or `gzip;q=0`); `*` counts as gzip. */
export function acceptsGzip(acceptEncoding: string | undefined): boolean {
  if (acceptEncoding === undefined) return false;
  let wildcard = false;
  for (const part of acceptEncoding.split(',')) {
    const [coding = '', ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const allowed = q === undefined || Number(q.slice(2)) > 0;
    if (coding.trim() === 'gzip') return allowed;
    if (coding.trim() === '*') wildcard = allowed;
  }
  return wildcard;
}

/**
 * A body that exists in one form or both: scrapes that share one collection share its forms, each
 * made at most once (the other one from it when a scrape asks for it).
 */
export interface ExpositionBody {
  bytes(): Buffer;
  gzipped(): Buffer;
  /** The gzipped form as the parts it was made of (GzipStream.endParts), or [gzipped()]. */
  gzippedParts(): readonly Buffer[];
}

/**
 * An ExpositionBody from whichever form was made; the other is derived on first use and kept.
 * `gzippedParts`: the gzipped form as parts (GzipStream.endParts), joined only if a caller asks
 * for gzipped().
 */
export function expositionBody(made: { readonly bytes?: Buffer; readonly gzipped?: Buffer; readonly gzippedParts?: readonly Buffer[] }): ExpositionBody {
  let { bytes, gzipped } = made;
  const parts = made.gzippedParts;
  if (bytes === undefined && gzipped === undefined && parts === undefined) {
    throw new CachemonError(Errors.INTERNAL, 'an exposition body needs bytes or gzipped bytes');
  }
  const joined = (): Buffer => (gzipped ??= parts !== undefined ? Buffer.concat(parts) : gzipBody(bytes!));
  return {
    bytes: () => (bytes ??= gunzipSync(joined())),
    gzipped: joined,
    gzippedParts: () => parts ?? [joined()],
  };
}

/** The bytes sent for an exposition body: gzipped (gzipBody) when `gzip`. */
export function expositionPayload(body: string | Buffer | ExpositionBody, gzip: boolean): Buffer {
  if (typeof body === 'string' || Buffer.isBuffer(body)) {
    const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
    return gzip ? gzipBody(bytes) : bytes;
  }
  return gzip ? body.gzipped() : body.bytes();
}

/** expositionPayload() as parts to write in order: an ExpositionBody's gzipped parts are not joined. */
export function expositionPayloadParts(body: string | Buffer | ExpositionBody, gzip: boolean): readonly Buffer[] {
  if (gzip && typeof body !== 'string' && !Buffer.isBuffer(body)) return body.gzippedParts();
  return [expositionPayload(body, gzip)];
}

/** Sends an exposition body, gzipped (gzipBody) when the scraper accepts it. */
export async function sendExposition(request: FastifyRequest, reply: FastifyReply, body: string | Buffer | ExpositionBody): Promise<void> {
  reply.header('Content-Type', EXPOSITION_CONTENT_TYPE).header('Vary', 'Accept-Encoding');
  const gzip = acceptsGzip(request.headers['accept-encoding']);
  if (gzip) reply.header('Content-Encoding', 'gzip');
  reply.send(expositionPayload(body, gzip));
}

/**
 * An exposition body written as bytes into one growing buffer: for scrapes of many thousands of
 * series, where building a string per sample and joining them costs more than the collection.
 * Callers keep series prefixes (`name{labels} `) as encoded bytes across scrapes and append the
 * value text. HELP/TYPE come from family(), once per family name, exactly like ExpositionWriter.
 *
 * With a `sink`, the buffer does not grow: whenever it is full its bytes go to the sink (a
 * GzipStream, say) and it is written from the start again, so a large body never exists whole.
 *
 * With a GzipStream that makes blocks as the sink, a run of the body can be written as a block
 * (beginBlock, endBlock): deflated on its own and returned, so that when the same bytes come again
 * in a later body the caller hands the block back (replay) instead of writing and compressing them.
 */
export class ExpositionBuffer {
  #buffer: Buffer;
  #length = 0;
  #samples = 0;
  #total = 0;
  readonly #families = new Set<string>();
  readonly #sink: ((piece: Buffer) => void) | undefined;
  readonly #stream: GzipStream | undefined;
  /** The block being written: its parts so far, their CRC, length, and the sample count at its start. */
  #block: { parts: Buffer[]; crc: number; length: number; samplesBefore: number } | undefined;

  /**
   * `sizeHint`: bytes to start with (with a sink: the piece size). `backing`: a buffer to write
   * into (reused across scrapes) when it holds `sizeHint`; without a sink it is replaced if it
   * fills up. `sink`: takes each full piece, valid only during the call; a GzipStream is written
   * to, and makes blocks when it can.
   */
  constructor(sizeHint = 64 * 1024, backing?: Buffer, sink?: ((piece: Buffer) => void) | GzipStream) {
    this.#buffer = backing !== undefined && backing.length >= sizeHint ? backing : Buffer.allocUnsafeSlow(Math.max(1024, sizeHint));
    if (sink instanceof GzipStream) {
      this.#stream = sink;
      this.#sink = (piece) => sink.write(piece);
    } else {
      this.#sink = sink;
    }
  }

  /** True when blocks can be written and replayed (the sink is a GzipStream that makes blocks). */
  get blocks(): boolean {
    return this.#stream?.blocks === true;
  }

  /** Starts a block: what is written until endBlock() is deflated on its own. */
  beginBlock(): void {
    if (!this.blocks) throw new CachemonError(Errors.INTERNAL, 'this ExpositionBuffer makes no blocks');
    if (this.#block !== undefined) throw new CachemonError(Errors.INTERNAL, 'blocks do not nest');
    this.#flush();
    this.#block = { parts: [], crc: 0, length: 0, samplesBefore: this.#samples };
  }

  /** Ends the block: appends it to the stream and returns it, for replay() in a later body. */
  endBlock(): DeflatedBlock {
    const open = this.#block;
    if (open === undefined) throw new CachemonError(Errors.INTERNAL, 'endBlock() without beginBlock()');
    this.#flush();
    this.#block = undefined;
    const block: DeflatedBlock = { parts: open.parts, crc: open.crc, length: open.length, samples: this.#samples - open.samplesBefore };
    this.#stream!.append(block);
    return block;
  }

  /**
   * A block of an earlier body, again: its bytes are those of family `name`, which counts as
   * written (pass '' for a block without a family head).
   */
  replay(name: string, block: DeflatedBlock): this {
    if (this.#block !== undefined) throw new CachemonError(Errors.INTERNAL, 'replay() inside a block');
    if (name !== '') {
      if (this.#families.has(name)) throw new CachemonError(Errors.INTERNAL, `metric family "${name}" written twice`);
      this.#families.add(name);
    }
    this.#flush();
    this.#stream!.append(block);
    this.#total += block.length;
    this.#samples += block.samples;
    return this;
  }

  /** The whole buffer written into, for reuse once the body has been sent (or, with a sink, ended). */
  get backing(): Buffer {
    return this.#buffer;
  }

  family(name: string, type: MetricType, help: string): this {
    if (this.#families.has(name)) throw new CachemonError(Errors.INTERNAL, `metric family "${name}" written twice`);
    const head = familyHead(name, type, help);
    this.#families.add(name);
    return this.text(head);
  }

  /** Any text (UTF-8). */
  text(value: string): this {
    if (this.#sink !== undefined && value.length * 3 > this.#buffer.length) return this.bytes(Buffer.from(value, 'utf8'));
    this.#reserve(value.length * 3);
    this.#length += this.#buffer.write(value, this.#length, 'utf8');
    return this;
  }

  /** Bytes [start, end) of encoded text: pre-rendered sample lines (say how many) or a prefix. */
  bytes(source: Buffer, start = 0, end = source.length, samples = 0): this {
    const n = end - start;
    this.#samples += samples;
    if (this.#sink !== undefined && n > this.#buffer.length) {
      // Larger than a piece: straight to the sink, after what is buffered.
      this.#flush();
      this.#total += n;
      this.#hand(source.subarray(start, end));
      return this;
    }
    this.#reserve(n);
    source.copy(this.#buffer, this.#length, start, end);
    this.#length += n;
    return this;
  }

  /** One sample: an encoded `name{labels} ` prefix, the value text (ASCII), a newline. */
  sample(prefix: Buffer, start: number, end: number, valueText: string): this {
    const n = end - start;
    const v = valueText.length;
    if (this.#sink !== undefined && n + v + 1 > this.#buffer.length) {
      return this.bytes(Buffer.concat([prefix.subarray(start, end), Buffer.from(`${valueText}\n`, 'latin1')]), 0, undefined, 1);
    }
    this.#reserve(n + v + 1);
    const target = this.#buffer;
    let at = this.#length;
    prefix.copy(target, at, start, end);
    at += n;
    // Values are a few ASCII characters: a loop beats a native write's call overhead.
    for (let i = 0; i < v; i++) target[at++] = valueText.charCodeAt(i);
    target[at++] = 10;
    this.#length = at;
    this.#samples++;
    return this;
  }

  /** Counts samples written through text() as whole lines. */
  countSamples(n: number): this {
    this.#samples += n;
    return this;
  }

  get sampleCount(): number {
    return this.#samples;
  }

  /** Bytes written so far (with a sink: also those already handed to it). */
  get byteLength(): number {
    return this.#total + this.#length;
  }

  /** The body; the writer must not be used afterwards. Not with a sink (see end()). */
  toBuffer(): Buffer {
    if (this.#sink !== undefined) throw new CachemonError(Errors.INTERNAL, 'ExpositionBuffer with a sink has no body; call end()');
    return this.#buffer.subarray(0, this.#length);
  }

  /** With a sink: hands it the bytes still buffered. The writer must not be used afterwards. */
  end(): void {
    if (this.#block !== undefined) throw new CachemonError(Errors.INTERNAL, 'end() inside a block');
    this.#flush();
  }

  #flush(): void {
    if (this.#sink === undefined || this.#length === 0) return;
    const piece = this.#buffer.subarray(0, this.#length);
    this.#total += this.#length;
    this.#length = 0;
    this.#hand(piece);
  }

  /** A piece to the sink, or, inside a block, deflated into the block. */
  #hand(piece: Buffer): void {
    const block = this.#block;
    if (block === undefined) {
      this.#sink!(piece);
      return;
    }
    block.parts.push(this.#stream!.part(piece));
    block.crc = GzipStream.crc32(piece, block.crc);
    block.length += piece.length;
  }

  #reserve(n: number): void {
    if (this.#length + n <= this.#buffer.length) return;
    if (this.#sink !== undefined) {
      this.#flush();
      return;
    }
    let size = this.#buffer.length * 2;
    while (size < this.#length + n) size *= 2;
    const grown = Buffer.allocUnsafeSlow(size);
    this.#buffer.copy(grown, 0, 0, this.#length);
    this.#buffer = grown;
  }
}
