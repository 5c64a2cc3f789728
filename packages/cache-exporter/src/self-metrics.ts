import { Counter, Gauge, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import { createReloadMetrics, registerBuildInfo } from '@cachemon/core';

/** The exporter's own health, `cachemon_*`, served after the node series on /metrics. */
export class SelfMetrics {
  readonly scrapeDuration: Histogram<'path'>;
  readonly nodeErrors: Counter<'service_code' | 'node' | 'reason'>;
  readonly zookeeperConnected: Gauge;
  readonly zookeeperExpirations: Counter;
  readonly topologyUpdated: Gauge;
  readonly topologyNodes: Gauge<'state'>;
  readonly topologyProblems: Gauge;
  readonly reloadSuccessful: Gauge;
  readonly reloadTimestamp: Gauge;
  readonly sharedScrapes: Counter<'path'>;

  constructor(registry: Registry, info: { version: string; ensemble: () => string }) {
    const registers = [registry];
    this.scrapeDuration = new Histogram({
      name: 'cachemon_scrape_duration_seconds',
      help: 'Time to collect and render a scrape, by path.',
      labelNames: ['path'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.sharedScrapes = new Counter({
      name: 'cachemon_scrapes_shared_total',
      help: 'Scrapes answered by joining a collection already in flight, by path.',
      labelNames: ['path'],
      registers,
    });
    this.nodeErrors = new Counter({
      name: 'cachemon_node_errors_total',
      help: 'Failed stats collections of a cache node, by reason.',
      labelNames: ['service_code', 'node', 'reason'],
      registers,
    });
    this.zookeeperConnected = new Gauge({
      name: 'cachemon_zookeeper_connected',
      help: 'Whether the exporter has a ZooKeeper session; 0 means the topology served is the last known one.',
      registers,
    });
    this.zookeeperExpirations = new Counter({
      name: 'cachemon_zookeeper_session_expirations_total',
      help: 'ZooKeeper sessions of the exporter that expired and were re-created.',
      registers,
    });
    this.topologyUpdated = new Gauge({
      name: 'cachemon_topology_last_update_timestamp_seconds',
      help: 'When the cache topology was last read from ZooKeeper.',
      registers,
    });
    this.topologyNodes = new Gauge({
      name: 'cachemon_topology_nodes',
      help: 'Cache nodes in the topology: live (registered) and down (mapped, not registered).',
      labelNames: ['state'],
      registers,
    });
    this.topologyProblems = new Gauge({
      name: 'cachemon_topology_problems',
      help: 'Znodes under the ARCUS roots that could not be understood (see the log).',
      registers,
    });
    const reload = createReloadMetrics(registry);
    this.reloadSuccessful = reload.successful;
    this.reloadTimestamp = reload.timestamp;
    registerBuildInfo(registry, () => ({ version: info.version, component: 'cache-exporter', ensemble: info.ensemble() }));
  }
}
