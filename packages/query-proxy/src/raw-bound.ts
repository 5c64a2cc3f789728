/**
 * The bound on a query's raw size: a query string or body larger than the longest query a group
 * accepts could need (each character percent-encoded, and room for the other parameters) is
 * refused before it is read or decoded, and before the framework sees the request at all, so that
 * a burst of them costs the proxy about what it costs a bare node:http server.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ServerGroup } from './config.js';

/**
 * How long a refused request's connection stays open, unread, after its answer: the client reads
 * the answer before the reset that closing on unread data brings (Go's net/http waits as long).
 */
const LINGER_MS = 500;

/** Room in a query's request for its parameters other than the query (time, step, timeout, ...). */
const OTHER_PARAMETERS_BYTES = 16 * 1024;

export interface RawBound {
  /** The longest query accepted, in characters, and the setting that says so. */
  readonly longest: number;
  readonly source: 'max_query_length' | '--query.max-length';
  /** Bytes of query string or body that can carry it. */
  readonly bytes: number;
}

export function rawBoundFor(maxQueryLength: number, groups: readonly ServerGroup[]): RawBound {
  const ofGroups = Math.max(...groups.map((g) => g.maxQueryLength));
  const longest = Math.min(maxQueryLength, ofGroups);
  return {
    longest,
    source: longest === ofGroups ? 'max_query_length' : '--query.max-length',
    bytes: 3 * longest + OTHER_PARAMETERS_BYTES,
  };
}

/** What is too large in a request to the query endpoints, or undefined. */
export function rawProblem(url: string, bodyBytes: number, bound: RawBound): string | undefined {
  const at = url.indexOf('?');
  const search = at === -1 ? 0 : url.length - at - 1;
  const what =
    search > bound.bytes
      ? `the query string is ${search}`
      : bodyBytes > bound.bytes
        ? `the request body is ${bodyBytes}`
        : undefined;
  return (
    what &&
    `${what} bytes; a query of at most ${bound.longest} characters (${bound.source}) needs at most ${bound.bytes}`
  );
}

const QUERY_ENDPOINTS: Readonly<Record<string, 'query' | 'query_range'>> = {
  '/api/v1/query': 'query',
  '/api/v1/query_range': 'query_range',
};

/**
 * Answers a request to the query endpoints whose query string or declared body is too large, in
 * the API's error shape, ahead of the server's own request listener. Its body is not read: the
 * connection is closed shortly after the answer is written. Ahead of the web config's checks too: the
 * answer says nothing but the size, whoever asks.
 */
export function refuseOversizedQueries(
  server: Server,
  bound: () => RawBound,
  refused: (endpoint: 'query' | 'query_range') => void,
): void {
  const listeners = server.listeners('request') as Array<(request: IncomingMessage, response: ServerResponse) => void>;
  server.removeAllListeners('request');
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const url = request.url ?? '';
    const at = url.indexOf('?');
    const endpoint = QUERY_ENDPOINTS[at === -1 ? url : url.slice(0, at)];
    const problem =
      endpoint === undefined ? undefined : rawProblem(url, Number(request.headers['content-length'] ?? 0), bound());
    if (endpoint === undefined || problem === undefined) {
      for (const listener of listeners) listener.call(server, request, response);
      return;
    }
    refused(endpoint);
    linger(request.socket);
    const body = JSON.stringify({ status: 'error', errorType: 'bad_data', error: problem });
    response.writeHead(400, {
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(body),
      Connection: 'close',
    });
    response.end(body);
  });
}

/**
 * The connection of a refused request: read no more of it (node:http would read the whole body
 * to discard it), and once the answer is written, half-close it and close it LINGER_MS later.
 */
function linger(socket: Socket): void {
  // node:http's own flag for a socket it paused: its request stream then never resumes it.
  (socket as Socket & { _paused?: boolean })._paused = true;
  socket.pause();
  // Called by node:http once an answer with `Connection: close` is written.
  socket.destroySoon = function destroySoon(this: Socket) {
    this.end();
    setTimeout(() => this.destroy(), LINGER_MS).unref();
  };
}
