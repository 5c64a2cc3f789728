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

export const prefixes: DashboardSpec = {
  name: 'prefixes',
  title: 'cachemon / Prefixes',
  description: `The top ${TOP} key prefixes of a service code by items, by size and by operations (prefix statistics; operations need the servers' stats detail on).`,
  variables: [...storeVariables(), ensembleVariable(false), serviceCodeVariable(false)],
  content: [
    row(`Top ${TOP} prefixes now`),
    barGauge(
      `Top ${TOP} prefixes by items`,
      series(
        either(
          `topk(${TOP}, sum by (prefix) (arcus_prefix_items${raw(...CACHE)}))`,
          `topk(${TOP}, sum by (prefix) (prefix:arcus_prefix_items:avg${long(...CACHE)}))`,
        ),
        '{{prefix}}',
      ),
      { w: 8, h: 10, unit: 'short' },
    ),
    barGauge(
      `Top ${TOP} prefixes by size`,
      series(
        either(
          `topk(${TOP}, sum by (prefix) (arcus_prefix_bytes${raw(...CACHE)}))`,
          `topk(${TOP}, sum by (prefix) (prefix:arcus_prefix_bytes:avg${long(...CACHE)}))`,
        ),
        '{{prefix}}',
      ),
      { w: 8, h: 10, unit: 'bytes' },
    ),
    barGauge(
      `Top ${TOP} prefixes by operations`,
      series(
        either(
          `topk(${TOP}, sum by (prefix) (rate(arcus_prefix_commands_total${raw(...CACHE)}${RATE})))`,
          `topk(${TOP}, sum by (prefix) (prefix:arcus_prefix_commands:rate${long(...CACHE)}))`,
        ),
        '{{prefix}}',
      ),
      { w: 8, h: 10, unit: 'ops' },
    ),
    row('Over time'),
    timeseries(
      `Items of the top ${TOP} prefixes`,
      [
        series(
          either(
            `topk(${TOP}, sum by (prefix) (arcus_prefix_items${raw(...CACHE)}))`,
            `topk(${TOP}, sum by (prefix) (prefix:arcus_prefix_items:avg${long(...CACHE)}))`,
          ),
          '{{prefix}}',
        ),
      ],
      { w: 12, unit: 'short' },
    ),
    timeseries(
      `Operations of the top ${TOP} prefixes by command`,
      [
        series(
          either(
            `topk(${TOP}, sum by (prefix, command) (rate(arcus_prefix_commands_total${raw(...CACHE)}${RATE})))`,
            `topk(${TOP}, sum by (prefix, command) (prefix:arcus_prefix_commands:rate${long(...CACHE)}))`,
          ),
          '{{prefix}} {{command}}',
        ),
      ],
      { w: 12, unit: 'ops' },
    ),
  ],
};
