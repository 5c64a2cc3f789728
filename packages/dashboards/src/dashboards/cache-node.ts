import {
  CACHE,
  RATE,
  either,
  ensembleVariable,
  gauge,
  hitRatio,
  long,
  memoryAvailable,
  memoryShortage,
  nodeVariable,
  rate,
  raw,
  row,
  series,
  serviceCodeVariable,
  stat,
  storeVariables,
  timeseries,
  topologyTable,
  topologyVariable,
} from '../kit.js';
import type { DashboardSpec } from '../kit.js';

const NODE = [...CACHE, 'node=~"$node"'];
const HOST = ['instance=~"$host"'];

export const cacheNode: DashboardSpec = {
  name: 'cache-node',
  title: 'cachemon / Cache node',
  description:
    "One cache node's stats beside its machine's host metrics (the topology provider joins the node to the host exporter instance).",
  variables: [
    ...storeVariables(),
    ensembleVariable(false),
    serviceCodeVariable(false),
    nodeVariable(false),
    topologyVariable('host', 'host_instances ensemble=$ensemble service_code=$service_code node=$node', {
      label: 'Machine',
      multi: false,
    }),
  ],
  content: [
    topologyTable('Node', 'overview ensemble=$ensemble service_code=$service_code node=$node', { w: 16, h: 4 }),
    stat('Up', series(gauge('arcus_up', 'avg', NODE)), { w: 4, h: 4 }),
    stat('Memory shortage level (0-100)', series(memoryShortage(NODE)), { w: 4, h: 4, unit: 'short' }),
    row('Cache node'),
    timeseries('Operations by command', [series(rate('arcus_commands', NODE, 'command'), '{{command}}')], {
      w: 12,
      unit: 'ops',
    }),
    timeseries('Hit ratio by command', [series(hitRatio('command', NODE, 'node'), '{{command}}')], {
      w: 12,
      unit: 'percentunit',
    }),
    timeseries(
      'Memory: used and limit',
      [series(gauge('arcus_bytes', 'avg', NODE), 'used'), series(gauge('arcus_limit_bytes', 'avg', NODE), 'limit')],
      { w: 8, unit: 'bytes' },
    ),
    timeseries(
      'Items and evictions',
      [series(gauge('arcus_items', 'avg', NODE), 'items'), series(rate('arcus_items_evicted', NODE), 'evictions/s')],
      { w: 8, unit: 'short' },
    ),
    timeseries(
      'Connections and QoS latency',
      [
        series(gauge('arcus_connections', 'max', NODE), 'connections'),
        series(
          either(
            `arcus_qos_latency_seconds${raw(...NODE)} * 1000`,
            `node:arcus_qos_latency_seconds:max${long(...NODE)} * 1000`,
          ),
          '{{probe}} ms',
        ),
      ],
      { w: 8, unit: 'short' },
    ),
    row('Its machine'),
    timeseries(
      'CPU busy',
      [
        series(
          either(
            `1 - avg by (instance) (rate(node_cpu_seconds_total${raw(...HOST, 'mode="idle"')}${RATE}))`,
            `instance:node_cpu_busy:ratio${long(...HOST)}`,
          ),
          '{{instance}}',
        ),
      ],
      { w: 6, unit: 'percentunit' },
    ),
    timeseries('Memory available', [series(memoryAvailable(HOST), '{{instance}}')], { w: 6, unit: 'percentunit' }),
    timeseries(
      'Load (1m)',
      [series(either(`node_load1${raw(...HOST)}`, `instance:node_load1:avg${long(...HOST)}`), '{{instance}}')],
      { w: 6, unit: 'short' },
    ),
    timeseries(
      'Network',
      [
        series(
          either(
            `sum by (instance) (rate(node_network_receive_bytes_total${raw(...HOST, 'device!="lo"')}${RATE}))`,
            `instance:node_network_receive_bytes:rate${long(...HOST)}`,
          ),
          'receive',
        ),
        series(
          either(
            `sum by (instance) (rate(node_network_transmit_bytes_total${raw(...HOST, 'device!="lo"')}${RATE}))`,
            `instance:node_network_transmit_bytes:rate${long(...HOST)}`,
          ),
          'transmit',
        ),
      ],
      { w: 6, unit: 'Bps' },
    ),
  ],
};
