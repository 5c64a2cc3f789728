/**
 * The `mntr` reply: `key<TAB>value` lines, keys maybe labelled (3.6+), values Java-printed numbers
 * (`1.5E-4`) or text. The two one-line refusals (not whitelisted, no quorum) are told apart: an
 * operator fixes them differently.
 */
import { CachemonError, Errors } from '@cachemon/core';

/** Answer of a server whose `4lw.commands.whitelist` lacks `mntr`. */
export const NOT_WHITELISTED_REPLY = 'mntr is not executed because it is not in the whitelist.';
/** Answer of a server without quorum (also to `srvr`; `ruok` still says `imok`). */
export const NOT_SERVING_REPLY = 'This ZooKeeper instance is not currently serving requests';

export interface MntrEntry {
  /** The key as the server printed it, labels included. */
  readonly key: string;
  /** The metric name: the key without its labels. */
  readonly name: string;
  readonly labels: ReadonlyArray<readonly [string, string]>;
  /** The value as a number, or undefined when it is text (version, server state). */
  readonly value: number | undefined;
  readonly text: string;
}

export type MntrReply =
  | {
      readonly kind: 'metrics';
      readonly entries: readonly MntrEntry[];
      /** Lines that were skipped, each with why (a reply is used even when some lines are bad). */
      readonly skipped: readonly string[];
    }
  | { readonly kind: 'not_whitelisted' }
  | { readonly kind: 'not_serving' };

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const INVALID_NAME_CHARS = /[^a-zA-Z0-9_:]/g;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const NUMBER = /^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/;

/**
 * Parses a complete `mntr` reply (the server closed the connection after it). Throws CachemonError
 * NODE_PROTOCOL when the text is not an mntr reply at all (no metric line can be read); single bad
 * lines are skipped and named in `skipped`. A last line without its newline is incomplete (the
 * connection ended early) and is skipped rather than read as a shorter number.
 */
export function parseMntr(reply: string): MntrReply {
  const trimmed = reply.trim();
  if (trimmed === NOT_WHITELISTED_REPLY) return { kind: 'not_whitelisted' };
  if (trimmed === NOT_SERVING_REPLY) return { kind: 'not_serving' };

  const entries: MntrEntry[] = [];
  const skipped: string[] = [];
  /** Series (name and labels) already read, and the key they were read from. */
  const seen = new Map<string, string>();
  const lines = reply.split('\n');
  const last = lines.pop() ?? '';
  if (last !== '') skipped.push(`incomplete last line ${preview(last)}`);
  for (const raw of lines) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line === '') continue;
    const tab = line.indexOf('\t');
    if (tab <= 0) {
      skipped.push(`no key<TAB>value: ${preview(line)}`);
      continue;
    }
    const key = line.slice(0, tab);
    const text = line.slice(tab + 1).trim();
    const parsed = cachedKey(key);
    if (typeof parsed === 'string') {
      skipped.push(`${parsed}: ${preview(key)}`);
      continue;
    }
    const series =
      parsed.labels.length === 0 ? parsed.name : `${parsed.name}${JSON.stringify([...parsed.labels].sort())}`;
    const first = seen.get(series);
    if (first !== undefined) {
      skipped.push(
        first === key
          ? `repeated key ${preview(key)}`
          : `${preview(key)} is the same series as ${preview(first)} once its name is made valid`,
      );
      continue;
    }
    seen.set(series, key);
    entries.push({ key, name: parsed.name, labels: parsed.labels, value: parseValue(text), text });
  }
  if (entries.length === 0) {
    throw new CachemonError(Errors.NODE_PROTOCOL, `not an mntr reply: ${preview(trimmed)}`);
  }
  return { kind: 'metrics', entries, skipped };
}

/** Parsed keys: a server prints the same ~500 every time. Cleared when it grows past its limit. */
const keyCache = new Map<string, ReturnType<typeof parseKey>>();
const KEY_CACHE_LIMIT = 100_000;

function cachedKey(key: string): ReturnType<typeof parseKey> {
  let parsed = keyCache.get(key);
  if (parsed === undefined) {
    if (keyCache.size >= KEY_CACHE_LIMIT) keyCache.clear();
    parsed = parseKey(key);
    keyCache.set(key, parsed);
  }
  return parsed;
}

/** A number as Java prints doubles and longs; NaN and infinities too. Undefined for text. */
export function parseValue(text: string): number | undefined {
  if (NUMBER.test(text)) return Number(text);
  if (text === 'NaN') return Number.NaN;
  if (text === 'Infinity' || text === '+Infinity') return Number.POSITIVE_INFINITY;
  if (text === '-Infinity') return Number.NEGATIVE_INFINITY;
  return undefined;
}

/**
 * `name` or `name{label="value",...}` (values with \\, \" and \n escapes). A string says what is
 * wrong. Characters a metric name cannot have become `_`, as the widely used ZooKeeper exporter
 * does: ZooKeeper names per-namespace keys after the top-level znode (`/my-app` gives
 * `zk_cnt_my-app_write_per_namespace`), and a znode name may have `-` or `.`.
 */
export function parseKey(key: string): { name: string; labels: Array<readonly [string, string]> } | string {
  const brace = key.indexOf('{');
  const name = (brace === -1 ? key : key.slice(0, brace)).replace(INVALID_NAME_CHARS, '_');
  if (!NAME.test(name)) return 'not a metric name';
  if (brace === -1) return { name, labels: [] };
  if (!key.endsWith('}')) return 'labels not closed';
  const labels: Array<readonly [string, string]> = [];
  const body = key.slice(brace + 1, -1);
  let at = 0;
  while (at < body.length) {
    const eq = body.indexOf('=', at);
    if (eq === -1) return 'label without a value';
    const label = body.slice(at, eq).trim();
    if (!LABEL_NAME.test(label)) return `bad label name "${label}"`;
    if (body[eq + 1] !== '"') return `label ${label} has an unquoted value`;
    let value = '';
    let i = eq + 2;
    for (; i < body.length && body[i] !== '"'; i++) {
      if (body[i] === '\\' && i + 1 < body.length) {
        const next = body[++i];
        value += next === 'n' ? '\n' : next;
      } else {
        value += body[i];
      }
    }
    if (i >= body.length) return `label ${label} value not closed`;
    if (labels.some(([existing]) => existing === label)) return `label ${label} repeated`;
    labels.push([label, value]);
    at = i + 1;
    if (at < body.length) {
      if (body[at] !== ',') return 'labels not separated by commas';
      at++;
    }
  }
  return { name, labels };
}

function preview(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}...` : text);
}
