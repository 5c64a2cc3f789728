import {
  CACHE,
  RATE,
  barGauge,
  either,
  ensembleVariable,
  long,
  raw,
  row,
  series,
  serviceCodeVariable,
  storeVariables,
  timeseries,
} from '../kit.js';
import type { DashboardSpec } from '../kit.js';

const TOP = 10;
/** The top prefixes of a gauge (`agg` of its downsampled series) or, when `agg` is 'rate', of a counter. */
const top = (metric: string, agg: string, by = 'prefix') =>
  either(
    agg === 'rate'
      ? `topk(${TOP}, sum by (${by}) (rate(${metric}_total${raw(...CACHE)}${RATE})))`
      : `topk(${TOP}, sum by (${by}) (${metric}${raw(...CACHE)}))`,
    `topk(${TOP}, sum by (${by}) (prefix:${metric}:${agg}${long(...CACHE)}))`,
  );

export const prefixes: DashboardSpec = {
  name: 'prefixes',
  title: 'cachemon / Prefixes',
  description: `The top ${TOP} key prefixes of a service code by items, by size and by operations (prefix statistics; operations need the servers' stats detail on).`,
  variables: [...storeVariables(), ensembleVariable(false), serviceCodeVariable(false)],
  content: [
    row(`Top ${TOP} prefixes now`),
    barGauge(`Top ${TOP} prefixes by items`, series(top('arcus_prefix_items', 'avg'), '{{prefix}}'), {
      w: 8,
      h: 10,
      unit: 'short',
    }),
    barGauge(`Top ${TOP} prefixes by size`, series(top('arcus_prefix_bytes', 'avg'), '{{prefix}}'), {
      w: 8,
      h: 10,
      unit: 'bytes',
    }),
    barGauge(`Top ${TOP} prefixes by operations`, series(top('arcus_prefix_commands', 'rate'), '{{prefix}}'), {
      w: 8,
      h: 10,
      unit: 'ops',
    }),
    row('Over time'),
    timeseries(`Items of the top ${TOP} prefixes`, [series(top('arcus_prefix_items', 'avg'), '{{prefix}}')], {
      w: 12,
      unit: 'short',
    }),
    timeseries(
      `Operations of the top ${TOP} prefixes by command`,
      [series(top('arcus_prefix_commands', 'rate', 'prefix, command'), '{{prefix}} {{command}}')],
      { w: 12, unit: 'ops' },
    ),
  ],
};
