/**
 * Cuts one ascii connection's byte stream into replies of the kind the oldest pending request
 * expects: 'line' (one line), 'multi' (lines until END), 'value' (VALUE blocks or a collection's
 * element lines, until a closing line). A reply is a view of the buffer, valid until rewind().
 *
 * A server that does not know a command with a data block answers ERROR and then reads each data
 * line as a command: after an ERROR the framer swallows `echoLines` more one-line replies.
 */
import { errorKeywordAt, protocolError } from './reply-errors.js';

export type ReplyKind = 'multi' | 'line' | 'value';

/** Longest line accepted outside data blocks. `stats detail dump` lines are ~450 bytes. */
export const MAX_LINE_BYTES = 64 * 1024;

const enum Phase {
  First,
  /** 'multi' after the first line: lines until END. */
  Lines,
  /** 'value': a data block of `remaining` bytes plus CRLF. */
  Data,
  /** 'value' after a data block: another VALUE header or END. */
  AfterData,
  /** 'value' collection: `remaining` element lines. */
  Elements,
  /** 'value' collection: the closing line. */
  Closing,
  /** `remaining` replies to data lines the server read as commands, after an ERROR. */
  Echoes,
}

const LF = 0x0a;
const CR = 0x0d;
const EMPTY = Buffer.alloc(0);
/** A connection's first buffer: a QoS probe's replies fit in it; a `stats` flight grows it once. */
const MIN_BUFFER_BYTES = 1024;
/** Buffers up to this size stay with their connection; one grown for a larger reply is dropped at rewind(). */
const KEEP_BUFFER_BYTES = 16 * 1024;

export class ReplyFramer {
  /** Unconsumed bytes are buf[start, end); `view` is buf cut at `end` so indexOf never reads stale bytes. */
  private buf: Buffer = EMPTY;
  private view: Buffer = EMPTY;
  private start = 0;
  private end = 0;

  // State of the reply being framed; offsets are relative to `start`.
  private phase = Phase.First;
  /** Where the next line (or data block) of the current reply begins. */
  private cursor = 0;
  /** Where to resume looking for LF in an incomplete line. */
  private searchFrom = 0;
  private remaining = 0;
  /** Length of the text to return when it is shorter than what is consumed (ERROR + echoes). */
  private resultLength = -1;

  /** @param keepBuffer false for a connection used now and then: it keeps no buffer between replies. */
  constructor(
    private readonly maxReplyBytes: number,
    private readonly keepBuffer = true,
  ) {}

  /** Bytes received and not yet returned as a reply. */
  get buffered(): number {
    return this.end - this.start;
  }

  /** Copies `chunk` in (see append). */
  push(chunk: Uint8Array): void {
    this.append(chunk, chunk.length);
  }

  /**
   * Copies the first `length` bytes of `source` in. Bytes never go over a reply handed out: when
   * they do not fit, a larger buffer takes over and the old one is left to those replies.
   */
  append(source: Uint8Array, length: number): void {
    if (length <= 0) return;
    if (this.buf.length - this.end < length) {
      const pending = this.end - this.start;
      // Half again what is needed now: a reply arriving in several reads is copied a few times at most.
      const needed = pending + length;
      const grown = Buffer.allocUnsafeSlow(Math.max(MIN_BUFFER_BYTES, needed + (needed >> 1)));
      this.buf.copy(grown, 0, this.start, this.end);
      this.buf = grown;
      this.start = 0;
      this.end = pending;
    }
    this.buf.set(length === source.length ? source : source.subarray(0, length), this.end);
    this.end += length;
    this.view = this.buf.subarray(0, this.end);
  }

  /** Lets the next bytes overwrite the buffer from its start: the replies handed out are done with. */
  rewind(): void {
    if (this.start !== this.end) return;
    if (!this.keepBuffer || this.buf.length > KEEP_BUFFER_BYTES) this.buf = EMPTY;
    this.start = 0;
    this.end = 0;
    this.view = EMPTY;
  }

  /**
   * The next complete reply of `kind`, or undefined until more bytes arrive (progress is kept).
   * Throws NODE_PROTOCOL on bytes that cannot be this kind or are over the limit; then reset().
   */
  next(kind: ReplyKind, echoLines = 0): Buffer | undefined {
    for (;;) {
      if (this.phase === Phase.Data) {
        const blockEnd = this.cursor + this.remaining;
        if (this.start + blockEnd + 2 > this.end) return this.incomplete();
        if (this.buf[this.start + blockEnd] !== CR || this.buf[this.start + blockEnd + 1] !== LF) {
          throw protocolError('data block not followed by CRLF', this.text(blockEnd, blockEnd + 2));
        }
        this.cursor = blockEnd + 2;
        this.searchFrom = this.cursor;
        this.phase = Phase.AfterData;
        continue;
      }

      const lineStart = this.start + this.cursor;
      const nl = this.view.indexOf(LF, this.start + this.searchFrom);
      if (nl === -1) {
        if (this.end - lineStart > MAX_LINE_BYTES) {
          throw protocolError('line too long', this.text(this.cursor, this.cursor + 100));
        }
        // Judged by its first byte, so binary garbage without a line end fails now, not at the deadline.
        if (this.end > lineStart && this.keywordLineDue(kind)) this.requireKeywordLine(lineStart, this.end);
        this.searchFrom = this.end - this.start;
        return this.incomplete();
      }
      if (nl - lineStart > MAX_LINE_BYTES)
        throw protocolError('line too long', this.text(this.cursor, this.cursor + 100));
      const lineEnd = nl > lineStart && this.buf[nl - 1] === CR ? nl - 1 : nl;
      this.cursor = nl + 1 - this.start;
      this.searchFrom = this.cursor;
      const done = this.onLine(kind, echoLines, lineStart, lineEnd);
      if (done) return this.complete();
    }
  }

  /** Up to 100 buffered bytes as text, for error messages. */
  preview(): string {
    return this.text(0, 100);
  }

  /** Drops every buffered byte and the partial reply: the connection is gone. */
  reset(): void {
    this.buf = EMPTY;
    this.view = EMPTY;
    this.start = 0;
    this.end = 0;
    this.resetReply();
  }

  /** Handles one line of the current reply; true when the reply is complete. */
  private onLine(kind: ReplyKind, echoLines: number, lineStart: number, lineEnd: number): boolean {
    switch (this.phase) {
      case Phase.First: {
        const keyword = this.errorKeyword(lineStart, lineEnd);
        if (keyword === 'ERROR' && echoLines > 0) {
          this.resultLength = this.cursor;
          this.remaining = echoLines;
          this.phase = Phase.Echoes;
          return false;
        }
        if (kind === 'line' || keyword !== undefined) return true;
        if (kind === 'multi') {
          if (this.isEnd(lineStart, lineEnd)) return true;
          this.requireKeywordLine(lineStart, lineEnd);
          this.phase = Phase.Lines;
          return false;
        }
        if (this.startsWith(lineStart, lineEnd, 'VALUE ')) return this.onValueHeader(lineStart, lineEnd);
        return true; // END, NOT_FOUND, TYPE_MISMATCH, ...: the whole reply
      }
      case Phase.Lines:
        if (this.isEnd(lineStart, lineEnd)) return true;
        this.requireKeywordLine(lineStart, lineEnd);
        return false;
      case Phase.AfterData:
        if (this.isEnd(lineStart, lineEnd)) return true;
        if (this.startsWith(lineStart, lineEnd, 'VALUE ')) return this.onValueHeader(lineStart, lineEnd);
        throw protocolError('expected VALUE or END after a data block', this.line(lineStart, lineEnd));
      case Phase.Elements:
        if (--this.remaining === 0) this.phase = Phase.Closing;
        return false;
      case Phase.Closing:
        this.requireKeywordLine(lineStart, lineEnd);
        return true;
      case Phase.Echoes:
        return --this.remaining === 0;
      case Phase.Data:
        return false; // handled in next()
    }
  }

  /** `VALUE <key> <flags> <bytes> [<cas>]` or, for collections, `VALUE <flags> <count>`. */
  private onValueHeader(lineStart: number, lineEnd: number): boolean {
    const header = this.buf.toString('latin1', lineStart, lineEnd);
    const tokens = header.split(' ');
    if (tokens.length === 4 || tokens.length === 5) {
      const bytes = decimal(tokens[3]);
      if (bytes < 0 || bytes > this.maxReplyBytes) throw protocolError('bad VALUE header', header);
      this.remaining = bytes;
      this.phase = Phase.Data;
      return false;
    }
    if (tokens.length === 3 && decimal(tokens[1]) >= 0) {
      const count = decimal(tokens[2]);
      if (count < 0) throw protocolError('bad VALUE header', header);
      this.remaining = count;
      this.phase = count === 0 ? Phase.Closing : Phase.Elements;
      return false;
    }
    throw protocolError('bad VALUE header', header);
  }

  private incomplete(): undefined {
    if (this.end - this.start > this.maxReplyBytes) {
      throw protocolError(`reply larger than ${this.maxReplyBytes} bytes`, this.text(0, 100));
    }
    return undefined;
  }

  private complete(): Buffer {
    const length = this.resultLength >= 0 ? this.resultLength : this.cursor;
    if (this.cursor > this.maxReplyBytes) {
      throw protocolError(`reply larger than ${this.maxReplyBytes} bytes`, this.text(0, 100));
    }
    // A view: append() only writes past `end` until rewind(); a reset drops the buffer.
    const reply = this.buf.subarray(this.start, this.start + length);
    this.start += this.cursor;
    this.resetReply();
    return reply;
  }

  private resetReply(): void {
    this.phase = Phase.First;
    this.cursor = 0;
    this.searchFrom = 0;
    this.remaining = 0;
    this.resultLength = -1;
  }

  /** Whether the next line of a reply of `kind` must begin with a keyword (requireKeywordLine). */
  private keywordLineDue(kind: ReplyKind): boolean {
    if (this.phase === Phase.Closing) return true;
    return kind === 'multi' && (this.phase === Phase.First || this.phase === Phase.Lines);
  }

  /** Reply lines outside data blocks begin with a capital keyword (STAT, PREFIX, VALUE, END, ...). */
  private requireKeywordLine(lineStart: number, lineEnd: number): void {
    const first = lineStart < lineEnd ? this.buf[lineStart]! : 0;
    if (first < 0x41 || first > 0x5a) throw protocolError('not a reply line', this.line(lineStart, lineEnd));
  }

  private errorKeyword(lineStart: number, lineEnd: number): ReturnType<typeof errorKeywordAt> {
    // Error lines are short: decode at most the keyword and the character after it.
    const first = lineStart < lineEnd ? this.buf[lineStart] : 0;
    if (first !== 0x45 /* E */ && first !== 0x43 /* C */ && first !== 0x53 /* S */) return undefined;
    const head = this.buf.toString('latin1', lineStart, Math.min(lineEnd, lineStart + 13));
    return errorKeywordAt(head, 0, lineEnd - lineStart);
  }

  private isEnd(lineStart: number, lineEnd: number): boolean {
    return (
      lineEnd - lineStart === 3 &&
      this.buf[lineStart] === 0x45 &&
      this.buf[lineStart + 1] === 0x4e &&
      this.buf[lineStart + 2] === 0x44
    );
  }

  private startsWith(lineStart: number, lineEnd: number, ascii: string): boolean {
    if (lineEnd - lineStart < ascii.length) return false;
    for (let i = 0; i < ascii.length; i++) {
      if (this.buf[lineStart + i] !== ascii.charCodeAt(i)) return false;
    }
    return true;
  }

  private line(lineStart: number, lineEnd: number): string {
    return this.buf.toString('latin1', lineStart, Math.min(lineEnd, lineStart + 100));
  }

  /** Buffered bytes [from, to) of the current reply, clipped to what has arrived. */
  private text(from: number, to: number): string {
    return this.buf.toString('latin1', this.start + from, Math.min(this.end, this.start + to));
  }
}

/** Decimal digits as a number, or -1 (also for undefined, empty, or more than 15 digits). */
function decimal(token: string | undefined): number {
  if (token === undefined || token.length === 0 || token.length > 15) return -1;
  let value = 0;
  for (let i = 0; i < token.length; i++) {
    const digit = token.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}
