/**
 * The downsampling rules, as code: each aggregate is written once and rendered at every
 * resolution into stack/rule_evaluator/conf/rules/downsampling.yml (`npm run rules:generate`; a
 * test fails when the file is stale).
 *
 * The rule evaluator computes them on the short-term store and writes them to the long-term store,
 * labelled scrape="long" and resolution="<r>". A 2-year dashboard range reads the 1h series
 * (17,520 samples per series); shorter ones the 5m series. Names follow the recording-rule
 * convention level:metric:operation; the level is what the series is per.
 */
import { stringify } from 'yaml';

export interface Resolution {
  /** Label value and evaluation interval. */
  readonly name: string;
  /** The lookbehind window of rate() and *_over_time(). */
  readonly window: string;
}

export const RESOLUTIONS: readonly Resolution[] = [
  { name: '5m', window: '5m' },
  { name: '1h', window: '1h' },
];

interface Aggregate {
  /** The series name written, e.g. `service_code:arcus_commands:rate`. */
  readonly record: string;
  /** The expression, `$w` standing for the window. */
  readonly expr: string;
}

const SVC = 'ensemble, service_code';
const NODE = 'ensemble, service_code, node, hostname';
const ZK = 'ensemble, zk_host';

/** What the long-term store holds, per service code, per cache node, per host and per coordination server. */
export const AGGREGATES: readonly { readonly level: string; readonly aggregates: readonly Aggregate[] }[] = [
  {
    level: 'service code',
    aggregates: [
      { record: 'service_code:arcus_nodes:count', expr: `count by (${SVC}) (arcus_up)` },
      { record: 'service_code:arcus_nodes_up:avg', expr: `sum by (${SVC}) (avg_over_time(arcus_up[$w]))` },
      { record: 'service_code:arcus_commands:rate', expr: `sum by (${SVC}, command) (rate(arcus_commands_total[$w]))` },
      {
        record: 'service_code:arcus_command_hits:rate',
        expr: `sum by (${SVC}, command) (rate(arcus_command_hits_total[$w]))`,
      },
      {
        record: 'service_code:arcus_command_misses:rate',
        expr: `sum by (${SVC}, command) (rate(arcus_command_misses_total[$w]))`,
      },
      {
        record: 'service_code:arcus_items_evicted:rate',
        expr: `sum by (${SVC}) (rate(arcus_items_evicted_total[$w]))`,
      },
      { record: 'service_code:arcus_bytes:avg', expr: `sum by (${SVC}) (avg_over_time(arcus_bytes[$w]))` },
      { record: 'service_code:arcus_limit_bytes:avg', expr: `sum by (${SVC}) (avg_over_time(arcus_limit_bytes[$w]))` },
      { record: 'service_code:arcus_items:avg', expr: `sum by (${SVC}) (avg_over_time(arcus_items[$w]))` },
      { record: 'service_code:arcus_connections:avg', expr: `sum by (${SVC}) (avg_over_time(arcus_connections[$w]))` },
    ],
  },
  {
    level: 'cache node',
    aggregates: [
      { record: 'node:arcus_up:avg', expr: `avg by (${NODE}) (avg_over_time(arcus_up[$w]))` },
      { record: 'node:arcus_commands:rate', expr: `sum by (${NODE}, command) (rate(arcus_commands_total[$w]))` },
      {
        record: 'node:arcus_command_hits:rate',
        expr: `sum by (${NODE}, command) (rate(arcus_command_hits_total[$w]))`,
      },
      {
        record: 'node:arcus_command_misses:rate',
        expr: `sum by (${NODE}, command) (rate(arcus_command_misses_total[$w]))`,
      },
      { record: 'node:arcus_items_evicted:rate', expr: `sum by (${NODE}) (rate(arcus_items_evicted_total[$w]))` },
      { record: 'node:arcus_bytes:avg', expr: `avg by (${NODE}) (avg_over_time(arcus_bytes[$w]))` },
      { record: 'node:arcus_limit_bytes:avg', expr: `avg by (${NODE}) (avg_over_time(arcus_limit_bytes[$w]))` },
      { record: 'node:arcus_items:avg', expr: `avg by (${NODE}) (avg_over_time(arcus_items[$w]))` },
      { record: 'node:arcus_connections:max', expr: `max by (${NODE}) (max_over_time(arcus_connections[$w]))` },
      {
        record: 'node:arcus_qos_latency_seconds:max',
        expr: `max by (${NODE}, probe) (max_over_time(arcus_qos_latency_seconds[$w]))`,
      },
    ],
  },
  {
    level: 'prefix',
    aggregates: [
      {
        record: 'prefix:arcus_prefix_items:avg',
        expr: `sum by (${SVC}, prefix) (avg_over_time(arcus_prefix_items[$w]))`,
      },
      {
        record: 'prefix:arcus_prefix_bytes:avg',
        expr: `sum by (${SVC}, prefix) (avg_over_time(arcus_prefix_bytes[$w]))`,
      },
      {
        record: 'prefix:arcus_prefix_commands:rate',
        expr: `sum by (${SVC}, prefix, command) (rate(arcus_prefix_commands_total[$w]))`,
      },
    ],
  },
  {
    level: 'host',
    aggregates: [
      {
        record: 'instance:node_cpu_busy:ratio',
        expr: `1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[$w]))`,
      },
      {
        record: 'instance:node_memory_available:ratio',
        expr: `avg by (instance) (avg_over_time(node_memory_MemAvailable_bytes[$w]) / avg_over_time(node_memory_MemTotal_bytes[$w]))`,
      },
      { record: 'instance:node_load1:avg', expr: `avg by (instance) (avg_over_time(node_load1[$w]))` },
      {
        record: 'instance:node_network_receive_bytes:rate',
        expr: `sum by (instance) (rate(node_network_receive_bytes_total{device!="lo"}[$w]))`,
      },
      {
        record: 'instance:node_network_transmit_bytes:rate',
        expr: `sum by (instance) (rate(node_network_transmit_bytes_total{device!="lo"}[$w]))`,
      },
      {
        record: 'instance:node_disk_io_time:ratio',
        expr: `max by (instance, device) (rate(node_disk_io_time_seconds_total[$w]))`,
      },
      {
        record: 'instance:node_filefd_allocated:max',
        expr: `max by (instance) (max_over_time(node_filefd_allocated[$w]))`,
      },
    ],
  },
  {
    level: 'coordination server',
    aggregates: [
      { record: 'zk_host:zk_up:avg', expr: `avg by (${ZK}) (avg_over_time(zk_up[$w]))` },
      { record: 'zk_host:zk_server_leader:max', expr: `max by (${ZK}) (max_over_time(zk_server_leader[$w]))` },
      { record: 'zk_host:zk_server_state:max', expr: `max by (${ZK}, state) (max_over_time(zk_server_state[$w]))` },
      { record: 'zk_host:zk_avg_latency:avg', expr: `avg by (${ZK}) (avg_over_time(zk_avg_latency[$w]))` },
      { record: 'zk_host:zk_max_latency:max', expr: `max by (${ZK}) (max_over_time(zk_max_latency[$w]))` },
      {
        record: 'zk_host:zk_num_alive_connections:avg',
        expr: `avg by (${ZK}) (avg_over_time(zk_num_alive_connections[$w]))`,
      },
      {
        record: 'zk_host:zk_outstanding_requests:max',
        expr: `max by (${ZK}) (max_over_time(zk_outstanding_requests[$w]))`,
      },
      { record: 'zk_host:zk_znode_count:avg', expr: `avg by (${ZK}) (avg_over_time(zk_znode_count[$w]))` },
      { record: 'zk_host:zk_watch_count:avg', expr: `avg by (${ZK}) (avg_over_time(zk_watch_count[$w]))` },
    ],
  },
  {
    level: 'scrape target',
    aggregates: [
      { record: 'instance:up:avg', expr: `avg by (job, instance) (avg_over_time(up[$w]))` },
      {
        record: 'instance:scrape_duration_seconds:max',
        expr: `max by (job, instance) (max_over_time(scrape_duration_seconds[$w]))`,
      },
    ],
  },
];

/** The rule file: a group per resolution, evaluated at that interval. */
export function renderDownsamplingRules(): string {
  const groups = RESOLUTIONS.map((resolution) => ({
    name: `downsample_${resolution.name}`,
    interval: resolution.name,
    rules: AGGREGATES.flatMap(({ aggregates }) =>
      aggregates.map((a) => ({
        record: a.record,
        expr: a.expr.replaceAll('$w', resolution.window),
        labels: { scrape: 'long', resolution: resolution.name },
      })),
    ),
  }));
  const header = [
    '# Downsampling rules: generated by packages/stack/src/downsampling.ts (npm run rules:generate); do not edit.',
    '# The rule evaluator computes them on the short-term store every interval and writes them to the',
    '# long-term store (RULER_REMOTEWRITE_URL) labelled scrape="long" and resolution="<interval>".',
    `# ${AGGREGATES.map((l) => `${l.aggregates.length} per ${l.level}`).join(', ')}; at ${RESOLUTIONS.map((r) => r.name).join(' and ')}.`,
    '',
  ].join('\n');
  return header + stringify({ groups }, { lineWidth: 0 });
}
