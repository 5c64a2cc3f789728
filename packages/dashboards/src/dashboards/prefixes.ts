import {
  CACHE,
  RATE,
  barGauge,
  either,
  ensembleVariable,
  long,
  raw,
  row,
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
      {
        refId: 'A',
        expr: either(
          `topk(${TOP}, sum by (prefix) (arcus_prefix_items${raw(...CACHE)}))`,
          `topk(${TOP}, sum by (prefix) (prefix:arcus_prefix_items:avg${long(...CACHE)}))`,
        ),
        legend: '{{prefix}}',
      },
      { w: 8, h: 10, unit: 'short' },
    ),
    barGauge(
      `Top ${TOP} prefixes by size`,
      {
        refId: 'A',
        expr: either(
          `topk(${TOP}, sum by (prefix) (arcus_prefix_bytes${raw(...CACHE)}))`,
          `topk(${TOP}, sum by (prefix) (prefix:arcus_prefix_bytes:avg${long(...CACHE)}))`,
        ),
        legend: '{{prefix}}',
      },
      { w: 8, h: 10, unit: 'bytes' },
    ),
    barGauge(
      `Top ${TOP} prefixes by operations`,
      {
        refId: 'A',
        expr: either(
          `topk(${TOP}, sum by (prefix) (rate(arcus_prefix_commands_total${raw(...CACHE)}${RATE})))`,
          `topk(${TOP}, sum by (prefix) (prefix:arcus_prefix_commands:rate${long(...CACHE)}))`,
        ),
        legend: '{{prefix}}',
      },
      { w: 8, h: 10, unit: 'ops' },
    ),
    row('Over time'),
    timeseries(
      `Items of the top ${TOP} prefixes`,
      [
        {
          refId: 'A',
          expr: either(
            `topk(${TOP}, sum by (prefix) (arcus_prefix_items${raw(...CACHE)}))`,
            `topk(${TOP}, sum by (prefix) (prefix:arcus_prefix_items:avg${long(...CACHE)}))`,
          ),
          legend: '{{prefix}}',
        },
      ],
      { w: 12, unit: 'short' },
    ),
    timeseries(
      `Operations of the top ${TOP} prefixes by command`,
      [
        {
          refId: 'A',
          expr: either(
            `topk(${TOP}, sum by (prefix, command) (rate(arcus_prefix_commands_total${raw(...CACHE)}${RATE})))`,
            `topk(${TOP}, sum by (prefix, command) (prefix:arcus_prefix_commands:rate${long(...CACHE)}))`,
          ),
          legend: '{{prefix}} {{command}}',
        },
      ],
      { w: 12, unit: 'ops' },
    ),
  ],
};
