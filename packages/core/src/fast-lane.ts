/**
 * The fast lane: chosen requests read and answered on the client's socket itself, with no HTTP
 * framework, request or response object or stream in between; everything else on the same
 * connection passed to the node:http server (and fastify) unchanged, in order.
 *
 * Why: on the 2-vCPU VM of the benchmarks, node:http's server side and fastify cost ~0.25-0.4 ms
 * of a request that arrives at an idle process (~2x what the same code costs back to back), and
 * their tail more: a fixed 17 KB /metrics answer took p50 0.49 / p99 1.3-2.1 ms through fastify
 * against 0.26 / 0.4 ms written on the socket (bench/coordination-exporter/README.md, "The fast lane").
 *
 * How a connection is served. Requests are read one at a time, in order:
 * - a request the lane takes (parseRequestHead: HTTP/1.1 GET or POST with at most a Content-Length
 *   body) is offered to the router. A handler from the router answers it on the socket (LaneReply);
 *   without one, the request's bytes go to node:http through an in-process connection (a Duplex
 *   pair, which node:http serves as it serves a socket: "any Duplex stream can be passed"), and its
 *   answer's bytes back to the client, read by AnswerFramer to know where the answer ends;
 * - a request the lane does not read exactly as node:http would (another method or version, a
 *   chunked body, Expect, Upgrade, a repeated header, a head past 64 KB, one slower to arrive than
 *   node:http's headersTimeout) hands the rest of the connection to node:http: every byte from then
 *   on is piped both ways.
 * Only for plain HTTP without basic auth (createHttpServer's fastLane()): behind TLS or a web
 * config every request passes the framework's checks.
 */
import { STATUS_CODES } from 'node:http';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { AnswerFramer, HEAD_END, parseRequestHead } from './http-framing.js';
import type { RequestHead } from './http-framing.js';

/** Longest request head the lane reads; a longer one (a GET carrying a long query) goes to node:http. */
const MAX_LANE_HEAD_BYTES = 64 * 1024;

export interface LaneRequest {
  readonly head: RequestHead;
  /** The request-target's path, without the query string. */
  readonly path: string;
  /** The query string, without `?`. */
  readonly search: string;
  readonly body: Buffer;
}

/** What a handler answers with: the client's socket, and the lane's state of the connection. */
export interface LaneReply {
  readonly socket: Socket;
  /** The connection stays open after this answer (the client keeps it, and the server is not closing). */
  keeps(): boolean;
  /** The header lines every answer ends with (Date, Connection, Keep-Alive) and the empty line. */
  tail(): string;
  /** The answer is written (or the connection broken): on to the next request. */
  done(keep: boolean): void;
}

/** Answers one request the router took. */
export type LaneHandler = (reply: LaneReply) => void;

/** A handler for the request, or undefined: node:http and the framework's routes answer it. */
export type LaneRouter = (request: LaneRequest) => LaneHandler | undefined;

export interface FastLaneOptions {
  readonly router: LaneRouter;
  /** Largest request body read by the lane (a larger one goes to node:http, which refuses it). */
  readonly bodyLimitBytes: number;
}

/** The status line of `status`. */
export function statusLine(status: number): string {
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n`;
}

/**
 * Writes a whole answer: status, `headers` (lines ending in CRLF), Content-Length, the lane's tail,
 * and the body (one buffer, or parts written in order), in one write; then on to the next request.
 */
export function answer(reply: LaneReply, status: number, headers: string, body: Buffer | string | readonly Buffer[]): void {
  const parts = typeof body === 'string' ? [Buffer.from(body)] : Buffer.isBuffer(body) ? [body] : body;
  let length = 0;
  for (const part of parts) length += part.length;
  const { socket } = reply;
  socket.cork();
  socket.write(`${statusLine(status)}${headers}Content-Length: ${length}\r\n${reply.tail()}`, 'latin1');
  for (const part of parts) if (part.length > 0) socket.write(part);
  socket.uncork();
  reply.done(reply.keeps());
}

/** The `Date` header's value, made at most once a second. */
let dateSecond = -1;
let dateText = '';
function httpDate(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(now).toUTCString();
  }
  return dateText;
}

/** One side of an in-process connection. */
class Half extends Duplex {
  peer!: Half;
  private pending: (() => void) | undefined;
  constructor(private readonly real: Socket) {
    super();
  }
  override _read(): void {
    const pending = this.peer.pending;
    if (pending !== undefined) {
      this.peer.pending = undefined;
      pending();
    }
  }
  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.peer.push(chunk)) callback();
    else this.pending = callback;
  }
  override _final(callback: (error?: Error | null) => void): void {
    this.peer.push(null);
    callback();
  }
  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const pending = this.pending;
    this.pending = undefined;
    pending?.();
    if (!this.peer.destroyed) this.peer.destroy();
    callback(error);
  }
  // What node:http and fastify read of a socket: the client's.
  get remoteAddress(): string | undefined {
    return this.real.remoteAddress;
  }
  get remotePort(): number | undefined {
    return this.real.remotePort;
  }
  get remoteFamily(): string | undefined {
    return this.real.remoteFamily;
  }
  get localAddress(): string | undefined {
    return this.real.localAddress;
  }
  get localPort(): number | undefined {
    return this.real.localPort;
  }
  // Timeouts and socket options are the client socket's business (the lane's).
  setTimeout(_ms: number, _callback?: () => void): this {
    return this;
  }
  setNoDelay(_noDelay?: boolean): this {
    return this;
  }
  setKeepAlive(_enable?: boolean, _delay?: number): this {
    return this;
  }
}

/** Writes `bytes` to `to`; when its buffer is full, `from` is paused until it drains (one listener at a time). */
export function writeHeld(to: Socket | Duplex, bytes: Buffer, from: Socket | Duplex): void {
  if (to.write(bytes) || from.isPaused()) return;
  from.pause();
  to.once('drain', () => from.resume());
}

export class FastLane {
  private readonly connections = new Set<LaneConnection>();
  /** node:http's own listeners for new connections: given the connections (or parts) the lane does not serve. */
  private readonly serve: Array<(socket: Duplex) => void>;
  closing = false;

  constructor(
    readonly server: Server,
    readonly options: FastLaneOptions,
  ) {
    this.serve = server.listeners('connection') as Array<(socket: Duplex) => void>;
    server.removeAllListeners('connection');
    server.on('connection', (socket: Socket) => {
      const connection = new LaneConnection(this, socket);
      this.connections.add(connection);
      socket.once('close', () => this.connections.delete(connection));
    });
    // close() sweeps idle connections with these (core/http.ts); the lane's are its own to close.
    const closeIdle = server.closeIdleConnections.bind(server);
    const closeAll = server.closeAllConnections.bind(server);
    server.closeIdleConnections = () => {
      this.closing = true;
      for (const connection of this.connections) connection.closeIfIdle();
      closeIdle();
    };
    server.closeAllConnections = () => {
      this.closing = true;
      for (const connection of this.connections) connection.destroy();
      closeAll();
    };
  }

  /** Gives node:http a connection to serve. */
  hand(socket: Duplex): void {
    for (const listener of this.serve) listener.call(this.server, socket);
  }

  keepAliveMs(): number {
    return this.server.keepAliveTimeout > 0 ? this.server.keepAliveTimeout : 5000;
  }

  /** How long a connection given to node:http may pass no bytes either way: the longest of its timeouts. */
  pipedIdleMs(): number {
    return Math.max(this.keepAliveMs(), this.server.headersTimeout, this.server.requestTimeout);
  }
}

/**
 * The bytes of a connection not consumed yet. A chunk arriving when it is empty is kept as it is
 * (no copy: a request in one chunk, the usual case); more are appended in place, into room
 * doubled as it fills, so a request in many small pieces costs time linear in its size. Bytes
 * before the end are never written again: a request handed on keeps views of them.
 */
class ByteQueue {
  private store: Buffer | undefined;
  /** Whether `store` is ours to append to (else it is a chunk as it arrived). */
  private owned = false;
  private start = 0;
  private end = 0;

  get length(): number {
    return this.end - this.start;
  }

  bytes(): Buffer {
    return this.store === undefined ? EMPTY : this.store.subarray(this.start, this.end);
  }

  append(chunk: Buffer): void {
    if (this.store === undefined) {
      this.store = chunk;
      this.owned = false;
      this.start = 0;
      this.end = chunk.length;
      return;
    }
    if (this.owned && this.store.length - this.end >= chunk.length) {
      chunk.copy(this.store, this.end);
      this.end += chunk.length;
      return;
    }
    const length = this.length + chunk.length;
    const next = Buffer.allocUnsafe(Math.max(length * 2, 4096));
    this.store.copy(next, 0, this.start, this.end);
    chunk.copy(next, this.length);
    this.store = next;
    this.owned = true;
    this.start = 0;
    this.end = length;
  }

  consume(count: number): void {
    this.start += count;
    if (this.start >= this.end) this.clear();
  }

  /** Empties it, returning what it held. */
  take(): Buffer {
    const bytes = this.bytes();
    this.clear();
    return bytes;
  }

  private clear(): void {
    this.store = undefined;
    this.start = 0;
    this.end = 0;
  }
}

const EMPTY = Buffer.alloc(0);
/** How long a request still arriving when the server begins to close may take to arrive whole. */
const UNFINISHED_AT_CLOSE_MS = 1000;
const LF_LF = '\n\n';

/** One client connection. */
class LaneConnection {
  private readonly buffered = new ByteQueue();
  /** How much of the buffered request has been searched for the head's end, without finding it. */
  private scanned = 0;
  /** The buffered request's head, once read (its body is not all there yet). */
  private head: { readonly end: number; readonly head: RequestHead } | undefined;
  private busy = false;
  /** The client has sent its last byte (FIN). */
  private ended = false;
  /** The in-process connection to node:http, once a request needed it. */
  private inner: Half | undefined;
  /** Everything goes to node:http from now on. */
  private piped = false;
  /** The request under way is node:http's (through the inner connection). */
  private viaServerBusy = false;

  constructor(
    private readonly lane: FastLane,
    private readonly socket: Socket,
  ) {
    socket.setNoDelay(true);
    socket.on('data', this.onData);
    socket.on('end', this.onEnd);
    socket.on('error', () => undefined); // 'close' follows
    socket.on('close', () => this.inner?.destroy());
    socket.on('timeout', () => socket.destroy());
    socket.setTimeout(lane.keepAliveMs());
  }

  private readonly onData = (chunk: Buffer): void => {
    if (this.piped) return;
    this.buffered.append(chunk);
    if (!this.busy) this.next();
    // Requests sent ahead of their turn: read no more of them until this one is answered.
    else if (this.buffered.length > this.lane.options.bodyLimitBytes + MAX_LANE_HEAD_BYTES) this.socket.pause();
  };
  /** When the request being read began to arrive (it is not all there yet). */
  private partialSince: number | undefined;

  private readonly onEnd = (): void => {
    this.ended = true;
    if (this.piped) return;
    // A client that ends its side while a request is under way has given up on it (node:http
    // takes it so, too): the request is canceled.
    if (this.busy) this.socket.destroy();
    else this.socket.end();
  };

  /** When a request was still arriving as the server began to close (see closeIfIdle). */
  private unfinishedAtClose: number | undefined;

  /**
   * Called over and over while the server closes: an idle connection is closed at once; one
   * holding part of a request gets UNFINISHED_AT_CLOSE_MS more for the rest (then it is answered,
   * with Connection: close), and is dropped after that: a client that never finishes its request
   * would otherwise hold the shutdown until its cap.
   */
  closeIfIdle(): void {
    if (this.busy || this.piped) return;
    if (this.buffered.length === 0) {
      this.socket.destroy();
      return;
    }
    const now = Date.now();
    this.unfinishedAtClose ??= now;
    if (now - this.unfinishedAtClose > UNFINISHED_AT_CLOSE_MS) this.socket.destroy();
  }

  destroy(): void {
    this.socket.destroy();
  }

  /** Reads the next request, if it is all there. */
  private next(): void {
    if (this.buffered.length === 0) {
      if (this.ended || this.lane.closing) this.socket.end();
      return;
    }
    // A request that takes longer to arrive than node:http allows a head: node:http's, with its timeouts.
    const now = Date.now();
    this.partialSince ??= now;
    const limit = this.lane.server.headersTimeout;
    if (limit > 0 && now - this.partialSince > limit) return this.pipe();
    const buffered = this.buffered.bytes();
    let read = this.head;
    if (read === undefined) {
      // Only what arrived since the last search (and the 3 bytes before it) is searched again.
      const end = buffered.indexOf(HEAD_END, Math.max(0, this.scanned - 3));
      if (end < 0) {
        // Lines ended by LF alone, or a head past what the lane reads: node:http's to read.
        if (buffered.length > MAX_LANE_HEAD_BYTES || buffered.indexOf(LF_LF, Math.max(0, this.scanned - 1)) >= 0) this.pipe();
        else this.scanned = buffered.length;
        return;
      }
      if (end > MAX_LANE_HEAD_BYTES) return this.pipe();
      const head = parseRequestHead(buffered.toString('latin1', 0, end));
      if (head === undefined || head.contentLength > this.lane.options.bodyLimitBytes) return this.pipe();
      read = this.head = { end, head };
    }
    const { end, head } = read;
    const total = end + 4 + head.contentLength;
    if (buffered.length < total) return;
    const request = buffered.subarray(0, total);
    this.buffered.consume(total);
    this.head = undefined;
    this.scanned = 0;
    this.partialSince = undefined;
    this.busy = true;
    this.socket.setTimeout(0);
    const at = head.target.indexOf('?');
    let handler: LaneHandler | undefined;
    try {
      handler = this.lane.closing
        ? undefined
        : this.lane.options.router({
            head,
            path: at < 0 ? head.target : head.target.slice(0, at),
            search: at < 0 ? '' : head.target.slice(at + 1),
            body: request.subarray(end + 4),
          });
    } catch {
      handler = undefined; // node:http and the routes answer it, errors included
    }
    if (handler === undefined) {
      this.viaServer(request);
      return;
    }
    const keepAlive = head.keepAlive && !this.ended;
    const lane = this.lane;
    let answered = false;
    const keeps = (): boolean => keepAlive && !lane.closing;
    try {
      handler({
        socket: this.socket,
        keeps,
        tail: () =>
          `Date: ${httpDate()}\r\n${keeps() ? `Connection: keep-alive\r\nKeep-Alive: timeout=${Math.floor(lane.keepAliveMs() / 1000)}\r\n` : 'Connection: close\r\n'}\r\n`,
        done: (keep) => {
          if (answered) return;
          answered = true;
          this.done(keep);
        },
      });
    } catch {
      // A handler that throws has no answer to give: the connection cannot be trusted to be in step.
      this.socket.destroy();
      this.busy = false;
    }
  }

  /** The request answered; the next one, or the connection closed. */
  private done(keep: boolean): void {
    this.busy = false;
    if (!keep || this.socket.destroyed) {
      // A client that keeps its side open after the answer is dropped when the timeout passes.
      if (!this.socket.destroyed) this.socket.setTimeout(this.lane.keepAliveMs()).end();
      return;
    }
    this.socket.setTimeout(this.lane.keepAliveMs());
    if (this.socket.isPaused()) this.socket.resume();
    this.next();
  }

  private innerSide(): Half {
    if (this.inner !== undefined && !this.inner.destroyed) return this.inner;
    const ours = new Half(this.socket);
    const theirs = new Half(this.socket);
    ours.peer = theirs;
    theirs.peer = ours;
    ours.on('error', () => undefined);
    theirs.on('error', () => undefined);
    // node:http ended or dropped it (Connection: close, a malformed request, its timeouts): the
    // client's connection follows, unless it is idle. What node:http wrote before has been passed on.
    const gone = (): void => {
      if (this.inner !== ours) return;
      this.inner = undefined;
      if (this.piped) this.socket.end();
      else if (this.viaServerBusy) this.socket.destroy(); // its answer did not end
    };
    ours.on('end', gone);
    ours.on('close', gone);
    this.inner = ours;
    this.lane.hand(theirs);
    return ours;
  }

  /** One request answered by node:http: its answer's bytes passed on until the answer ends. */
  private viaServer(request: Buffer): void {
    const inner = this.innerSide();
    this.viaServerBusy = true;
    const framer = new AnswerFramer(() => undefined);
    const onData = (chunk: Buffer): void => {
      let used: number;
      try {
        used = framer.push(chunk);
      } catch {
        this.socket.destroy();
        inner.destroy();
        return;
      }
      writeHeld(this.socket, used === chunk.length ? chunk : chunk.subarray(0, used), inner);
      if (!framer.done) return;
      inner.off('data', onData);
      this.viaServerBusy = false;
      const close = framer.headers.get('connection')?.toLowerCase() === 'close';
      if (close) inner.destroy();
      this.done(!close);
    };
    inner.on('data', onData);
    inner.write(request);
  }

  /** The rest of the connection is node:http's: bytes piped both ways. */
  private pipe(): void {
    this.piped = true;
    // node:http's own timeouts do not reach the client's socket through the in-process pair: a
    // connection with no bytes either way for this long is closed (else an idle client of
    // node:http's would hold its descriptor for ever).
    this.socket.setTimeout(this.lane.pipedIdleMs());
    const inner = this.innerSide();
    const rest = this.buffered.take();
    if (rest.length > 0) inner.write(rest);
    this.socket.off('data', this.onData);
    this.socket.on('data', (chunk: Buffer) => writeHeld(inner, chunk, this.socket));
    if (this.ended) inner.end();
    else this.socket.once('end', () => inner.end());
    inner.on('data', (chunk: Buffer) => writeHeld(this.socket, chunk, inner));
  }
}

