import {
  CACHE,
  RATE,
  either,
  ensembleVariable,
  hitRatio,
  long,
  promTable,
  rate,
  raw,
  row,
  series,
  serviceCodeVariable,
  stat,
  storeVariables,
  timeseries,
  topologyTable,
} from '../kit.js';
import type { DashboardSpec } from '../kit.js';

const BY = 'ensemble, service_code';

export const fleet: DashboardSpec = {
  name: 'fleet',
  title: 'cachemon / Fleet overview',
  description:
    'Every ensemble and service code: nodes live and down, operations, hit ratio, memory, evictions, firing alerts.',
  variables: [...storeVariables(), ensembleVariable(true), serviceCodeVariable(true)],
  content: [
    row('Topology'),
    stat(
      'Cache nodes up',
      series(either(`sum(arcus_up${raw(...CACHE)})`, `sum(service_code:arcus_nodes_up:avg${long(...CACHE)})`)),
      { w: 4 },
    ),
    stat(
      'Cache nodes down',
      series(
        either(
          `sum(1 - arcus_up${raw(...CACHE)})`,
          `sum(service_code:arcus_nodes:count${long(...CACHE)}) - sum(service_code:arcus_nodes_up:avg${long(...CACHE)})`,
        ),
      ),
      { w: 4, description: 'Nodes mapped to the service codes that do not answer (or are not registered).' },
    ),
    stat(
      'Operations',
      series(
        either(
          `sum(rate(arcus_commands_total${raw(...CACHE)}${RATE}))`,
          `sum(service_code:arcus_commands:rate${long(...CACHE)})`,
        ),
      ),
      { w: 4, unit: 'ops' },
    ),
    topologyTable(
      'Service codes (topology provider)',
      'service_code_summary ensemble=$ensemble service_code=$service_code',
      {
        w: 12,
        h: 8,
        description:
          'Nodes, live, down and replication groups per service code, as the coordination ensembles say now.',
      },
    ),
    row('Traffic and memory per service code'),
    timeseries(
      'Operations per service code',
      [series(rate('arcus_commands', CACHE, BY, 'service_code'), '{{ensemble}}/{{service_code}}')],
      { w: 12, unit: 'ops' },
    ),
    timeseries(
      'Get hit ratio per service code',
      [series(hitRatio(BY, [...CACHE, 'command="get"'], 'service_code'), '{{ensemble}}/{{service_code}}')],
      { w: 12, unit: 'percentunit' },
    ),
    timeseries(
      'Memory shortage level per service code, worst node (0-100)',
      [
        series(
          either(
            `max by (${BY}) (arcus_sm_space_shortage_level${raw(...CACHE)})`,
            `max by (${BY}) (service_code:arcus_sm_space_shortage_level:max${long(...CACHE)})`,
          ),
          '{{ensemble}}/{{service_code}}',
        ),
      ],
      { w: 12, unit: 'short' },
    ),
    timeseries(
      'Evictions per service code',
      [series(rate('arcus_items_evicted', CACHE, BY, 'service_code'), '{{ensemble}}/{{service_code}}')],
      {
        w: 12,
        unit: 'ops',
        description: 'Valid items evicted to make room: the cache is too small for its working set.',
      },
    ),
    row('Alerts'),
    promTable('Firing alerts', series('ALERTS{alertstate="firing"}'), {
      w: 24,
      description:
        'Alerts the rule evaluator holds firing now (its ALERTS series in the long-term store); the alert router notifies them.',
    }),
  ],
};
