/** Test-only helpers: a raw protocol client and the sample transcript's parser. */
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';

import { ARCUS_SAMPLES_DIR } from '../src/index.js';

export const SAMPLES_DIR = ARCUS_SAMPLES_DIR;

/** One TCP connection that sends requests and collects replies as latin1 text. */
export class RawClient {
  private received = '';
  private waiter: (() => void) | undefined;
  closed = false;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.received += chunk.toString('latin1');
      this.waiter?.();
    });
    socket.on('close', () => {
      this.closed = true;
      this.waiter?.();
    });
    socket.on('error', () => undefined);
  }

  static async connect(address: string): Promise<RawClient> {
    const colon = address.lastIndexOf(':');
    const socket = connect({ host: address.slice(0, colon), port: Number(address.slice(colon + 1)) });
    await once(socket, 'connect');
    return new RawClient(socket);
  }

  /**
   * Sends `request` and waits until the reply ends with `terminator` (default: any CRLF-terminated
   * line) or `timeoutMs` passes; then returns everything received for it.
   */
  async send(request: string, terminator?: string, timeoutMs = 2000): Promise<string> {
    this.received = '';
    this.socket.write(Buffer.from(request, 'latin1'));
    return this.collect(terminator, timeoutMs);
  }

  /** Waits like send() without sending. */
  async collect(terminator?: string, timeoutMs = 2000): Promise<string> {
    const done = (): boolean =>
      terminator === undefined ? this.received.endsWith('\r\n') : this.received.endsWith(terminator);
    const deadline = Date.now() + timeoutMs;
    while (!done() && !this.closed && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.waiter = undefined;
    }
    const reply = this.received;
    this.received = '';
    return reply;
  }

  /** Everything received and not yet returned, now, without waiting. */
  take(): string {
    const reply = this.received;
    this.received = '';
    return reply;
  }

  close(): void {
    this.socket.destroy();
  }
}

export interface TranscriptExchange {
  /** 1-based position; the sample files NN-*.raw are named after it. */
  readonly index: number;
  /** The command line and, for storage commands, the data line. */
  readonly request: readonly string[];
  /** The reply with CRLF line ends, as on the wire. */
  readonly reply: string;
}

/** Parses transcript.txt: `>>> ` request lines, then reply lines up to a blank line. */
export function readTranscript(path = `${SAMPLES_DIR}/transcript.txt`): TranscriptExchange[] {
  const exchanges: TranscriptExchange[] = [];
  const lines = readFileSync(path, 'utf8').split('\n');
  let i = 0;
  while (i < lines.length) {
    if (!(lines[i] ?? '').startsWith('>>> ')) {
      i++;
      continue;
    }
    const request: string[] = [];
    while ((lines[i] ?? '').startsWith('>>> ')) request.push((lines[i++] as string).slice(4));
    const reply: string[] = [];
    while (i < lines.length && lines[i] !== '') reply.push(lines[i++] as string);
    exchanges.push({ index: exchanges.length + 1, request, reply: reply.map((l) => `${l}\r\n`).join('') });
  }
  return exchanges;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Gone = no such process, or a zombie nobody reaped yet (it is dead). */
export function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') ?? true;
  } catch {
    return true;
  }
}

/** True once `pid` is gone (processGone), false if it still runs after `timeoutMs` (generous, for a busy machine). */
export async function waitGone(pid: number, timeoutMs = 60_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!processGone(pid) && Date.now() < deadline) await sleep(20);
  return processGone(pid);
}
