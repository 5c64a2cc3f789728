/**
 * The downsampling rules, each written once and rendered at every resolution into
 * stack/rule_evaluator/conf/rules/downsampling.yml (`npm run rules:generate`). They are written to
 * the long-term store as scrape="long", resolution="<r>"; names are level:metric:operation.
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

/** The series name written (e.g. `service_code:arcus_commands:rate`) and its expression, `$w` standing for the window. */
type Aggregate = readonly [record: string, expr: string];

const SVC = 'ensemble, service_code';
const NODE = 'ensemble, service_code, node, hostname';
const ZK = 'ensemble, zk_host';

/** What the long-term store holds, per service code, per cache node, per host and per coordination server. */
export const AGGREGATES: readonly { readonly level: string; readonly aggregates: readonly Aggregate[] }[] = [
  {
    level: 'service code',
    aggregates: [
      ['service_code:arcus_nodes:count', `count by (${SVC}) (arcus_up)`],
      ['service_code:arcus_nodes_up:avg', `sum by (${SVC}) (avg_over_time(arcus_up[$w]))`],
      ['service_code:arcus_commands:rate', `sum by (${SVC}, command) (rate(arcus_commands_total[$w]))`],
      ['service_code:arcus_command_hits:rate', `sum by (${SVC}, command) (rate(arcus_command_hits_total[$w]))`],
      ['service_code:arcus_command_misses:rate', `sum by (${SVC}, command) (rate(arcus_command_misses_total[$w]))`],
      ['service_code:arcus_items_evicted:rate', `sum by (${SVC}) (rate(arcus_items_evicted_total[$w]))`],
      ['service_code:arcus_bytes:avg', `sum by (${SVC}) (avg_over_time(arcus_bytes[$w]))`],
      ['service_code:arcus_limit_bytes:avg', `sum by (${SVC}) (avg_over_time(arcus_limit_bytes[$w]))`],
      [
        'service_code:arcus_sm_space_shortage_level:max',
        `max by (${SVC}) (max_over_time(arcus_sm_space_shortage_level[$w]))`,
      ],
      ['service_code:arcus_items:avg', `sum by (${SVC}) (avg_over_time(arcus_items[$w]))`],
      ['service_code:arcus_connections:avg', `sum by (${SVC}) (avg_over_time(arcus_connections[$w]))`],
    ],
  },
  {
    level: 'cache node',
    aggregates: [
      ['node:arcus_up:avg', `avg by (${NODE}) (avg_over_time(arcus_up[$w]))`],
      ['node:arcus_commands:rate', `sum by (${NODE}, command) (rate(arcus_commands_total[$w]))`],
      ['node:arcus_command_hits:rate', `sum by (${NODE}, command) (rate(arcus_command_hits_total[$w]))`],
      ['node:arcus_command_misses:rate', `sum by (${NODE}, command) (rate(arcus_command_misses_total[$w]))`],
      ['node:arcus_items_evicted:rate', `sum by (${NODE}) (rate(arcus_items_evicted_total[$w]))`],
      ['node:arcus_bytes:avg', `avg by (${NODE}) (avg_over_time(arcus_bytes[$w]))`],
      ['node:arcus_limit_bytes:avg', `avg by (${NODE}) (avg_over_time(arcus_limit_bytes[$w]))`],
      ['node:arcus_sm_space_shortage_level:max', `max by (${NODE}) (max_over_time(arcus_sm_space_shortage_level[$w]))`],
      ['node:arcus_items:avg', `avg by (${NODE}) (avg_over_time(arcus_items[$w]))`],
      ['node:arcus_connections:max', `max by (${NODE}) (max_over_time(arcus_connections[$w]))`],
      ['node:arcus_qos_latency_seconds:max', `max by (${NODE}, probe) (max_over_time(arcus_qos_latency_seconds[$w]))`],
    ],
  },
  {
    level: 'prefix',
    aggregates: [
      ['prefix:arcus_prefix_items:avg', `sum by (${SVC}, prefix) (avg_over_time(arcus_prefix_items[$w]))`],
      ['prefix:arcus_prefix_bytes:avg', `sum by (${SVC}, prefix) (avg_over_time(arcus_prefix_bytes[$w]))`],
      ['prefix:arcus_prefix_commands:rate', `sum by (${SVC}, prefix, command) (rate(arcus_prefix_commands_total[$w]))`],
    ],
  },
  {
    level: 'host',
    aggregates: [
      ['instance:node_cpu_busy:ratio', `1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[$w]))`],
      [
        'instance:node_memory_available:ratio',
        `avg by (instance) (avg_over_time(node_memory_MemAvailable_bytes[$w]) / avg_over_time(node_memory_MemTotal_bytes[$w]))`,
      ],
      ['instance:node_load1:avg', `avg by (instance) (avg_over_time(node_load1[$w]))`],
      [
        'instance:node_network_receive_bytes:rate',
        `sum by (instance) (rate(node_network_receive_bytes_total{device!="lo"}[$w]))`,
      ],
      [
        'instance:node_network_transmit_bytes:rate',
        `sum by (instance) (rate(node_network_transmit_bytes_total{device!="lo"}[$w]))`,
      ],
      ['instance:node_disk_io_time:ratio', `max by (instance, device) (rate(node_disk_io_time_seconds_total[$w]))`],
      ['instance:node_filefd_allocated:max', `max by (instance) (max_over_time(node_filefd_allocated[$w]))`],
    ],
  },
  {
    level: 'coordination server',
    aggregates: [
      ['zk_host:zk_up:avg', `avg by (${ZK}) (avg_over_time(zk_up[$w]))`],
      ['zk_host:zk_server_leader:max', `max by (${ZK}) (max_over_time(zk_server_leader[$w]))`],
      ['zk_host:zk_server_state:max', `max by (${ZK}, state) (max_over_time(zk_server_state[$w]))`],
      ['zk_host:zk_avg_latency:avg', `avg by (${ZK}) (avg_over_time(zk_avg_latency[$w]))`],
      ['zk_host:zk_max_latency:max', `max by (${ZK}) (max_over_time(zk_max_latency[$w]))`],
      ['zk_host:zk_num_alive_connections:avg', `avg by (${ZK}) (avg_over_time(zk_num_alive_connections[$w]))`],
      ['zk_host:zk_outstanding_requests:max', `max by (${ZK}) (max_over_time(zk_outstanding_requests[$w]))`],
      ['zk_host:zk_znodes:avg', `avg by (${ZK}) (avg_over_time(zk_znodes[$w]))`],
      ['zk_host:zk_watches:avg', `avg by (${ZK}) (avg_over_time(zk_watches[$w]))`],
    ],
  },
  {
    level: 'scrape target',
    aggregates: [
      ['instance:up:avg', `avg by (job, instance) (avg_over_time(up[$w]))`],
      ['instance:scrape_duration_seconds:max', `max by (job, instance) (max_over_time(scrape_duration_seconds[$w]))`],
    ],
  },
];

/** The rule file: a group per resolution, evaluated at that interval. */
export function renderDownsamplingRules(): string {
  const groups = RESOLUTIONS.map((resolution) => ({
    name: `downsample_${resolution.name}`,
    interval: resolution.name,
    rules: AGGREGATES.flatMap(({ aggregates }) =>
      aggregates.map(([record, expr]) => ({
        record,
        expr: expr.replaceAll('$w', resolution.window),
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
