/**
 * The query proxy's HTTP server: the Prometheus query API the dashboard server uses, routed to the
 * server groups by label filter; the UI; its own metrics; reload. main.ts adds flags and signals;
 * tests start it in-process.
 *
 * Every API answer says how it was routed: `X-Cachemon-Route` (single, several, none, spanning)
 * and a standard `Server-Timing` entry per group asked (`g<index>;desc="<group>";dur=<ms>`).
 */
import { readFileSync } from 'node:fs';
import type { OutgoingHttpHeaders, Server, ServerResponse } from 'node:http';
import type { Duplex, Readable } from 'node:stream';
import { createRequire } from 'node:module';
import { createHttpServer, errorMessage, isCachemonError, loadForReload, oneAtATime, postWithoutBody, reloadWebConfigFor, sendExposition } from '@cachemon/core';
import type { FastifyReply, FastifyRequest, Logger, WebConfig } from '@cachemon/core';
import { Registry } from 'prom-client';
import type { QueryProxyConfig, ServerGroup } from './config.js';
import { combiningProblem, matchesForGroup, parseQuery, planMatches, planQuery, PromQLParseError, queryForGroup } from './planner.js';
import type { Plan, RouteDecision } from './planner.js';
import { groupWarnings, mergeMetadata, MergeError, mergeQueryData, mergeSeriesData, mergeStringLists, sortByValue } from './merge.js';
import type { GroupAnswer, Merged } from './merge.js';
import { ProxyMetrics } from './self-metrics.js';
import { breakFailure, GroupCall, GroupFailure, Upstreams } from './upstream.js';
import type { UpstreamRequest } from './upstream.js';

/** Largest request body: a dashboard's POSTed query with every node of a variable in a regex. */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;
/** Longest query accepted; the stores have their own limit (VictoriaMetrics' -search.maxQueryLen). */
export const DEFAULT_MAX_QUERY_LENGTH = 256 * 1024;
/**
 * Most of a store's answer held back before it is relayed: an answer that ends within this many
 * bytes goes to the client in one write; a longer one is streamed from there on.
 */
const RELAY_BUFFER_BYTES = 64 * 1024;
/** Plans kept for queries seen again (dashboards repeat theirs every refresh). */
const PLAN_CACHE_SIZE = 2048;
/** The Prometheus version the API is compatible with, for the dashboard server's feature checks. */
export const PROMETHEUS_COMPATIBLE_VERSION = '2.24.0';

export interface QueryProxyOptions {
  readonly logger: Logger;
  readonly version: string;
  /** `host:port` or `:port`. */
  readonly listen: string;
  /** Reads and validates the config file again (POST /-/reload, SIGHUP). */
  readonly loadConfig: () => QueryProxyConfig;
  readonly webConfig?: WebConfig;
  /** The file webConfig came from: read again at every reload. */
  readonly webConfigFile?: string;
  readonly bodyLimitBytes?: number;
  readonly maxQueryLength?: number;
  /** The process_* and nodejs_* metrics, appended to GET /metrics. */
  readonly processMetrics?: () => Promise<string>;
}

export interface ReloadResult {
  readonly groups: readonly string[];
  readonly warnings: readonly string[];
}

export interface QueryProxy {
  readonly url: string;
  readonly metrics: ProxyMetrics;
  readonly config: () => QueryProxyConfig;
  /** Reloads the config file; throws (and keeps the running config) when it is invalid. */
  reload(): Promise<ReloadResult>;
  close(): Promise<void>;
}

type Endpoint = 'query' | 'query_range' | 'series' | 'labels' | 'label_values' | 'metadata';
/** Prometheus' error types, and the web config's refusals (basic auth, client certificate). */
type ErrorType = 'bad_data' | 'timeout' | 'unavailable' | 'canceled' | 'internal' | 'execution' | 'unauthorized' | 'forbidden';

const JSON_TYPE = 'application/json';
const STATUS_OF: Readonly<Record<ErrorType, number>> = {
  bad_data: 400,
  execution: 422,
  timeout: 503,
  unavailable: 503,
  canceled: 499,
  internal: 500,
  unauthorized: 401,
  forbidden: 403,
};

/** An answer in Prometheus' error shape. */
class ApiError extends Error {
  constructor(
    readonly errorType: ErrorType,
    message: string,
    readonly status = STATUS_OF[errorType],
  ) {
    super(message);
  }
}

interface Timing {
  readonly group: ServerGroup;
  readonly ms: number;
  readonly failure?: string;
}

/** A success in the API's shape, with Prometheus' `warnings` when there are any. */
function successBody(data: unknown, warnings: readonly string[]): string {
  return JSON.stringify(warnings.length > 0 ? { status: 'success', data, warnings } : { status: 'success', data });
}

/** An error in the API's shape. */
function errorBody(error: ApiError): string {
  return JSON.stringify({ status: 'error', errorType: error.errorType, error: error.message });
}

function serverTiming(timings: readonly Timing[]): string {
  return timings
    .map((t) => {
      const desc = (t.failure ? `${t.group.name} failed: ${t.failure}` : t.group.name).replace(/[\\"]/g, '\\$&').replace(/[\r\n]+/g, ' ');
      return `g${t.group.index};desc="${desc}";dur=${t.ms.toFixed(2)}`;
    })
    .join(', ');
}

/**
 * The request's parameters as the stores read them (Go's Request.Form): a form-encoded body's
 * first, then the query string's, so where both set one (`query`) the body's is the one used.
 */
function requestParams(request: FastifyRequest): { search: string; body: string | undefined; params: URLSearchParams } {
  const at = request.url.indexOf('?');
  const search = at === -1 ? '' : request.url.slice(at + 1);
  const body = typeof request.body === 'string' ? request.body : undefined;
  return { search, body, params: formParams(search, body) };
}

/** The parameters of a query string and a form-encoded body: the body's first (requestParams). */
function formParams(search: string, body: string | undefined): URLSearchParams {
  if (!body) return new URLSearchParams(search);
  const params = new URLSearchParams(body);
  if (search !== '') for (const [k, v] of new URLSearchParams(search)) params.append(k, v);
  return params;
}

/** What a query answers when no group has anything for it, in the shape its result would have. */
function emptyResult(endpoint: 'query' | 'query_range', parsed: Plan['parsed']): { resultType: string; result: unknown[] } {
  const resultType = endpoint === 'query_range' ? 'matrix' : parsed.instantResultType;
  return { resultType, result: resultType === 'scalar' || resultType === 'string' ? [Date.now() / 1000, resultType === 'scalar' ? 'NaN' : ''] : [] };
}

function uiFiles(): Map<string, { type: string; body: Buffer }> {
  const require = createRequire(import.meta.url);
  const ui = new URL('../../ui/', import.meta.url);
  const uplot = require.resolve('uplot/dist/uPlot.iife.min.js').replace(/uPlot\.iife\.min\.js$/, '');
  const files = new Map<string, { type: string; body: Buffer }>();
  const add = (path: string, file: string | URL, type: string) => files.set(path, { type, body: readFileSync(file) });
  add('/', new URL('index.html', ui), 'text/html; charset=utf-8');
  add('/ui/app.js', new URL('app.js', ui), 'text/javascript; charset=utf-8');
  add('/ui/style.css', new URL('style.css', ui), 'text/css; charset=utf-8');
  add('/ui/vendor/uPlot.iife.min.js', `${uplot}uPlot.iife.min.js`, 'text/javascript; charset=utf-8');
  add('/ui/vendor/uPlot.min.css', `${uplot}uPlot.min.css`, 'text/css; charset=utf-8');
  return files;
}

export async function startQueryProxy(initial: QueryProxyConfig, options: QueryProxyOptions): Promise<QueryProxy> {
  const { logger } = options;
  let config = initial;
  const maxQueryLength = options.maxQueryLength ?? DEFAULT_MAX_QUERY_LENGTH;
  const registry = new Registry();
  const metrics = new ProxyMetrics(registry, () => config, options.version);
  const upstreams = new Upstreams();
  /** The server is closing: an answer relayed from now on says Connection: close, as the routes' do. */
  let closing = false;
  const plans = new Map<string, Plan>();
  const files = uiFiles();

  const server = await createHttpServer({
    name: 'query proxy',
    logger,
    bodyLimitBytes: options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES,
    ...(options.webConfig ? { webConfig: options.webConfig, ...(options.webConfigFile === undefined ? {} : { webConfigFile: options.webConfigFile }) } : {}),
  });
  const { app } = server;
  const maxHeaderBytes = headerRoom(maxQueryLength);
  allowLongRequestLines(app.server, maxHeaderBytes);
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => done(null, body));

  /** The API's errors in Prometheus' shape, whatever threw them (a body too large included). */
  const apiErrorHandler = (err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    let error: ApiError;
    if (err instanceof ApiError) error = err;
    else if (isCachemonError(err) && err.status < 500) {
      // The web config's checks, run before the route: a refusal to answer, not a failure of the proxy.
      error = new ApiError(err.status === 401 ? 'unauthorized' : err.status === 403 ? 'forbidden' : 'bad_data', err.message, err.status);
    } else if ((err as { code?: string }).code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      error = new ApiError('bad_data', `the request body is larger than ${options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES} bytes`, 413);
    } else if (typeof (err as { statusCode?: number }).statusCode === 'number' && (err as { statusCode: number }).statusCode < 500) {
      error = new ApiError('bad_data', errorMessage(err), (err as { statusCode: number }).statusCode);
    } else {
      request.log.error({ err, url: request.url }, 'request failed');
      error = new ApiError('internal', `internal error: ${errorMessage(err)}`);
    }
    return reply.code(error.status).type(JSON_TYPE).send(errorBody(error));
  };

  const plan = (query: string): Plan => {
    let cached = plans.get(query);
    if (cached === undefined) {
      cached = planQuery(parseQuery(query), config.groups);
      if (plans.size >= PLAN_CACHE_SIZE) plans.delete(plans.keys().next().value!);
      plans.set(query, cached);
    }
    return cached;
  };

  /** Calls to cancel when the client goes away before its answer is complete. */
  const onClientGone = (reply: FastifyReply, calls: readonly GroupCall[]): void => {
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) for (const call of calls) call.cancel();
    });
  };

  const failureAnswer = (failure: GroupFailure): ApiError =>
    new ApiError(failure.kind === 'timeout' ? 'timeout' : failure.kind === 'canceled' ? 'canceled' : 'unavailable', failure.message);

  const recordGroup = (endpoint: Endpoint, group: ServerGroup, started: number, failure?: GroupFailure): Timing => {
    const ms = performance.now() - started;
    metrics.groupDuration.observe({ group: group.name, endpoint }, ms / 1000);
    if (failure) metrics.groupErrors.inc({ group: group.name, kind: failure.kind });
    return { group, ms, ...(failure ? { failure: failure.kind === 'timeout' ? 'timeout' : failure.detail } : {}) };
  };

  /** An answer that broke off after it began: logged and counted (`passedOn`: part of it reached the client). */
  const brokeOff = (endpoint: Endpoint, failure: GroupFailure, passedOn: boolean): void => {
    logger.warn({ group: failure.group.name, endpoint, error: failure.detail, passedOn }, 'a streamed answer broke off');
    metrics.groupErrors.inc({ group: failure.group.name, kind: failure.kind });
  };

  /** The warning of an answer given without a group that failed (ignore_error). */
  const missingPart = (failure: GroupFailure) => `${failure.message}; its part of the result is missing (ignore_error)`;

  const success = (reply: FastifyReply, endpoint: Endpoint, data: unknown, warnings: readonly string[]) => {
    if (warnings.length > 0) metrics.warnings.inc({ endpoint });
    return reply.type(JSON_TYPE).send(successBody(data, warnings));
  };

  /** The answer for the one group of a query that failed: an empty result and a warning (ignore_error), or the error. */
  const singleFailure = (endpoint: Endpoint, group: ServerGroup, failure: GroupFailure, empty: unknown): { status: number; text: string } => {
    if (group.ignoreError && failure.kind !== 'canceled') {
      metrics.warnings.inc({ endpoint });
      return { status: 200, text: successBody(empty, [missingPart(failure)]) };
    }
    const error = failureAnswer(failure);
    return { status: error.status, text: errorBody(error) };
  };

  /**
   * The one-group path: the request forwarded untouched, the answer's bytes (compressed when the
   * client accepts it) written straight to the client's socket as they arrive, past fastify's
   * reply pipeline: this is the path nearly every dashboard query takes.
   */
  const forward = async (endpoint: Endpoint, group: ServerGroup, upstream: UpstreamRequest, reply: FastifyReply, empty: unknown) => {
    const started = performance.now();
    const call = new GroupCall(group.timeoutMs);
    onClientGone(reply, [call]);
    let answer;
    try {
      answer = await upstreams.send(group, upstream, call);
    } catch (err) {
      call.done();
      if (!(err instanceof GroupFailure)) throw err;
      reply.header('Server-Timing', serverTiming([recordGroup(endpoint, group, started, err)]));
      const failed = singleFailure(endpoint, group, err, empty);
      return reply.code(failed.status).type(JSON_TYPE).send(failed.text);
    }
    reply.header('Server-Timing', serverTiming([recordGroup(endpoint, group, started)]));
    reply.hijack();
    const own = reply.getHeaders() as OutgoingHttpHeaders;
    // The group's timeout holds until the answer has ended: a store that stops sending mid-answer
    // is cut off then, as one that never answers is.
    await relay(answer.status, { ...own, ...answer.headers }, answer.body, reply.raw, () => closing, (err, sent) => {
      if (call.canceled) return undefined;
      const failure = breakFailure(group, call.timedOut, errorMessage(err));
      brokeOff(endpoint, failure, sent);
      if (sent) return undefined;
      // Nothing of it has reached the client yet: say so in the API's shape, as for a failed group.
      return { ...singleFailure(endpoint, group, failure, empty), headers: { ...own, 'content-type': JSON_TYPE } };
    });
    call.done();
    return reply;
  };

  /** The several-group path: each group asked at once, the answers merged. */
  const gather = async <T>(
    endpoint: Endpoint,
    groups: readonly ServerGroup[],
    requestFor: (group: ServerGroup) => UpstreamRequest,
    merge: (answers: readonly GroupAnswer[]) => Merged<T>,
    reply: FastifyReply,
  ) => {
    const timings: Timing[] = [];
    const calls: GroupCall[] = [];
    onClientGone(reply, calls);
    const results = await Promise.all(
      groups.map(async (group) => {
        const started = performance.now();
        const call = new GroupCall(group.timeoutMs);
        calls.push(call);
        try {
          const answer = await upstreams.json(group, requestFor(group), call);
          timings.push(recordGroup(endpoint, group, started));
          return { group, answer };
        } catch (err) {
          if (!(err instanceof GroupFailure)) throw err;
          timings.push(recordGroup(endpoint, group, started, err));
          return { group, failure: err };
        }
      }),
    );
    reply.header('Server-Timing', serverTiming(timings.sort((a, b) => a.group.index - b.group.index)));
    const warnings: string[] = [];
    const answers: GroupAnswer[] = [];
    for (const result of results) {
      if (result.failure) {
        if (!result.group.ignoreError || result.failure.kind === 'canceled') throw failureAnswer(result.failure);
        warnings.push(missingPart(result.failure));
        continue;
      }
      const { status, body } = result.answer;
      const parsed = body as { status?: string; data?: unknown; warnings?: string[]; errorType?: string; error?: string };
      if (status >= 400 || parsed.status !== 'success') {
        // The store refused the request (a query it cannot run): the same for every group; say it as it did.
        return reply.code(status >= 400 ? status : 502).type(JSON_TYPE).send(
          JSON.stringify({ status: 'error', errorType: parsed.errorType ?? 'execution', error: `${result.group.name}: ${parsed.error ?? 'answered without data'}` }),
        );
      }
      answers.push({ group: result.group, data: parsed.data, ...(Array.isArray(parsed.warnings) ? { warnings: parsed.warnings } : {}) });
    }
    let merged: Merged<T>;
    try {
      merged = merge(answers);
    } catch (err) {
      if (err instanceof MergeError) throw new ApiError('internal', `cannot merge the server groups' answers: ${err.message}`, 502);
      throw err;
    }
    return success(reply, endpoint, merged.data, [...groupWarnings(answers), ...warnings, ...merged.warnings]);
  };

  /** The client's request as the single path forwards it: same method, parameters and body. */
  const asIs = (request: FastifyRequest, path: string, search: string, body: string | undefined): UpstreamRequest => {
    const accept = request.headers['accept-encoding'];
    return { path, method: request.method === 'POST' ? 'POST' : 'GET', search, ...(body !== undefined ? { body } : {}), ...(accept ? { acceptEncoding: accept } : {}) };
  };

  /**
   * Routes a request: a bad query or parameter is a 400 (`param` names it), counted as `invalid`;
   * a decision is counted, said in X-Cachemon-Route, and the answer timed when it is complete.
   */
  const routed = <T extends { decision: RouteDecision }>(reply: FastifyReply, endpoint: Endpoint, param: string, decide: () => T): T => {
    const started = performance.now();
    let result: T;
    try {
      result = decide();
    } catch (err) {
      metrics.requests.inc({ endpoint, decision: 'invalid' });
      if (err instanceof PromQLParseError) throw new ApiError('bad_data', `invalid parameter "${param}": ${err.message}`);
      throw err;
    }
    metrics.requests.inc({ endpoint, decision: result.decision });
    reply.header('X-Cachemon-Route', result.decision);
    reply.raw.once('finish', () => metrics.requestDuration.observe({ endpoint }, (performance.now() - started) / 1000));
    return result;
  };

  const queryHandler = (endpoint: 'query' | 'query_range') => async (request: FastifyRequest, reply: FastifyReply) => {
    const { search, body, params } = requestParams(request);
    const planned = routed(reply, endpoint, 'query', () => {
      const query = params.get('query');
      if (query === null) throw new ApiError('bad_data', 'invalid parameter "query": the parameter is missing');
      if (query.length > maxQueryLength) {
        throw new ApiError('bad_data', `invalid parameter "query": the query is ${query.length} characters long; the proxy accepts at most ${maxQueryLength} (-query.max-length)`);
      }
      return plan(query);
    });
    const empty = emptyResult(endpoint, planned.parsed);
    if (planned.decision === 'none') return success(reply, endpoint, empty, []);
    if (planned.decision === 'spanning') return success(reply, endpoint, empty, [planned.reason!]);
    const path = `/api/v1/${endpoint}`;
    const [only] = planned.groups;
    if (planned.groups.length === 1 && only && Object.keys(only.labels).length === 0) return forward(endpoint, only, asIs(request, path, search, body), reply, empty);
    const warnings = [planned.warning, combiningProblem(planned.parsed, planned.groups)].filter((w) => w !== undefined);
    const sortedBy = endpoint === 'query' && planned.groups.length > 1 ? planned.parsed.sortedBy : undefined;
    const requestFor = (group: ServerGroup): UpstreamRequest => {
      const form = new URLSearchParams(params);
      form.set('query', queryForGroup(planned.parsed, group));
      return { path, method: 'POST', search: '', body: form.toString() };
    };
    return gather(endpoint, planned.groups, requestFor, (answers) => {
      const merged = mergeQueryData(answers);
      // Each group sorted its own series: the merged list is sorted again, as one store would have.
      const data = sortedBy === undefined ? merged.data : sortByValue(merged.data, sortedBy === 'value descending');
      return { data, warnings: [...merged.warnings, ...warnings] };
    }, reply);
  };

  /** /series, /labels, /label/<name>/values, /metadata: routed by match[], answers united. */
  const listHandler = <T>(
    endpoint: Endpoint,
    path: (request: FastifyRequest) => string,
    merge: (answers: readonly GroupAnswer[], request: FastifyRequest) => Merged<T>,
    empty: unknown,
  ) =>
    async (request: FastifyRequest, reply: FastifyReply) => {
      const { search, body, params } = requestParams(request);
      const route = routed(reply, endpoint, 'match[]', () => {
        const matches = endpoint === 'metadata' ? [] : params.getAll('match[]');
        if (endpoint === 'series' && matches.length === 0) throw new ApiError('bad_data', 'no match[] parameter provided');
        return planMatches(matches, config.groups);
      });
      if (route.groups.length === 0) return success(reply, endpoint, empty, []);
      const upstreamPath = path(request);
      const [only] = route.groups;
      if (route.groups.length === 1 && only && Object.keys(only.labels).length === 0) return forward(endpoint, only, asIs(request, upstreamPath, search, body), reply, empty);
      // Each group gets the match[] it can answer, written for it (its own labels' matchers out).
      const requestFor = (group: ServerGroup): UpstreamRequest => {
        const form = new URLSearchParams(params);
        if (route.matches.length > 0) {
          form.delete('match[]');
          for (const match of matchesForGroup(route, group)) form.append('match[]', match);
        }
        return { path: upstreamPath, method: 'POST', search: '', body: form.toString() };
      };
      return gather(endpoint, route.groups, requestFor, (answers) => merge(answers, request), reply);
    };

  const api = (path: string, handler: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>) => {
    app.route({ method: ['GET', 'POST'], url: path, handler, errorHandler: apiErrorHandler });
  };
  api('/api/v1/query', queryHandler('query'));
  api('/api/v1/query_range', queryHandler('query_range'));
  api('/api/v1/series', listHandler('series', () => '/api/v1/series', mergeSeriesData, []));
  api('/api/v1/labels', listHandler('labels', () => '/api/v1/labels', (a) => mergeStringLists(a, (g) => Object.keys(g.labels)), []));
  const labelName = (request: FastifyRequest) => (request.params as { name: string }).name;
  api(
    '/api/v1/label/:name/values',
    listHandler(
      'label_values',
      (request) => `/api/v1/label/${encodeURIComponent(labelName(request))}/values`,
      // A group's own labels are not in its store: their value is the group's.
      (answers, request) => mergeStringLists(answers, (g) => (g.labels[labelName(request)] === undefined ? [] : [g.labels[labelName(request)]!])),
      [],
    ),
  );
  api('/api/v1/metadata', listHandler('metadata', () => '/api/v1/metadata', mergeMetadata, {}));
  api('/api/v1/status/buildinfo', async (_request, reply) =>
    success(reply, 'metadata', { version: PROMETHEUS_COMPATIBLE_VERSION, revision: `cachemon query proxy ${options.version}`, branch: '', buildUser: '', buildDate: '', goVersion: '' }, []),
  );
  api('/api/v1/query_exemplars', async (_request, reply) => success(reply, 'query', [], []));
  app.route({
    method: ['GET', 'POST'],
    url: '/api/v1/*',
    errorHandler: apiErrorHandler,
    handler: async (request) => {
      throw new ApiError('bad_data', `the query proxy does not serve ${request.url.split('?')[0]}`, 404);
    },
  });

  for (const [path, file] of files) {
    app.get(path, async (_request, reply) => reply.type(file.type).header('Cache-Control', 'no-cache').send(file.body));
  }

  app.get('/metrics', async (request, reply) => {
    const processText = options.processMetrics ? await options.processMetrics() : '';
    await sendExposition(request, reply, (await registry.metrics()) + processText);
  });

  // One at a time (SIGHUP and POST alike), so that the newest read of the files is applied last.
  const reload = oneAtATime(async (): Promise<ReloadResult> => {
    const next: QueryProxyConfig = loadForReload(options.loadConfig, metrics.reload, logger);
    // The web config after the config file is read, before anything is applied: refused, nothing changes.
    await reloadWebConfigFor(server, metrics.reload, logger);
    config = next;
    plans.clear();
    metrics.reload.succeeded();
    for (const warning of next.warnings) logger.warn({ warning }, 'configuration warning');
    const result = { groups: next.groups.map((g) => `${g.name}: ${g.targets.join(', ')}`), warnings: next.warnings };
    logger.info({ groups: result.groups }, 'configuration reloaded');
    return result;
  });
  postWithoutBody(app, '/-/reload', async (_request, reply) => reply.type(JSON_TYPE).send(JSON.stringify({ status: 'success', ...(await reload()) })));

  let bound;
  try {
    bound = await server.listen(options.listen);
  } catch (err) {
    await upstreams.close();
    throw err;
  }
  server.setReady(true);
  for (const warning of config.warnings) logger.warn({ warning }, 'configuration warning');
  logger.info({ address: bound.url, version: options.version, groups: config.groups.map((g) => `${g.name}: ${g.targets.join(', ')}`) }, 'query proxy listening');
  return {
    url: bound.url,
    metrics,
    config: () => config,
    reload,
    close: async () => {
      closing = true;
      await server.close();
      await upstreams.close();
    },
  };
}

/** Node's own limit on a request's header section (its request line included). */
const NODE_MAX_HEADER_BYTES = 16 * 1024;

/**
 * Room for a request's header section: a GET carries its query in the request line, where each
 * character of the longest query accepted takes up to 3 bytes percent-encoded (non-ASCII ones more:
 * such a query may need POST), beside the usual headers.
 */
function headerRoom(maxQueryLength: number): number {
  return Math.max(NODE_MAX_HEADER_BYTES, 3 * maxQueryLength + NODE_MAX_HEADER_BYTES);
}

/**
 * Lets requests carry `maxHeaderBytes` of headers (read by node:http for each new connection), and
 * answers one that carries more in the API's error shape rather than fastify's.
 */
function allowLongRequestLines(server: Server, maxHeaderBytes: number): void {
  (server as Server & { maxHeaderSize?: number }).maxHeaderSize = maxHeaderBytes;
  const others = server.listeners('clientError') as Array<(err: Error, socket: Duplex) => void>;
  server.removeAllListeners('clientError');
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code !== 'HPE_HEADER_OVERFLOW') {
      for (const listener of others) listener.call(server, err, socket);
      return;
    }
    // As node:http answers it: the answer written, the connection closed.
    if (socket.writable) {
      const body = errorBody(new ApiError('bad_data', `the request's headers are larger than ${maxHeaderBytes} bytes; send a long query with POST, form-encoded`, 431));
      socket.write(`HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: ${JSON_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    }
    socket.destroy(err);
  });
}

/** What the client is told instead of an answer that broke off before any of it was passed on. */
interface EarlyAnswer {
  readonly status: number;
  readonly headers: OutgoingHttpHeaders;
  readonly text: string;
}

/**
 * Relays a store's answer to the client, resolving once it is all written or either side is
 * gone. The client going away drops the store's answer. The store breaking off mid-answer is
 * reported to `onBreak`, told whether any of the answer was passed on: if not, the client gets
 * what onBreak returns (an error in the API's shape); if so, the client's connection is closed,
 * since a cut answer must not look complete. By hand rather than stream.pipeline, which makes and
 * aborts an AbortController (and its DOMException, stack trace included) for every answer:
 * measurable on the path every query takes.
 *
 * Buffered up to RELAY_BUFFER_BYTES, then streamed, as a reverse proxy such as nginx does by
 * default. VictoriaMetrics sends even a 100-byte answer chunked, in two reads (its gzipped body,
 * then the end of it); relayed chunk by chunk that is three writes to the client's socket, each a
 * system call and a wake-up of the client, which on loopback cost about as much as the rest of the
 * hop. An answer that ends within the buffer (nearly every dashboard query) is written once: status
 * line, headers (with its Content-Length) and body together. Past the buffer, the rest is written
 * as it arrives, the socket corked while one read's chunks are written so that they leave together.
 */
function relay(
  status: number,
  headers: OutgoingHttpHeaders,
  body: Readable,
  raw: ServerResponse,
  closing: () => boolean,
  onBreak: (err: Error, sent: boolean) => EarlyAnswer | undefined,
): Promise<void> {
  return new Promise((resolve) => {
    const writeHead = (code: number, fields: OutgoingHttpHeaders): void => {
      if (closing()) raw.shouldKeepAlive = false;
      raw.writeHead(code, fields);
    };
    let settled = false;
    let broken = false;
    /** The answer so far, until it is too long to hold (then undefined: streaming). */
    let held: Buffer[] | undefined = [];
    const settle = (): void => {
      settled = true;
      resolve();
    };
    const broke = (err: Error): void => {
      if (settled || broken) return;
      broken = true;
      const sent = held === undefined;
      held = undefined;
      const early = onBreak(err, sent);
      if (early === undefined || raw.destroyed) {
        raw.destroy();
        settle();
        return;
      }
      writeHead(early.status, { ...early.headers, 'content-length': Buffer.byteLength(early.text) });
      raw.end(early.text); // settles on finish
    };
    const closedEarly = (): Error => new Error('the store closed the connection before the end of its answer');
    // node:http says `aborted` (ECONNRESET) when the store's connection ends mid-answer.
    body.once('error', (err: NodeJS.ErrnoException) => broke(err.code === 'ECONNRESET' ? closedEarly() : err));
    body.once('close', () => {
      if (!body.readableEnded) broke(closedEarly());
    });
    raw.once('finish', settle);
    raw.once('close', () => {
      if (!raw.writableFinished) body.destroy();
      settle();
    });
    let heldBytes = 0;
    let corked = false;
    const uncork = (): void => {
      corked = false;
      raw.uncork();
    };
    const resume = (): void => {
      body.resume();
    };
    const write = (chunk: Buffer): void => {
      if (!corked) {
        corked = true;
        raw.cork();
        setImmediate(uncork);
      }
      if (!raw.write(chunk)) {
        body.pause();
        raw.once('drain', resume);
      }
    };
    body.on('data', (chunk: Buffer) => {
      if (broken) return;
      if (held === undefined) {
        write(chunk);
        return;
      }
      held.push(chunk);
      heldBytes += chunk.length;
      if (heldBytes <= RELAY_BUFFER_BYTES) return;
      // Too long to hold: stream it (chunked, unless the store said its length).
      writeHead(status, headers);
      const chunks = held;
      held = undefined;
      for (const piece of chunks) write(piece);
    });
    body.once('end', () => {
      if (held === undefined) {
        raw.end(); // with what is corked, in one write
        return;
      }
      const whole = held.length === 1 ? held[0]! : Buffer.concat(held, heldBytes);
      held = undefined;
      writeHead(status, { ...headers, 'content-length': whole.length });
      raw.end(whole);
    });
  });
}
