import { Counter, Gauge, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import { createReloadMetrics, registerBuildInfo } from '@cachemon/core';
import type { ConfigFileIdentity, ReloadMetrics } from '@cachemon/core';
import type { TopologyProvider } from './provider.js';
import type { HostnameProblemKind } from './view.js';

const PROBLEM_KINDS: readonly HostnameProblemKind[] = ['unresolved', 'mismatch', 'no_hostname'];

/** The provider's own health, `cachemon_*`, on its /metrics. */
export class ProviderMetrics {
  readonly requests: Counter<'method' | 'path' | 'status'>;
  readonly requestDuration: Histogram<'method' | 'path'>;
  readonly reload: ReloadMetrics;

  constructor(
    registry: Registry,
    provider: () => TopologyProvider,
    info: { version: string; now?: () => number; configFile?: ConfigFileIdentity | undefined },
  ) {
    const registers = [registry];
    const now = info.now ?? Date.now;
    this.requests = new Counter({
      name: 'cachemon_topology_requests_total',
      help: 'Requests answered, by method, path and HTTP status.',
      labelNames: ['method', 'path', 'status'],
      registers,
    });
    this.requestDuration = new Histogram({
      name: 'cachemon_topology_request_duration_seconds',
      help: 'Time to answer a request, by method and path.',
      labelNames: ['method', 'path'],
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    });
    this.reload = createReloadMetrics(registry, info.configFile, now());
    type EnsembleState = ReturnType<TopologyProvider['ensembleStates']>[number];
    /** A series per ensemble, read from the provider at scrape time. */
    const perEnsemble = (
      name: string,
      help: string,
      read: (s: EnsembleState) => number,
      kind: 'gauge' | 'counter' = 'gauge',
    ) => {
      const collect = function (this: Gauge<'ensemble'> | Counter<'ensemble'>) {
        this.reset();
        for (const state of provider().ensembleStates()) {
          if (this instanceof Gauge) this.set({ ensemble: state.name }, read(state));
          else this.inc({ ensemble: state.name }, read(state));
        }
      };
      const config = { name, help, labelNames: ['ensemble'] as const, registers, collect };
      return kind === 'gauge' ? new Gauge(config) : new Counter(config);
    };
    perEnsemble('cachemon_zookeeper_connected', 'Whether the provider has a session with the ensemble.', (s) =>
      s.connected ? 1 : 0,
    );
    perEnsemble(
      'cachemon_topology_stale',
      'Whether the topology served for the ensemble is not current: 1 while its session is lost (the last topology is served) or before it was ever read.',
      (s) => (s.connected && s.synced ? 0 : 1),
    );
    perEnsemble(
      'cachemon_topology_last_update_timestamp_seconds',
      "When the ensemble's topology was last read: at each change, and once more after each reconnect; 0 before the first read.",
      (s) => s.updatedAt / 1000,
    );
    perEnsemble(
      'cachemon_topology_last_confirmed_timestamp_seconds',
      "When ZooKeeper last confirmed the ensemble's topology: now while its session is up (the watches stand), else the last moment the lost connection was known to stand; 0 before the first read.",
      (s) => s.confirmedAt / 1000,
    );
    perEnsemble(
      'cachemon_topology_age_seconds',
      "Seconds since ZooKeeper last confirmed the ensemble's topology: 0 while its session is up, however long ago the topology changed; once the session is lost, counted from the last moment the connection was known to stand; -1 before the first read.",
      (s) => (s.synced ? Math.max(0, now() - s.confirmedAt) / 1000 : -1),
    );
    perEnsemble(
      'cachemon_zookeeper_requests_total',
      'Reads sent to the ensemble (children, data, exists); requests to the provider never read ZooKeeper.',
      (s) => s.requests,
      'counter',
    );
    perEnsemble(
      'cachemon_zookeeper_session_expirations_total',
      'ZooKeeper sessions with the ensemble that expired, or were given up after a session timeout without reconnecting, and were re-created.',
      (s) => s.sessionExpirations,
      'counter',
    );
    perEnsemble(
      'cachemon_topology_problems',
      'Znodes under the ARCUS roots that could not be understood (see the log).',
      (s) => s.problems,
    );
    new Gauge({
      name: 'cachemon_topology_nodes',
      help: "Cache nodes in the ensemble's topology: live (registered) and down (mapped, not registered).",
      labelNames: ['ensemble', 'state'],
      registers,
      collect() {
        this.reset();
        for (const e of provider().fleet.ensembles) {
          this.set({ ensemble: e.name, state: 'live' }, e.liveCount);
          this.set({ ensemble: e.name, state: 'down' }, e.nodeCount - e.liveCount);
        }
      },
    });
    new Gauge({
      name: 'cachemon_topology_service_codes',
      help: 'Visible service codes of the ensemble.',
      labelNames: ['ensemble'],
      registers,
      collect() {
        this.reset();
        for (const e of provider().fleet.ensembles) this.set({ ensemble: e.name }, e.serviceCodes.length);
      },
    });
    new Gauge({
      name: 'cachemon_hostname_problems',
      help: "Hostnames that break the spec's rule that every cache and coordination hostname resolves here, to the registered address; by ensemble and problem (unresolved, mismatch, no_hostname).",
      labelNames: ['ensemble', 'problem'],
      registers,
      collect() {
        this.reset();
        const fleet = provider().fleet;
        for (const e of fleet.ensembles)
          for (const kind of PROBLEM_KINDS) this.set({ ensemble: e.name, problem: kind }, 0);
        for (const p of fleet.hostnameProblems) this.inc({ ensemble: p.ensemble, problem: p.problem });
      },
    });
    new Gauge({
      name: 'cachemon_hostname_problem',
      help: 'One series per hostname problem (value 1): which name, of which node or server, and what it resolved to.',
      labelNames: ['ensemble', 'kind', 'hostname', 'address', 'problem', 'resolved'],
      registers,
      collect() {
        this.reset();
        for (const p of provider().fleet.hostnameProblems) {
          this.set(
            {
              ensemble: p.ensemble,
              kind: p.kind,
              hostname: p.hostname,
              address: p.address,
              problem: p.problem,
              resolved: p.resolved.join(','),
            },
            1,
          );
        }
      },
    });
    new Counter({
      name: 'cachemon_hostname_lookups_total',
      help: 'Hostname lookups made, by result (ok, failed).',
      labelNames: ['result'],
      registers,
      collect() {
        this.reset();
        const lookups = provider().hostnameLookups;
        this.inc({ result: 'ok' }, lookups.ok);
        this.inc({ result: 'failed' }, lookups.failed);
      },
    });
    registerBuildInfo(registry, () => ({ version: info.version, component: 'topology-provider' }));
  }
}
