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
import { AnswerFramer } from '../../packages/core/dist/src/index.js';

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

/**
 * One answer read as it arrives, framed by core's AnswerFramer (the fast lane's): `add` returns true
 * once the body is complete. The body's bytes are kept as views of the chunks they came in; they are
 * joined only when asked for, after the timing.
 */
export class AnswerReader {
  constructor() {
    /** @type {Buffer[]} */
    this.pieces = [];
    this.framer = new AnswerFramer((piece) => this.pieces.push(piece));
  }

  get status() {
    return this.framer.status;
  }

  /** Header values by lower-case name. @returns {Record<string, string>} */
  get headers() {
    return Object.fromEntries(this.framer.headers);
  }

  /** @param {Buffer} chunk @returns {boolean} */
  add(chunk) {
    this.framer.push(chunk);
    return this.framer.done;
  }

  /** The body bytes (de-chunked). */
  body() {
    return this.pieces.length === 1 ? this.pieces[0] : Buffer.concat(this.pieces);
  }
}
