/**
 * The fast lane: the query proxy's single-group path, read and answered on the client's socket
 * itself, with the store asked over a kept-alive socket of its own, and no HTTP framework, request
 * or response object, stream or agent in between. Everything else on the same connection is
 * passed to the node:http server (and fastify) unchanged.
 *
 * Why: on the 2-vCPU VM of bench/query-proxy, a hop through node:http's server and client cost
 * ~0.4 ms a request at one client, and the proxy through fastify ~0.6-0.85 ms, against ~0.1 ms for
 * a bare socket relay in Node or for nginx (bench/query-proxy/README.md, "The fast lane"). Dashboard
 * queries take the stores 2-10 ms: the framework's share alone broke the 1.1x goal.
 *
 * How a connection is served. Requests are read one at a time, in order:
 * - a request the lane takes (parseRequestHead: HTTP/1.1 GET or POST with at most a Content-Length
 *   body) is offered to the router (server.ts). If the router gives a LaneCall, the lane asks the
 *   store and answers; if not, the request's bytes go to node:http through an in-process
 *   connection (a Duplex pair, which node:http serves as it serves a socket), and its answer's
 *   bytes back to the client, read by AnswerFramer to know where the answer ends;
 * - a request the lane does not read exactly as node:http would (another method or version, a
 *   chunked body, Expect, Upgrade, a repeated header, a head past 64 KB) hands the rest of the
 *   connection to node:http: every byte from then on is piped both ways.
 * So node:http answers everything the lane does not, as before, on the same connection.
 */
import { STATUS_CODES } from 'node:http';
import type { Server } from 'node:http';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { AnswerFramer, HEAD_END, parseRequestHead } from './http-framing.js';
import type { RequestHead } from './http-framing.js';
import { errorText } from './upstream.js';

/** Longest request head the lane reads; a longer one (a GET carrying a long query) goes to node:http. */
const MAX_LANE_HEAD_BYTES = 64 * 1024;
/** An answer that ends within this many bytes is written to the client in one write. */
export const LANE_HOLD_BYTES = 64 * 1024;
/** Most of a failed (5xx) answer's body read for the error message. */
const ERROR_BODY_BYTES = 4096;
/** Sockets to one store, as node:http's agent allows the other path. */
const SOCKETS_PER_STORE = 64;
/** A kept socket to a store unused this long is closed. */
const IDLE_STORE_SOCKET_MS = 60_000;

export interface LaneRequest {
  readonly head: RequestHead;
  /** The request-target's path, without the query string. */
  readonly path: string;
  /** The query string, without `?`. */
  readonly search: string;
  readonly body: Buffer;
}

/** How a lane call ended without a complete answer. */
export interface LaneFailure {
  readonly kind: 'timeout' | 'unavailable' | 'canceled';
  /** `head`: before the store's answer began (a problem of the replica); `body`: while it was read. */
  readonly phase: 'head' | 'body';
  /** What went wrong, for the message: a connection error, the store's 5xx answer, a cut answer. */
  readonly problem: string;
}

/** A request the router gives the lane: where it goes, and what to tell the client. */
export interface LaneCall {
  /** The store as the config names it (a group's target), for messages. */
  readonly label: string;
  readonly host: string;
  readonly port: number;
  /** The store's request head, every line ending in CRLF, the empty line included. */
  readonly requestHead: string;
  readonly body: Buffer;
  readonly timeoutMs: number;
  /** The store's answer began (2xx-4xx): the header lines the client's answer gets first (each ending in CRLF). */
  answered(status: number): string;
  /** The call failed before any of the answer went to the client: what the client gets instead. */
  failed(failure: LaneFailure): { readonly status: number; readonly headers: string; readonly body: string } | undefined;
  /** The answer broke off (phase `body`): `passedOn` when part of it had gone to the client, whose connection is then cut. */
  brokeOff(failure: LaneFailure, passedOn: boolean): void;
  /** The whole answer has been written to the client. */
  finished(): void;
}

export type LaneRouter = (request: LaneRequest) => LaneCall | undefined;

export interface FastLaneOptions {
  readonly router: LaneRouter;
  /** Largest request body read by the lane (a larger one goes to node:http, which refuses it). */
  readonly bodyLimitBytes: number;
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

/** A store's kept-alive sockets. */
class StorePool {
  private readonly idle: Socket[] = [];
  private open = 0;
  private readonly waiting: Array<(socket: Socket | undefined, err?: Error) => void> = [];

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  /** A socket to write a request on: `reused` when it has carried one before. */
  take(use: (socket: Socket | undefined, reused: boolean, err?: Error) => void): void {
    const socket = this.idle.pop();
    if (socket !== undefined) {
      socket.setTimeout(0);
      use(socket, true);
      return;
    }
    if (this.open >= SOCKETS_PER_STORE) {
      this.waiting.push((s, err) => use(s, s !== undefined, err));
      return;
    }
    this.fresh(use);
  }

  /** A new connection, for a first request or again after a kept one was found closed. */
  fresh(use: (socket: Socket | undefined, reused: boolean, err?: Error) => void): void {
    this.open++;
    const socket = connect({ host: this.host, port: this.port });
    socket.setNoDelay(true);
    let connected = false;
    socket.once('connect', () => {
      connected = true;
      use(socket, false);
    });
    socket.on('error', (err) => {
      if (!connected) {
        connected = true; // reported once
        use(undefined, false, err);
      }
    });
    socket.on('timeout', () => socket.destroy());
    socket.once('close', () => {
      this.open--;
      const at = this.idle.indexOf(socket);
      if (at >= 0) this.idle.splice(at, 1);
      this.wake();
    });
  }

  /** Back for the next request (its answer was read to the end). */
  give(socket: Socket): void {
    const next = this.waiting.shift();
    if (next !== undefined) {
      next(socket);
      return;
    }
    // Closed by the store after a while of nothing: VictoriaMetrics drops idle connections itself.
    socket.setTimeout(IDLE_STORE_SOCKET_MS);
    this.idle.push(socket);
  }

  /** A socket is gone: let a waiting request have a new one. */
  private wake(): void {
    const next = this.waiting.shift();
    if (next !== undefined) this.fresh((socket, _reused, err) => next(socket, err));
  }

  close(): void {
    for (const socket of this.idle.splice(0)) socket.destroy();
    for (const next of this.waiting.splice(0)) next(undefined, new Error('the proxy is closing'));
  }
}

/** Where the bytes of one store answer go: the socket's listeners call these while a call owns it. */
interface StoreSocketOwner {
  data(chunk: Buffer): void;
  gone(err: Error | undefined): void;
}
const OWNER = Symbol('owner');
type OwnedSocket = Socket & { [OWNER]?: StoreSocketOwner | undefined; laneListening?: boolean };

function own(socket: OwnedSocket, owner: StoreSocketOwner | undefined): void {
  socket[OWNER] = owner;
  if (socket.laneListening) return;
  socket.laneListening = true;
  socket.on('data', (chunk: Buffer) => {
    const owner = socket[OWNER];
    // Bytes no request asked for: the connection's framing is lost.
    if (owner === undefined) socket.destroy();
    else owner.data(chunk);
  });
  socket.on('error', (err) => socket[OWNER]?.gone(err));
  socket.on('close', () => socket[OWNER]?.gone(undefined));
}

export class FastLane {
  private readonly connections = new Set<LaneConnection>();
  private readonly pools = new Map<string, StorePool>();
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
    server.once('close', () => {
      for (const pool of this.pools.values()) pool.close();
    });
  }

  /** Gives node:http a connection to serve. */
  hand(socket: Duplex): void {
    for (const listener of this.serve) listener.call(this.server, socket);
  }

  pool(host: string, port: number): StorePool {
    const key = `${host}:${port}`;
    let pool = this.pools.get(key);
    if (pool === undefined) {
      pool = new StorePool(host, port);
      this.pools.set(key, pool);
    }
    return pool;
  }

  keepAliveMs(): number {
    return this.server.keepAliveTimeout > 0 ? this.server.keepAliveTimeout : 5000;
  }
}

/** Writes `bytes` to `to`; when its buffer is full, `from` is paused until it drains (one listener at a time). */
function writeHeld(to: Socket | Duplex, bytes: Buffer, from: Socket | Duplex): void {
  if (to.write(bytes) || from.isPaused()) return;
  from.pause();
  to.once('drain', () => from.resume());
}

/** One client connection. */
class LaneConnection {
  private buffered: Buffer | undefined;
  private busy = false;
  /** The client has sent its last byte (FIN). */
  private ended = false;
  /** The in-process connection to node:http, once a request needed it. */
  private inner: Half | undefined;
  /** Everything goes to node:http from now on. */
  private piped = false;

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
    this.buffered = this.buffered === undefined || this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
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

  closeIfIdle(): void {
    if (!this.busy && !this.piped && (this.buffered === undefined || this.buffered.length === 0)) this.socket.destroy();
  }

  destroy(): void {
    this.socket.destroy();
  }

  /** Reads the next request, if it is all there. */
  private next(): void {
    const buffered = this.buffered;
    if (buffered === undefined || buffered.length === 0) {
      if (this.ended || this.lane.closing) this.socket.end();
      return;
    }
    // A request that takes longer to arrive than node:http allows a head: node:http's, with its timeouts.
    const now = Date.now();
    this.partialSince ??= now;
    if (now - this.partialSince > this.lane.server.headersTimeout) return this.pipe();
    const end = buffered.indexOf(HEAD_END);
    if (end < 0) {
      // Lines ended by LF alone, or a head past what the lane reads: node:http's to read.
      if (buffered.length > MAX_LANE_HEAD_BYTES || buffered.includes('\n\n')) this.pipe();
      return;
    }
    if (end > MAX_LANE_HEAD_BYTES) return this.pipe();
    const head = parseRequestHead(buffered.toString('latin1', 0, end));
    if (head === undefined || head.contentLength > this.lane.options.bodyLimitBytes) return this.pipe();
    const total = end + 4 + head.contentLength;
    if (buffered.length < total) return;
    const request = buffered.subarray(0, total);
    this.buffered = buffered.subarray(total);
    this.partialSince = undefined;
    this.busy = true;
    this.socket.setTimeout(0);
    const at = head.target.indexOf('?');
    let call: LaneCall | undefined;
    try {
      call = this.lane.closing
        ? undefined
        : this.lane.options.router({
            head,
            path: at < 0 ? head.target : head.target.slice(0, at),
            search: at < 0 ? '' : head.target.slice(at + 1),
            body: request.subarray(end + 4),
          });
    } catch {
      call = undefined; // node:http and the routes answer it, errors included
    }
    if (call === undefined) this.viaServer(request);
    else new LaneExchange(this.lane, call, this.socket, head.keepAlive && !this.ended, (keep) => this.done(keep)).start();
  }

  /** The request answered; the next one, or the connection closed. */
  private done(keep: boolean): void {
    this.busy = false;
    if (!keep || this.socket.destroyed) {
      if (!this.socket.destroyed) this.socket.end();
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
      else if (this.busy) this.socket.destroy(); // its answer did not end
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
    this.socket.setTimeout(0);
    const inner = this.innerSide();
    const rest = this.buffered;
    this.buffered = undefined;
    if (rest !== undefined && rest.length > 0) inner.write(rest);
    this.socket.off('data', this.onData);
    this.socket.on('data', (chunk: Buffer) => writeHeld(inner, chunk, this.socket));
    if (this.ended) inner.end();
    else this.socket.once('end', () => inner.end());
    inner.on('data', (chunk: Buffer) => writeHeld(this.socket, chunk, inner));
  }
}

/** One request to a store and its answer to the client. */
class LaneExchange {
  private socket: OwnedSocket | undefined;
  private framer: AnswerFramer | undefined;
  private timer: NodeJS.Timeout | undefined;
  private settled = false;
  /** The answer's body so far, while it is held (undefined once streaming). */
  private held: Buffer[] | undefined = [];
  private heldBytes = 0;
  /** The client's answer has begun (streaming). */
  private streaming = false;
  private chunked = false;
  /** What the client's answer starts with, once the store's began. */
  private extra = '';
  /** A 5xx answer's first bytes, for the message. */
  private errorText: string | undefined;

  constructor(
    private readonly lane: FastLane,
    private readonly call: LaneCall,
    private readonly client: Socket,
    private readonly keepAlive: boolean,
    private readonly done: (keep: boolean) => void,
  ) {}

  private readonly clientGone = (): void => this.fail({ kind: 'canceled', phase: this.framer?.headDone ? 'body' : 'head', problem: 'the client went away' });

  start(): void {
    this.timer = setTimeout(
      () => this.fail({ kind: 'timeout', phase: this.framer?.headDone ? 'body' : 'head', problem: `${this.call.label}: no answer within ${this.call.timeoutMs} ms` }),
      this.call.timeoutMs,
    );
    this.client.once('close', this.clientGone);
    const pool = this.lane.pool(this.call.host, this.call.port);
    const use = (socket: Socket | undefined, reused: boolean, err?: Error): void => {
      if (this.settled) {
        if (socket !== undefined) pool.give(socket);
        return;
      }
      if (socket === undefined) {
        this.fail({ kind: 'unavailable', phase: 'head', problem: `${this.call.label}: ${err?.message ?? 'no connection'}` });
        return;
      }
      this.socket = socket;
      this.framer = new AnswerFramer((piece) => this.body(piece));
      own(socket, {
        data: (chunk) => this.data(chunk),
        gone: (goneErr) => {
          own(socket, undefined);
          // A kept socket the store had closed before this request reached it: once more, anew.
          if (reused && this.bytesIn === 0 && !this.settled) {
            this.socket = undefined;
            pool.fresh((s, r, e) => use(s, r, e));
            return;
          }
          this.fail({
            kind: 'unavailable',
            phase: this.framer?.headDone ? 'body' : 'head',
            problem: this.framer?.headDone
              ? 'the store closed the connection before the end of its answer'
              : `${this.call.label}: ${goneErr?.message ?? 'socket hang up'}`,
          });
        },
      });
      // One write, one segment: head and body leave together, with no copy of either made here.
      socket.cork();
      socket.write(this.call.requestHead, 'latin1');
      if (this.call.body.length > 0) socket.write(this.call.body);
      socket.uncork();
    };
    pool.take(use);
  }

  data(chunk: Buffer): void {
    const framer = this.framer!;
    const wasHead = framer.headDone;
    this.bytesIn += chunk.length;
    const pieces: Buffer[] = [];
    this.pieces = pieces;
    try {
      framer.push(chunk);
    } catch (err) {
      this.fail({ kind: 'unavailable', phase: framer.headDone ? 'body' : 'head', problem: `${this.call.label}: ${(err as Error).message}` });
      return;
    } finally {
      this.pieces = undefined;
    }
    if (!wasHead && framer.headDone) this.began();
    if (this.errorText !== undefined) {
      for (const piece of pieces) if (this.errorText.length < ERROR_BODY_BYTES) this.errorText += piece.toString('utf8');
    } else if (this.streaming) {
      this.stream(pieces, framer.done);
    } else {
      for (const piece of pieces) this.held!.push(piece);
      for (const piece of pieces) this.heldBytes += piece.length;
      // Too long to hold: the client's answer begins now, and the rest is streamed as it comes.
      if (this.heldBytes > LANE_HOLD_BYTES) {
        this.streaming = true;
        this.chunked = framer.headers.get('content-length') === undefined;
        const held = this.held!;
        this.held = undefined;
        this.client.write(this.head(this.chunked ? undefined : Number(framer.headers.get('content-length'))), 'latin1');
        this.stream(held, framer.done);
      }
    }
    if (framer.done) this.complete();
  }

  /** The body pieces of the chunk being read. */
  private pieces: Buffer[] | undefined;
  /** Bytes the store sent on this call's socket. */
  private bytesIn = 0;

  private body(piece: Buffer): void {
    this.pieces?.push(piece);
  }

  /** The store's answer began. */
  private began(): void {
    const status = this.framer!.status;
    if (status >= 500) this.errorText = '';
    else this.extra = this.call.answered(status);
  }

  private complete(): void {
    const framer = this.framer!;
    if (this.errorText !== undefined) {
      const text = this.errorText.slice(0, ERROR_BODY_BYTES);
      this.release(framer.headers.get('connection')?.toLowerCase() !== 'close');
      this.fail({ kind: 'unavailable', phase: 'head', problem: `${this.call.label} answered ${framer.status}: ${errorText(text)}` });
      return;
    }
    this.release(framer.headers.get('connection')?.toLowerCase() !== 'close');
    this.finish();
  }

  /** The store's socket back to its pool (or closed), the call's timer stopped. */
  private release(reusable: boolean): void {
    const socket = this.socket;
    this.socket = undefined;
    clearTimeout(this.timer);
    if (socket === undefined) return;
    own(socket, undefined);
    if (reusable) this.lane.pool(this.call.host, this.call.port).give(socket);
    else socket.destroy();
  }

  /** The client's answer head for the store's answer. */
  private head(length: number | undefined): string {
    const framer = this.framer!;
    const status = framer.status;
    let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${this.extra}`;
    const type = framer.headers.get('content-type');
    if (type !== undefined) head += `content-type: ${type}\r\n`;
    const encoding = framer.headers.get('content-encoding');
    if (encoding !== undefined) head += `content-encoding: ${encoding}\r\n`;
    head += length === undefined ? 'transfer-encoding: chunked\r\n' : `content-length: ${length}\r\n`;
    head += `date: ${httpDate()}\r\n`;
    head += this.keeps() ? `connection: keep-alive\r\nkeep-alive: timeout=${Math.floor(this.lane.keepAliveMs() / 1000)}\r\n\r\n` : 'connection: close\r\n\r\n';
    return head;
  }

  private keeps(): boolean {
    return this.keepAlive && !this.lane.closing;
  }

  /** Past what is held: the answer streamed from here (chunked, unless the store said its length). */
  private stream(pieces: Buffer[], last: boolean): void {
    const parts: Buffer[] = [];
    for (const piece of pieces) {
      if (piece.length === 0) continue;
      if (this.chunked) parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`, 'latin1'), piece, CRLF);
      else parts.push(piece);
    }
    if (last && this.chunked) parts.push(LAST_CHUNK);
    if (parts.length > 0) this.write(Buffer.concat(parts));
  }

  private write(bytes: Buffer): void {
    if (this.socket === undefined) this.client.write(bytes);
    else writeHeld(this.client, bytes, this.socket);
  }

  /** The store's answer is all in: the client's too, if it was held. */
  private finish(): void {
    if (this.settled) return;
    this.settled = true;
    this.client.off('close', this.clientGone);
    if (!this.streaming) {
      const held = this.held!;
      this.held = undefined;
      // Head and body in one writev: the body's pieces are not copied together.
      this.client.cork();
      this.client.write(this.head(this.heldBytes), 'latin1');
      for (const piece of held) this.client.write(piece);
      this.client.uncork();
    }
    this.call.finished();
    this.done(this.keeps());
  }

  private fail(failure: LaneFailure): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.client.off('close', this.clientGone);
    const socket = this.socket;
    this.socket = undefined;
    if (socket !== undefined) {
      own(socket, undefined);
      socket.destroy();
    }
    if (failure.kind === 'canceled') {
      this.call.failed(failure);
      this.done(false);
      return;
    }
    if (this.streaming) {
      this.call.brokeOff(failure, true);
      this.client.destroy();
      this.done(false);
      return;
    }
    if (failure.phase === 'body') this.call.brokeOff(failure, false);
    const answer = this.call.failed(failure);
    if (answer === undefined || this.client.destroyed) {
      this.client.destroy();
      this.done(false);
      return;
    }
    const length = Buffer.byteLength(answer.body);
    const connection = this.keeps() ? `connection: keep-alive\r\nkeep-alive: timeout=${Math.floor(this.lane.keepAliveMs() / 1000)}\r\n` : 'connection: close\r\n';
    this.client.write(
      `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? ''}\r\n${answer.headers}content-length: ${length}\r\ndate: ${httpDate()}\r\n${connection}\r\n${answer.body}`,
    );
    this.call.finished();
    this.done(this.keeps());
  }
}

const CRLF = Buffer.from('\r\n');
const LAST_CHUNK = Buffer.from('0\r\n\r\n');
