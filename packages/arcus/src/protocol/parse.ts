/**
 * Pure parsers for the ARCUS / memcached ascii stats replies the exporters read on every scrape.
 *
 * Input is one complete framed reply (as AsciiConnection returns it, final CRLF included). Lines
 * end in CRLF; a bare LF is accepted too. The parsers walk the string with indexOf and build only
 * the strings and objects they return. They throw nothing but CachemonError:
 *   - NODE_ERROR_REPLY when the whole reply is one `ERROR`, `CLIENT_ERROR <msg>` or
 *     `SERVER_ERROR <msg>` line (the server's words in the message and in `details.reply`);
 *   - NODE_PROTOCOL for anything else that is not the expected shape (missing END, a line of the
 *     wrong kind, a non-numeric count, bytes after END), naming the line, cut to 80 characters.
 */
import { CachemonError, Errors, isCachemonError } from '@cachemon/core';
import { errorKeywordAt, errorReply, protocolError, QUOTE_LIMIT } from './reply-errors.js';

/** `STAT <name> <value>` lines in server order. A value may hold spaces (`logger standard error`) or be empty. */
export type StatsReply = Array<[name: string, value: string]>;

/** One `stats prefixes` / `stats prefixlist item` line. */
export interface PrefixItemStats {
  /** Prefix name; `<null>` stands for keys without a prefix. */
  prefix: string;
  /** Every numeric pair of the line (`itm`, `kitm`, ..., `tsz`, `btsz`, and any field a newer server adds). */
  fields: Record<string, number>;
  /** The `time` field, creation time as the server prints it (`YYYYMMDDhhmmss`, server local time). */
  created?: string;
}

/** One `stats detail dump` / `stats prefixlist operation` line. */
export interface PrefixOperationStats {
  /** Prefix name; `<null>` stands for keys without a prefix. */
  prefix: string;
  /** Every pair of the line: `get`, `hit`, `set`, `del` (plain memcached stops there), `inc`, ..., `sas`. */
  counts: Record<string, number>;
}

/**
 * Receives the `STAT <name> <value>` lines of a stats reply as byte offsets into the reply (the
 * value is empty, valueStart === valueEnd, when the server printed none). Returning false stops
 * the walk.
 */
export type StatLineVisitor = (nameStart: number, nameEnd: number, valueStart: number, valueEnd: number) => boolean | void;

/**
 * Walks a `stats`, `stats settings`, `stats slabs` or `stats zookeeper` reply held as bytes,
 * creating no strings: the exporter renders every scrape's `stats` replies straight from their
 * bytes. Throws like parseStats. Returns true once END closed the reply, false when `visit`
 * stopped the walk (the rest of the reply is then unchecked).
 */
export function scanStats(reply: Buffer, visit: StatLineVisitor): boolean {
  const length = reply.length;
  let pos = 0;
  for (;;) {
    const nl = reply.indexOf(LF, pos);
    if (nl === -1) throw unterminatedBytes(reply, pos);
    const end = nl > pos && reply[nl - 1] === CR ? nl - 1 : nl;
    if (end - pos >= 5 && reply[pos] === 0x53 && reply[pos + 1] === 0x54 && reply[pos + 2] === 0x41 && reply[pos + 3] === 0x54 && reply[pos + 4] === SPACE) {
      const nameStart = pos + 5;
      let nameEnd = nameStart;
      while (nameEnd < end && reply[nameEnd] !== SPACE) nameEnd++;
      if (nameEnd === nameStart) throw protocolError('STAT line without a name', bytesLine(reply, pos, end));
      // The server omits the space when the value is empty: `STAT <name>`.
      const valueStart = nameEnd < end ? nameEnd + 1 : end;
      if (visit(nameStart, nameEnd, valueStart, end) === false) return false;
    } else if (end - pos === 3 && reply[pos] === 0x45 && reply[pos + 1] === 0x4e && reply[pos + 2] === 0x44) {
      if (nl + 1 !== length) {
        const next = reply.indexOf(LF, nl + 1);
        const lineEnd = next === -1 ? length : next > nl + 1 && reply[next - 1] === CR ? next - 1 : next;
        throw protocolError('data after END', bytesLine(reply, nl + 1, lineEnd));
      }
      return true;
    } else {
      const line = bytesLine(reply, pos, end);
      if (pos === 0 && nl + 1 === length && errorKeywordAt(line, 0, end) !== undefined) {
        throw errorReply(reply.toString('utf8', 0, end));
      }
      throw protocolError('expected STAT or END', line);
    }
    pos = nl + 1;
  }
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

/** Parses a `stats prefixes` or `stats prefixlist item ...` reply. */
export function parsePrefixItems(reply: string): PrefixItemStats[] {
  const items: PrefixItemStats[] = [];
  parsePrefixLines(reply, 'time', (prefix, fields, created) => {
    items.push(created === undefined ? { prefix, fields } : { prefix, fields, created });
  });
  return items;
}

/** Parses a `stats detail dump` or `stats prefixlist operation ...` reply. */
export function parsePrefixOperations(reply: string): PrefixOperationStats[] {
  const operations: PrefixOperationStats[] = [];
  parsePrefixLines(reply, undefined, (prefix, counts) => {
    operations.push({ prefix, counts });
  });
  return operations;
}

/**
 * True for the error `stats prefixes` and `stats detail dump` give when the server holds more
 * prefixes than its `max_stats_prefixes` setting. Then only `stats prefixlist ...` with explicit
 * names works.
 */
export function isTooManyPrefixes(err: unknown): boolean {
  if (!isCachemonError(err, Errors.NODE_ERROR_REPLY)) return false;
  const reply = err.details?.['reply'];
  return typeof reply === 'string' && reply.startsWith('CLIENT_ERROR') && reply.includes('too many prefixes');
}

// ---------------------------------------------------------------------------------------------

/**
 * Walks `PREFIX <name> <field> <value> ...` lines up to END. The field named `textField` (the
 * creation `time` of item stats) is kept as text; every other value must be a decimal count.
 */
function parsePrefixLines(
  reply: string,
  textField: string | undefined,
  emit: (prefix: string, numbers: Record<string, number>, text: string | undefined) => void,
): void {
  let pos = 0;
  for (;;) {
    const nl = reply.indexOf('\n', pos);
    if (nl === -1) throw unterminated(reply, pos);
    const end = contentEnd(reply, pos, nl);
    if (reply.startsWith('PREFIX ', pos)) {
      const nameStart = pos + 7;
      let at = spaceOrEnd(reply, nameStart, end);
      if (at === nameStart) throw protocolError('PREFIX line without a name', lineAt(reply, pos, end));
      const prefix = reply.slice(nameStart, at);
      const numbers: Record<string, number> = {};
      let text: string | undefined;
      // `at` is the space before the next field name, or the end of the line.
      while (at < end) {
        const fieldStart = at + 1;
        const fieldEnd = spaceOrEnd(reply, fieldStart, end);
        if (fieldEnd === fieldStart) throw protocolError('empty field', lineAt(reply, pos, end));
        if (fieldEnd === end) throw protocolError('field without a value', lineAt(reply, pos, end));
        const valueStart = fieldEnd + 1;
        const valueEnd = spaceOrEnd(reply, valueStart, end);
        if (valueEnd === valueStart) throw protocolError('empty value', lineAt(reply, pos, end));
        const field = reply.slice(fieldStart, fieldEnd);
        if (field === textField) {
          text = reply.slice(valueStart, valueEnd);
        } else {
          const value = parseCount(reply, valueStart, valueEnd);
          if (value < 0) throw protocolError(`non-numeric value for ${field}`, lineAt(reply, pos, end));
          // The one name a plain object cannot hold as data.
          if (field === '__proto__') throw protocolError('invalid field name', lineAt(reply, pos, end));
          numbers[field] = value;
        }
        at = valueEnd;
      }
      emit(prefix, numbers, text);
    } else if (isEnd(reply, pos, end)) {
      finish(reply, nl, undefined);
      return;
    } else {
      throw unexpectedLine(reply, pos, end, nl, 'expected PREFIX or END');
    }
    pos = nl + 1;
  }
}

/** End of the line's content: the `\n` at `nl`, or the `\r` before it. */
function contentEnd(text: string, start: number, nl: number): number {
  return nl > start && text.charCodeAt(nl - 1) === CR ? nl - 1 : nl;
}

/** Index of the first space in [from, end), else `end`. */
function spaceOrEnd(text: string, from: number, end: number): number {
  const space = text.indexOf(' ', from);
  return space === -1 || space > end ? end : space;
}

function isEnd(text: string, start: number, end: number): boolean {
  return end - start === 3 && text.startsWith('END', start);
}

/** END must close the reply: bytes after it mean the caller framed the stream wrongly. */
function finish<T>(reply: string, nl: number, result: T): T {
  if (nl + 1 !== reply.length) {
    const next = reply.indexOf('\n', nl + 1);
    const end = next === -1 ? reply.length : contentEnd(reply, nl + 1, next);
    throw protocolError('data after END', lineAt(reply, nl + 1, end));
  }
  return result;
}

/** The reply is a lone error line (the server refused), or a line of the wrong kind (garbage). */
function unexpectedLine(reply: string, start: number, end: number, nl: number, reason: string): CachemonError {
  if (start === 0 && nl + 1 === reply.length && errorKeywordAt(reply, 0, end) !== undefined) {
    return errorReply(reply.slice(0, end));
  }
  return protocolError(reason, lineAt(reply, start, end));
}

function unterminated(reply: string, pos: number): CachemonError {
  if (pos === reply.length) return protocolError('reply ends without END');
  return protocolError('reply ends inside a line', lineAt(reply, pos, reply.length));
}

/** The line for an error message; never copies more than the quoted part of a long line. */
function lineAt(text: string, start: number, end: number): string {
  return text.slice(start, Math.min(end, start + QUOTE_LIMIT + 1));
}

/** Decimal digits in [start, end) as a number, or -1. Up to 15 digits are summed exactly in place. */
function parseCount(text: string, start: number, end: number): number {
  let value = 0;
  for (let i = start; i < end; i++) {
    const digit = text.charCodeAt(i) - ZERO;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  // Beyond 2^53 the running sum may round differently from the correctly rounded parse.
  return end - start > 15 ? Number(text.slice(start, end)) : value;
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
