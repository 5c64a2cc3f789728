/** Answers from the fleet view: no I/O, no clock (the caller passes `now`), so every query is a table test. */
import type { CacheNode } from '@cachemon/arcus';
import { CachemonError, Errors } from '@cachemon/core';
import type { FilterKey, Matcher, TopologyQuery } from './query.js';
import type { EnsembleView, FleetView, TopologyStatus } from './view.js';
import type { NodeCountHistory } from './history.js';

export interface QueryContext {
  /** Date.now() of the request. */
  readonly now: number;
  /** The dashboard's time range, ms since the epoch, when the request carried one. */
  readonly range?: { readonly from: number; readonly to: number };
  readonly rawRetentionMs: number;
  /** Port of the host exporters (`host_instances`), unless the query gives `port`. */
  readonly hostExporterPort: number;
}

export interface VariableValue {
  readonly text: string;
  readonly value: string;
}

export type ColumnType = 'string' | 'number' | 'time';

export interface Table {
  readonly columns: ReadonlyArray<{ readonly text: string; readonly type: ColumnType }>;
  readonly rows: ReadonlyArray<ReadonlyArray<string | number>>;
}

export interface Series {
  readonly target: string;
  readonly datapoints: ReadonlyArray<readonly [number, number]>;
}

/** The `scrape` label value whose store holds the range: short while it starts inside rawRetention. */
export function scrapeFor(context: QueryContext): 'short' | 'long' {
  const from = context.range?.from ?? context.now;
  return from >= context.now - context.rawRetentionMs ? 'short' : 'long';
}

/** Ranges up to this long read the long-term store's 5m series; longer ones its 1h series. */
export const FINE_RESOLUTION_MAX_RANGE_MS = 30 * 24 * 3600 * 1000;

/**
 * The `resolution` label value of the downsampled series that suit the range: `5m` up to 30 days
 * (at most 8,640 samples per series), `1h` beyond (17,520 for two years). Without a range: `5m`.
 */
export function resolutionFor(context: QueryContext): '5m' | '1h' {
  const span = context.range === undefined ? 0 : context.range.to - context.range.from;
  return span <= FINE_RESOLUTION_MAX_RANGE_MS ? '5m' : '1h';
}

function unknownEnsemble(fleet: FleetView, names: readonly string[]): CachemonError {
  const known = fleet.ensembles.map((e) => e.name).join(', ') || 'none configured';
  return new CachemonError(
    Errors.BAD_REQUEST,
    `unknown ensemble ${names.map((n) => `"${n}"`).join(', ')} (known: ${known})`,
  );
}

/** The ensembles a query selects. An ensemble that is named and not configured is a bad request. */
export function selectEnsembles(fleet: FleetView, matcher: Matcher | undefined): readonly EnsembleView[] {
  if (matcher === undefined) return fleet.ensembles;
  if (matcher.literals !== undefined) {
    const unknown = [...matcher.literals].filter((name) => !fleet.byName.has(name));
    if (unknown.length > 0) throw unknownEnsemble(fleet, unknown);
    return fleet.ensembles.filter((e) => matcher.literals!.has(e.name));
  }
  const selected = fleet.ensembles.filter((e) => matcher.test(e.name));
  if (selected.length === 0 && fleet.ensembles.length > 0) throw unknownEnsemble(fleet, [matcher.source]);
  return selected;
}

function selectServiceCodes(ensemble: EnsembleView, matcher: Matcher | undefined): readonly string[] {
  if (matcher === undefined) return ensemble.serviceCodes;
  if (matcher.literals !== undefined && matcher.literals.size < ensemble.serviceCodes.length) {
    return [...matcher.literals].filter((svc) => ensemble.nodesByServiceCode.has(svc)).sort();
  }
  return ensemble.serviceCodes.filter((svc) => matcher.test(svc));
}

export function nodeState(node: CacheNode): 'live' | 'down' {
  return node.live ? 'live' : 'down';
}

/** Per-node filters other than ensemble and service code. */
const NODE_KEYS: ReadonlyArray<[FilterKey, (node: CacheNode) => string]> = [
  ['node', (n) => n.node],
  ['hostname', (n) => n.hostname],
  ['group', (n) => n.group ?? ''],
  ['role', (n) => n.role ?? ''],
  ['state', nodeState],
];

interface SelectedNode {
  readonly ensemble: EnsembleView;
  readonly node: CacheNode;
}

/** Every node a query selects, in (ensemble, service code, address) order. */
export function selectNodes(fleet: FleetView, query: TopologyQuery): SelectedNode[] {
  const tests: Array<[Matcher, (node: CacheNode) => string]> = [];
  for (const [key, read] of NODE_KEYS) {
    const matcher = query.filters[key];
    if (matcher !== undefined) tests.push([matcher, read]);
  }
  const out: SelectedNode[] = [];
  for (const ensemble of selectEnsembles(fleet, query.filters.ensemble)) {
    for (const svc of selectServiceCodes(ensemble, query.filters.service_code)) {
      for (const node of ensemble.nodesByServiceCode.get(svc) ?? []) {
        if (tests.every(([matcher, read]) => matcher.test(read(node)))) out.push({ ensemble, node });
      }
    }
  }
  return out;
}

function unique(values: Iterable<VariableValue>): VariableValue[] {
  const seen = new Set<string>();
  const out: VariableValue[] = [];
  for (const v of values) {
    if (seen.has(v.value)) continue;
    seen.add(v.value);
    out.push(v);
  }
  return out;
}

const same = (value: string): VariableValue => ({ text: value, value });

function marked(value: string, status: TopologyStatus): VariableValue {
  return status === 'current' ? same(value) : { text: `${value} (${status})`, value };
}

/** A template variable's values. */
export function variableValues(fleet: FleetView, query: TopologyQuery, context: QueryContext): VariableValue[] {
  switch (query.name) {
    case 'ensembles':
      return selectEnsembles(fleet, query.filters.ensemble).map((e) => marked(e.name, e.status));
    case 'service_codes': {
      const out: VariableValue[] = [];
      for (const ensemble of selectEnsembles(fleet, query.filters.ensemble)) {
        for (const svc of selectServiceCodes(ensemble, query.filters.service_code)) out.push(same(svc));
      }
      return unique(out);
    }
    case 'nodes':
      return unique(
        selectNodes(fleet, query).map(({ node }) =>
          node.live ? same(node.node) : { text: `${node.node} (down)`, value: node.node },
        ),
      );
    case 'hostnames':
      return unique(
        selectNodes(fleet, query).flatMap(({ node }) => (node.hostname === '' ? [] : [same(node.hostname)])),
      );
    case 'host_instances': {
      const port = query.port ?? context.hostExporterPort;
      return unique(
        selectNodes(fleet, query).flatMap(({ node }) =>
          node.hostname === '' ? [] : [same(`${node.hostname}:${port}`)],
        ),
      );
    }
    case 'zk_servers':
      return unique(
        selectEnsembles(fleet, query.filters.ensemble).flatMap((e) =>
          e.zkServers.map((s) =>
            s.name === undefined ? same(s.address) : { text: `${s.address} (${s.name})`, value: s.address },
          ),
        ),
      );
    case 'groups': {
      const groups = selectNodes(fleet, query).flatMap(({ node }) => (node.group === undefined ? [] : [node.group]));
      return unique([...new Set(groups)].sort().map(same));
    }
    case 'roles': {
      const roles = selectNodes(fleet, query).flatMap(({ node }) => (node.role === undefined ? [] : [node.role]));
      return [...new Set(roles)].sort().map(same);
    }
    case 'scrape':
      return [same(scrapeFor(context))];
    case 'resolution':
      return [same(resolutionFor(context))];
    default: {
      // A table query used as a variable: its first column.
      const table = tableAnswer(fleet, query, context);
      return unique(table.rows.map((row) => same(String(row[0]))));
    }
  }
}

/** When ZooKeeper last confirmed an ensemble's topology: now while it is current. */
export function confirmedAt(ensemble: EnsembleView, now: number): number {
  return ensemble.status === 'current' ? now : ensemble.confirmedAt;
}

const str = (text: string) => ({ text, type: 'string' as const });
const num = (text: string) => ({ text, type: 'number' as const });

/** A table answer (panel target of table format, or any query asked as a table). */
export function tableAnswer(
  fleet: FleetView,
  query: TopologyQuery,
  context: QueryContext,
  history?: NodeCountHistory,
): Table {
  switch (query.name) {
    case 'overview':
      return {
        columns: [
          str('ensemble'),
          str('service_code'),
          str('node'),
          str('hostname'),
          str('state'),
          str('group'),
          str('role'),
          str('topology'),
        ],
        rows: selectNodes(fleet, query).map(({ ensemble, node }) => [
          ensemble.name,
          node.serviceCode,
          node.node,
          node.hostname,
          nodeState(node),
          node.group ?? '',
          node.role ?? '',
          ensemble.status,
        ]),
      };
    case 'service_code_summary': {
      const rows: Array<Array<string | number>> = [];
      for (const ensemble of selectEnsembles(fleet, query.filters.ensemble)) {
        for (const svc of selectServiceCodes(ensemble, query.filters.service_code)) {
          const nodes = ensemble.nodesByServiceCode.get(svc) ?? [];
          const live = nodes.filter((n) => n.live).length;
          const groups = new Set(nodes.flatMap((n) => (n.group === undefined ? [] : [n.group]))).size;
          rows.push([ensemble.name, svc, nodes.length, live, nodes.length - live, groups, ensemble.status]);
        }
      }
      return {
        columns: [
          str('ensemble'),
          str('service_code'),
          num('nodes'),
          num('live'),
          num('down'),
          num('groups'),
          str('topology'),
        ],
        rows,
      };
    }
    case 'ensemble_status':
      return {
        columns: [
          str('ensemble'),
          str('topology'),
          str('zk_servers'),
          num('service_codes'),
          num('nodes'),
          num('live'),
          num('down'),
          { text: 'updated', type: 'time' },
          { text: 'confirmed', type: 'time' },
        ],
        rows: selectEnsembles(fleet, query.filters.ensemble).map((e) => [
          e.name,
          e.status,
          e.zkServers.map((s) => s.address).join(','),
          e.serviceCodes.length,
          e.nodeCount,
          e.liveCount,
          e.nodeCount - e.liveCount,
          e.updatedAt,
          confirmedAt(e, context.now),
        ]),
      };
    case 'hostname_problems': {
      const ensembles = new Set(selectEnsembles(fleet, query.filters.ensemble).map((e) => e.name));
      const hostname = query.filters.hostname;
      return {
        columns: [
          str('ensemble'),
          str('kind'),
          str('hostname'),
          str('address'),
          str('problem'),
          str('resolved'),
          str('error'),
        ],
        rows: fleet.hostnameProblems
          .filter((p) => ensembles.has(p.ensemble) && (hostname === undefined || hostname.test(p.hostname)))
          .map((p) => [p.ensemble, p.kind, p.hostname, p.address, p.problem, p.resolved.join(','), p.error ?? '']),
      };
    }
    case 'node_counts': {
      const series = seriesAnswer(fleet, query, context, history);
      return {
        columns: [str('series'), num('value')],
        rows: series.map((s) => [s.target, s.datapoints.at(-1)?.[0] ?? 0]),
      };
    }
    default: {
      // A variable query asked as a table: one column named after it.
      const values = variableValues(fleet, query, context);
      return { columns: [str(query.name)], rows: values.map((v) => [v.value]) };
    }
  }
}

/** Time series: `node_counts`, live and down nodes per service code over the range. */
export function seriesAnswer(
  fleet: FleetView,
  query: TopologyQuery,
  context: QueryContext,
  history?: NodeCountHistory,
): Series[] {
  if (query.name !== 'node_counts') {
    throw new CachemonError(
      Errors.BAD_REQUEST,
      `query ${query.name} answers as a table, not a time series; choose the table format`,
    );
  }
  const to = Math.min(context.range?.to ?? context.now, context.now);
  const from = Math.min(context.range?.from ?? to, to);
  const states = (['live', 'down'] as const).filter(
    (s) => query.filters.state === undefined || query.filters.state.test(s),
  );
  const out: Series[] = [];
  for (const ensemble of selectEnsembles(fleet, query.filters.ensemble)) {
    for (const svc of selectServiceCodes(ensemble, query.filters.service_code)) {
      const points = history?.points(ensemble.name, svc, from, to) ?? [];
      for (const state of states) {
        const index = state === 'live' ? 1 : 2;
        out.push({
          target: `${ensemble.name}/${svc} ${state}`,
          datapoints: points.map((p) => [p[index], p[0]] as const),
        });
      }
    }
  }
  return out;
}
