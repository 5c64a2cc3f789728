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
const MAX_EXACT_INTEGER = 2 ** 53;

export function escapeLabelValue(value: string): string {
  if (!LABEL_VALUE_SPECIAL.test(value)) return value;
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

export function escapeHelp(help: string): string {
  if (!HELP_SPECIAL.test(help)) return help;
  return help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

export function formatValue(value: number): string {
  if (Number.isInteger(value) && Math.abs(value) <= MAX_EXACT_INTEGER) return String(value);
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  // NaN prints as "NaN", which is what the format wants; the rest is JS's shortest round-trip form.
  return String(value);
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

export class ExpositionWriter {
  readonly #parts: string[] = [];
  readonly #families = new Set<string>();
  #current: string | undefined;
  #samples = 0;

  /** Starts a metric family; a repeated name throws, since scrapers reject duplicate families. */
  family(name: string, type: MetricType, help: string): this {
    if (!METRIC_NAME.test(name)) throw new CachemonError(Errors.INTERNAL, `invalid metric name "${name}"`);
    if (this.#families.has(name)) throw new CachemonError(Errors.INTERNAL, `metric family "${name}" written twice`);
    this.#families.add(name);
    this.#current = name;
    if (help !== '') this.#parts.push(`# HELP ${name} ${escapeHelp(help)}\n`);
    this.#parts.push(`# TYPE ${name} ${type}\n`);
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
  return gzipSync(body, { level: GZIP_LEVEL });
}

/** zlib.crc32 (Node 20.15 and later); without it GzipStream gzips the whole body at end(). */
const crc32 = (zlib as { crc32?: (data: Uint8Array, value?: number) => number }).crc32;

/** A gzip member header: deflate, no name or time, unknown OS. */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
/** The last block: empty, final, fixed codes (what zlib writes at Z_FINISH after a flush). */
const FINAL_EMPTY_BLOCK = [0x03, 0x00] as const;

/**
 * gzip of a body handed over piece by piece, on this thread, without ever holding the whole body:
 * a 13 MB exposition body becomes its ~1.4 MB compressed form while it is written. Each piece is
 * deflated on its own and ends on a sync flush (byte aligned, not final), so the pieces join into
 * one deflate stream, as pigz joins its blocks; the CRC-32 runs on across pieces. The result is
 * one ordinary gzip member. A piece starts without the previous 32 KB as history: with pieces of
 * 256 KB the body is ~0.5 % larger than gzipBody's, for the same CPU. (Node's zlib streams cannot
 * be driven synchronously piece by piece: its sync path closes the stream after one call.)
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

  /** Compresses `piece` now; the caller may reuse its bytes as soon as this returns. */
  write(piece: Uint8Array): void {
    if (this.#ended) throw new CachemonError(Errors.INTERNAL, 'GzipStream written after end()');
    if (piece.length === 0) return;
    this.#size += piece.length;
    if (this.#pending !== undefined) {
      this.#pending.push(Buffer.from(piece));
      return;
    }
    this.#crc = crc32!(piece, this.#crc);
    // Output space of an eighth of the piece: exposition text shrinks ~10x, so one buffer mostly.
    this.#parts.push(deflateRawSync(piece, { level: GZIP_LEVEL, finishFlush: constants.Z_SYNC_FLUSH, chunkSize: Math.max(16 * 1024, piece.length >> 3) }));
  }

  /** Bytes written so far. */
  get bytesWritten(): number {
    return this.#size;
  }

  /** The gzip member of everything written. */
  end(): Buffer {
    if (this.#ended) throw new CachemonError(Errors.INTERNAL, 'GzipStream ended twice');
    this.#ended = true;
    if (this.#pending !== undefined) return gzipBody(Buffer.concat(this.#pending, this.#size));
    const trailer = Buffer.alloc(10);
    trailer[0] = FINAL_EMPTY_BLOCK[0];
    trailer[1] = FINAL_EMPTY_BLOCK[1];
    trailer.writeUInt32LE(this.#crc >>> 0, 2);
    trailer.writeUInt32LE(this.#size % 2 ** 32, 6);
    this.#parts.push(trailer);
    return Buffer.concat(this.#parts);
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
}

/** An ExpositionBody from whichever form was made; the other is derived on first use and kept. */
export function expositionBody(made: { readonly bytes?: Buffer; readonly gzipped?: Buffer }): ExpositionBody {
  let { bytes, gzipped } = made;
  if (bytes === undefined && gzipped === undefined) throw new CachemonError(Errors.INTERNAL, 'an exposition body needs bytes or gzipped bytes');
  return {
    bytes: () => (bytes ??= gunzipSync(gzipped!)),
    gzipped: () => (gzipped ??= gzipBody(bytes!)),
  };
}

/** Sends an exposition body, gzipped (gzipBody) when the scraper accepts it. */
export async function sendExposition(request: FastifyRequest, reply: FastifyReply, body: string | Buffer | ExpositionBody): Promise<void> {
  reply.header('Content-Type', EXPOSITION_CONTENT_TYPE).header('Vary', 'Accept-Encoding');
  const gzip = acceptsGzip(request.headers['accept-encoding']);
  if (typeof body === 'string' || Buffer.isBuffer(body)) {
    if (gzip) reply.header('Content-Encoding', 'gzip').send(gzipBody(Buffer.isBuffer(body) ? body : Buffer.from(body)));
    else reply.send(body);
    return;
  }
  if (gzip) reply.header('Content-Encoding', 'gzip').send(body.gzipped());
  else reply.send(body.bytes());
}

/**
 * An exposition body written as bytes into one growing buffer: for scrapes of many thousands of
 * series, where building a string per sample and joining them costs more than the collection.
 * Callers keep series prefixes (`name{labels} `) as encoded bytes across scrapes and append the
 * value text. HELP/TYPE come from family(), once per family name, exactly like ExpositionWriter.
 *
 * With a `sink`, the buffer does not grow: whenever it is full its bytes go to the sink (a
 * GzipStream, say) and it is written from the start again, so a large body never exists whole.
 */
export class ExpositionBuffer {
  #buffer: Buffer;
  #length = 0;
  #samples = 0;
  #total = 0;
  readonly #families = new Set<string>();
  readonly #sink: ((piece: Buffer) => void) | undefined;

  /**
   * `sizeHint`: bytes to start with (with a sink: the piece size). `backing`: a buffer to write
   * into (reused across scrapes) when it holds `sizeHint`; without a sink it is replaced if it
   * fills up. `sink`: takes each full piece, valid only during the call.
   */
  constructor(sizeHint = 64 * 1024, backing?: Buffer, sink?: (piece: Buffer) => void) {
    this.#buffer = backing !== undefined && backing.length >= sizeHint ? backing : Buffer.allocUnsafeSlow(Math.max(1024, sizeHint));
    this.#sink = sink;
  }

  /** The whole buffer written into, for reuse once the body has been sent (or, with a sink, ended). */
  get backing(): Buffer {
    return this.#buffer;
  }

  family(name: string, type: MetricType, help: string): this {
    if (!METRIC_NAME.test(name)) throw new CachemonError(Errors.INTERNAL, `invalid metric name "${name}"`);
    if (this.#families.has(name)) throw new CachemonError(Errors.INTERNAL, `metric family "${name}" written twice`);
    this.#families.add(name);
    if (help !== '') this.text(`# HELP ${name} ${escapeHelp(help)}\n`);
    return this.text(`# TYPE ${name} ${type}\n`);
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
      this.#sink(source.subarray(start, end));
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
    this.#flush();
  }

  #flush(): void {
    if (this.#sink === undefined || this.#length === 0) return;
    const piece = this.#buffer.subarray(0, this.#length);
    this.#total += this.#length;
    this.#length = 0;
    this.#sink(piece);
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
