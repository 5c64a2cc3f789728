// A bare HTTP/1.1 GET client for the exporter benchmarks: one keep-alive socket, the request written
// as one prepared string, the answer read as bytes until its body is complete (Content-Length or
// chunked), with no parser, stream or response object in between.
//
// Why: the floor of the exporter benchmarks is a bare socket client, timed in this process, that
// reads the servers' replies without parsing them. A scrape timed through node:http also times
// node:http's client: on the 2-vCPU VM of the READMEs it adds ~0.45 ms to a request whose answer
// takes 0.4 ms (bench/lib/client-cost.mjs). A store's scraper is a Go program whose client costs
// a fraction of that. With this client both sides are timed by a client that does next to nothing,
// so what the ratio charges to the exporter is the exporter's. Decompression and every check of the
// body happen after the timing, as before.
import { Agent, request } from 'node:http';
import { connect } from 'node:net';

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
      const timer = setTimeout(() => fail(new Error(`GET ${path}: no complete answer within ${timeoutMs} ms`)), timeoutMs);
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
      const req = request({ host: this.host, port: this.port, path, agent: this.agent, headers, timeout: timeoutMs }, (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('end', () => {
          const ms = performance.now() - started;
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), ms });
        });
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`GET ${path}: no complete answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end();
    });
  }

  close() {
    this.agent.destroy();
  }
}

const HEAD_END = Buffer.from('\r\n\r\n');

/**
 * One answer read as it arrives (Content-Length or chunked): `add` returns true once the body is
 * complete, and throws on bytes that are no HTTP answer. The body's bytes are kept as views of the
 * chunks they came in; they are joined only when asked for, after the timing.
 */
export class AnswerReader {
  constructor() {
    /** @type {Buffer[]} */
    this.pieces = [];
    this.status = 0;
    /** Header values by lower-case name. @type {Record<string, string>} */
    this.headers = {};
    /** @type {Buffer | undefined} the head so far, until it is complete */
    this.head = Buffer.alloc(0);
    /** Body bytes still to come (Content-Length), or -1 (chunked). */
    this.left = 0;
    /** Chunked: what comes next ('size' line, chunk 'data', its 'crlf', 'trailer'), the line so far, the chunk's bytes still to come. */
    this.state = 'size';
    this.line = '';
    this.chunkLeft = 0;
    this.done = false;
  }

  /** @param {Buffer} chunk @returns {boolean} */
  add(chunk) {
    if (this.head !== undefined) {
      const bytes = this.head.length === 0 ? chunk : Buffer.concat([this.head, chunk]);
      const end = bytes.indexOf(HEAD_END);
      if (end < 0) {
        if (bytes.length > 64 * 1024) throw new Error('an answer head longer than 64 KB');
        this.head = bytes;
        return false;
      }
      this.head = undefined;
      this.readHead(bytes.toString('latin1', 0, end));
      chunk = bytes.subarray(end + 4);
      if (this.done) return true;
    }
    if (this.left >= 0) {
      const take = chunk.subarray(0, this.left);
      if (take.length > 0) this.pieces.push(take);
      this.left -= take.length;
      this.done = this.left === 0;
      return this.done;
    }
    return this.chunked(chunk);
  }

  /** @param {string} head */
  readHead(head) {
    const [statusLine, ...lines] = head.split('\r\n');
    const status = /^HTTP\/1\.[01] ([1-9][0-9]{2})(?: |$)/.exec(statusLine);
    if (!status) throw new Error(`not an HTTP answer: ${JSON.stringify(statusLine.slice(0, 80))}`);
    this.status = Number(status[1]);
    for (const line of lines) {
      const colon = line.indexOf(':');
      if (colon <= 0) throw new Error(`a malformed header line in an answer: ${JSON.stringify(line.slice(0, 80))}`);
      const name = line.slice(0, colon).trim().toLowerCase();
      this.headers[name] ??= line.slice(colon + 1).trim();
    }
    if (this.status === 204 || this.status === 304) this.done = true;
    else if (this.headers['transfer-encoding']?.toLowerCase() === 'chunked') this.left = -1;
    else if (/^[0-9]+$/.test(this.headers['content-length'] ?? '')) this.left = Number(this.headers['content-length']);
    else throw new Error('an answer without a usable length');
    if (this.left === 0) this.done = true;
  }

  /** Reads a chunked body as it arrives: chunk-size lines, chunks and their CRLF, the trailer. @param {Buffer} chunk */
  chunked(chunk) {
    let i = 0;
    while (i < chunk.length) {
      if (this.state === 'data') {
        const take = Math.min(this.chunkLeft, chunk.length - i);
        this.pieces.push(chunk.subarray(i, i + take));
        this.chunkLeft -= take;
        i += take;
        if (this.chunkLeft === 0) this.state = 'crlf';
        continue;
      }
      const nl = chunk.indexOf(10, i);
      if (nl < 0) {
        this.line += chunk.toString('latin1', i);
        if (this.line.length > 4096) throw new Error('a chunk-size or trailer line longer than 4096 bytes');
        return false;
      }
      const line = (this.line + chunk.toString('latin1', i, nl)).replace(/\r$/, '');
      this.line = '';
      i = nl + 1;
      if (this.state === 'crlf') {
        if (line !== '') throw new Error('chunk data longer than its size');
        this.state = 'size';
      } else if (this.state === 'trailer') {
        if (line === '') {
          this.done = true;
          return true;
        }
      } else {
        const size = line.split(';', 1)[0].trim();
        if (!/^[0-9a-fA-F]{1,12}$/.test(size)) throw new Error(`a bad chunk-size line ${JSON.stringify(line.slice(0, 40))}`);
        this.chunkLeft = Number.parseInt(size, 16);
        this.state = this.chunkLeft === 0 ? 'trailer' : 'data';
      }
    }
    return false;
  }

  /** The body bytes (de-chunked). */
  body() {
    return this.pieces.length === 1 ? this.pieces[0] : Buffer.concat(this.pieces);
  }
}
