import { Counter, Gauge, type Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import { createReloadMetrics, createScrapeMetrics, registerBuildInfo } from '@cachemon/core';
import type { ConfigFileIdentity, ReloadMetrics } from '@cachemon/core';

/** The exporter's own `cachemon_*` health, with `ensemble` on every series so its alerts need no join. */
export class SelfMetrics {
  readonly scrapeDuration: Histogram<'path'>;
  readonly nodeErrors: Counter<'service_code' | 'node' | 'reason'>;
  readonly zookeeperConnected: Gauge;
  readonly zookeeperExpirations: Counter;
  readonly ensembleSwitchPending: Gauge;
  readonly topologyUpdated: Gauge;
  readonly topologyNodes: Gauge<'state'>;
  readonly topologyProblems: Gauge;
  readonly reload: ReloadMetrics;
  readonly sharedScrapes: Counter<'path'>;
  private ensemble: string | undefined;

  constructor(
    private readonly registry: Registry,
    info: { version: string; ensemble: string; configFile?: ConfigFileIdentity | undefined },
  ) {
    const registers = [registry];
    const scrapes = createScrapeMetrics(registry);
    this.scrapeDuration = scrapes.duration;
    this.sharedScrapes = scrapes.shared;
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
      help: 'ZooKeeper sessions of the exporter that expired, or were given up after a session timeout without reconnecting, and were re-created.',
      registers,
    });
    this.ensembleSwitchPending = new Gauge({
      name: 'cachemon_ensemble_switch_pending',
      help: 'Whether a reload changed the ensemble servers and they have not been read yet; meanwhile the topology of the previous servers is served.',
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
    this.reload = createReloadMetrics(registry, info.configFile);
    // Its ensemble label, like every series', is the registry's default label (setEnsemble).
    registerBuildInfo(registry, () => ({ version: info.version, component: 'cache-exporter' }));
    this.setEnsemble(info.ensemble);
  }

  /**
   * The ensemble's name, on every series (a default label of the registry). A reload that renames
   * the ensemble starts the node error counts afresh: those nodes were the old ensemble's.
   */
  setEnsemble(name: string): void {
    if (name === this.ensemble) return;
    if (this.ensemble !== undefined) this.nodeErrors.reset();
    this.ensemble = name;
    this.registry.setDefaultLabels({ ensemble: name });
  }
}
