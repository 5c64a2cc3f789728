import {
  CACHE,
  either,
  ensembleVariable,
  gauge,
  hitRatio,
  long,
  memoryShortage,
  nodeVariable,
  rate,
  raw,
  row,
  series,
  serviceCodeVariable,
  storeVariables,
  timeseries,
  topologyTable,
} from '../kit.js';
import type { DashboardSpec } from '../kit.js';

const NODES = [...CACHE, 'node=~"$node"'];

export const serviceCode: DashboardSpec = {
  name: 'service-code',
  title: 'cachemon / Service code',
  description:
    'One service code: its nodes, replication groups and roles, operations by command and per node, hit ratios, memory and items, connections, evictions, QoS latency.',
  variables: [...storeVariables(), ensembleVariable(false), serviceCodeVariable(false), nodeVariable(true)],
  content: [
    row('Nodes'),
    topologyTable(
      'Nodes, replication groups and roles',
      'overview ensemble=$ensemble service_code=$service_code node=$node',
      { w: 24, h: 7 },
    ),
    timeseries('Up per node', [series(gauge('arcus_up', 'avg', NODES), '{{node}}')], {
      w: 12,
      h: 6,
      description: '1 while the node answers within the scrape deadline; averaged over the resolution in long ranges.',
    }),
    timeseries(
      'QoS latency per probe (slowest node)',
      [
        series(
          either(
            `max by (probe) (arcus_qos_latency_seconds${raw(...NODES)})`,
            `max by (probe) (node:arcus_qos_latency_seconds:max${long(...NODES)})`,
          ),
          '{{probe}}',
        ),
      ],
      { w: 12, h: 6, unit: 's' },
    ),
    row('Operations'),
    timeseries(
      'Operations by command (service code total)',
      [series(rate('arcus_commands', NODES, 'command'), '{{command}}')],
      { w: 12, unit: 'ops' },
    ),
    timeseries('Operations per node', [series(rate('arcus_commands', NODES, 'node'), '{{node}}')], {
      w: 12,
      unit: 'ops',
    }),
    timeseries('Hit ratio by command', [series(hitRatio('command', NODES, 'node'), '{{command}}')], {
      w: 12,
      unit: 'percentunit',
    }),
    timeseries('Evictions per node', [series(rate('arcus_items_evicted', NODES), '{{node}}')], { w: 12, unit: 'ops' }),
    row('Memory and connections'),
    timeseries('Memory shortage level per node (0-100)', [series(memoryShortage(NODES), '{{node}}')], {
      w: 8,
      unit: 'short',
    }),
    timeseries('Items per node', [series(gauge('arcus_items', 'avg', NODES), '{{node}}')], { w: 8, unit: 'short' }),
    timeseries('Client connections per node', [series(gauge('arcus_connections', 'max', NODES), '{{node}}')], {
      w: 8,
      unit: 'short',
    }),
  ],
};
