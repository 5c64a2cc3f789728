/** A four-letter word over a fresh connection, read until the server closes; only read-only words are sent. */
import { connect } from 'node:net';
import { StringDecoder } from 'node:string_decoder';
import { CachemonError, Errors } from '@cachemon/core';

/** Words this client sends: read-only ones. */
const READ_ONLY_WORDS = new Set(['mntr', 'srvr', 'ruok', 'conf', 'envi', 'stat', 'cons', 'wchs', 'isro']);

/** A larger answer is no four-letter-word answer (mntr is ~17 KB on 3.8). */
export const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/**
 * The server's whole answer to `word`. Rejects with CachemonError:
 * - NODE_UNREACHABLE: the connection could not be made (refused, no route, not connected by the deadline);
 * - NODE_TIMEOUT: connected, but the answer had not ended (server closed) by the deadline;
 * - NODE_PROTOCOL: the answer grew beyond MAX_ANSWER_BYTES;
 * - NODE_CLOSED: the connection failed after it was made.
 */
export function fourLetterWord(host: string, port: number, word: string, deadline: number): Promise<string> {
  if (!READ_ONLY_WORDS.has(word)) {
    return Promise.reject(
      new CachemonError(
        Errors.INTERNAL,
        `refusing to send four-letter word ${JSON.stringify(word)}: not a read-only one`,
      ),
    );
  }
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return new Promise((resolve, reject) => {
    const decoder = new StringDecoder('utf8');
    let text = '';
    let length = 0;
    let connected = false;
    let settled = false;
    const socket = connect({ host, port });
    const finish = (err: CachemonError | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(text + decoder.end());
    };
    const timer = setTimeout(
      () =>
        finish(
          connected
            ? new CachemonError(Errors.NODE_TIMEOUT, `${address} did not finish its answer to ${word} in time`, {
                details: { address },
              })
            : new CachemonError(Errors.NODE_UNREACHABLE, `cannot connect to ${address}: no answer in time`, {
                details: { address },
              }),
        ),
      Math.max(0, deadline - Date.now()),
    );
    socket.setNoDelay(true);
    socket.on('connect', () => {
      connected = true;
      socket.end(word);
    });
    socket.on('data', (chunk: Buffer) => {
      length += chunk.length;
      if (length > MAX_ANSWER_BYTES) {
        finish(
          new CachemonError(
            Errors.NODE_PROTOCOL,
            `${address} answered ${word} with more than ${MAX_ANSWER_BYTES} bytes`,
            { details: { address } },
          ),
        );
        return;
      }
      text += decoder.write(chunk);
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      const details = { address, errno: err.code };
      finish(
        connected
          ? new CachemonError(Errors.NODE_CLOSED, `connection to ${address} failed: ${err.message}`, {
              cause: err,
              details,
            })
          : new CachemonError(Errors.NODE_UNREACHABLE, `cannot connect to ${address}: ${err.message}`, {
              cause: err,
              details,
            }),
      );
    });
    socket.on('close', () => finish(undefined));
  });
}
