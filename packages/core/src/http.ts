/** Every daemon's HTTP server: health, readiness, coded JSON errors, TLS and basic auth, graceful close. */
import { STATUS_CODES } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import Fastify, {
  LogController,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type RouteHandlerMethod,
} from 'fastify';
import { createBasicAuthVerifier, parseBasicAuthorization, type BasicAuthVerifier } from './basic-auth.js';
import { CachemonError, Errors, errorMessage, isCachemonError } from './errors.js';
import { formatHostPort, parseListenAddress } from './listen-address.js';
import type { Logger } from './log.js';
import { loadWebConfig, tlsContextOptions, type TlsSettings, type WebConfig } from './web-config.js';
import { acceptsGzip, sendExposition, type ExpositionBody } from './exposition.js';

export interface HttpServerOptions {
  /** Daemon name as operators know it; used in the health answers. */
  readonly name: string;
  readonly logger: Logger;
  readonly webConfig?: WebConfig;
  /** The file webConfig was read from (`--web.config.file`): reloadWebConfig() reads it again. */
  readonly webConfigFile?: string;
  /** Largest accepted request body; default 1 MiB. */
  readonly bodyLimitBytes?: number;
  /** How long a client may take to send its request's headers; default HEADERS_TIMEOUT_MS. */
  readonly headersTimeoutMs?: number;
  /** How long a client may take to send its whole request (not the answer's time); default REQUEST_TIMEOUT_MS. */
  readonly requestTimeoutMs?: number;
  /**
   * Whether request.query is filled in (default true). A daemon that reads its request's URL itself
   * turns it off, so a long query string is not decoded before its routes have judged its length.
   */
  readonly parseQueryString?: boolean;
  /**
   * The body of every error answer the server gives outside its routes' own handlers (not found,
   * a bad URL, a request that is not HTTP, too large or too slow, a thrown error), in the daemon's
   * shape. Default: `{"status":"error","code":...,"error":...}`.
   */
  readonly errorBody?: (status: number, code: string, message: string) => string;
  /** Said after "the request's headers are larger than N bytes" (e.g. how to send it instead). */
  readonly headersTooLargeAdvice?: string;
  /** Resolves a listen address's host name (default: the system's resolver, as for any connection). */
  readonly resolveHost?: (host: string) => Promise<readonly LookupAddress[]>;
}

export interface BoundAddress {
  readonly host: string;
  readonly port: number;
  readonly url: string;
}

export interface HttpServer {
  readonly app: FastifyInstance;
  setReady(ready: boolean): void;
  listen(address: string): Promise<BoundAddress>;
  close(): Promise<void>;
  /**
   * Reads the web config file again and applies it to the connections and requests that come next.
   * A bad file, or one that turns TLS on or off or changes client_auth_type (a restart's job), is
   * refused with CACHEMON_WEB_CONFIG_INVALID and changes nothing.
   */
  reloadWebConfig(): Promise<void>;
}

export interface ErrorAnswer {
  readonly status: number;
  readonly body: { status: 'error'; code: string; error: string };
}

const DEFAULT_BODY_LIMIT = 1024 * 1024;
/**
 * Every daemon's limits on a client sending its request: past them node answers 408 and closes the
 * connection. The longest legitimate request is a 1 MiB body; answers (a slow scrape) are not timed.
 */
export const HEADERS_TIMEOUT_MS = 10_000;
export const REQUEST_TIMEOUT_MS = 60_000;
/** How often close() sweeps connections that went idle after finishing their last request. */
const CLOSE_SWEEP_MS = 50;
const JSON_TYPE = 'application/json; charset=utf-8';
const TEXT_TYPE = 'text/plain; charset=utf-8';

function answer(status: number, code: string, error: string): ErrorAnswer {
  return { status, body: { status: 'error', code, error } };
}

const codedBody = (_status: number, code: string, message: string) =>
  JSON.stringify({ status: 'error', code, error: message });

/** The socket errors after which nothing can be answered: the client is gone. */
const GONE = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

/**
 * What node:http cannot parse or gets too slowly, answered in the daemon's error shape (node's and
 * fastify's own answers are bodies of their own), then the connection closed.
 */
function clientErrorAnswer(
  err: NodeJS.ErrnoException & { reason?: string },
  maxHeaderBytes: number,
  limits: { headersTimeoutMs: number; requestTimeoutMs: number },
  advice: string | undefined,
): ErrorAnswer {
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    const said = `the request's headers are larger than ${maxHeaderBytes} bytes`;
    return answer(431, Errors.HEADERS_TOO_LARGE.code, advice ? `${said}; ${advice}` : said);
  }
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return answer(
      408,
      Errors.REQUEST_TIMEOUT.code,
      `the request was not received in time: its headers within ${limits.headersTimeoutMs / 1000} s, the whole of it within ${limits.requestTimeoutMs / 1000} s`,
    );
  }
  return answer(
    400,
    Errors.BAD_REQUEST.code,
    `the request is not valid HTTP: ${err.reason ?? err.code ?? err.message}`,
  );
}

function isFastifyError(err: unknown): err is FastifyError {
  return err instanceof Error && typeof (err as Partial<FastifyError>).statusCode === 'number';
}

/** Maps anything a handler or fastify throws to the JSON error answer. */
export function toErrorAnswer(err: unknown): ErrorAnswer {
  if (isCachemonError(err)) return { status: err.status, body: err.toJSON() };
  if (isFastifyError(err)) {
    const status = err.statusCode ?? 500;
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return answer(413, Errors.BODY_TOO_LARGE.code, err.message);
    if (status === 415) return answer(415, Errors.UNSUPPORTED_MEDIA_TYPE.code, err.message);
    if (status === 404) return answer(404, Errors.NOT_FOUND.code, err.message);
    if (status === 401) return answer(401, Errors.UNAUTHORIZED.code, err.message);
    if (status >= 400 && status < 500) return answer(status, Errors.BAD_REQUEST.code, err.message);
  }
  return answer(500, Errors.INTERNAL.code, `internal error: ${errorMessage(err)}`);
}

/**
 * Client-certificate policies Node's TLS options cannot express (it either verifies or not):
 * RequireAnyClientCert wants some certificate, VerifyClientCertIfGiven rejects an untrusted one.
 */
function checksClientCertInHttp(tls: TlsSettings | undefined): tls is TlsSettings {
  return tls?.clientAuthType === 'RequireAnyClientCert' || tls?.clientAuthType === 'VerifyClientCertIfGiven';
}

function clientCertProblem(tls: TlsSettings, socket: TLSSocket): string | undefined {
  const presented = Object.keys(socket.getPeerCertificate()).length > 0;
  if (tls.clientAuthType === 'RequireAnyClientCert') return presented ? undefined : 'a client certificate is required';
  if (presented && !socket.authorized) {
    return `client certificate not trusted: ${String(socket.authorizationError ?? 'unknown reason')}`;
  }
  return undefined;
}

/** What the security hook applies; replaced as a whole when the web config is read again. */
interface SecurityState {
  readonly config: WebConfig;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly verify: BasicAuthVerifier | undefined;
}

function securityState(config: WebConfig): SecurityState {
  return {
    config,
    headers: Object.entries(config.headers),
    verify: config.basicAuthUsers.size > 0 ? createBasicAuthVerifier(config.basicAuthUsers) : undefined,
  };
}

/** One hook for headers, client-certificate policy and basic auth, reading the state of the moment. */
function installSecurityHooks(app: FastifyInstance, current: () => SecurityState): void {
  app.addHook('onRequest', async (request, reply) => {
    const { config, headers, verify } = current();
    for (const [name, value] of headers) reply.header(name, value);
    const tls = config.tls;
    if (checksClientCertInHttp(tls)) {
      const problem = clientCertProblem(tls, request.raw.socket as TLSSocket);
      if (problem !== undefined) throw new CachemonError(Errors.FORBIDDEN, problem);
    }
    if (verify === undefined) return;
    const credentials = parseBasicAuthorization(request.headers.authorization);
    if (credentials !== undefined && (await verify(credentials))) return;
    reply.header('WWW-Authenticate', 'Basic');
    const reason = credentials === undefined ? 'authentication required' : 'invalid username or password';
    throw new CachemonError(Errors.UNAUTHORIZED, reason);
  });
}

/** Why `next` cannot replace `running` without a restart, or undefined. */
function restartNeededFor(running: WebConfig, next: WebConfig): string | undefined {
  if ((running.tls === undefined) !== (next.tls === undefined)) {
    return `tls_server_config ${next.tls === undefined ? 'removed' : 'added'}: switching between http and https needs a restart`;
  }
  if (running.tls !== undefined && next.tls !== undefined && running.tls.clientAuthType !== next.tls.clientAuthType) {
    return `tls_server_config.client_auth_type changed from ${running.tls.clientAuthType} to ${next.tls.clientAuthType}: needs a restart`;
  }
  return undefined;
}

function installHealthRoutes(app: FastifyInstance, name: string, isReady: () => boolean): void {
  app.get('/-/healthy', async (_request, reply) => reply.type(TEXT_TYPE).send(`${name} is Healthy.\n`));
  app.get('/-/ready', async (_request, reply) => {
    if (!isReady()) throw new CachemonError(Errors.NOT_READY, `${name} is not ready.`);
    return reply.type(TEXT_TYPE).send(`${name} is Ready.\n`);
  });
}

function installErrorHandlers(app: FastifyInstance, errorBody: NonNullable<HttpServerOptions['errorBody']>): void {
  app.setErrorHandler((err, request, reply) => {
    const { status, body } = toErrorAnswer(err);
    // "Not ready" is an answer, not a failure: a load balancer or a test polling /-/ready must not fill the log.
    if (status >= 500 && body.code !== Errors.NOT_READY.code)
      request.log.error({ err, url: request.url }, 'request failed');
    return reply
      .code(status)
      .type(JSON_TYPE)
      .send(errorBody(status, body.code, body.error));
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? request.url;
    const { status, body } = answer(404, Errors.NOT_FOUND.code, `no route for ${request.method} ${path}`);
    return reply
      .code(status)
      .type(JSON_TYPE)
      .send(errorBody(status, body.code, body.error));
  });
}

/** A wildcard bind address is not something to connect to; the URL names loopback instead. */
function urlHost(bound: string): string {
  if (bound === '0.0.0.0') return '127.0.0.1';
  if (bound === '::') return '::1';
  return bound;
}

/**
 * The one address a listen host name stands for, as Go daemons take it: its first IPv4 address,
 * else its first. Fastify given a name would open a second server that reloads would not reach.
 */
export function listenAddressFor(host: string, addresses: readonly LookupAddress[]): string {
  const chosen = addresses.find((a) => a.family === 4) ?? addresses[0];
  if (chosen === undefined) throw new Error(`${host} has no address`);
  return chosen.address;
}

async function listenOn(
  app: FastifyInstance,
  address: string,
  scheme: string,
  resolveHost: HttpServerOptions['resolveHost'],
): Promise<BoundAddress> {
  const { host, port } = parseListenAddress(address);
  const fail = (err: unknown): CachemonError =>
    new CachemonError(Errors.LISTEN_FAILED, `cannot listen on ${address}: ${errorMessage(err)}`, { cause: err });
  let bindHost = host;
  if (host !== '' && isIP(host) === 0) {
    try {
      bindHost = listenAddressFor(host, await (resolveHost ?? ((name) => dnsLookup(name, { all: true })))(host));
    } catch (err) {
      throw fail(err);
    }
  }
  try {
    // ':port' means every interface; fastify would default to localhost, so name it, falling back
    // to IPv4 on hosts without IPv6.
    await app.listen({ host: bindHost === '' ? '::' : bindHost, port });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (host !== '' || (code !== 'EAFNOSUPPORT' && code !== 'EADDRNOTAVAIL')) throw fail(err);
    await app.listen({ host: '0.0.0.0', port }).catch((retryErr: unknown) => {
      throw fail(retryErr);
    });
  }
  const bound = app.server.address() as AddressInfo;
  const url = `${scheme}://${formatHostPort(urlHost(bound.address), bound.port)}`;
  return { host: bound.address, port: bound.port, url };
}

/**
 * When a scrape must be answered by: the scraper's `X-Prometheus-Scrape-Timeout-Seconds` less a
 * margin for rendering and transfer (10 %, at most 0.5 s), at most ten times the default; the
 * default when the header is absent or not a positive number. At least 50 ms from now.
 */
export function scrapeDeadline(header: string | string[] | undefined, defaultTimeoutMs: number): number {
  const text = Array.isArray(header) ? header[0] : header;
  const seconds = Number(text);
  let timeoutMs = defaultTimeoutMs;
  if (text !== undefined && text.trim() !== '' && Number.isFinite(seconds) && seconds > 0) {
    timeoutMs = Math.min(seconds * 1000 - Math.min(500, seconds * 100), defaultTimeoutMs * 10);
  }
  return Date.now() + Math.max(50, timeoutMs);
}

/**
 * A POST route that takes no request body, such as `/-/reload`: whatever body or content type a
 * client sends (`curl -d ''`) is read, up to the limit, and ignored. Call before the server listens.
 */
export function postWithoutBody(app: FastifyInstance, path: string, handler: RouteHandlerMethod): void {
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, _body, done) => done(null, undefined));
    scope.post(path, handler);
  });
}

export async function createHttpServer(options: HttpServerOptions): Promise<HttpServer> {
  const { name, logger, webConfig } = options;
  const tls = webConfig?.tls;
  const headersTimeoutMs = options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS;
  const requestTimeoutMs = Math.max(options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS, headersTimeoutMs);
  // Node checks the timeouts every 30 s by default, which cut a slow client anywhere up to 30 s late.
  const connectionsCheckingInterval = Math.max(10, Math.min(1000, headersTimeoutMs / 10));
  const errorBody = options.errorBody ?? codedBody;
  const app = Fastify({
    loggerInstance: logger,
    // A line per request at 5 s scrape intervals would drown what matters; errors are logged below.
    logController: new LogController({ disableRequestLogging: true }),
    // request.log is the daemon's logger itself: a child logger (with a request id) per request
    // costs every request an allocation-heavy pino child, for the rare error line that uses it.
    childLoggerFactory: (parent) => parent,
    bodyLimit: options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT,
    // Requests arriving on a kept-alive connection while closing are still served (with
    // Connection: close) so every answer keeps our JSON error format; fastify's 503 would not.
    return503OnClosing: false,
    // Idle keep-alive sockets must not hold close() open; busy ones finish their request first.
    forceCloseConnections: 'idle',
    requestTimeout: requestTimeoutMs,
    // A URL the router cannot decode (`%ff`) is a 400 in the daemon's shape, not fastify's.
    frameworkErrors: (err: FastifyError, _request: FastifyRequest, reply: FastifyReply) => {
      const body = errorBody(400, Errors.BAD_REQUEST.code, `the URL is not valid: ${err.message}`);
      void reply.code(400).type(JSON_TYPE).send(body);
    },
    clientErrorHandler: (err: NodeJS.ErrnoException, socket: Duplex) => {
      if (!socket.writable || (err.code !== undefined && GONE.has(err.code))) {
        socket.destroy(err);
        return;
      }
      const maxHeaderBytes = (app.server as { maxHeaderSize?: number }).maxHeaderSize ?? 16 * 1024;
      const { status, body } = clientErrorAnswer(
        err,
        maxHeaderBytes,
        { headersTimeoutMs, requestTimeoutMs },
        options.headersTooLargeAdvice,
      );
      const text = errorBody(status, body.code, body.error);
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${JSON_TYPE}\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
      );
      socket.destroy(err);
    },
    ...(options.parseQueryString === false ? { routerOptions: { querystringParser: () => ({}) } } : {}),
    ...(tls === undefined
      ? { http: { connectionsCheckingInterval } }
      : { https: { ...tlsContextOptions(tls), connectionsCheckingInterval } }),
  }) as unknown as FastifyInstance;
  app.server.headersTimeout = headersTimeoutMs;

  let ready = false;
  let closing = false;
  // A request in flight when close() starts would leave its connection open for fastify's 72 s
  // keep-alive timeout; telling the client to close makes the socket go away with the answer.
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('Connection', 'close');
  });
  let security = webConfig === undefined ? undefined : securityState(webConfig);
  if (security !== undefined) installSecurityHooks(app, () => security!);
  installErrorHandlers(app, errorBody);
  installHealthRoutes(app, name, () => ready);

  return {
    app,
    setReady(value: boolean): void {
      ready = value;
    },
    listen: (address: string) => listenOn(app, address, tls === undefined ? 'http' : 'https', options.resolveHost),
    reloadWebConfig: async () => {
      const file = options.webConfigFile;
      if (file === undefined || security === undefined) return;
      const next = await loadWebConfig(file);
      const problem = restartNeededFor(security.config, next);
      if (problem !== undefined)
        throw new CachemonError(Errors.WEB_CONFIG_INVALID, `${file}: ${problem}; the running web config stays`);
      // New connections get the new certificate; those open keep theirs until they close.
      if (next.tls !== undefined) (app.server as HttpsServer).setSecureContext(tlsContextOptions(next.tls));
      security = securityState(next);
      logger.info(
        { file, tls: next.tls !== undefined, basicAuthUsers: next.basicAuthUsers.size },
        'web config reloaded',
      );
    },
    close: async () => {
      closing = true;
      // Node closes idle connections once, when close starts; answers already on the wire when it
      // started leave connections that go idle later, so keep sweeping until everything is closed.
      const sweeper = setInterval(() => app.server.closeIdleConnections(), CLOSE_SWEEP_MS);
      try {
        await app.close();
      } finally {
        clearInterval(sweeper);
      }
    },
  };
}

/**
 * What an exporter's scrape path answers with, from the scraper's X-Prometheus-Scrape-Timeout-Seconds
 * (scrapeDeadline) and whether it accepts gzip.
 */
export type ExpositionSource = (
  timeoutHeader: string | string[] | undefined,
  gzip: boolean,
) => Promise<string | Buffer | ExpositionBody>;

const TIMEOUT_HEADER = 'x-prometheus-scrape-timeout-seconds';

/** Serves an exporter's scrape paths: `GET <path>` answered by sendExposition from its source. */
export function serveExposition(server: HttpServer, paths: ReadonlyMap<string, ExpositionSource>): void {
  for (const [path, source] of paths) {
    server.app.get(path, async (request, reply) => {
      await sendExposition(
        request,
        reply,
        await source(request.headers[TIMEOUT_HEADER], acceptsGzip(request.headers['accept-encoding'])),
      );
    });
  }
}

export type { FastifyInstance, FastifyReply, FastifyRequest };
