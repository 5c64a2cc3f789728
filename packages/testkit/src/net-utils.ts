import { createServer, connect } from 'node:net';
import { TestkitError, TestkitErrors } from './errors.js';

/** A TCP port that was free a moment ago on `host` (the OS picks it; the listener is closed again). */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
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
      reject(new TestkitError(TestkitErrors.SOCKET_TIMEOUT, `no complete answer to ${JSON.stringify(request)} from ${address} within ${timeoutMs} ms`));
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
