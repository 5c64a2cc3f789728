/**
 * The `mntr` reply: `zk_<name><TAB><value>` lines, keys maybe labelled (3.6+), values Java-printed
 * numbers (`1.5E-4`) or, for a few known keys, text. The two one-line refusals (not whitelisted, no
 * quorum) are told apart: an operator fixes them differently.
 *
 * A reply is believed only when it has that form: anything a ZooKeeper server does not print (a
 * control character, a line that is no key<TAB>value, a key that is no `zk_` name) makes the whole
 * reply a protocol error, so that a wrong service on the port is reported as such, not as figures.
 * Lines a real server can print but that cannot be exposed (an unknown text value, a key too long,
 * two keys that become one series) are skipped and counted. Work is bounded before it is spent:
 * past `maxKeys` lines, the rest are counted, not read.
 */
import { CachemonError, Errors } from '@cachemon/core';
import { TEXT_KEYS } from './mntr-catalog.js';

/** Answer of a server whose `4lw.commands.whitelist` lacks `mntr`. */
export const NOT_WHITELISTED_REPLY = 'mntr is not executed because it is not in the whitelist.';
/** Answer of a server without quorum (also to `srvr`; `ruok` still says `imok`). */
export const NOT_SERVING_REPLY = 'This ZooKeeper instance is not currently serving requests';

/** Keys read per server by default: ZooKeeper 3.8 and 3.9 print 400 to 600. */
export const DEFAULT_MAX_KEYS = 2000;
/** Longest key read (name and labels); a longer one is skipped. Znode names make keys long. */
export const MAX_KEY_LENGTH = 512;
/** Longest label value read; a key with a longer one is skipped. */
export const MAX_LABEL_VALUE_LENGTH = 256;
/** Skipped lines named in a reply's `skipped` (the rest are only counted). */
const MAX_SKIPPED_NAMED = 5;

export interface MntrEntry {
  /** The key as the server printed it, labels included. */
  readonly key: string;
  /** The metric name: the key without its labels, characters a name cannot have made `_`. */
  readonly name: string;
  /** The key's name part as printed (same length as `name`). */
  readonly rawName: string;
  readonly labels: ReadonlyArray<readonly [string, string]>;
  /** The value as a number, or undefined when it is text (version, server state). */
  readonly value: number | undefined;
  readonly text: string;
}

export type MntrReply =
  | {
      readonly kind: 'metrics';
      readonly entries: readonly MntrEntry[];
      /** The first few lines that were skipped, each with why (a reply is used even when some lines are). */
      readonly skipped: readonly string[];
      /** How many lines were skipped. */
      readonly skippedCount: number;
      /** Lines past the key limit, not read. */
      readonly dropped: number;
    }
  | { readonly kind: 'not_whitelisted' }
  | { readonly kind: 'not_serving' };

export interface ParseOptions {
  /** Lines read at most; the rest are counted in `dropped` (default DEFAULT_MAX_KEYS). */
  readonly maxKeys?: number;
}

const NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
/** `:` too: promtool reserves it for recording rules. */
const INVALID_NAME_CHARS = /[^a-zA-Z0-9_]/g;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const NUMBER = /^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/;
/**
 * What no mntr reply has: C0 controls but TAB and LF, a CR not ending a line, DEL, C1 controls,
 * and U+FFFD (bytes that were no UTF-8).
 */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const FORBIDDEN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffd]|\r(?!\n)/;
/** The name part of a key as ZooKeeper prints it: `zk_`, then no whitespace, braces or quotes. */
const KEY_NAME = /^zk_[^\s{}"\\]+$/;

function protocol(message: string): CachemonError {
  return new CachemonError(Errors.NODE_PROTOCOL, `not an mntr reply: ${message}`);
}

/**
 * Parses a complete `mntr` reply (the server closed the connection after it). Throws CachemonError
 * NODE_PROTOCOL, naming the first offending line, when the text is not an mntr reply. A last line
 * without its newline is incomplete (the connection ended early) and is skipped rather than read
 * as a shorter number.
 */
export function parseMntr(reply: string, options: ParseOptions = {}): MntrReply {
  const maxKeys = options.maxKeys ?? DEFAULT_MAX_KEYS;
  const trimmed = reply.trim();
  if (trimmed === NOT_WHITELISTED_REPLY) return { kind: 'not_whitelisted' };
  if (trimmed === NOT_SERVING_REPLY) return { kind: 'not_serving' };

  // One scan of the whole reply, lines past the limit included: no allocation per line.
  const bad = FORBIDDEN.exec(reply);
  if (bad !== null) {
    const lineNo = countLines(reply, 0, bad.index) + 1;
    const start = reply.lastIndexOf('\n', bad.index) + 1;
    const end = reply.indexOf('\n', bad.index);
    const what = bad[0] === '\ufffd' ? 'bytes that are no UTF-8' : `control character ${JSON.stringify(bad[0])}`;
    throw protocol(`line ${lineNo} has ${what}: ${preview(reply.slice(start, end === -1 ? undefined : end))}`);
  }

  const entries: MntrEntry[] = [];
  const skipped: string[] = [];
  let skippedCount = 0;
  const skip = (why: string): void => {
    skippedCount++;
    if (skipped.length < MAX_SKIPPED_NAMED) skipped.push(why);
  };
  /** Series (name and labels) already read, and the key they were read from. */
  const seen = new Map<string, string>();
  let lineNo = 0;
  let keys = 0;
  let at = 0;
  let dropped = 0;
  while (at < reply.length) {
    const newline = reply.indexOf('\n', at);
    if (newline === -1) {
      skip(`incomplete last line ${preview(reply.slice(at))}`);
      break;
    }
    lineNo++;
    const raw = reply.slice(at, newline);
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line === '') {
      at = newline + 1;
      continue;
    }
    if (keys >= maxKeys) {
      // Counted, not read: a reply of 200,000 keys costs no more than one of maxKeys.
      dropped = countLines(reply, at, reply.length) + (reply.endsWith('\n') ? 0 : 1);
      break;
    }
    keys++;
    at = newline + 1;
    const tab = line.indexOf('\t');
    if (tab <= 0) throw protocol(`line ${lineNo} is no key<TAB>value: ${preview(line)}`);
    const key = line.slice(0, tab);
    const text = line.slice(tab + 1).trim();
    const brace = key.indexOf('{');
    const rawName = brace === -1 ? key : key.slice(0, brace);
    if (!KEY_NAME.test(rawName)) throw protocol(`line ${lineNo} has no zk_ key: ${preview(line)}`);
    const value = parseValue(text);
    if (value === undefined && !TEXT_KEYS.has(rawName)) {
      // A release may add text keys: skipped, not taken for a wrong service.
      skip(`text value of ${preview(key)}: ${preview(text)}`);
      continue;
    }
    if (key.length > MAX_KEY_LENGTH) {
      skip(`key longer than ${MAX_KEY_LENGTH} characters: ${preview(key)}`);
      continue;
    }
    const parsed = cachedKey(key);
    if (typeof parsed === 'string') {
      skip(`${parsed}: ${preview(key)}`);
      continue;
    }
    const series =
      parsed.labels.length === 0 ? parsed.name : `${parsed.name}${JSON.stringify([...parsed.labels].sort())}`;
    const first = seen.get(series);
    if (first !== undefined) {
      skip(
        first === key
          ? `repeated key ${preview(key)}`
          : `${preview(key)} is the same series as ${preview(first)} once its name is made valid`,
      );
      continue;
    }
    seen.set(series, key);
    entries.push({ key, name: parsed.name, rawName, labels: parsed.labels, value, text });
  }
  if (entries.length === 0) throw protocol(skipped[0] ?? `no metric line: ${preview(trimmed)}`);
  return { kind: 'metrics', entries, skipped, skippedCount, dropped };
}

/** Line ends in reply[from, to). */
function countLines(reply: string, from: number, to: number): number {
  let count = 0;
  for (let i = reply.indexOf('\n', from); i !== -1 && i < to; i = reply.indexOf('\n', i + 1)) count++;
  return count;
}

/** Parsed keys: a server prints the same ~500 every time. Cleared when it grows past its limit. */
const keyCache = new Map<string, ReturnType<typeof parseKey>>();
const KEY_CACHE_LIMIT = 20_000;

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
 * wrong. Characters a metric name cannot have become `_`: ZooKeeper names per-namespace keys after
 * the top-level znode (`/my-app` gives `zk_cnt_my-app_write_per_namespace`), and a znode name may
 * have `-` or `.`.
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
    if (!LABEL_NAME.test(label) || label.startsWith('__')) return `bad label name "${label}"`;
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
    if (value.length > MAX_LABEL_VALUE_LENGTH) return `label ${label} value longer than ${MAX_LABEL_VALUE_LENGTH}`;
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

/** Quoted and escaped, at most 80 characters: safe in a log line whatever the server sent. */
export function preview(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}...` : text).replace(
    /[\u007f-\u009f\ufffd]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
