/** Prometheus text exposition format 0.0.4: label sets are rendered once by the caller, the writer only concatenates. */
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
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
 * round-trip form. JSON.stringify writes what String() does, without V8's number-to-string cache
 * keeping each text alive into the old generation.
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

/** The fastest level: exposition text is so repetitive that higher levels gain little for their CPU. */
const GZIP_LEVEL = zlib.constants.Z_BEST_SPEED;

const gzipAsync = promisify(zlib.gzip);

/** gzip of an exposition body, on zlib's thread pool: the event loop goes on serving meanwhile. */
export function gzipBody(body: Buffer | string): Promise<Buffer> {
  return gzipAsync(body, { level: GZIP_LEVEL });
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
 * A rendered body that scrapes sharing one collection share: its gzipped form is made at most
 * once, when the first of them asks for it.
 */
export interface ExpositionBody {
  bytes(): Buffer;
  gzipped(): Promise<Buffer>;
}

export function expositionBody(bytes: Buffer): ExpositionBody {
  let gzipped: Promise<Buffer> | undefined;
  return { bytes: () => bytes, gzipped: () => (gzipped ??= gzipBody(bytes)) };
}

/** The bytes sent for an exposition body: gzipped (gzipBody) when `gzip`. */
export async function expositionPayload(body: string | Buffer | ExpositionBody, gzip: boolean): Promise<Buffer> {
  if (typeof body === 'string' || Buffer.isBuffer(body)) {
    const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
    return gzip ? gzipBody(bytes) : bytes;
  }
  return gzip ? body.gzipped() : body.bytes();
}

/** Sends an exposition body, gzipped (gzipBody) when the scraper accepts it. */
export async function sendExposition(
  request: FastifyRequest,
  reply: FastifyReply,
  body: string | Buffer | ExpositionBody,
): Promise<void> {
  reply.header('Content-Type', EXPOSITION_CONTENT_TYPE).header('Vary', 'Accept-Encoding');
  const gzip = acceptsGzip(request.headers['accept-encoding']);
  const payload = await expositionPayload(body, gzip);
  if (gzip) reply.header('Content-Encoding', 'gzip');
  reply.send(payload);
}

/**
 * An exposition body written as bytes into one growing buffer, for large scrapes: callers keep
 * series prefixes (`name{labels} `) encoded across scrapes. HELP/TYPE as in ExpositionWriter.
 */
export class ExpositionBuffer {
  #buffer: Buffer;
  #length = 0;
  #samples = 0;
  readonly #families = new Set<string>();

  /** `sizeHint`: bytes to start with (the buffer doubles whenever it fills up). */
  constructor(sizeHint = 64 * 1024) {
    this.#buffer = Buffer.allocUnsafeSlow(Math.max(1024, sizeHint));
  }

  family(name: string, type: MetricType, help: string): this {
    if (this.#families.has(name)) throw new CachemonError(Errors.INTERNAL, `metric family "${name}" written twice`);
    const head = familyHead(name, type, help);
    this.#families.add(name);
    return this.text(head);
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
    this.#samples += samples;
    this.#reserve(n);
    source.copy(this.#buffer, this.#length, start, end);
    this.#length += n;
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

  /** Bytes written so far. */
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
