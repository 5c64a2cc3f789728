/**
 * HTTP/1.1 message framing for the fast lane (fast-lane.ts): where a request's head and body end,
 * and where an answer's body ends (Content-Length or chunked). Strict on purpose: a request the
 * lane is not sure to read exactly as node:http would is not read here at all (undefined), and
 * node:http reads it instead.
 */

/** `\r\n\r\n`: the end of a head. */
export const HEAD_END = Buffer.from('\r\n\r\n');

/** A request head the lane can take. */
export interface RequestHead {
  readonly method: 'GET' | 'POST';
  /** The request-target as sent: path and query string. */
  readonly target: string;
  /** Header values by lower-case name (each name once). */
  readonly headers: ReadonlyMap<string, string>;
  /** Body bytes that follow the head (0 without Content-Length). */
  readonly contentLength: number;
  /** The client keeps the connection open after the answer (HTTP/1.1 without `Connection: close`). */
  readonly keepAlive: boolean;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Control characters node:http refuses in a header value (HTAB allowed). */
const BAD_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;
const DIGITS = /^[0-9]{1,10}$/;
/** Headers that change how the message is framed or what the connection becomes: left to node:http. */
const NOT_TAKEN = new Set(['transfer-encoding', 'expect', 'upgrade', 'te', 'trailer']);

/**
 * The head of a request (the bytes before `\r\n\r\n`, read as latin1), or undefined when the lane
 * does not take it: not HTTP/1.1, a method other than GET and POST, a header repeated or folded,
 * a framing or connection-changing header, a malformed line.
 */
export function parseRequestHead(head: string): RequestHead | undefined {
  const lines = head.split('\r\n');
  const requestLine = lines[0]!;
  const first = requestLine.indexOf(' ');
  const last = requestLine.lastIndexOf(' ');
  if (first <= 0 || last === first) return undefined;
  const method = requestLine.slice(0, first);
  const target = requestLine.slice(first + 1, last);
  if ((method !== 'GET' && method !== 'POST') || requestLine.slice(last + 1) !== 'HTTP/1.1') return undefined;
  if (target.charCodeAt(0) !== 47 /* / */ || target.includes(' ') || BAD_VALUE.test(target)) return undefined;
  const headers = new Map<string, string>();
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(':');
    if (colon <= 0) return undefined;
    const name = line.slice(0, colon);
    if (!TOKEN.test(name)) return undefined;
    const key = name.toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (headers.has(key) || NOT_TAKEN.has(key) || BAD_VALUE.test(value)) return undefined;
    headers.set(key, value);
  }
  let contentLength = 0;
  const length = headers.get('content-length');
  if (length !== undefined) {
    if (!DIGITS.test(length)) return undefined;
    contentLength = Number(length);
  }
  const connection = headers.get('connection')?.toLowerCase();
  if (connection !== undefined && connection.includes('upgrade')) return undefined;
  const keepAlive = connection === undefined || !/(?:^|,)\s*close\s*(?:,|$)/.test(connection);
  return { method, target, headers, contentLength, keepAlive };
}

/**
 * An answer read as it arrives: its status and headers, then its body bytes (de-chunked) handed to
 * `onBody`, until its end. `push` takes the next bytes of the connection and says how many belong
 * to this answer; `done` is set at its end.
 */
export class AnswerFramer {
  status = 0;
  /** Header values by lower-case name (the first of a repeated one). */
  readonly headers = new Map<string, string>();
  headDone = false;
  done = false;
  /** Body bytes received so far (de-chunked). */
  received = 0;
  /** Content-Length, or -1 (chunked). */
  private length = -1;
  private head: Buffer | undefined;
  // Chunked: 'size' (a chunk-size line), 'data' (`left` bytes, then the CRLF), 'crlf', 'trailer'.
  private state: 'size' | 'data' | 'crlf' | 'trailer' = 'size';
  private line = '';
  private left = 0;

  /**
   * @param onBody the body's bytes, as they come (views of the pushed chunks)
   * @param noBody the request was a HEAD: the answer has a head only
   * @param maxHead the longest head accepted
   */
  constructor(
    private readonly onBody: (piece: Buffer) => void,
    private readonly noBody = false,
    private readonly maxHead = 64 * 1024,
  ) {}

  /** Reads `chunk`; returns how many of its bytes belong to this answer. Throws on a malformed answer. */
  push(chunk: Buffer): number {
    let at = 0;
    if (!this.headDone) {
      const bytes = this.head === undefined ? chunk : Buffer.concat([this.head, chunk]);
      const end = bytes.indexOf(HEAD_END);
      if (end < 0) {
        if (bytes.length > this.maxHead) throw new Error(`an answer head longer than ${this.maxHead} bytes`);
        this.head = bytes;
        return chunk.length;
      }
      const before = this.head === undefined ? 0 : this.head.length;
      this.head = undefined;
      this.readHead(bytes.toString('latin1', 0, end));
      at = end + 4 - before;
      if (this.done) return at;
    }
    if (this.length >= 0) {
      const take = Math.min(chunk.length - at, this.length - this.received);
      if (take > 0) this.body(chunk.subarray(at, at + take));
      if (this.received === this.length) this.done = true;
      return at + take;
    }
    return this.chunked(chunk, at);
  }

  private body(piece: Buffer): void {
    this.received += piece.length;
    this.onBody(piece);
  }

  private readHead(head: string): void {
    const lines = head.split('\r\n');
    const status = /^HTTP\/1\.[01] ([1-9][0-9]{2})(?: |$)/.exec(lines[0]!);
    if (!status) throw new Error(`not an HTTP answer: ${JSON.stringify(lines[0]!.slice(0, 80))}`);
    this.status = Number(status[1]);
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      if (colon <= 0) throw new Error(`a malformed header line in an answer: ${JSON.stringify(line.slice(0, 80))}`);
      const name = line.slice(0, colon).trim().toLowerCase();
      if (!this.headers.has(name)) this.headers.set(name, line.slice(colon + 1).trim());
    }
    this.headDone = true;
    if (this.status < 200) throw new Error(`an interim answer (${this.status}) the lane does not expect`);
    if (this.noBody || this.status === 204 || this.status === 304) {
      this.done = true;
      return;
    }
    const te = this.headers.get('transfer-encoding');
    if (te !== undefined) {
      if (te.toLowerCase() !== 'chunked') throw new Error(`an answer with transfer-encoding ${te}`);
      return;
    }
    const length = this.headers.get('content-length');
    if (length === undefined || !DIGITS.test(length)) throw new Error(`an answer without a usable length (content-length ${JSON.stringify(length ?? null)}, not chunked)`);
    this.length = Number(length);
    if (this.length === 0) this.done = true;
  }

  private chunked(chunk: Buffer, at: number): number {
    let i = at;
    while (i < chunk.length) {
      if (this.state === 'data') {
        const take = Math.min(this.left, chunk.length - i);
        this.body(chunk.subarray(i, i + take));
        this.left -= take;
        i += take;
        if (this.left === 0) this.state = 'crlf';
        continue;
      }
      const nl = chunk.indexOf(10, i);
      if (nl < 0) {
        this.line += chunk.toString('latin1', i);
        if (this.line.length > 4096) throw new Error('a chunk-size or trailer line longer than 4096 bytes');
        return chunk.length;
      }
      let line = this.line + chunk.toString('latin1', i, nl);
      this.line = '';
      i = nl + 1;
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (this.state === 'crlf') {
        if (line !== '') throw new Error('chunk data longer than its size');
        this.state = 'size';
      } else if (this.state === 'trailer') {
        if (line === '') {
          this.done = true;
          return i;
        }
      } else {
        const size = line.split(';', 1)[0]!.trim();
        if (!/^[0-9a-fA-F]{1,12}$/.test(size)) throw new Error(`a bad chunk-size line ${JSON.stringify(line.slice(0, 40))}`);
        this.left = Number.parseInt(size, 16);
        this.state = this.left === 0 ? 'trailer' : 'data';
      }
    }
    return i;
  }
}
