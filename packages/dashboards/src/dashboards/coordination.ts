import {
  either,
  ensembleVariable,
  long,
  promTable,
  raw,
  row,
  series,
  storeVariables,
  timeseries,
  topologyTable,
  topologyVariable,
} from '../kit.js';
import type { DashboardSpec } from '../kit.js';

const ZK = ['ensemble=~"$ensemble"', 'zk_host=~"$zk_server"'];

/** A per-server gauge: raw, or its downsampled aggregate. */
const perServer = (title: string, metric: string, aggregate: string, unit: string) =>
  timeseries(title, [series(either(`${metric}${raw(...ZK)}`, `${aggregate}${long(...ZK)}`), '{{zk_host}}')], {
    w: 8,
    unit,
  });

export const coordination: DashboardSpec = {
  name: 'coordination',
  title: 'cachemon / Coordination ensemble',
  description:
    'The servers of one coordination ensemble: state and role, latency, connections, outstanding requests, znodes and watches.',
  variables: [
    ...storeVariables(),
    ensembleVariable(false),
    topologyVariable('zk_server', 'zk_servers ensemble=$ensemble', { label: 'Server', multi: true }),
  ],
  content: [
    topologyTable('Ensemble (topology provider)', 'ensemble_status ensemble=$ensemble', { w: 24, h: 4 }),
    row('State'),
    promTable(
      'Server state',
      series(
        either(
          `max by (zk_host, state) (zk_server_state${raw(...ZK)})`,
          `max by (zk_host, state) (zk_host:zk_server_state:max${long(...ZK)})`,
        ),
      ),
      { w: 8, description: 'leader, follower, observer or standalone, as each server says (mntr).' },
    ),
    perServer('Up', 'zk_up', 'zk_host:zk_up:avg', 'short'),
    perServer('Leader', 'zk_server_leader', 'zk_host:zk_server_leader:max', 'short'),
    row('Load'),
    perServer('Average latency', 'zk_avg_latency', 'zk_host:zk_avg_latency:avg', 'ms'),
    perServer('Maximum latency', 'zk_max_latency', 'zk_host:zk_max_latency:max', 'ms'),
    perServer('Connections', 'zk_num_alive_connections', 'zk_host:zk_num_alive_connections:avg', 'short'),
    perServer('Outstanding requests', 'zk_outstanding_requests', 'zk_host:zk_outstanding_requests:max', 'short'),
    perServer('Znodes', 'zk_znodes', 'zk_host:zk_znodes:avg', 'short'),
    perServer('Watches', 'zk_watches', 'zk_host:zk_watches:avg', 'short'),
  ],
};
