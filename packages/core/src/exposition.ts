/**
 * Prometheus text exposition format 0.0.4. This is the hot path of every scrape (tens of
 * thousands of samples every 5 s), so label sets are rendered once by the caller and the writer
 * only concatenates.
 */
import { constants, gzipSync } from 'node:zlib';
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
 * Sends an exposition body, gzipped (gzipBody) when the scraper accepts it. `gzipped`, when given,
 * supplies the compressed body instead (scrapes that share one body share its compression too).
 */
export async function sendExposition(
  request: FastifyRequest,
  reply: FastifyReply,
  body: string | Buffer,
  gzipped?: () => Buffer,
): Promise<void> {
  reply.header('Content-Type', EXPOSITION_CONTENT_TYPE).header('Vary', 'Accept-Encoding');
  if (acceptsGzip(request.headers['accept-encoding'])) {
    const compressed = gzipped ? gzipped() : gzipBody(Buffer.isBuffer(body) ? body : Buffer.from(body));
    reply.header('Content-Encoding', 'gzip').send(compressed);
    return;
  }
  reply.send(body);
}

/**
 * An exposition body written as bytes into one growing buffer: for scrapes of many thousands of
 * series, where building a string per sample and joining them costs more than the collection.
 * Callers keep series prefixes (`name{labels} `) as encoded bytes across scrapes and append the
 * value text. HELP/TYPE come from family(), once per family name, exactly like ExpositionWriter.
 */
export class ExpositionBuffer {
  #buffer: Buffer;
  #length = 0;
  #samples = 0;
  readonly #families = new Set<string>();

  /** `backing`: a buffer to write into (reused across scrapes); it is replaced if it fills up. */
  constructor(sizeHint = 64 * 1024, backing?: Buffer) {
    this.#buffer = backing !== undefined && backing.length >= sizeHint ? backing : Buffer.allocUnsafeSlow(Math.max(1024, sizeHint));
  }

  /** The whole buffer written into, for reuse once the body has been sent. */
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
    this.#reserve(value.length * 3);
    this.#length += this.#buffer.write(value, this.#length, 'utf8');
    return this;
  }

  /** Bytes [start, end) of encoded text: pre-rendered sample lines (say how many) or a prefix. */
  bytes(source: Buffer, start = 0, end = source.length, samples = 0): this {
    const n = end - start;
    this.#reserve(n);
    source.copy(this.#buffer, this.#length, start, end);
    this.#length += n;
    this.#samples += samples;
    return this;
  }

  /** One sample: an encoded `name{labels} ` prefix, the value text (ASCII), a newline. */
  sample(prefix: Buffer, start: number, end: number, valueText: string): this {
    const n = end - start;
    const v = valueText.length;
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

  get byteLength(): number {
    return this.#length;
  }

  /** The body; the writer must not be used afterwards. */
  toBuffer(): Buffer {
    return this.#buffer.subarray(0, this.#length);
  }

  #reserve(n: number): void {
    if (this.#length + n <= this.#buffer.length) return;
    let size = this.#buffer.length * 2;
    while (size < this.#length + n) size *= 2;
    const grown = Buffer.allocUnsafeSlow(size);
    this.#buffer.copy(grown, 0, 0, this.#length);
    this.#buffer = grown;
  }
}
