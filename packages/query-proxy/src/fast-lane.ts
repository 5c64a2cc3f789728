/**
 * The query proxy's single-group path on the fast lane (core's fast-lane.ts): a query that routes
 * to one group of one plain-HTTP store is read on the client's socket, written to a kept-alive
 * socket of the lane's own to the store, and its answer written back: held and written in one
 * piece when it ends within RELAY_BUFFER_BYTES, streamed past that. Failures answer as the routes
 * do (server.ts builds the LaneCall, with the same messages, metrics and log lines).
 */
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { AnswerFramer, answer, statusLine, writeHeld } from '@cachemon/core';
import type { LaneHandler, LaneReply } from '@cachemon/core';
import { errorText } from './upstream.js';

/**
 * Most of a store's answer held back before it is relayed (here and by the routes' relay): an
 * answer that ends within this many bytes goes to the client in one write; a longer one is
 * streamed from there on.
 */
export const RELAY_BUFFER_BYTES = 64 * 1024;
/** Most of a failed (5xx) answer's body read for the error message. */
const ERROR_BODY_BYTES = 4096;
/** Sockets to one store, as node:http's agent allows the other path. */
const SOCKETS_PER_STORE = 64;
/** A kept socket to a store unused this long is closed. */
const IDLE_STORE_SOCKET_MS = 60_000;

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
  /** The request is on its way to the store (or has failed to get there): counted, once, after the write. */
  taken(): void;
  /** The store's answer began (2xx-4xx): the header lines the client's answer gets first (each ending in CRLF). */
  answered(status: number): string;
  /** The call failed before any of the answer went to the client: what the client gets instead. */
  failed(failure: LaneFailure): { readonly status: number; readonly headers: string; readonly body: string } | undefined;
  /** The answer broke off (phase `body`): `passedOn` when part of it had gone to the client, whose connection is then cut. */
  brokeOff(failure: LaneFailure, passedOn: boolean): void;
  /** The whole answer has been written to the client. */
  finished(): void;
}

/** The stores' sockets of one query proxy, and the handlers of its lane calls. */
export class ProxyLane {
  private readonly pools = new Map<string, StorePool>();

  pool(host: string, port: number): StorePool {
    const key = `${host}:${port}`;
    let pool = this.pools.get(key);
    if (pool === undefined) {
      pool = new StorePool(host, port);
      this.pools.set(key, pool);
    }
    return pool;
  }

  /** The lane's handler for `call`. */
  handler(call: LaneCall): LaneHandler {
    return (reply) => new LaneExchange(this.pool(call.host, call.port), call, reply).start();
  }

  close(): void {
    for (const pool of this.pools.values()) pool.close();
    this.pools.clear();
  }
}

/** A store's kept-alive sockets. */
class StorePool {
  private readonly idle: Socket[] = [];
  /** The proxy is closing: sockets given back are closed. */
  private closed = false;
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
      use(socket, true);
      // After the write (which also counts as activity): nothing delays the request.
      socket.setTimeout(0);
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
    if (this.closed) {
      socket.destroy();
      return;
    }
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
    this.closed = true;
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
  private failedBody: string | undefined;

  private readonly client: Socket;

  constructor(
    /** The sockets of the call's store. */
    private readonly pool: StorePool,
    private readonly call: LaneCall,
    private readonly reply: LaneReply,
  ) {
    this.client = reply.socket;
  }

  private readonly clientGone = (): void => this.fail({ kind: 'canceled', phase: this.framer?.headDone ? 'body' : 'head', problem: 'the client went away' });

  start(): void {
    const pool = this.pool;
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
    // The request is written first (at once, on a kept socket); what only matters later follows it.
    pool.take(use);
    if (!this.settled) {
      this.timer = setTimeout(
        () => this.fail({ kind: 'timeout', phase: this.framer?.headDone ? 'body' : 'head', problem: `${this.call.label}: no answer within ${this.call.timeoutMs} ms` }),
        this.call.timeoutMs,
      );
      this.client.once('close', this.clientGone);
    }
    this.call.taken();
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
    if (this.failedBody !== undefined) {
      for (const piece of pieces) if (this.failedBody.length < ERROR_BODY_BYTES) this.failedBody += piece.toString('utf8');
    } else if (this.streaming) {
      this.stream(pieces, framer.done);
    } else {
      for (const piece of pieces) {
        this.held!.push(piece);
        this.heldBytes += piece.length;
      }
      // Too long to hold: the client's answer begins now, and the rest is streamed as it comes.
      if (this.heldBytes > RELAY_BUFFER_BYTES) {
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
    if (status >= 500) this.failedBody = '';
    else this.extra = this.call.answered(status);
  }

  private complete(): void {
    const framer = this.framer!;
    const reusable = framer.headers.get('connection')?.toLowerCase() !== 'close';
    if (this.failedBody !== undefined) {
      const text = this.failedBody.slice(0, ERROR_BODY_BYTES);
      this.release(reusable);
      this.fail({ kind: 'unavailable', phase: 'head', problem: `${this.call.label} answered ${framer.status}: ${errorText(text)}` });
      return;
    }
    this.finish(reusable);
  }

  /** The store's socket back to its pool (or closed), the call's timer stopped. */
  private release(reusable: boolean): void {
    const socket = this.socket;
    this.socket = undefined;
    clearTimeout(this.timer);
    if (socket === undefined) return;
    own(socket, undefined);
    if (reusable) this.pool.give(socket);
    else socket.destroy();
  }

  /** The client's answer head for the store's answer. */
  private head(length: number | undefined): string {
    const framer = this.framer!;
    const status = framer.status;
    let head = `${statusLine(status)}${this.extra}`;
    const type = framer.headers.get('content-type');
    if (type !== undefined) head += `content-type: ${type}\r\n`;
    const encoding = framer.headers.get('content-encoding');
    if (encoding !== undefined) head += `content-encoding: ${encoding}\r\n`;
    head += length === undefined ? 'transfer-encoding: chunked\r\n' : `content-length: ${length}\r\n`;
    return head + this.reply.tail();
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

  /**
   * The store's answer is all in: the client's too, if it was held; then the store's socket goes
   * back to its pool (`reusable`) before the client's next request is read.
   */
  private finish(reusable: boolean): void {
    if (this.settled) return;
    this.settled = true;
    if (!this.streaming) {
      const held = this.held!;
      this.held = undefined;
      // Head and body in one writev: the body's pieces are not copied together.
      this.client.cork();
      this.client.write(this.head(this.heldBytes), 'latin1');
      for (const piece of held) this.client.write(piece);
      this.client.uncork();
    }
    this.client.off('close', this.clientGone);
    this.release(reusable);
    this.call.finished();
    this.reply.done(this.reply.keeps());
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
      this.reply.done(false);
      return;
    }
    if (this.streaming) {
      this.call.brokeOff(failure, true);
      this.client.destroy();
      this.reply.done(false);
      return;
    }
    if (failure.phase === 'body') this.call.brokeOff(failure, false);
    const failed = this.call.failed(failure);
    if (failed === undefined || this.client.destroyed) {
      this.client.destroy();
      this.reply.done(false);
      return;
    }
    this.call.finished();
    answer(this.reply, failed.status, failed.headers, failed.body);
  }
}

const CRLF = Buffer.from('\r\n');
const LAST_CHUNK = Buffer.from('0\r\n\r\n');
