/**
 * Prometheus text exposition format 0.0.4. This is the hot path of every scrape (tens of
 * thousands of samples every 5 s), so label sets are rendered once by the caller and the writer
 * only concatenates.
 */
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
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

  /**
   * Samples of the current family already rendered as whole lines (`name{labels} value\n` each),
   * for callers that cache a series' `name{labels} ` prefix across scrapes: the hot path of a
   * large scrape then costs one concatenation per sample.
   */
  sampleLines(lines: readonly string[]): this {
    if (this.#current === undefined) throw new CachemonError(Errors.INTERNAL, 'sample written before any family');
    for (const line of lines) this.#parts.push(line);
    this.#samples += lines.length;
    return this;
  }

  get sampleCount(): number {
    return this.#samples;
  }

  toString(): string {
    return this.#parts.join('');
  }
}

const gzipAsync = promisify(gzip);

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

/** Sends an exposition body, gzipped off the main thread when the scraper accepts it. */
export async function sendExposition(request: FastifyRequest, reply: FastifyReply, body: string): Promise<void> {
  reply.header('Content-Type', EXPOSITION_CONTENT_TYPE).header('Vary', 'Accept-Encoding');
  if (acceptsGzip(request.headers['accept-encoding'])) {
    const compressed = await gzipAsync(body);
    reply.header('Content-Encoding', 'gzip').send(compressed);
    return;
  }
  reply.send(body);
}
