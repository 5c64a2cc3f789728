/** The query API, routed by label filter; answers carry `X-Cachemon-Route` and `Server-Timing` per group. */
import { parseGoDuration } from '@cachemon/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from '@cachemon/core';
import { ApiError } from '../api-answers.js';
import type { apiErrorHandler, Endpoint } from '../api-answers.js';
import { mergesReplicas } from '../config.js';
import type { QueryProxyConfig, ServerGroup } from '../config.js';
import type { AnswerMerge, Forwarder } from '../forward.js';
import {
  mergeMetadata,
  mergeQueryData,
  mergeReplicaMetadata,
  mergeReplicaQueryData,
  mergeReplicaSeries,
  mergeReplicaStrings,
  mergeSeriesData,
  mergeStringLists,
  sortByValue,
} from '../merge.js';
import type { GroupAnswer, Merged, ReplicaAnswer, ReplicasMerged } from '../merge.js';
import type { ParsePool } from '../parse-pool.js';
import {
  combiningProblem,
  matchesForGroup,
  nestingError,
  planMatches,
  planQuery,
  PromQLParseError,
  queryForGroup,
} from '../planner.js';
import type { Plan, RouteDecision } from '../planner.js';
import type { QueryGate } from '../query-gate.js';
import { rawBoundFor, rawProblem } from '../raw-bound.js';
import type { ProxyMetrics } from '../self-metrics.js';
import type { UpstreamRequest } from '../upstream.js';

/** Plans kept for queries seen again (dashboards repeat theirs every refresh). */
const PLAN_CACHE_SIZE = 2048;
/** The Prometheus version the API is compatible with, for the dashboard server's feature checks. */
const PROMETHEUS_COMPATIBLE_VERSION = '2.24.0';

interface ApiRoutesOptions {
  readonly config: () => QueryProxyConfig;
  readonly forwarder: Forwarder;
  readonly metrics: ProxyMetrics;
  readonly maxQueryLength: number;
  readonly parser: ParsePool;
  readonly gate: QueryGate;
  /** The proxy's version, for /api/v1/status/buildinfo. */
  readonly version: string;
  readonly errorHandler: ReturnType<typeof apiErrorHandler>;
}

/**
 * The request's parameters as the stores read them (Go's Request.Form): a form-encoded body's
 * first, then the query string's, so where both set one (`query`) the body's is the one used.
 */
function requestParams(request: FastifyRequest): { search: string; body: string | undefined; params: URLSearchParams } {
  const at = request.url.indexOf('?');
  const search = at === -1 ? '' : request.url.slice(at + 1);
  const body = typeof request.body === 'string' ? request.body : undefined;
  if (!body) return { search, body, params: new URLSearchParams(search) };
  const params = new URLSearchParams(body);
  if (search !== '') for (const [k, v] of new URLSearchParams(search)) params.append(k, v);
  return { search, body, params };
}

/** What a query answers when no group has anything for it, in the shape its result would have. */
function emptyResult(endpoint: 'query' | 'query_range', parsed: Plan['parsed']) {
  const resultType = endpoint === 'query_range' ? 'matrix' : parsed.instantResultType;
  if (resultType === 'scalar') return { resultType, result: [Date.now() / 1000, 'NaN'] };
  if (resultType === 'string') return { resultType, result: [Date.now() / 1000, ''] };
  return { resultType, result: [] };
}

/**
 * The one group asked, when one store's answer can be relayed as it is: no labels of its own to
 * add, and one target or `replicas: any` (else its replicas' answers are merged).
 */
function relayable(groups: readonly ServerGroup[]): ServerGroup | undefined {
  const [only, ...more] = groups;
  return only && more.length === 0 && Object.keys(only.labels).length === 0 && !mergesReplicas(only) ? only : undefined;
}

/** A query_range `step` (float seconds or a duration, as Prometheus reads it) in milliseconds, if it is one. */
function stepMs(step: string | null): number | undefined {
  if (step === null || step.trim() === '') return undefined;
  const seconds = Number(step);
  if (Number.isFinite(seconds)) return seconds * 1000;
  try {
    return parseGoDuration(step);
  } catch {
    return undefined; // the store refuses it and says why
  }
}

/**
 * The window within which two replicas' samples are one (merge.ts mergeSamples): the group's
 * anti_affinity. On /query_range, every sample of either replica lies on the request's step grid,
 * so samples at different steps are never one: at most half the step, so that a replica's missing
 * step is filled however short the step is.
 */
function replicaWindow(group: ServerGroup, endpoint: 'query' | 'query_range', params: URLSearchParams): number {
  const step = endpoint === 'query_range' ? stepMs(params.get('step')) : undefined;
  return step === undefined || step <= 0 ? group.antiAffinityMs : Math.min(group.antiAffinityMs, step / 2);
}

/** The client's request as the single path forwards it: same method, parameters and body. */
function asIs(request: FastifyRequest, path: string, search: string, body: string | undefined): UpstreamRequest {
  const accept = request.headers['accept-encoding'];
  return {
    path,
    method: request.method === 'POST' ? 'POST' : 'GET',
    search,
    ...(body !== undefined ? { body } : {}),
    ...(accept ? { acceptEncoding: accept } : {}),
  };
}

const labelName = (request: FastifyRequest) => (request.params as { name: string }).name;
/** Prometheus' label names (model.LabelNameRE). */
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Installs /api/v1/*: GET and POST (form-encoded) alike. */
/** Returns clearPlans: forgets the plans made for the config before (after a reload). */
export function installApiRoutes(app: FastifyInstance, options: ApiRoutesOptions): { clearPlans(): void } {
  const { config, forwarder, metrics, maxQueryLength, parser, gate } = options;
  const plans = new Map<string, Plan>();

  const plan = async (query: string): Promise<Plan> => {
    const cached = plans.get(query);
    if (cached !== undefined) return cached;
    const groups = config().groups;
    const made = planQuery(await parser.parse(query), groups);
    // A reload meanwhile cleared the plans: this one, made for the groups before, is not kept.
    if (config().groups !== groups) return made;
    if (plans.size >= PLAN_CACHE_SIZE) plans.delete(plans.keys().next().value!);
    plans.set(query, made);
    return made;
  };

  /** A query too long for the proxy or for every group is refused before any work is spent on it. */
  const tooLong = (query: string, groups: readonly ServerGroup[]): ApiError | undefined => {
    const said = `invalid parameter "query": the query is ${query.length} characters long`;
    if (query.length > maxQueryLength)
      return new ApiError('bad_data', `${said}; the proxy accepts at most ${maxQueryLength} (--query.max-length)`);
    const longest = Math.max(...groups.map((g) => g.maxQueryLength));
    if (query.length > longest) {
      return new ApiError('bad_data', `${said}; the server groups accept at most ${longest} (max_query_length)`);
    }
    return undefined;
  };
  /** After planning: the query is longer than a group it goes to accepts, which would refuse it. */
  const tooLongFor = (query: string, groups: readonly ServerGroup[]): ApiError | undefined => {
    const short = groups.find((g) => query.length > g.maxQueryLength);
    return short === undefined
      ? undefined
      : new ApiError(
          'bad_data',
          `invalid parameter "query": the query is ${query.length} characters long; ${short.name} accepts at most ${short.maxQueryLength} (max_query_length)`,
        );
  };

  /**
   * Routes a request: a bad query or parameter is a 400 (`param` names it), counted as `invalid`;
   * a decision is counted, said in X-Cachemon-Route, and the answer timed when it is complete.
   */
  const routed = async <T extends { decision: RouteDecision }>(
    reply: FastifyReply,
    endpoint: Endpoint,
    param: string,
    decide: () => T | Promise<T>,
  ): Promise<T> => {
    const started = performance.now();
    let result: T;
    try {
      result = await decide();
    } catch (err) {
      metrics.requests.inc({ endpoint, decision: 'invalid' });
      if (err instanceof PromQLParseError)
        throw new ApiError('bad_data', `invalid parameter "${param}": ${err.message}`);
      throw err;
    }
    metrics.requests.inc({ endpoint, decision: result.decision });
    reply.header('X-Cachemon-Route', result.decision);
    reply.raw.once('finish', () => metrics.requestDuration.observe({ endpoint }, (performance.now() - started) / 1000));
    return result;
  };

  const queryHandler = (endpoint: 'query' | 'query_range') => async (request: FastifyRequest, reply: FastifyReply) => {
    // A chunked body, whose size was not declared: judged once read (within bodyLimit).
    const chunked =
      typeof request.body === 'string'
        ? rawProblem(request.url, Buffer.byteLength(request.body), rawBoundFor(maxQueryLength, config().groups))
        : undefined;
    if (chunked !== undefined) {
      metrics.requests.inc({ endpoint, decision: 'invalid' });
      throw new ApiError('bad_data', chunked);
    }
    const { search, body, params } = requestParams(request);
    const planned = await routed(reply, endpoint, 'query', async () => {
      const query = params.get('query');
      if (query === null) throw new ApiError('bad_data', 'invalid parameter "query": the parameter is missing');
      const groups = config().groups;
      const refused = tooLong(query, groups) ?? nestingError(query);
      if (refused) throw refused;
      await gate.enter(reply.raw, Math.max(...groups.map((g) => g.timeoutMs)));
      const made = await plan(query);
      const short = tooLongFor(query, made.groups);
      if (short) throw short;
      return made;
    });
    const empty = emptyResult(endpoint, planned.parsed);
    if (planned.decision === 'none') return forwarder.success(reply, endpoint, empty, []);
    if (planned.decision === 'spanning') return forwarder.success(reply, endpoint, empty, [planned.reason!]);
    const path = `/api/v1/${endpoint}`;
    const only = relayable(planned.groups);
    if (only) return forwarder.forward(endpoint, only, asIs(request, path, search, body), reply, empty);
    const warnings = [planned.warning, combiningProblem(planned.parsed, planned.groups)].filter((w) => w !== undefined);
    // Each group (each replica) sorted its own series: the merged list is sorted again, as one store would have.
    const mergedMany = planned.groups.length > 1 || planned.groups.some(mergesReplicas);
    const sortedBy = endpoint === 'query' && mergedMany ? planned.parsed.sortedBy : undefined;
    const requestFor = (group: ServerGroup): UpstreamRequest => {
      const form = new URLSearchParams(params);
      form.set('query', queryForGroup(planned.parsed, group));
      return { path, method: 'POST', search: '', body: form.toString() };
    };
    return forwarder.gather(
      endpoint,
      planned.groups,
      requestFor,
      {
        replicas: (answers, group) => mergeReplicaQueryData(answers, replicaWindow(group, endpoint, params)),
        groups: (answers) => {
          const merged = mergeQueryData(answers);
          const data = sortedBy === undefined ? merged.data : sortByValue(merged.data, sortedBy === 'value descending');
          return { data, warnings: [...merged.warnings, ...warnings] };
        },
      },
      reply,
    );
  };

  /** /series, /labels, /label/<name>/values, /metadata: routed by match[], answers united. */
  const listHandler =
    <T>(
      endpoint: Exclude<Endpoint, 'query' | 'query_range'>,
      merge: (answers: readonly GroupAnswer[], request: FastifyRequest) => Merged<T>,
      mergeReplicas: (answers: readonly ReplicaAnswer[]) => ReplicasMerged,
      empty: unknown,
    ) =>
    async (request: FastifyRequest, reply: FastifyReply) => {
      const { search, body, params } = requestParams(request);
      const route = await routed(reply, endpoint, 'match[]', () => {
        // As Prometheus: the store would answer a path it does not serve in plain text.
        if (endpoint === 'label_values' && !LABEL_NAME.test(labelName(request)))
          throw new ApiError('bad_data', `invalid label name: ${JSON.stringify(labelName(request))}`);
        const matches = endpoint === 'metadata' ? [] : params.getAll('match[]');
        if (endpoint === 'series' && matches.length === 0)
          throw new ApiError('bad_data', 'no match[] parameter provided');
        return planMatches(matches, config().groups);
      });
      if (route.groups.length === 0) return forwarder.success(reply, endpoint, empty, []);
      const upstreamPath =
        endpoint === 'label_values'
          ? `/api/v1/label/${encodeURIComponent(labelName(request))}/values`
          : `/api/v1/${endpoint}`;
      const only = relayable(route.groups);
      if (only) return forwarder.forward(endpoint, only, asIs(request, upstreamPath, search, body), reply, empty);
      // Each group gets the match[] it can answer, written for it (its own labels' matchers out).
      const requestFor = (group: ServerGroup): UpstreamRequest => {
        const form = new URLSearchParams(params);
        if (route.matches.length > 0) {
          form.delete('match[]');
          for (const match of matchesForGroup(route, group)) form.append('match[]', match);
        }
        return { path: upstreamPath, method: 'POST', search: '', body: form.toString() };
      };
      const merging: AnswerMerge<T> = { replicas: mergeReplicas, groups: (answers) => merge(answers, request) };
      return forwarder.gather(endpoint, route.groups, requestFor, merging, reply);
    };

  const { errorHandler } = options;
  const api = (path: string, handler: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>) => {
    app.route({ method: ['GET', 'POST'], url: path, handler, errorHandler });
  };
  api('/api/v1/query', queryHandler('query'));
  api('/api/v1/query_range', queryHandler('query_range'));
  api('/api/v1/series', listHandler('series', mergeSeriesData, mergeReplicaSeries, []));
  api(
    '/api/v1/labels',
    listHandler('labels', (a) => mergeStringLists(a, (g) => Object.keys(g.labels)), mergeReplicaStrings, []),
  );
  // A group's own labels are not in its store: their value is the group's.
  const ownValue = (group: ServerGroup, name: string) => (group.labels[name] === undefined ? [] : [group.labels[name]]);
  api(
    '/api/v1/label/:name/values',
    listHandler(
      'label_values',
      (a, request) => mergeStringLists(a, (g) => ownValue(g, labelName(request))),
      mergeReplicaStrings,
      [],
    ),
  );
  api('/api/v1/metadata', listHandler('metadata', mergeMetadata, mergeReplicaMetadata, {}));
  const buildInfo = { version: PROMETHEUS_COMPATIBLE_VERSION, revision: `cachemon query proxy ${options.version}` };
  const unknownBuild = { branch: '', buildUser: '', buildDate: '', goVersion: '' };
  api('/api/v1/status/buildinfo', async (_request, reply) =>
    forwarder.success(reply, 'metadata', { ...buildInfo, ...unknownBuild }, []),
  );
  api('/api/v1/query_exemplars', async (_request, reply) => forwarder.success(reply, 'query', [], []));
  app.route({
    method: ['GET', 'POST'],
    url: '/api/v1/*',
    errorHandler,
    handler: async (request) => {
      throw new ApiError('bad_data', `the query proxy does not serve ${request.url.split('?')[0]}`, 404);
    },
  });

  return { clearPlans: () => plans.clear() };
}
