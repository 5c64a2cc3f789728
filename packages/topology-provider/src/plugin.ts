/**
 * The JSON datasource plugin's protocol (simpod-json-datasource 0.6.5): request body and fleet view
 * to answer body; server.ts puts them on routes.
 *   POST /variable                {payload, range}          -> [{__text, __value}]
 *   POST /query                   {range, targets, adhocFilters | filters}
 *                                                           -> [table | time series], each with refId
 *   POST /metrics                 {metric?, payload?}       -> [{value, label, payloads}]
 *   POST /metric-payload-options  {metric, payload, name}   -> [{value, label}]
 *   POST /tag-keys                {...}                     -> [{type, text}]
 *   POST /tag-values              {key, ...}                -> [{text}]
 */
import { CachemonError, Errors } from '@cachemon/core';
import type { QueryContext, Series, Table } from './answers.js';
import { confirmedAt, selectEnsembles, seriesAnswer, tableAnswer, variableValues } from './answers.js';
import type { NodeCountHistory } from './history.js';
import {
  FILTER_KEYS,
  QUERY_ARGUMENTS,
  SERIES_QUERIES,
  TABLE_QUERIES,
  VARIABLE_QUERIES,
  AD_HOC_OPERATORS,
  describeFilter,
  parseJsonQuery,
  parseQuery,
  parseStringQuery,
  patternMatcher,
  textFilterMatcher,
  withAdHocFilters,
} from './query.js';
import type { AdHocFilter, QueryName, TopologyQuery } from './query.js';
import type { EnsembleView, FleetView } from './view.js';

export interface ProtocolContext {
  readonly now: number;
  readonly rawRetentionMs: number;
  readonly hostExporterPort: number;
  readonly history?: NodeCountHistory;
}

function badRequest(message: string): CachemonError {
  return new CachemonError(Errors.BAD_REQUEST, message);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function requireObject(body: unknown, what: string): Record<string, unknown> {
  if (!isObject(body)) throw badRequest(`${what}: the body must be a JSON object`);
  return body;
}

function parseTime(value: unknown, field: string): number {
  const ms = typeof value === 'number' ? value : typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms))
    throw badRequest(`${field}: ${JSON.stringify(value)} is not a time (ISO 8601 or milliseconds)`);
  return ms;
}

/** `range: {from, to}` as the dashboard server sends it (ISO strings); absent = now. */
export function parseRange(body: Record<string, unknown>): { from: number; to: number } | undefined {
  const range = body['range'];
  if (range === undefined || range === null) return undefined;
  if (!isObject(range)) throw badRequest('range: expected {"from": ..., "to": ...}');
  const from = parseTime(range['from'], 'range.from');
  const to = parseTime(range['to'], 'range.to');
  if (from > to) throw badRequest(`range: from (${String(range['from'])}) is after to (${String(range['to'])})`);
  return { from, to };
}

function queryContext(context: ProtocolContext, range: { from: number; to: number } | undefined): QueryContext {
  return {
    now: context.now,
    rawRetentionMs: context.rawRetentionMs,
    hostExporterPort: context.hostExporterPort,
    ...(range ? { range } : {}),
  };
}

/**
 * POST /variable: `{payload: {target: "<query>", variables?}, range}` from a string query,
 * `{payload: <raw JSON object>, range}` from a Raw JSON one. `payload.variables` (the dashboard's
 * variables, in the plugin's description of /variable) is not read: their values are already in
 * the query. A variable saved in the plugin's legacy form (a bare string, before `{query, format}`)
 * reaches the provider as `{target: ""}`: the legacy protocol's empty search, which lists what can
 * be queried, so it answers the query names.
 */
export function answerVariable(
  body: unknown,
  fleet: FleetView,
  context: ProtocolContext,
): Array<{ __text: string; __value: string }> {
  const request = requireObject(body, 'variable request');
  const payload = request['payload'];
  if (payload === undefined)
    throw badRequest('variable request without "payload" (expected {"payload": {"target": "<query>"}, "range": ...})');
  let query: unknown = payload;
  if (isObject(payload)) {
    const { variables: _variables, ...rest } = payload;
    query = rest;
    if (Object.keys(rest).length === 1 && typeof rest['target'] === 'string' && rest['target'].trim() === '') {
      return ALL_QUERIES.map((name) => ({ __text: name, __value: name }));
    }
  }
  return variableValues(fleet, parseQuery(query), queryContext(context, parseRange(request))).map((v) => ({
    __text: v.text,
    __value: v.value,
  }));
}

const ALL_QUERIES: readonly QueryName[] = [...VARIABLE_QUERIES, ...TABLE_QUERIES, ...SERIES_QUERIES];

interface TableFrame extends Table {
  readonly type: 'table';
  readonly refId: string;
  readonly meta?: FrameMeta;
}
interface SeriesFrame extends Series {
  readonly refId: string;
  readonly meta?: FrameMeta;
}
interface FrameMeta {
  readonly notices: ReadonlyArray<{ readonly severity: 'warning'; readonly text: string }>;
}

/** Notices the panel shows for ensembles whose topology is not current. */
function staleNotices(ensembles: readonly EnsembleView[], now: number): string[] {
  return ensembles
    .filter((e) => e.status !== 'current')
    .map((e) =>
      e.status === 'stale'
        ? `ensemble ${e.name}: ZooKeeper unreachable; showing its last topology, confirmed ${Math.max(0, Math.round((now - confirmedAt(e, now)) / 1000))} s ago`
        : `ensemble ${e.name}: ZooKeeper unreachable since start; no topology yet`,
    );
}

function frameMeta(notices: readonly string[]): { meta?: FrameMeta } {
  if (notices.length === 0) return {};
  return { meta: { notices: [...new Set(notices)].map((text) => ({ severity: 'warning' as const, text })) } };
}

/** An ad-hoc filter on a number column, or why it cannot be one. */
function numberFilterTest(filter: AdHocFilter): ((value: number) => boolean) | string {
  const values = filter.values ?? (filter.value === undefined ? [] : [filter.value]);
  const numbers = values.map((v) => (v.trim() === '' ? Number.NaN : Number(v)));
  const notNumber = values.find((_, i) => !Number.isFinite(numbers[i]));
  const needNumbers = () =>
    notNumber !== undefined || numbers.length === 0 ? `"${notNumber ?? ''}" is not a number` : undefined;
  switch (filter.operator) {
    case '=':
    case '=|':
      return needNumbers() ?? ((v) => numbers.includes(v));
    case '!=':
    case '!=|':
      return needNumbers() ?? ((v) => !numbers.includes(v));
    case '<':
      return needNumbers() ?? ((v) => v < numbers[0]!);
    case '>':
      return needNumbers() ?? ((v) => v > numbers[0]!);
    case '=~':
    case '!~': {
      let matcher;
      try {
        matcher = patternMatcher(filter.key, values[0] ?? '');
      } catch (err) {
        return err instanceof CachemonError ? err.message : String(err);
      }
      const want = filter.operator === '=~';
      return (v) => matcher.test(String(v)) === want;
    }
    default:
      return `operator "${filter.operator}" is not one of ${AD_HOC_OPERATORS.join(', ')}`;
  }
}

/**
 * Ad-hoc filters on the answer's columns (keys that are not arguments of the query): `<` and `>`
 * on number columns, every operator but those on text. A key the table has no column for means
 * nothing to the panel and is passed over.
 */
function filterRows(table: Table, filters: readonly AdHocFilter[]): { table: Table; notices: string[] } {
  const notices: string[] = [];
  const tests: Array<(row: ReadonlyArray<string | number>) => boolean> = [];
  for (const filter of filters) {
    const index = table.columns.findIndex((c) => c.text === filter.key);
    if (index < 0) continue;
    if (table.columns[index]!.type === 'string') {
      const matcher = textFilterMatcher(filter);
      if (typeof matcher === 'string') notices.push(`ad-hoc filter "${describeFilter(filter)}" ignored: ${matcher}`);
      else tests.push((row) => matcher.test(String(row[index])));
    } else {
      const test = numberFilterTest(filter);
      if (typeof test === 'string') notices.push(`ad-hoc filter "${describeFilter(filter)}" ignored: ${test}`);
      else tests.push((row) => test(Number(row[index])));
    }
  }
  if (tests.length === 0) return { table, notices };
  return { table: { ...table, rows: table.rows.filter((row) => tests.every((t) => t(row))) }, notices };
}

/** One /query target: a string (regex-formatted variables) plus an optional payload object of arguments. */
function targetQuery(target: Record<string, unknown>): TopologyQuery {
  const text = target['target'];
  if (typeof text !== 'string') throw badRequest('"target" must be a query string');
  const payload = target['payload'];
  if (payload === undefined || payload === '' || (isObject(payload) && Object.keys(payload).length === 0))
    return parseStringQuery(text);
  if (!isObject(payload)) throw badRequest('"payload" must be a JSON object of arguments');
  return parseJsonQuery({ ...payload, target: text }, target['editorMode'] === 'builder' ? 'patterns' : 'exact');
}

function parseAdHocFilters(request: Record<string, unknown>): AdHocFilter[] {
  // The plugin sends `adhocFilters`; newer dashboard servers add the same filters as `filters`.
  const given = request['filters'];
  const filters = Array.isArray(given) && given.length > 0 ? given : (request['adhocFilters'] ?? given);
  if (filters === undefined || filters === null) return [];
  if (!Array.isArray(filters)) throw badRequest('filters: expected an array of {key, operator, value}');
  return filters.map((f, i) => {
    if (!isObject(f) || typeof f['key'] !== 'string' || typeof f['operator'] !== 'string') {
      throw badRequest(`filters[${i}]: expected {key, operator, value}`);
    }
    const value = f['value'];
    if (value !== undefined && typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      throw badRequest(`filters[${i}]: "value" must be a string`);
    }
    const values = Array.isArray(f['values']) ? f['values'].map(String) : undefined;
    return {
      key: f['key'],
      operator: f['operator'],
      ...(value === undefined ? {} : { value: String(value) }),
      ...(values ? { values } : {}),
    };
  });
}

/** POST /query: every visible target answered as a table, `node_counts` as time series. */
export function answerQuery(
  body: unknown,
  fleet: FleetView,
  context: ProtocolContext,
): Array<TableFrame | SeriesFrame> {
  const request = requireObject(body, 'query request');
  const targets = request['targets'];
  if (!Array.isArray(targets)) throw badRequest('query request without a "targets" array');
  const ctx = queryContext(context, parseRange(request));
  const adHoc = parseAdHocFilters(request);
  const out: Array<TableFrame | SeriesFrame> = [];
  for (const [index, raw] of targets.entries()) {
    if (!isObject(raw)) throw badRequest(`targets[${index}]: expected an object`);
    if (raw['hide'] === true || raw['target'] === undefined) continue;
    const refId = typeof raw['refId'] === 'string' ? raw['refId'] : String.fromCharCode(65 + (index % 26));
    try {
      const { query, rest, notices } = withAdHocFilters(targetQuery(raw), adHoc);
      const stale = staleNotices(selectEnsembles(fleet, query.filters.ensemble), context.now);
      if ((SERIES_QUERIES as readonly string[]).includes(query.name)) {
        const meta = frameMeta([...stale, ...notices]);
        for (const series of seriesAnswer(fleet, query, ctx, context.history)) out.push({ ...series, refId, ...meta });
      } else {
        const filtered = filterRows(tableAnswer(fleet, query, ctx, context.history), rest);
        out.push({
          type: 'table',
          refId,
          ...filtered.table,
          ...frameMeta([...stale, ...notices, ...filtered.notices]),
        });
      }
    } catch (err) {
      // Say which of the panel's queries is wrong, once.
      if (err instanceof CachemonError && err.status === 400)
        throw new CachemonError(Errors.BAD_REQUEST, `target ${refId}: ${err.message}`);
      throw err;
    }
  }
  return out;
}

const ARGUMENT_LABELS: Readonly<Record<string, string>> = {
  ensemble: 'Ensemble',
  service_code: 'Service code',
  node: 'Node',
  hostname: 'Hostname',
  group: 'Group',
  role: 'Role',
  state: 'State',
  port: 'Port',
};

const QUERY_LABELS: Readonly<Record<QueryName, string>> = {
  ensembles: 'Ensembles',
  service_codes: 'Service codes',
  nodes: 'Cache nodes (ip:port)',
  hostnames: 'Hostnames of cache nodes',
  host_instances: 'Host exporter instances of cache nodes',
  zk_servers: 'Coordination servers',
  groups: 'Replication groups',
  roles: 'Replication roles',
  scrape: 'Store for the time range (short or long)',
  resolution: 'Downsampled resolution for the time range (5m or 1h)',
  overview: 'Cluster overview (one row per node)',
  service_code_summary: 'Node counts per service code',
  ensemble_status: 'Ensembles and their topology status',
  hostname_problems: 'Hostnames that do not resolve as registered',
  node_counts: 'Live and down nodes per service code over time',
};

const STATE_OPTIONS = ['live', 'down'].map((state) => ({ label: state, value: state }));

/** POST /metrics: the queries the builder offers, each with its arguments. */
export function answerMetrics(): Array<{ value: string; label: string; payloads: unknown[] }> {
  return [...VARIABLE_QUERIES, ...TABLE_QUERIES, ...SERIES_QUERIES].map((name) => ({
    value: name,
    label: QUERY_LABELS[name],
    payloads: QUERY_ARGUMENTS[name].map((arg) =>
      arg === 'port'
        ? { name: arg, label: ARGUMENT_LABELS[arg], type: 'input', placeholder: 'host exporter port' }
        : arg === 'state'
          ? { name: arg, label: ARGUMENT_LABELS[arg], type: 'select', options: STATE_OPTIONS }
          : { name: arg, label: ARGUMENT_LABELS[arg] ?? arg, type: 'multi-select', reloadMetric: arg === 'ensemble' },
    ),
  }));
}

/** Which variable query lists the values of an argument. */
const OPTIONS_QUERY: Readonly<Record<string, QueryName>> = {
  ensemble: 'ensembles',
  service_code: 'service_codes',
  node: 'nodes',
  hostname: 'hostnames',
  group: 'groups',
  role: 'roles',
};

/** POST /metric-payload-options: the values one argument can take, narrowed by the other arguments chosen. */
export function answerPayloadOptions(
  body: unknown,
  fleet: FleetView,
  context: ProtocolContext,
): Array<{ label: string; value: string }> {
  const request = requireObject(body, 'metric payload options request');
  const metric = request['metric'];
  const name = request['name'];
  if (typeof name !== 'string') throw badRequest('metric payload options request without a "name"');
  if (name === 'state') return STATE_OPTIONS;
  const listing = OPTIONS_QUERY[name];
  if (listing === undefined) throw badRequest(`argument ${name} has no list of values`);
  if (typeof metric === 'string' && metric !== '') parseStringQuery(metric);
  const payload = isObject(request['payload']) ? request['payload'] : {};
  // Narrow by the other chosen arguments the listing query takes; the argument itself stays open.
  const allowed = QUERY_ARGUMENTS[listing];
  const narrowing = Object.fromEntries(
    Object.entries(payload).filter(
      ([k, v]) => k !== name && allowed.includes(k) && v !== '' && !(Array.isArray(v) && v.length === 0),
    ),
  );
  const query = parseJsonQuery({ ...narrowing, target: listing }, 'patterns');
  return variableValues(fleet, query, queryContext(context, undefined)).map((v) => ({ label: v.text, value: v.value }));
}

/** Number columns of the table queries an ad-hoc filter can narrow with `<` and `>`. */
const NUMBER_KEYS = ['nodes', 'live', 'down', 'groups', 'service_codes'] as const;

/** POST /tag-keys: the keys an ad-hoc filter can use. */
export function answerTagKeys(): Array<{ type: 'string' | 'number'; text: string }> {
  return [
    ...FILTER_KEYS.map((key) => ({ type: 'string' as const, text: key })),
    ...NUMBER_KEYS.map((key) => ({ type: 'number' as const, text: key })),
  ];
}

/** POST /tag-values: the values of one key across the fleet. */
export function answerTagValues(body: unknown, fleet: FleetView, context: ProtocolContext): Array<{ text: string }> {
  const request = requireObject(body, 'tag values request');
  const key = request['key'];
  if (typeof key !== 'string') throw badRequest('tag values request without a "key"');
  if (key === 'state') return [{ text: 'live' }, { text: 'down' }];
  if ((NUMBER_KEYS as readonly string[]).includes(key)) {
    // The values the tables that carry the column hold now.
    const found = new Set<number>();
    for (const name of ['service_code_summary', 'ensemble_status'] as const) {
      const table = tableAnswer(fleet, parseStringQuery(name), queryContext(context, undefined));
      const index = table.columns.findIndex((c) => c.text === key);
      if (index >= 0) for (const row of table.rows) found.add(Number(row[index]));
    }
    return [...found].sort((a, b) => a - b).map((n) => ({ text: String(n) }));
  }
  const listing = OPTIONS_QUERY[key];
  if (listing === undefined)
    throw badRequest(`unknown tag key "${key}"; known: ${[...FILTER_KEYS, ...NUMBER_KEYS].join(', ')}`);
  return variableValues(fleet, parseStringQuery(listing), queryContext(context, undefined)).map((v) => ({
    text: v.value,
  }));
}
