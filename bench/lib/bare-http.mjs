// A bare HTTP/1.1 GET client for the exporter benchmarks: one keep-alive socket, the request written
// as one prepared string, the answer read as bytes until its body is complete (Content-Length or
// chunked), with no parser, stream or response object in between.
//
// Why: the floor of the exporter benchmarks is a bare socket client, timed in this process, that
// reads the servers' replies without parsing them. A scrape timed through node:http also times
// node:http's client, which on a small VM adds about as much as a small answer takes
// (bench/lib/client-cost.mjs). A store's scraper is a Go program whose client costs
// a fraction of that. With this client both sides are timed by a client that does next to nothing,
// so what the ratio charges to the exporter is the exporter's. Decompression and every check of the
// body happen after the timing, as before.
import { Agent, request } from 'node:http';
import { connect } from 'node:net';

const CRLFCRLF = Buffer.from('\r\n\r\n');

export class BareHttpClient {
  /** @param {string} host @param {number} port */
  constructor(host, port) {
    this.host = host;
    this.port = port;
    /** @type {import('node:net').Socket | undefined} */
    this.socket = undefined;
    /** @type {((chunk: Buffer) => void) | undefined} */
    this.onData = undefined;
    /** @type {((err: Error) => void) | undefined} */
    this.onFail = undefined;
  }

  /** The open socket, connected on first use and again after the server closed it. */
  async #socket() {
    if (this.socket && !this.socket.destroyed) return this.socket;
    const socket = connect({ host: this.host, port: this.port });
    socket.setNoDelay(true);
    await new Promise((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    socket.on('data', (chunk) => this.onData?.(chunk));
    socket.on('error', (err) => this.onFail?.(err));
    socket.on('close', () => this.onFail?.(new Error('connection closed before the answer ended')));
    this.socket = socket;
    return socket;
  }

  /**
   * GET `path` with `headers`. Resolves to { status, headers (lower-cased names), body (the bytes as
   * sent, still compressed), ms (from writing the request to the last byte of the body) }.
   * `timeoutMs` bounds the whole exchange; the connection is dropped when it passes.
   * @param {string} path @param {Record<string, string>} [headers] @param {{ timeoutMs?: number }} [opts]
   */
  async get(path, headers = {}, { timeoutMs = 30_000 } = {}) {
    const socket = await this.#socket();
    let head = `GET ${path} HTTP/1.1\r\nHost: ${this.host}:${this.port}\r\n`;
    for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
    head += '\r\n';
    return new Promise((resolve, reject) => {
      const answer = new AnswerReader();
      const timer = setTimeout(
        () => fail(new Error(`GET ${path}: no complete answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const fail = (err) => {
        clearTimeout(timer);
        this.onData = this.onFail = undefined;
        socket.destroy();
        reject(err);
      };
      this.onFail = fail;
      this.onData = (chunk) => {
        let done;
        try {
          done = answer.add(chunk);
        } catch (err) {
          fail(err);
          return;
        }
        if (!done) return;
        const ms = performance.now() - started;
        clearTimeout(timer);
        this.onData = this.onFail = undefined;
        if (answer.headers['connection'] === 'close') socket.destroy();
        resolve({ status: answer.status, headers: answer.headers, body: answer.body(), ms });
      };
      const started = performance.now();
      socket.write(head);
    });
  }

  close() {
    this.onData = this.onFail = undefined;
    this.socket?.destroy();
    this.socket = undefined;
  }
}

/**
 * The same interface over node:http's client (one keep-alive Agent socket): what the benchmarks
 * used before the bare client, kept to show the difference (`--client=node`, `--compare-clients`).
 */
export class NodeHttpClient {
  /** @param {string} host @param {number} port */
  constructor(host, port) {
    this.host = host;
    this.port = port;
    this.agent = new Agent({ keepAlive: true, maxSockets: 1 });
  }

  /** @param {string} path @param {Record<string, string>} [headers] @param {{ timeoutMs?: number }} [opts] */
  get(path, headers = {}, { timeoutMs = 30_000 } = {}) {
    return new Promise((resolve, reject) => {
      const started = performance.now();
      const req = request(
        { host: this.host, port: this.port, path, agent: this.agent, headers, timeout: timeoutMs },
        (res) => {
          const chunks = [];
          res.on('data', (chunk) => chunks.push(chunk));
          res.on('end', () => {
            const ms = performance.now() - started;
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), ms });
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`GET ${path}: no complete answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end();
    });
  }

  close() {
    this.agent.destroy();
  }
}

/**
 * One answer read as it arrives. `add` returns true once the body is complete. The body's bytes are
 * kept as views of the chunks they came in; they are joined only when asked for, after the timing.
 */
export class AnswerReader {
  constructor() {
    this.status = 0;
    /** @type {Record<string, string>} */
    this.headers = {};
    /** @type {Buffer | undefined} bytes before the end of the head has arrived */
    this.headBytes = undefined;
    this.headDone = false;
    /** Content-Length, or -1 when chunked. */
    this.contentLength = -1;
    this.received = 0;
    /** @type {Buffer[]} */
    this.pieces = [];
    // Chunked decoding: 'size' (reading a chunk-size line), 'data' (`left` bytes of chunk data, then
    // `crlf` bytes), 'trailer' (lines until an empty one), 'done'.
    this.state = 'size';
    this.line = '';
    this.left = 0;
    this.crlf = 0;
  }

  /** @param {Buffer} chunk @returns {boolean} */
  add(chunk) {
    if (!this.headDone) {
      const bytes = this.headBytes ? Buffer.concat([this.headBytes, chunk]) : chunk;
      const end = bytes.indexOf(CRLFCRLF);
      if (end < 0) {
        this.headBytes = bytes;
        return false;
      }
      this.#readHead(bytes.subarray(0, end).toString('latin1'));
      this.headBytes = undefined;
      this.headDone = true;
      chunk = bytes.subarray(end + 4);
    }
    if (this.contentLength >= 0) {
      const take = Math.min(chunk.length, this.contentLength - this.received);
      if (take > 0) this.pieces.push(chunk.subarray(0, take));
      this.received += take;
      return this.received >= this.contentLength;
    }
    return this.#readChunked(chunk);
  }

  /** The body bytes (de-chunked). */
  body() {
    return this.pieces.length === 1 ? this.pieces[0] : Buffer.concat(this.pieces);
  }

  /** @param {string} head */
  #readHead(head) {
    const lines = head.split('\r\n');
    const statusLine = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
    if (!statusLine) throw new Error(`not an HTTP answer: ${JSON.stringify((lines[0] ?? '').slice(0, 80))}`);
    this.status = Number(statusLine[1]);
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon > 0) this.headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const te = this.headers['transfer-encoding'];
    if (te !== undefined) {
      if (te.toLowerCase() !== 'chunked') throw new Error(`transfer-encoding ${te} not supported`);
    } else if (this.headers['content-length'] !== undefined) {
      this.contentLength = Number(this.headers['content-length']);
      if (!Number.isSafeInteger(this.contentLength) || this.contentLength < 0)
        throw new Error(`bad content-length ${this.headers['content-length']}`);
    } else {
      throw new Error('answer without content-length or chunked encoding (a body read to the close is not supported)');
    }
  }

  /** @param {Buffer} chunk */
  #readChunked(chunk) {
    let i = 0;
    while (i < chunk.length) {
      if (this.state === 'data') {
        const take = Math.min(this.left, chunk.length - i);
        if (take > 0) this.pieces.push(chunk.subarray(i, i + take));
        this.left -= take;
        i += take;
        const skip = Math.min(this.crlf, chunk.length - i);
        this.crlf -= skip;
        i += skip;
        if (this.left === 0 && this.crlf === 0) this.state = 'size';
        continue;
      }
      // 'size' or 'trailer': a line.
      const nl = chunk.indexOf(10, i);
      if (nl < 0) {
        this.line += chunk.toString('latin1', i);
        return false;
      }
      const line = (this.line + chunk.toString('latin1', i, nl)).replace(/\r$/, '');
      this.line = '';
      i = nl + 1;
      if (this.state === 'trailer') {
        if (line === '') {
          this.state = 'done';
          return true;
        }
        continue;
      }
      const size = parseInt(line.split(';')[0] ?? '', 16);
      if (!/^[0-9a-fA-F]+$/.test((line.split(';')[0] ?? '').trim()) || !Number.isSafeInteger(size)) {
        throw new Error(`bad chunk size line ${JSON.stringify(line.slice(0, 40))}`);
      }
      if (size === 0) this.state = 'trailer';
      else {
        this.state = 'data';
        this.left = size;
        this.crlf = 2;
      }
    }
    return false;
  }
}
