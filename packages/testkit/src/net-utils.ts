import { readFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { TestkitError, TestkitErrors } from './errors.js';

/**
 * A TCP port that was free a moment ago on `host` (the listener is closed again), chosen below the
 * kernel's ephemeral range: a port the OS picked from that range could be taken, before the daemon
 * under test binds it, as the local port of any outgoing connection the tests make (seen as a
 * daemon's EADDRINUSE). Ports handed out once are not handed out again by this process.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const [low, high] = (range ??= belowEphemeralRange());
  for (let attempt = 0; attempt < 50 && high > low; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (handedOut.has(port)) continue;
    if (await canListen(port, host)) {
      handedOut.add(port);
      return port;
    }
  }
  return listenOnce(0, host);
}

const handedOut = new Set<number>();
let range: [number, number] | undefined;

/** [first, last] port to choose from: 10000 up to just below the ephemeral range (Linux's: 32768). */
function belowEphemeralRange(): [number, number] {
  let ephemeralLow = 32768;
  try {
    const [first] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (first !== undefined && Number.isInteger(first) && first > 0) ephemeralLow = first;
  } catch {
    // not Linux: keep the usual value
  }
  return [10000, ephemeralLow - 1];
}

function canListen(port: number, host: string): Promise<boolean> {
  return listenOnce(port, host).then(
    () => true,
    () => false,
  );
}

function listenOnce(port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(port, host, () => {
      const address = server.address();
      const bound = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(bound));
    });
  });
}

/** Splits `host:port` (the last colon separates the port). */
export function splitAddress(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  const port = Number(address.slice(colon + 1));
  if (colon <= 0 || !Number.isInteger(port) || port <= 0 || port > 65535) {
    throw new TestkitError(TestkitErrors.INVALID_ARGUMENT, `not a host:port address: ${JSON.stringify(address)}`);
  }
  return { host: address.slice(0, colon), port };
}

/**
 * Sends `request` on a fresh connection, half-closes, and collects everything until the peer
 * closes. Rejects on connection errors and when nothing ends within `timeoutMs`.
 */
export function exchange(address: string, request: string, timeoutMs: number): Promise<string> {
  const { host, port } = splitAddress(address);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new TestkitError(
          TestkitErrors.SOCKET_TIMEOUT,
          `no complete answer to ${JSON.stringify(request)} from ${address} within ${timeoutMs} ms`,
        ),
      );
    }, timeoutMs);
    socket.on('connect', () => socket.end(request));
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.on('close', (hadError) => {
      clearTimeout(timer);
      if (!hadError) resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}

/** ZooKeeper four-letter word (`srvr`, `mntr`, `ruok`, ...) over a raw socket; resolves the whole answer. */
export function fourLetterWord(address: string, word: string, timeoutMs = 2000): Promise<string> {
  return exchange(address, word, timeoutMs);
}
