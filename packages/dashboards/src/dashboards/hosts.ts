import {
  RATE,
  either,
  ensembleVariable,
  long,
  memoryAvailable,
  raw,
  row,
  series,
  serviceCodeVariable,
  storeVariables,
  timeseries,
  topologyVariable,
} from '../kit.js';
import type { DashboardSpec } from '../kit.js';

const HOST = ['instance=~"$host"'];
const host = (title: string, rawExpr: string, longExpr: string, unit: string, w = 8) =>
  timeseries(title, [series(either(rawExpr, longExpr), '{{instance}}')], { w, unit });

export const hosts: DashboardSpec = {
  name: 'hosts',
  title: 'cachemon / Hosts',
  description:
    'The machines of the chosen cache nodes (host exporter): CPU, memory, disk, network, load, file descriptors.',
  variables: [
    ...storeVariables(),
    ensembleVariable(true),
    serviceCodeVariable(true),
    topologyVariable('host', 'host_instances ensemble=$ensemble service_code=$service_code', {
      label: 'Machine',
      multi: true,
    }),
  ],
  content: [
    row('CPU and memory'),
    host(
      'CPU busy',
      `1 - avg by (instance) (rate(node_cpu_seconds_total${raw(...HOST, 'mode="idle"')}${RATE}))`,
      `instance:node_cpu_busy:ratio${long(...HOST)}`,
      'percentunit',
    ),
    timeseries('Memory available', [series(memoryAvailable(HOST), '{{instance}}')], { w: 8, unit: 'percentunit' }),
    host('Load (1m)', `node_load1${raw(...HOST)}`, `instance:node_load1:avg${long(...HOST)}`, 'short'),
    row('Disk and network'),
    timeseries(
      'Disk busy (I/O time) per device',
      [
        series(
          either(
            `rate(node_disk_io_time_seconds_total${raw(...HOST)}${RATE})`,
            `instance:node_disk_io_time:ratio${long(...HOST)}`,
          ),
          '{{instance}} {{device}}',
        ),
      ],
      { w: 8, unit: 'percentunit' },
    ),
    host(
      'Network received',
      `sum by (instance) (rate(node_network_receive_bytes_total${raw(...HOST, 'device!="lo"')}${RATE}))`,
      `instance:node_network_receive_bytes:rate${long(...HOST)}`,
      'Bps',
    ),
    host(
      'Network transmitted',
      `sum by (instance) (rate(node_network_transmit_bytes_total${raw(...HOST, 'device!="lo"')}${RATE}))`,
      `instance:node_network_transmit_bytes:rate${long(...HOST)}`,
      'Bps',
    ),
    row('File descriptors'),
    host(
      'File descriptors allocated',
      `node_filefd_allocated${raw(...HOST)}`,
      `instance:node_filefd_allocated:max${long(...HOST)}`,
      'short',
      24,
    ),
  ],
};
