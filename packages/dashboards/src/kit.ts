/**
 * The vocabulary every shipped dashboard is written in, on top of Grafana's typed SDK: the two
 * provisioned datasources, the topology provider's template variables, selectors that follow
 * `$scrape`, and panels whose one query reads the raw short-term series or, for a range past the
 * short-term store's retention, the downsampled long-term ones.
 */
import type * as cog from '@grafana/grafana-foundation-sdk/cog';
import {
  DashboardBuilder,
  DashboardLinkBuilder,
  DashboardLinkType,
  QueryVariableBuilder,
  RowBuilder,
  VariableHide,
  VariableRefresh,
  VariableSort,
} from '@grafana/grafana-foundation-sdk/dashboard';
import type { Dashboard, DataSourceRef } from '@grafana/grafana-foundation-sdk/dashboard';
import {
  BigValueGraphMode,
  BigValueColorMode,
  LegendDisplayMode,
  LegendPlacement,
  VizLegendOptionsBuilder,
  ReduceDataOptionsBuilder,
} from '@grafana/grafana-foundation-sdk/common';
import { DataqueryBuilder, PromQueryFormat } from '@grafana/grafana-foundation-sdk/prometheus';
import { PanelBuilder as TimeseriesBuilder } from '@grafana/grafana-foundation-sdk/timeseries';
import { PanelBuilder as StatBuilder } from '@grafana/grafana-foundation-sdk/stat';
import { PanelBuilder as TableBuilder } from '@grafana/grafana-foundation-sdk/table';
import { PanelBuilder as BarGaugeBuilder } from '@grafana/grafana-foundation-sdk/bargauge';

/** The datasources stack/dashboard_server/provisioning/datasources/cachemon.yml provisions. */
export const QUERY_PROXY: DataSourceRef = { type: 'prometheus', uid: 'cachemon-query-proxy' };
export const TOPOLOGY: DataSourceRef = { type: 'simpod-json-datasource', uid: 'cachemon-topology' };

/** Grafana 11.2's dashboard schema: what the shipped server reads without migrating. */
export const SCHEMA_VERSION = 39;

// ---------------------------------------------------------------------------------------------
// Variables

/**
 * What "All" of a multi-value variable puts in, unescaped, instead of an alternation of every
 * value: a query's length must not grow with the fleet (the stores refuse queries past
 * `-search.maxQueryLen`). `.+`, not `.*`: every series a panel selects carries the variable's
 * label (ensemble, service_code, node, instance, zk_host), and "any value" must keep excluding a
 * series without it, as the alternation did; the topology provider reads it as any value too.
 */
export const ALL_VALUE = '.+';

/**
 * The longest query the dashboards send (characters of PromQL): what the stores must accept
 * (`-search.maxQueryLen`, 16 KiB by default) and the query proxy's `max_query_length` of each store
 * group. "All" keeps every query short; this is for many values selected one by one, the longest
 * being the hosts dashboard with every one of 1,000 machines chosen (docs/dashboards.md).
 */
export const MAX_QUERY_LENGTH = 65_536;

type VariableOptions = { label?: string; multi?: boolean; hide?: boolean; refreshOnTimeRange?: boolean };

/** A template variable answered by the topology provider (the JSON datasource's string form). */
export function topologyVariable(name: string, query: string, options: VariableOptions = {}): QueryVariableBuilder {
  const variable = new QueryVariableBuilder(name)
    .datasource(TOPOLOGY)
    .query({ query, format: 'string' })
    .refresh(options.refreshOnTimeRange ? VariableRefresh.OnTimeRangeChanged : VariableRefresh.OnDashboardLoad)
    .sort(VariableSort.Disabled)
    .multi(options.multi ?? false)
    .includeAll(options.multi ?? false);
  if (options.multi) variable.allValue(ALL_VALUE);
  if (options.label) variable.label(options.label);
  if (options.hide) variable.hide(VariableHide.HideVariable);
  return variable;
}

/** `scrape` and `resolution`: which store, and which downsampled series, suit the time range. Hidden. */
export const storeVariables = (): QueryVariableBuilder[] => [
  topologyVariable('scrape', 'scrape', { hide: true, refreshOnTimeRange: true }),
  topologyVariable('resolution', 'resolution', { hide: true, refreshOnTimeRange: true }),
];

export const ensembleVariable = (multi: boolean) =>
  topologyVariable('ensemble', 'ensembles', { label: 'Ensemble', multi });
export const serviceCodeVariable = (multi: boolean) =>
  topologyVariable('service_code', 'service_codes ensemble=$ensemble', { label: 'Service code', multi });
export const nodeVariable = (multi: boolean) =>
  topologyVariable('node', 'nodes ensemble=$ensemble service_code=$service_code', { label: 'Cache node', multi });

// ---------------------------------------------------------------------------------------------
// Selectors and queries

/** Label matchers of a raw short-term selector: `scrape="$scrape"` plus the given ones. */
export const raw = (...matchers: string[]) => `{${['scrape="$scrape"', ...matchers].join(', ')}}`;
/** Label matchers of a downsampled long-term selector: `scrape="$scrape"`, `resolution="$resolution"` plus the given ones. */
export const long = (...matchers: string[]) =>
  `{${['scrape="$scrape"', 'resolution="$resolution"', ...matchers].join(', ')}}`;

export const CACHE = ['ensemble=~"$ensemble"', 'service_code=~"$service_code"'];
export const RATE = '[$__rate_interval]';

/**
 * One query for both stores: the raw expression, `or` its downsampled counterpart. Both halves
 * carry `scrape="$scrape"`, so the query proxy sends the whole query to the one store that holds
 * the range, where exactly one half has series.
 */
export const either = (rawExpr: string, longExpr: string) => `(${rawExpr})\nor\n(${longExpr})`;

type Level = 'node' | 'service_code';

/** A gauge: raw, or its `level`'s downsampled `agg` series (e.g. `node:arcus_bytes:avg`). */
export const gauge = (metric: string, agg: string, matchers: readonly string[], level: Level = 'node') =>
  either(`${metric}${raw(...matchers)}`, `${level}:${metric}:${agg}${long(...matchers)}`);

/** A counter's rate (`<base>_total`), summed by `by` when given, or its `level`'s downsampled rate. */
export function rate(base: string, matchers: readonly string[], by?: string, level: Level = 'node'): string {
  const sum = (expr: string) => (by === undefined ? expr : `sum by (${by}) (${expr})`);
  return either(sum(`rate(${base}_total${raw(...matchers)}${RATE})`), sum(`${level}:${base}:rate${long(...matchers)}`));
}

/**
 * The allocator's own view of memory shortage (SM:space_shortage_level, 0 to 100), per node: the
 * highest of the range, so a short shortage is not averaged away. Used over limit says little on
 * a cache, which is full by design; this says whether stores have to evict to find room.
 */
export const memoryShortage = (matchers: readonly string[]) => gauge('arcus_sm_space_shortage_level', 'max', matchers);

/**
 * Hits over hits plus misses, summed by `by`: from the raw counters, or from the `level`'s
 * downsampled rates (`node:` or `service_code:`). The misses are selected by store only: `+`
 * pairs each chosen hits series with its misses twin (same labels) and drops the others, so the
 * chosen values are written twice per half, not three times (a long selection stays shorter).
 */
export function hitRatio(by: string, matchers: readonly string[], level: Level): string {
  const ratio = (hits: string, misses: string) => `sum by (${by}) (${hits}) / sum by (${by}) (${hits} + ${misses})`;
  const rawRate = (counter: string, m: readonly string[]) => `rate(${counter}${raw(...m)}${RATE})`;
  const longRate = (series: string, m: readonly string[]) => `${level}:${series}:rate${long(...m)}`;
  return either(
    ratio(rawRate('arcus_command_hits_total', matchers), rawRate('arcus_command_misses_total', [])),
    ratio(longRate('arcus_command_hits', matchers), longRate('arcus_command_misses', [])),
  );
}

/**
 * Memory available over memory total per host exporter `instance`. Only the numerator carries
 * the matchers: `/` keeps the instances found on both sides.
 */
export const memoryAvailable = (matchers: readonly string[]) =>
  either(
    `node_memory_MemAvailable_bytes${raw(...matchers)} / node_memory_MemTotal_bytes${raw()}`,
    `instance:node_memory_available:ratio${long(...matchers)}`,
  );

/** Every query of a panel. */
export interface PanelQuery {
  /** Default: A, B, ... in the order of the panel's queries. */
  readonly refId?: string;
  readonly expr: string;
  readonly legend?: string;
  /** Instant (tables, stats, bar gauges) or range (time series). */
  readonly instant?: boolean;
  readonly table?: boolean;
}

/** A PromQL query with its legend. */
export const series = (expr: string, legend?: string): PanelQuery =>
  legend === undefined ? { expr } : { expr, legend };

function promQuery(q: PanelQuery, index = 0): DataqueryBuilder {
  const refId = q.refId ?? String.fromCharCode(65 + index);
  const query = new DataqueryBuilder().datasource(QUERY_PROXY).refId(refId).expr(q.expr);
  if (q.legend !== undefined) query.legendFormat(q.legend);
  if (q.instant) query.instant();
  else query.range();
  if (q.table) query.format(PromQueryFormat.Table);
  return query;
}

/** A JSON-datasource target: a topology provider query (string form). */
class TopologyTarget implements cog.Builder<cog.Dataquery> {
  constructor(
    private readonly refId: string,
    private readonly target: string,
  ) {}
  build(): cog.Dataquery {
    // The JSON datasource's target; the SDK has no type for it, and JSON has no methods.
    return {
      refId: this.refId,
      datasource: TOPOLOGY,
      target: this.target,
      editorMode: 'code',
      payload: '',
    } as unknown as cog.Dataquery;
  }
}

type Size = { w: number; h?: number; unit?: string; description?: string };

/** What every panel builder of the SDK has. */
interface PanelBase<T> {
  title(title: string): T;
  datasource(datasource: DataSourceRef): T;
  span(w: number): T;
  height(h: number): T;
  unit(unit: string): T;
  description(description: string): T;
}

/** Title, datasource, place and the optional unit and description: what every panel sets. */
function placed<T extends PanelBase<T>>(
  panel: T,
  title: string,
  datasource: DataSourceRef,
  size: Size,
  height: number,
): T {
  panel
    .title(title)
    .datasource(datasource)
    .span(size.w)
    .height(size.h ?? height);
  if (size.unit) panel.unit(size.unit);
  if (size.description) panel.description(size.description);
  return panel;
}

const lastValue = () => new ReduceDataOptionsBuilder().calcs(['lastNotNull']).values(false);

export function timeseries(title: string, queries: readonly PanelQuery[], size: Size): TimeseriesBuilder {
  const panel = placed(new TimeseriesBuilder(), title, QUERY_PROXY, size, 8)
    .fillOpacity(10)
    .lineWidth(1)
    .legend(
      new VizLegendOptionsBuilder()
        .displayMode(LegendDisplayMode.Table)
        .placement(LegendPlacement.Bottom)
        .showLegend(true)
        .calcs(['mean', 'max', 'lastNotNull']),
    );
  queries.forEach((q, i) => panel.withTarget(promQuery(q, i)));
  return panel;
}

export function stat(title: string, query: PanelQuery, size: Size): StatBuilder {
  return placed(new StatBuilder(), title, QUERY_PROXY, size, 4)
    .graphMode(BigValueGraphMode.Area)
    .colorMode(BigValueColorMode.Value)
    .reduceOptions(lastValue())
    .withTarget(promQuery({ ...query, instant: true }));
}

export function barGauge(title: string, query: PanelQuery, size: Size): BarGaugeBuilder {
  return placed(new BarGaugeBuilder(), title, QUERY_PROXY, size, 8)
    .reduceOptions(lastValue())
    .withTarget(promQuery({ ...query, instant: true }));
}

/** A table of an instant PromQL query. */
export function promTable(title: string, query: PanelQuery, size: Size): TableBuilder {
  return placed(new TableBuilder(), title, QUERY_PROXY, size, 8)
    .withTarget(promQuery({ ...query, instant: true, table: true }))
    .withTransformation({ id: 'organize', options: { excludeByName: { Time: true, __name__: true, scrape: true } } });
}

/** A table answered by the topology provider (e.g. `overview ensemble=$ensemble`). */
export function topologyTable(title: string, target: string, size: Size): TableBuilder {
  return placed(new TableBuilder(), title, TOPOLOGY, size, 8).withTarget(new TopologyTarget('A', target));
}

export const row = (title: string) => new RowBuilder(title);

// ---------------------------------------------------------------------------------------------
// Dashboards

export interface DashboardSpec {
  /** File name under stack/dashboard_server/dashboards (without .json) and the uid suffix. */
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly variables: readonly QueryVariableBuilder[];
  /** Panels and rows in display order. */
  readonly content: ReadonlyArray<cog.Builder<unknown>>;
  readonly time?: string;
}

/** Links every shipped dashboard carries: the others, by tag, keeping time range and variables. */
const LINKS = new DashboardLinkBuilder('cachemon')
  .type(DashboardLinkType.Dashboards)
  .tags(['cachemon'])
  .asDropdown(true)
  .keepTime(true)
  .includeVars(true);

/** The dashboard JSON the server loads: built by the SDK, numbered, on Grafana 11.2's schema. */
export function buildDashboard(spec: DashboardSpec): Dashboard {
  const builder = new DashboardBuilder(spec.title)
    .uid(`cachemon-${spec.name}`)
    .description(spec.description)
    .tags(['cachemon'])
    .editable()
    .tooltip(1)
    .refresh('30s')
    .time({ from: spec.time ?? 'now-6h', to: 'now' })
    .timezone('browser')
    .link(LINKS);
  for (const variable of spec.variables) builder.withVariable(variable);
  for (const item of spec.content) {
    if (item instanceof RowBuilder) builder.withRow(item);
    else builder.withPanel(item as cog.Builder<never>);
  }
  const dashboard = builder.build();
  dashboard.schemaVersion = SCHEMA_VERSION;
  let id = 1;
  for (const panel of dashboard.panels ?? []) (panel as { id?: number }).id = id++;
  return dashboard;
}
