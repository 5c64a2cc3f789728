/**
 * One pipelined ascii connection to one cache node, opened by the first request (again after a
 * failure). Failures: NODE_UNREACHABLE, NODE_TIMEOUT (the socket is destroyed: a late reply would
 * answer the wrong request), NODE_CLOSED, NODE_PROTOCOL. Every failure pushes `retryAt` out by the
 * backoff, so callers report the node down instead of dialling in a storm. Neither the deadline
 * timer nor an idle socket is ref'd, so a pooled connection never holds the process open.
 */
import { connect, type Socket } from 'node:net';
import { CachemonError, Errors, errorMessage, isCachemonError } from '@cachemon/core';
import { parseAddress } from './address.js';
import { Backoff, type BackoffOptions } from './backoff.js';
import { ReplyFramer, type ReplyKind } from './framer.js';
import { protocolError, truncate } from './reply-errors.js';

/** Every connection's socket reads land here and are copied into its framer at once (onread). */
const READ_BUFFER = Buffer.allocUnsafeSlow(64 * 1024);

export interface AsciiConnectionOptions {
  /** Give up connecting after this long (NODE_UNREACHABLE). Default 3000 ms. */
  connectTimeoutMs?: number;
  /** Largest reply accepted; beyond it NODE_PROTOCOL and the socket is closed. Default 16 MiB. */
  maxReplyBytes?: number;
  /** Reconnect backoff; defaults 100 ms .. 30 s, +-20%. */
  backoff?: BackoffOptions;
  /** false: keep no receive buffer while idle, for connections asked now and then. Default true. */
  keepBuffer?: boolean;
}

export interface RequestOptions {
  /** Absolute time (Date.now() ms) by which the whole reply must have arrived. */
  deadline: number;
  /** How the reply is framed; see ReplyKind. */
  reply: ReplyKind;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 3000;
export const DEFAULT_MAX_REPLY_BYTES = 16 * 1024 * 1024;
/** TCP keepalive probes start after this much idle time, so dead peers of idle pooled sockets are noticed. */
const KEEPALIVE_INITIAL_DELAY_MS = 30_000;

interface Pending {
  /** The command line (no data block), for error messages. */
  readonly command: string;
  readonly kind: ReplyKind;
  /** Data lines sent after the command line: replies to swallow if the server answers ERROR. */
  readonly echoLines: number;
  readonly deadline: number;
  readonly done: ReplyCallback;
}

/**
 * Called once per request: with the reply's bytes (see requestBytes for how long they stay valid),
 * or with the error (reply undefined).
 */
export type ReplyCallback = (err: CachemonError | undefined, reply: Buffer | undefined) => void;

export class AsciiConnection {
  readonly address: string;
  private readonly host: string;
  private readonly port: number;
  private readonly connectTimeoutMs: number;
  private readonly framer: ReplyFramer;
  private readonly backoff: Backoff;

  private socket: Socket | undefined;
  private established = false;
  private connectDeadline = Infinity;
  /** Pending requests in send order; the live ones are pending[head..]. */
  private pending: Pending[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  /** What this tick's requests write, sent at the next tick (write()). */
  private outgoing: { readonly socket: Socket; data: string } | undefined;
  private closedByCaller = false;
  private nextRetryAt = 0;
  private failure: CachemonError | undefined;

  /** @param address `host:port` or `[ipv6]:port`; throws CachemonError CONFIG_INVALID when malformed. */
  constructor(address: string, options: AsciiConnectionOptions = {}) {
    const { host, port } = parseAddress(address);
    this.address = address;
    this.host = host;
    this.port = port;
    this.connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.framer = new ReplyFramer(options.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES, options.keepBuffer ?? true);
    this.backoff = new Backoff(options.backoff);
  }

  /** True while a socket is open and established. */
  get connected(): boolean {
    return this.socket !== undefined && this.established;
  }

  /** Date.now() ms before which callers should not dial this node again; 0 when healthy. See the rule above. */
  get retryAt(): number {
    return this.nextRetryAt;
  }

  /** The error of the last failure, until a reply succeeds again. */
  get lastError(): CachemonError | undefined {
    return this.failure;
  }

  /** Requests sent and not yet answered. */
  get pendingCount(): number {
    return this.pending.length - this.head;
  }

  /**
   * Sends `command` and resolves with its whole reply as text, final CRLF included. `command` has
   * no trailing CRLF; a storage command carries its data block after one: `set k 0 3 4\r\nDATA`.
   * Rejects with CachemonError only (codes above).
   */
  async request(command: string, options: RequestOptions): Promise<string> {
    return (await this.requestBytes(command, options)).toString('utf8');
  }

  /**
   * request() without decoding: the reply's bytes, a view of the connection's receive buffer. For
   * replies read on every scrape and parsed as bytes. The view is valid until a request is sent on
   * this connection after every earlier reply has arrived: use it (or copy it) when it resolves,
   * or together with the replies pipelined with it, not after sending the next request.
   */
  requestBytes(command: string, options: RequestOptions): Promise<Buffer> {
    return new Promise<Buffer>((resolve, reject) =>
      this.send(command, options, (err, reply) => (err ? reject(err) : resolve(reply!))),
    );
  }

  /**
   * requestBytes() with a callback. `done` is called once: for a reply, from the socket's read
   * callback (it must not send on this connection before it returns); for a request refused
   * before it was sent, on the next tick; for a failure, when it is noticed.
   */
  send(command: string, options: RequestOptions, done: ReplyCallback): void {
    const { deadline, reply } = options;
    const lineEnd = command.indexOf('\r\n');
    const commandLine = lineEnd === -1 ? command : command.slice(0, lineEnd);
    const refused = this.refusal(command, commandLine, deadline);
    if (refused !== undefined) {
      process.nextTick(done, refused, undefined);
      return;
    }
    const socket = this.socket ?? this.open();
    if (this.pendingCount === 0) {
      socket.ref();
      // Every earlier reply has been delivered and used: its bytes may be written over.
      this.framer.rewind();
    }
    this.pending.push({ command: commandLine, kind: reply, echoLines: countLines(command, lineEnd), deadline, done });
    this.write(socket, `${command}\r\n`);
    this.schedule(deadline);
  }

  /** Why a request may not be sent, or undefined. */
  private refusal(command: string, commandLine: string, deadline: number): CachemonError | undefined {
    if (this.closedByCaller) return new CachemonError(Errors.NODE_CLOSED, `connection to ${this.address} was closed`);
    if (commandLine.length === 0 || /[\r\n]/.test(commandLine) || command.endsWith('\n')) {
      return new CachemonError(
        Errors.INTERNAL,
        `refusing to send malformed command ${JSON.stringify(truncate(command))}`,
      );
    }
    if (!(deadline > Date.now())) {
      return new CachemonError(
        Errors.NODE_TIMEOUT,
        `deadline passed before ${quote(commandLine)} was sent to ${this.address}`,
      );
    }
    return undefined;
  }

  /** The caller is done with every reply it was handed: their bytes may be written over. No-op while requests are pending. */
  release(): void {
    if (this.pendingCount === 0) this.framer.rewind();
  }

  /** Closes the socket and rejects pending requests with NODE_CLOSED; later requests are refused. */
  close(): void {
    if (this.closedByCaller) return;
    this.closedByCaller = true;
    this.drop();
    const err = new CachemonError(Errors.NODE_CLOSED, `connection to ${this.address} closed by the caller`);
    this.rejectAll(() => err);
  }

  private open(): Socket {
    const socket: Socket = connect({
      host: this.host,
      port: this.port,
      onread: {
        buffer: READ_BUFFER,
        callback: (length: number, buffer: Uint8Array) => {
          this.onData(socket, buffer, length);
          return true;
        },
      },
    });
    socket.setNoDelay(true);
    socket.setKeepAlive(true, KEEPALIVE_INITIAL_DELAY_MS);
    this.socket = socket;
    this.established = false;
    this.connectDeadline = Date.now() + this.connectTimeoutMs;
    this.schedule(this.connectDeadline);
    socket.on('connect', () => {
      if (socket !== this.socket) return;
      this.established = true;
      this.connectDeadline = Infinity;
    });
    socket.on('error', (err: Error) => this.onError(socket, err));
    socket.on('close', () => this.onClose(socket));
    return socket;
  }

  /** Writes issued in one tick leave in one write on the next tick, as one string. */
  private write(socket: Socket, data: string): void {
    if (this.outgoing !== undefined && this.outgoing.socket === socket) {
      this.outgoing.data += data;
      return;
    }
    const outgoing = { socket, data };
    this.outgoing = outgoing;
    process.nextTick(() => {
      if (this.outgoing === outgoing) this.outgoing = undefined;
      if (!socket.destroyed) socket.write(outgoing.data);
    });
  }

  private onData(socket: Socket, bytes: Uint8Array, length: number): void {
    if (socket !== this.socket) return;
    this.framer.append(bytes, length);
    try {
      while (this.head < this.pending.length) {
        const request = this.pending[this.head]!;
        const reply = this.framer.next(request.kind, request.echoLines);
        if (reply === undefined) return;
        this.head++;
        if (this.head === this.pending.length) this.idle(socket);
        this.backoff.reset();
        this.nextRetryAt = 0;
        this.failure = undefined;
        request.done(undefined, reply);
      }
      if (this.framer.buffered > 0) throw protocolError('data after the last reply', this.framer.preview());
    } catch (err) {
      this.fail(isCachemonError(err) ? err : new CachemonError(Errors.INTERNAL, errorMessage(err), { cause: err }));
    }
  }

  private onError(socket: Socket, err: Error): void {
    if (socket !== this.socket) return;
    const details = { address: this.address, errno: (err as NodeJS.ErrnoException).code };
    this.fail(
      this.established
        ? new CachemonError(Errors.NODE_CLOSED, `connection to ${this.address} failed: ${err.message}`, {
            cause: err,
            details,
          })
        : new CachemonError(Errors.NODE_UNREACHABLE, `cannot connect to ${this.address}: ${err.message}`, {
            cause: err,
            details,
          }),
    );
  }

  private onClose(socket: Socket): void {
    if (socket !== this.socket) return;
    if (this.established && this.pendingCount === 0) {
      // The server closed an idle connection (idle timeout, restart): not a failure of any request.
      this.drop();
      return;
    }
    this.fail(
      this.established
        ? new CachemonError(
            Errors.NODE_CLOSED,
            `${this.address} closed the connection with ${this.pendingCount} request(s) pending`,
          )
        : new CachemonError(Errors.NODE_UNREACHABLE, `cannot connect to ${this.address}: closed while connecting`),
    );
  }

  private readonly onTimer = (): void => {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = Date.now();
    let earliest = Infinity;
    let expired: Pending | undefined;
    for (let i = this.head; i < this.pending.length; i++) {
      const request = this.pending[i]!;
      if (request.deadline <= now) expired ??= request;
      else if (request.deadline < earliest) earliest = request.deadline;
    }
    if (expired !== undefined) {
      const waiting = this.established ? 'no reply to' : 'still connecting for';
      const own = (request: Pending): CachemonError =>
        new CachemonError(
          Errors.NODE_TIMEOUT,
          `${waiting} ${quote(request.command)} from ${this.address} by the deadline`,
          {
            details: { address: this.address },
          },
        );
      const first = own(expired);
      this.fail(first, (request) =>
        request.deadline <= now
          ? own(request)
          : new CachemonError(
              Errors.NODE_TIMEOUT,
              `${quote(request.command)} to ${this.address} abandoned: ${quote(expired.command)} timed out on the same connection`,
              { details: { address: this.address } },
            ),
      );
      return;
    }
    if (this.socket !== undefined && !this.established) {
      if (this.connectDeadline <= now) {
        this.fail(
          new CachemonError(
            Errors.NODE_UNREACHABLE,
            `cannot connect to ${this.address}: no answer within ${this.connectTimeoutMs} ms`,
            { details: { address: this.address } },
          ),
        );
        return;
      }
      earliest = Math.min(earliest, this.connectDeadline);
    }
    if (earliest !== Infinity) this.schedule(earliest);
  };

  private schedule(at: number): void {
    if (at >= this.timerAt) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerAt = at;
    // Unref'd: while a request is pending (or a connect is under way) the socket holds the process.
    this.timer = setTimeout(this.onTimer, Math.max(0, at - Date.now()));
    this.timer.unref();
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  /**
   * Nothing pending: the socket must not keep the process alive, and no deadline is left to watch.
   * (A timer left armed would wake the process at a deadline already met: once per node and QoS
   * round, thousands of times an interval in a fleet.)
   */
  private idle(socket: Socket): void {
    this.pending.length = 0;
    this.head = 0;
    this.clearTimer();
    socket.unref();
  }

  /** Destroys the socket, rejects every pending request, and pushes retryAt out. */
  private fail(err: CachemonError, errorFor?: (request: Pending) => CachemonError): void {
    this.drop();
    this.failure = err;
    this.nextRetryAt = Date.now() + this.backoff.next();
    this.rejectAll(errorFor ?? (() => err));
  }

  private drop(): void {
    const socket = this.socket;
    this.socket = undefined;
    this.established = false;
    this.connectDeadline = Infinity;
    this.framer.reset();
    this.clearTimer();
    socket?.destroy();
  }

  private rejectAll(errorFor: (request: Pending) => CachemonError): void {
    const requests = this.pending.slice(this.head);
    this.pending = [];
    this.head = 0;
    for (const request of requests) request.done(errorFor(request), undefined);
  }
}

/** Number of CRLF-separated data lines after the command line. */
function countLines(command: string, firstLineEnd: number): number {
  let count = 0;
  for (let at = firstLineEnd; at !== -1; at = command.indexOf('\r\n', at + 2)) count++;
  return count;
}

function quote(commandLine: string): string {
  return JSON.stringify(truncate(commandLine));
}
