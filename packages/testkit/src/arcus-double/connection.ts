/**
 * One client connection: splits the byte stream into request lines and data blocks, runs them
 * through the command table, writes the replies. No timers: a double must stay cheap.
 */
import type { Socket } from 'node:net';
import { BAD_DATA_CHUNK, BAD_FORMAT, BadFormat, CLOSE, ERROR, type CommandSpec, type Reply } from './command-spec.js';
import { resolve } from './commands.js';
import type { ArcusDoubleBehavior, ServerState } from './state.js';

/** The behaviours that leave a connection unanswered for good once it asks for what matches. */
const HANGS_ON: Partial<Record<ArcusDoubleBehavior, RegExp>> = {
  'hang-stats-prefixes': /^stats (prefixes|detail dump|prefixlist)\b/,
  'hang-stats-settings': /^stats settings\b/,
};

const MAX_LINE = 8192;
/** What a double in 'garbage' mode answers: not ARCUS protocol, and no line terminator. */
export const GARBAGE = Buffer.from([
  0x00, 0xff, 0xfe, 0x1b, 0x5b, 0x3f, 0x47, 0x41, 0x52, 0x42, 0x41, 0x47, 0x45, 0x7f,
]);

interface PendingData {
  readonly spec: CommandSpec;
  readonly args: readonly string[];
  readonly length: number;
  readonly noreply: boolean;
  /** Set when the block is read only to be thrown away (too large); the reply to give instead. */
  readonly swallowReply?: string;
}

/** Runs one request (line words + data) and returns the reply text; shared with the heartbeat. */
export function execute(state: ServerState, spec: CommandSpec, args: readonly string[], data: string): Reply {
  try {
    return spec.run(state, args, data);
  } catch (err) {
    if (err instanceof BadFormat) return BAD_FORMAT;
    throw err;
  }
}

function splitNoreply(spec: CommandSpec, args: readonly string[]): { args: readonly string[]; noreply: boolean } {
  if (spec.noreply === true && args[args.length - 1] === 'noreply') return { args: args.slice(0, -1), noreply: true };
  return { args, noreply: false };
}

export class Connection {
  private buffer: Buffer = Buffer.alloc(0);
  /** The unfinished request line of a connection that answers nothing (counted, not run). */
  private unanswered = '';
  private pending: PendingData | undefined;
  /** Asked for what hang-stats-prefixes or hang-stats-settings hang on: never answers again. */
  private stuck = false;

  constructor(
    private readonly socket: Socket,
    private readonly state: ServerState,
  ) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
  }

  private onData(chunk: Buffer): void {
    this.state.bytesRead += chunk.length;
    if (this.state.behavior === 'hang' || this.stuck) {
      this.countUnanswered(chunk);
      return;
    }
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    while (!this.socket.destroyed && !this.stuck && this.step());
    if (this.stuck && this.buffer.length > 0) {
      // What came after the request it got stuck on, in the same chunk: not run, but counted.
      const rest = this.buffer;
      this.buffer = Buffer.alloc(0);
      this.countUnanswered(rest);
    }
  }

  /** Reads bytes it answers nothing to; only counts the stats requests among them. */
  private countUnanswered(bytes: Buffer): void {
    const lines = (this.unanswered + bytes.toString('latin1')).split('\n');
    this.unanswered = (lines.pop() ?? '').slice(-MAX_LINE);
    for (const line of lines) if (line.startsWith('stats')) this.state.statsRequests++;
  }

  /** Handles one complete request from the buffer; false when more bytes are needed. */
  private step(): boolean {
    const pending = this.pending;
    if (pending !== undefined) {
      if (this.buffer.length < pending.length + 2) return false;
      const data = this.buffer.toString('latin1', 0, pending.length);
      const terminated = this.buffer[pending.length] === 0x0d && this.buffer[pending.length + 1] === 0x0a;
      this.buffer = this.buffer.subarray(pending.length + 2);
      this.pending = undefined;
      if (pending.swallowReply !== undefined) this.reply(pending.swallowReply, pending.noreply);
      else if (!terminated) this.reply(BAD_DATA_CHUNK, false);
      else this.reply(execute(this.state, pending.spec, pending.args, data), pending.noreply);
      return true;
    }
    const newline = this.buffer.indexOf(0x0a);
    if (newline < 0) {
      if (this.buffer.length > MAX_LINE) {
        this.reply('CLIENT_ERROR line too long\r\n', false);
        this.socket.end();
      }
      return false;
    }
    const end = newline > 0 && this.buffer[newline - 1] === 0x0d ? newline - 1 : newline;
    const line = this.buffer.toString('latin1', 0, end);
    this.buffer = this.buffer.subarray(newline + 1);
    this.onLine(line);
    return true;
  }

  private onLine(line: string): void {
    if (line.startsWith('stats')) this.state.statsRequests++;
    if (HANGS_ON[this.state.behavior]?.test(line) === true) {
      this.stuck = true;
      return;
    }
    if (this.state.behavior === 'garbage') {
      this.write(GARBAGE);
      return;
    }
    const words = line.split(' ').filter((w) => w !== '');
    const found = words.length === 0 ? undefined : resolve(words);
    if (found === undefined) {
      this.reply(ERROR, false);
      return;
    }
    const { args, noreply } = splitNoreply(found.spec, found.args);
    if (found.spec.dataLength === undefined) {
      this.reply(execute(this.state, found.spec, args, ''), noreply);
      return;
    }
    let length: number | undefined;
    try {
      length = found.spec.dataLength(args);
    } catch (err) {
      if (!(err instanceof BadFormat)) throw err;
    }
    if (length === undefined) {
      this.reply(BAD_FORMAT, false);
      return;
    }
    const tooLarge = found.spec.maxData !== undefined && length > found.spec.maxData;
    this.pending = {
      spec: found.spec,
      args,
      length,
      noreply,
      swallowReply: tooLarge ? `${found.spec.tooLarge ?? 'SERVER_ERROR object too large for cache'}\r\n` : undefined,
    };
  }

  private reply(reply: Reply, noreply: boolean): void {
    if (reply === CLOSE) {
      this.socket.end();
      return;
    }
    if (!noreply) this.write(Buffer.from(reply, 'latin1'));
  }

  private write(bytes: Buffer): void {
    this.state.bytesWritten += bytes.length;
    this.socket.write(bytes);
  }
}
