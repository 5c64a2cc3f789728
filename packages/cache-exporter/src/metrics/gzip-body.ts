/**
 * A /metrics body written into one reused chunk and compressed chunk by chunk into one gzip
 * member, so that the uncompressed body (26 KB a node: 53 MB at 2,000 nodes) never exists whole.
 * Each chunk is deflated as it fills, while it is still in the CPU's cache, and ends on a byte
 * boundary (Z_SYNC_FLUSH, as pigz does): the deflated chunks one after the other are one deflate
 * stream, closed by an empty final block, inside one gzip header and trailer.
 */
import { crc32, constants, deflateRawSync, gunzipSync } from 'node:zlib';
import { CachemonError, Errors, familyHead } from '@cachemon/core';
import type { ExpositionBody, MetricType } from '@cachemon/core';

/** 256 KB: fewer, larger chunks compress no faster; smaller ones pay zlib's set-up more often. */
const DEFAULT_CHUNK_BYTES = 256 * 1024;
/** The level of core's gzipBody: exposition text is so repetitive that higher levels gain little. */
const LEVEL = constants.Z_BEST_SPEED;
/** ID1 ID2, deflate, no flags, no mtime, no extra flags, OS unknown (RFC 1952). */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
/** A final, empty block with fixed codes: ends a stream whose blocks all ended on a sync flush. */
const FINAL_BLOCK = Buffer.from([0x03, 0x00]);
const EMPTY = Buffer.alloc(0);

export class GzipBody {
  #chunk: Buffer;
  #length = 0;
  readonly #parts: Buffer[] = [GZIP_HEADER];
  #crc = 0;
  #bytes = 0;
  #samples = 0;
  readonly #families = new Set<string>();
  #body: Buffer | undefined;

  constructor(chunkBytes = DEFAULT_CHUNK_BYTES) {
    this.#chunk = Buffer.allocUnsafeSlow(chunkBytes);
  }

  family(name: string, type: MetricType, help: string): this {
    if (this.#families.has(name)) throw new CachemonError(Errors.INTERNAL, `metric family "${name}" written twice`);
    this.#families.add(name);
    return this.text(familyHead(name, type, help));
  }

  /** Any text (UTF-8). */
  text(value: string): this {
    this.#room(value.length * 3);
    this.#length += this.#chunk.write(value, this.#length, 'utf8');
    return this;
  }

  /** Bytes [start, end) of encoded text: pre-rendered sample lines (say how many) or a prefix. */
  bytes(source: Buffer, start = 0, end = source.length, samples = 0): this {
    this.#room(end - start);
    this.#length += source.copy(this.#chunk, this.#length, start, end);
    this.#samples += samples;
    return this;
  }

  /** One sample: an encoded `name{labels} ` prefix, the value text (ASCII), a newline. */
  sample(prefix: Buffer, start: number, end: number, valueText: string): this {
    const v = valueText.length;
    this.#room(end - start + v + 1);
    const chunk = this.#chunk;
    let at = this.#length + prefix.copy(chunk, this.#length, start, end);
    // Values are a few ASCII characters: a loop beats a native write's call overhead.
    for (let i = 0; i < v; i++) chunk[at++] = valueText.charCodeAt(i);
    chunk[at++] = 10;
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

  /** Uncompressed bytes written so far. */
  get byteLength(): number {
    return this.#bytes + this.#length;
  }

  /** The gzipped body; nothing may be written afterwards. */
  finish(): Buffer {
    if (this.#body !== undefined) return this.#body;
    this.#deflate();
    const trailer = Buffer.allocUnsafe(8);
    trailer.writeUInt32LE(this.#crc >>> 0, 0);
    trailer.writeUInt32LE(this.#bytes % 2 ** 32, 4);
    this.#parts.push(FINAL_BLOCK, trailer);
    this.#body = Buffer.concat(this.#parts);
    this.#parts.length = 0;
    // No room left: any later write reaches #deflate, which refuses it.
    this.#chunk = EMPTY;
    return this.#body;
  }

  /** Deflates the chunk when `n` more bytes would not fit; a piece larger than the chunk gets a chunk its size. */
  #room(n: number): void {
    if (this.#length + n <= this.#chunk.length) return;
    this.#deflate();
    if (n > this.#chunk.length) this.#chunk = Buffer.allocUnsafeSlow(n);
  }

  #deflate(): void {
    if (this.#body !== undefined) throw new CachemonError(Errors.INTERNAL, 'gzip body written after it was finished');
    if (this.#length === 0) return;
    const data = this.#chunk.subarray(0, this.#length);
    this.#crc = crc32(data, this.#crc);
    this.#bytes += this.#length;
    this.#parts.push(deflateRawSync(data, { level: LEVEL, finishFlush: constants.Z_SYNC_FLUSH }));
    this.#length = 0;
  }
}

/** An exposition body sent as it was compressed; inflated (once) only for a scraper without gzip. */
export function gzippedExpositionBody(gzipped: Buffer): ExpositionBody {
  let plain: Buffer | undefined;
  const ready = Promise.resolve(gzipped);
  return { bytes: () => (plain ??= gunzipSync(gzipped)), gzipped: () => ready };
}
