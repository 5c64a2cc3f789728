/** The provider without its HTTP shell: a watcher per ensemble, hostname checks, history, fleet view. */
import { isIP } from 'node:net';
import { errorMessage } from '@cachemon/core';
import type { Logger } from '@cachemon/core';
import { TopologyWatcher, splitHostPort, joinHostPort, systemResolver } from '@cachemon/arcus';
import type { Resolver, Topology } from '@cachemon/arcus';
import type { EnsembleConfig, TopologyProviderConfig } from './config.js';
import { HostnameChecker } from './hostnames.js';
import type { HostnameTarget } from './hostnames.js';
import { NodeCountHistory } from './history.js';
import { emptyEnsembleView, ensembleView, fleetView } from './view.js';
import type { CoordinationServer, EnsembleView, FleetView } from './view.js';

export interface TopologyProviderOptions {
  readonly logger: Logger;
  readonly resolver?: Resolver;
  /** How often every hostname is resolved again. */
  readonly resolveIntervalMs?: number;
  readonly zkSessionTimeoutMs?: number;
  /** Coalesces bursts of znode events into one topology update (the watcher's debounce). */
  readonly debounceMs?: number;
  readonly now?: () => number;
}

interface EnsembleRuntime {
  config: EnsembleConfig;
  readonly watcher: TopologyWatcher;
  /** Rebuilt lazily after a change. */
  view: EnsembleView | undefined;
  /** Reads of the watchers this ensemble had before a reload replaced them (its metric never goes back). */
  readonly requestsBefore: number;
  /** The provider's clock when ZooKeeper last confirmed the topology (EnsembleView.confirmedAt). */
  confirmedAt: number;
}

export interface ReloadResult {
  readonly added: string[];
  readonly removed: string[];
  readonly changed: string[];
  readonly restartNeeded: string[];
}

export class TopologyProvider {
  private config: TopologyProviderConfig;
  private readonly runtimes = new Map<string, EnsembleRuntime>();
  private readonly hostnames: HostnameChecker;
  readonly history = new NodeCountHistory();
  private fleetValue: FleetView | undefined;
  private targetsQueued = false;
  private closed = false;
  private readonly now: () => number;

  constructor(
    config: TopologyProviderConfig,
    private readonly options: TopologyProviderOptions,
  ) {
    this.config = config;
    this.now = options.now ?? Date.now;
    this.hostnames = new HostnameChecker({
      resolver: options.resolver ?? systemResolver,
      intervalMs: options.resolveIntervalMs ?? 60_000,
      logger: options.logger,
      onChange: () => {
        for (const runtime of this.runtimes.values()) runtime.view = undefined;
        this.fleetValue = undefined;
      },
    });
    for (const ensemble of config.ensembles) this.runtimes.set(ensemble.name, this.createRuntime(ensemble, 0));
  }

  get currentConfig(): TopologyProviderConfig {
    return this.config;
  }

  /** What requests read: rebuilt once after any change, then shared. */
  get fleet(): FleetView {
    if (this.fleetValue !== undefined) return this.fleetValue;
    const views: EnsembleView[] = [];
    for (const runtime of this.runtimes.values()) views.push((runtime.view ??= this.buildView(runtime)));
    this.fleetValue = fleetView(views, this.hostnames.problems);
    return this.fleetValue;
  }

  /** Per ensemble: the watcher's state, for metrics. */
  ensembleStates(): Array<{
    name: string;
    connected: boolean;
    synced: boolean;
    updatedAt: number;
    /** EnsembleView.confirmedAt, now while current. */
    confirmedAt: number;
    sessionExpirations: number;
    requests: number;
    problems: number;
  }> {
    const now = this.now();
    return [...this.runtimes.values()].map((r) => {
      const state = r.watcher.state;
      return {
        name: r.config.name,
        connected: state.connected,
        synced: state.synced,
        updatedAt: state.updatedAt,
        confirmedAt: !state.synced ? 0 : state.connected ? now : r.confirmedAt,
        sessionExpirations: state.sessionExpirations,
        requests: r.requestsBefore + r.watcher.zookeeperRequests,
        problems: r.watcher.topology.problems.length,
      };
    });
  }

  get hostnameLookups(): { readonly ok: number; readonly failed: number } {
    return this.hostnames.lookups;
  }

  start(): void {
    for (const runtime of this.runtimes.values()) runtime.watcher.start();
    this.queueHostnameTargets();
    this.hostnames.start();
  }

  /** Resolves once every ensemble has been read once (or after timeoutMs, rejecting). */
  async synced(timeoutMs = 30_000): Promise<void> {
    await Promise.all([...this.runtimes.values()].map((r) => r.watcher.synced(timeoutMs)));
  }

  /** Resolves every hostname again now (SIGHUP, tests). */
  resolveHostnames(): Promise<void> {
    return this.hostnames.resolveAll(true);
  }

  close(): void {
    this.closed = true;
    this.hostnames.stop();
    for (const runtime of this.runtimes.values()) runtime.watcher.close();
  }

  /** Applies a new, already validated config: watchers are added, replaced or dropped per ensemble. */
  reload(next: TopologyProviderConfig): ReloadResult {
    const result: ReloadResult = { added: [], removed: [], changed: [], restartNeeded: [] };
    if (next.listen !== this.config.listen) result.restartNeeded.push('listen');
    const { level, ...logRest } = next.log;
    const { level: _old, ...oldLogRest } = this.config.log;
    if (JSON.stringify(logRest) !== JSON.stringify(oldLogRest)) result.restartNeeded.push('log (except level)');
    this.options.logger.level = level;

    const wanted = new Map(next.ensembles.map((e) => [e.name, e]));
    for (const [name, runtime] of [...this.runtimes]) {
      if (wanted.has(name)) continue;
      runtime.watcher.close();
      this.runtimes.delete(name);
      this.history.forget(name);
      result.removed.push(name);
    }
    const ordered = new Map<string, EnsembleRuntime>();
    for (const ensemble of next.ensembles) {
      const runtime = this.runtimes.get(ensemble.name);
      if (runtime === undefined) {
        const created = this.createRuntime(ensemble, 0);
        created.watcher.start();
        ordered.set(ensemble.name, created);
        result.added.push(ensemble.name);
      } else if (JSON.stringify(runtime.config.servers) !== JSON.stringify(ensemble.servers)) {
        runtime.watcher.close();
        const created = this.createRuntime(ensemble, runtime.requestsBefore + runtime.watcher.zookeeperRequests);
        created.watcher.start();
        ordered.set(ensemble.name, created);
        result.changed.push(ensemble.name);
      } else {
        if (JSON.stringify(runtime.config.serviceCodes) !== JSON.stringify(ensemble.serviceCodes)) {
          runtime.watcher.setServiceCodes(ensemble.serviceCodes);
          result.changed.push(ensemble.name);
        }
        runtime.config = ensemble;
        runtime.view = undefined;
        ordered.set(ensemble.name, runtime);
      }
    }
    this.runtimes.clear();
    for (const [name, runtime] of ordered) this.runtimes.set(name, runtime);
    this.config = { ...next, listen: this.config.listen };
    this.fleetValue = undefined;
    this.queueHostnameTargets();
    return result;
  }

  private createRuntime(ensemble: EnsembleConfig, requestsBefore: number): EnsembleRuntime {
    const logger = this.options.logger.child({ ensemble: ensemble.name });
    const watcher = new TopologyWatcher({
      servers: ensemble.servers,
      serviceCodes: ensemble.serviceCodes,
      logger,
      ...(this.options.zkSessionTimeoutMs ? { sessionTimeoutMs: this.options.zkSessionTimeoutMs } : {}),
      ...(this.options.debounceMs !== undefined ? { debounceMs: this.options.debounceMs } : {}),
      ...(this.options.resolver ? { resolver: this.options.resolver } : {}),
      now: this.now,
    });
    const runtime: EnsembleRuntime = { config: ensemble, watcher, view: undefined, requestsBefore, confirmedAt: 0 };
    let wasStale = false;
    let wasConnected = false;
    watcher.on('state', (state: TopologyWatcher['state']) => {
      if (this.runtimes.get(ensemble.name) !== runtime) return;
      // While the session stands its watches do: the topology is confirmed, however long ago it
      // last changed. Once lost, it was confirmed as long as the connection was known to stand:
      // up to its close, or up to the last reply of a server that stopped answering (dropped for
      // it within two thirds of the session timeout).
      if (state.connected) runtime.confirmedAt = this.now();
      else if (wasConnected) runtime.confirmedAt = state.aliveUntil;
      wasConnected = state.connected;
      const stale = state.synced && !state.connected;
      if (stale && !wasStale)
        logger.warn({ servers: ensemble.servers }, 'ensemble unreachable; serving its last topology, marked stale');
      if (!stale && wasStale) logger.info({}, 'ensemble reachable again; topology current');
      wasStale = stale;
      runtime.view = undefined;
      this.fleetValue = undefined;
    });
    watcher.on('topology', (topology: Topology) => {
      if (this.runtimes.get(runtime.config.name) !== runtime || this.closed) return;
      for (const problem of topology.problems) logger.warn({ problem }, 'znode not understood; skipped');
      const live = topology.nodes.filter((n) => n.live).length;
      logger.info(
        { serviceCodes: topology.serviceCodes.length, live, down: topology.nodes.length - live },
        'topology updated',
      );
      // A publish just after a loss holds reads made before it: confirmed up to the loss only.
      if (runtime.watcher.state.connected) runtime.confirmedAt = this.now();
      runtime.view = undefined;
      this.fleetValue = undefined;
      this.history.record((runtime.view = this.buildView(runtime)), this.now());
      this.queueHostnameTargets();
    });
    return runtime;
  }

  private buildView(runtime: EnsembleRuntime): EnsembleView {
    const zkServers = this.coordinationServers(runtime.config);
    const state = runtime.watcher.state;
    if (!state.synced) return emptyEnsembleView(runtime.config.name, zkServers);
    return ensembleView(runtime.config.name, runtime.watcher.topology, state, zkServers, runtime.confirmedAt);
  }

  /** The configured servers as the coordination exporter labels them: names replaced by every address. */
  private coordinationServers(config: EnsembleConfig): CoordinationServer[] {
    const out: CoordinationServer[] = [];
    for (const server of config.servers) {
      const parts = splitHostPort(server);
      if (parts === undefined || isIP(parts.host) !== 0) {
        out.push({ address: parts === undefined ? server : joinHostPort(parts.host, parts.port) });
        continue;
      }
      const addresses = this.hostnames.addressesOf(parts.host);
      if (addresses === undefined) out.push({ address: server, name: parts.host });
      else for (const ip of addresses) out.push({ address: joinHostPort(ip, parts.port), name: parts.host });
    }
    const seen = new Set<string>();
    return out.filter((s) => !seen.has(s.address) && seen.add(s.address));
  }

  /** Hands the hostname checker every name of every ensemble, once per burst of changes. */
  private queueHostnameTargets(): void {
    if (this.targetsQueued || this.closed) return;
    this.targetsQueued = true;
    setImmediate(() => {
      this.targetsQueued = false;
      if (this.closed) return;
      const targets: HostnameTarget[] = [];
      for (const runtime of this.runtimes.values()) {
        const name = runtime.config.name;
        for (const server of runtime.config.servers) {
          const parts = splitHostPort(server);
          if (parts !== undefined && isIP(parts.host) === 0) {
            targets.push({ ensemble: name, kind: 'coordination', hostname: parts.host, address: server });
          }
        }
        for (const node of runtime.watcher.topology.nodes) {
          // A down node never seen live has no hostname to check.
          if (!node.live && node.hostname === '') continue;
          const parts = splitHostPort(node.node);
          targets.push({
            ensemble: name,
            kind: 'cache',
            hostname: node.hostname,
            address: node.node,
            ...(parts !== undefined && isIP(parts.host) !== 0 ? { expected: parts.host } : {}),
          });
        }
      }
      this.hostnames.setTargets(targets).catch((err: unknown) => {
        this.options.logger.error({ error: errorMessage(err) }, 'hostname check failed');
      });
    });
  }
}
