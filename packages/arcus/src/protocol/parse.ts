/**
 * Parsers for the ascii stats replies, given one complete framed reply (CRLF or bare LF lines).
 * They throw NODE_ERROR_REPLY when the reply is one error line (the server's words kept), and
 * NODE_PROTOCOL, naming the line, for any other unexpected shape.
 */
import { type CachemonError, Errors, isCachemonError } from '@cachemon/core';
import { errorKeywordAt, errorReply, protocolError, QUOTE_LIMIT } from './reply-errors.js';

/** `STAT <name> <value>` lines in server order. A value may hold spaces (`logger standard error`) or be empty. */
export type StatsReply = Array<[name: string, value: string]>;

/** Receives each `STAT <name> <value>` line as byte offsets into the reply; false stops the walk. */
export type StatLineVisitor = (
  nameStart: number,
  nameEnd: number,
  valueStart: number,
  valueEnd: number,
) => boolean | void;

/**
 * Walks a stats reply held as bytes, creating no strings (the exporter renders from the bytes).
 * Throws like parseStats; true once END closed the reply, false when `visit` stopped the walk.
 */
export function scanStats(reply: Buffer, visit: StatLineVisitor): boolean {
  return walkReplyLines(reply, STAT_HEAD, 'STAT', (pos, end) => {
    const nameStart = pos + STAT_HEAD.length;
    let nameEnd = nameStart;
    while (nameEnd < end && reply[nameEnd] !== SPACE) nameEnd++;
    if (nameEnd === nameStart) throw protocolError('STAT line without a name', bytesLine(reply, pos, end));
    // The server omits the space when the value is empty: `STAT <name>`.
    const valueStart = nameEnd < end ? nameEnd + 1 : end;
    return visit(nameStart, nameEnd, valueStart, end);
  });
}

/** Parses a `stats`, `stats settings`, `stats slabs` or `stats zookeeper` reply (text or bytes). */
export function parseStats(reply: string | Buffer): StatsReply {
  const bytes = typeof reply === 'string' ? Buffer.from(reply, 'utf8') : reply;
  const stats: StatsReply = [];
  scanStats(bytes, (nameStart, nameEnd, valueStart, valueEnd) => {
    stats.push([bytes.toString('utf8', nameStart, nameEnd), bytes.toString('utf8', valueStart, valueEnd)]);
  });
  return stats;
}

/**
 * Receives one `PREFIX <name> <field> <value> ...` line: `ranges[4i .. 4i + 3]` bound the i-th
 * field and value, `counts[i]` is the value (NaN for the text field). Both arrays are reused from
 * line to line. Returning false stops the walk.
 */
export type PrefixLineVisitor = (
  nameStart: number,
  nameEnd: number,
  ranges: Uint32Array,
  counts: Float64Array,
  pairs: number,
  lineStart: number,
  lineEnd: number,
) => boolean | void;

/**
 * Walks a prefix statistics reply held as bytes, creating no strings. Every value must be a count
 * but `textField`'s. Throws like parsePrefixItems; returns like scanStats.
 */
export function scanPrefixLines(reply: Buffer, textField: string | undefined, visit: PrefixLineVisitor): boolean {
  const text = textField === undefined ? undefined : Buffer.from(textField);
  let ranges = new Uint32Array(64 * 4);
  let counts = new Float64Array(64);
  return walkReplyLines(reply, PREFIX_HEAD, 'PREFIX', (pos, end) => {
    const nameStart = pos + PREFIX_HEAD.length;
    let at = spaceOrEndBytes(reply, nameStart, end);
    if (at === nameStart) throw protocolError('PREFIX line without a name', bytesLine(reply, pos, end));
    const nameEnd = at;
    let pairs = 0;
    // `at` is the space before the next field name, or the end of the line.
    while (at < end) {
      const fieldStart = at + 1;
      const fieldEnd = spaceOrEndBytes(reply, fieldStart, end);
      if (fieldEnd === fieldStart) throw protocolError('empty field', bytesLine(reply, pos, end));
      if (fieldEnd === end) throw protocolError('field without a value', bytesLine(reply, pos, end));
      const valueStart = fieldEnd + 1;
      const valueEnd = spaceOrEndBytes(reply, valueStart, end);
      if (valueEnd === valueStart) throw protocolError('empty value', bytesLine(reply, pos, end));
      if (pairs === counts.length) {
        ranges = grow(ranges, ranges.length * 2);
        counts = grow(counts, counts.length * 2);
      }
      let value = NaN;
      if (text === undefined || !equalBytes(reply, fieldStart, fieldEnd, text)) {
        value = countAt(reply, valueStart, valueEnd);
        if (value < 0) {
          throw protocolError(
            `non-numeric value for ${reply.toString('utf8', fieldStart, fieldEnd)}`,
            bytesLine(reply, pos, end),
          );
        }
      }
      ranges[pairs * 4] = fieldStart;
      ranges[pairs * 4 + 1] = fieldEnd;
      ranges[pairs * 4 + 2] = valueStart;
      ranges[pairs * 4 + 3] = valueEnd;
      counts[pairs] = value;
      pairs++;
      at = valueEnd;
    }
    return visit(nameStart, nameEnd, ranges, counts, pairs, pos, end);
  });
}

/** The walk both scanners share: `line(start, end)` for every line beginning with `head`, until END. */
function walkReplyLines(
  reply: Buffer,
  head: Buffer,
  kind: string,
  line: (start: number, end: number) => boolean | void,
): boolean {
  const length = reply.length;
  let pos = 0;
  for (;;) {
    const nl = reply.indexOf(LF, pos);
    if (nl === -1) throw unterminatedBytes(reply, pos);
    const end = nl > pos && reply[nl - 1] === CR ? nl - 1 : nl;
    if (end - pos >= head.length && equalBytes(reply, pos, pos + head.length, head)) {
      if (line(pos, end) === false) return false;
    } else if (end - pos === 3 && reply[pos] === 0x45 && reply[pos + 1] === 0x4e && reply[pos + 2] === 0x44) {
      if (nl + 1 !== length) {
        const next = reply.indexOf(LF, nl + 1);
        const lineEnd = next === -1 ? length : next > nl + 1 && reply[next - 1] === CR ? next - 1 : next;
        throw protocolError('data after END', bytesLine(reply, nl + 1, lineEnd));
      }
      return true;
    } else {
      const refusal = pos === 0 ? errorReplyOf(reply) : undefined;
      throw refusal ?? protocolError(`expected ${kind} or END`, bytesLine(reply, pos, end));
    }
    pos = nl + 1;
  }
}

const STAT_HEAD = Buffer.from('STAT ');
const PREFIX_HEAD = Buffer.from('PREFIX ');

/** The NODE_ERROR_REPLY the parsers would throw when a reply is one error line; else undefined. */
export function errorReplyOf(reply: Buffer): CachemonError | undefined {
  const first = reply[0];
  if (first !== 0x45 /* E */ && first !== 0x43 /* C */ && first !== 0x53 /* S */) return undefined;
  const nl = reply.indexOf(LF);
  if (nl === -1 || nl + 1 !== reply.length) return undefined;
  const end = nl > 0 && reply[nl - 1] === CR ? nl - 1 : nl;
  const line = reply.toString('utf8', 0, end);
  return errorKeywordAt(line, 0, line.length) === undefined ? undefined : errorReply(line);
}

/** The refusal of a server holding more than `max_stats_prefixes` prefixes: only `stats prefixlist` works. */
export function isTooManyPrefixes(err: unknown): boolean {
  if (!isCachemonError(err, Errors.NODE_ERROR_REPLY)) return false;
  const reply = err.details?.['reply'];
  return typeof reply === 'string' && reply.startsWith('CLIENT_ERROR') && reply.includes('too many prefixes');
}

/** Index of the first space in [from, end), else `end`. */
function spaceOrEndBytes(bytes: Buffer, from: number, end: number): number {
  let i = from;
  while (i < end && bytes[i] !== SPACE) i++;
  return i;
}

function equalBytes(bytes: Buffer, start: number, end: number, expected: Buffer): boolean {
  if (end - start !== expected.length) return false;
  for (let i = 0; i < expected.length; i++) if (bytes[start + i] !== expected[i]) return false;
  return true;
}

/** Decimal digits in [start, end) as a number, or -1. Up to 15 digits are summed exactly in place. */
function countAt(bytes: Buffer, start: number, end: number): number {
  let value = 0;
  for (let i = start; i < end; i++) {
    const digit = bytes[i]! - ZERO;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  // Beyond 2^53 the running sum may round differently from the correctly rounded parse.
  return end - start > 15 ? Number(bytes.toString('latin1', start, end)) : value;
}

function grow<T extends Uint32Array | Float64Array>(array: T, length: number): T {
  const grown = new (array.constructor as new (length: number) => T)(length);
  grown.set(array);
  return grown;
}

/** The line for an error message, decoded; never more than the quoted part of a long line. */
function bytesLine(reply: Buffer, start: number, end: number): string {
  return reply.toString('utf8', start, Math.min(end, start + QUOTE_LIMIT + 1));
}

function unterminatedBytes(reply: Buffer, pos: number): CachemonError {
  if (pos === reply.length) return protocolError('reply ends without END');
  return protocolError('reply ends inside a line', bytesLine(reply, pos, reply.length));
}

const CR = 0x0d;
const LF = 0x0a;
const SPACE = 0x20;
const ZERO = 0x30;
