/**
 * Test helpers shared by the protocol tests: the captured ARCUS replies, a seeded random source,
 * a fake server, and a real memcached process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';

// Compiled to dist/test/{unit,protocol}/; the fixtures stay in the source tree.
const FIXTURES = new URL('../../../test/protocol/fixtures/arcus-1.15.0/', import.meta.url);

/** A captured reply, byte for byte (CRLF kept). */
export function sample(name: string): string {
  return readFileSync(new URL(name, FIXTURES), 'latin1');
}

export function sampleNames(): string[] {
  return readdirSync(FIXTURES)
    .filter((name) => name.endsWith('.raw'))
    .sort();
}

/** Commands of transcript.txt in order, each with its data lines joined by CRLF (as request() takes them). */
export function transcriptCommands(): string[] {
  const commands: string[] = [];
  let current: string[] | undefined;
  for (const line of sample('transcript.txt').split('\n')) {
    if (line.startsWith('>>> ')) {
      current ??= [];
      current.push(line.slice(4));
    } else if (current !== undefined) {
      commands.push(current.join('\r\n'));
      current = undefined;
    }
  }
  return commands;
}

/** mulberry32: small, seeded, good enough to make fuzz cases reproducible. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface FakeServer {
  readonly port: number;
  readonly address: string;
  /** Sockets accepted so far, in order. */
  readonly sockets: Socket[];
  close(): Promise<void>;
}

/**
 * A loopback server; `onConnection` gets each accepted socket (and its index). Destroys every
 * socket on close so tests never leave handles behind.
 */
export async function fakeServer(
  onConnection: (socket: Socket, index: number) => void,
  listenOn: { host?: string; port?: number } = {},
): Promise<FakeServer> {
  const sockets: Socket[] = [];
  const server: Server = createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => {});
    onConnection(socket, sockets.length - 1);
  });
  const host = listenOn.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(listenOn.port ?? 0, host, resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    address: host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`,
    sockets,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Calls `onLine` for every CRLF-terminated line the client sends on `socket`. */
export function onLines(socket: Socket, onLine: (line: string) => void): void {
  let buffered = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    for (let nl = buffered.indexOf('\r\n'); nl !== -1; nl = buffered.indexOf('\r\n')) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 2);
      onLine(line);
    }
  });
}

/** A port nothing listens on (bound, read, released). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface Memcached {
  readonly address: string;
  readonly process: ChildProcess;
  stop(): Promise<void>;
}

/** Starts /usr/bin/memcached on a free loopback port and waits until it accepts connections. */
export async function startMemcached(extraArgs: string[] = []): Promise<Memcached> {
  const port = await freePort();
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0 ? ['-u', 'root'] : [];
  const child = spawn('/usr/bin/memcached', [...asRoot, '-l', '127.0.0.1', '-p', String(port), '-U', '0', ...extraArgs], {
    stdio: 'ignore',
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  const until = Date.now() + 5000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`memcached exited with ${child.exitCode}`);
    const ok = await new Promise<boolean>((resolve) => {
      const probe = connect({ host: '127.0.0.1', port }, () => {
        probe.destroy();
        resolve(true);
      });
      probe.on('error', () => resolve(false));
    });
    if (ok) break;
    if (Date.now() > until) {
      await stop();
      throw new Error('memcached did not start listening within 5 s');
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { address: `127.0.0.1:${port}`, process: child, stop };
}
