import { RATE, either, long, raw, row, series, storeVariables, timeseries } from '../kit.js';
import type { DashboardSpec } from '../kit.js';

/** The stores' own series (jobs meta-short and meta-long) carry no `scrape` label: the short-term store holds them. */
const STORES = '{job=~"meta-short|meta-long"}';

export const stack: DashboardSpec = {
  name: 'stack',
  title: 'cachemon / The stack itself',
  description:
    'The monitoring stack: every scrape target (exporters, host exporters, stores), the stores ingesting, their disk, and the rule evaluator writing to the long-term store.',
  variables: [...storeVariables()],
  content: [
    row('Scrape targets'),
    timeseries(
      'Exporters up',
      [series(either(`up${raw()}`, `instance:up:avg${long('job!~"meta-.*"')}`), '{{job}} {{instance}}')],
      {
        w: 12,
        description:
          'Cache, prefix, coordination and host exporters as the short-term store scrapes them (1 up, 0 down).',
      },
    ),
    timeseries(
      'Scrape duration',
      [
        series(
          either(`scrape_duration_seconds${raw()}`, `instance:scrape_duration_seconds:max${long('job!~"meta-.*"')}`),
          '{{job}} {{instance}}',
        ),
      ],
      { w: 12, unit: 's', description: 'Close to the scrape timeout means a target at risk of being marked down.' },
    ),
    row('Stores'),
    timeseries('Stores up', [series(`up${STORES}`, '{{job}}')], { w: 8 }),
    timeseries(
      'Rows ingested',
      [
        series(
          `rate(vm_rows_inserted_total${STORES.replace('}', ', type=~"promscrape|promremotewrite"}')}${RATE})`,
          '{{job}} {{type}}',
        ),
      ],
      {
        w: 8,
        unit: 'ops',
        description:
          'promscrape: the short-term store scraping; promremotewrite into the long-term store: the rule evaluator writing downsampled series and alert states.',
      },
    ),
    timeseries('Free disk space', [series(`vm_free_disk_space_bytes${STORES}`, '{{job}}')], {
      w: 8,
      unit: 'bytes',
    }),
    timeseries('Stored data size', [series(`vm_data_size_bytes${STORES}`, '{{job}} {{type}}')], {
      w: 12,
      unit: 'bytes',
    }),
    timeseries('New series created', [series(`rate(vm_new_timeseries_created_total${STORES}${RATE})`, '{{job}}')], {
      w: 12,
      unit: 'ops',
      description: 'A lasting rise means a label that changes too often (cardinality).',
    }),
  ],
};
