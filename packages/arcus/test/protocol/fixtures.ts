/**
 * Test helpers shared by the protocol tests: the captured ARCUS replies, a seeded random source,
 * a fake server; real memcached and free ports come from the test kit.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { arcusSample, arcusSampleNames, arcusTranscriptCommands } from '@cachemon/testkit';

export { freePort, startMemcached, type Memcached } from '@cachemon/testkit';

/** A captured reply, byte for byte (CRLF kept). */
export const sample = arcusSample;
export const sampleNames = arcusSampleNames;
/** Commands of transcript.txt in order, each with its data lines joined by CRLF (as request() takes them). */
export const transcriptCommands = arcusTranscriptCommands;

/** Seeded random numbers for reproducible fuzz cases. */
export { seededRandom } from '@cachemon/testkit';

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
