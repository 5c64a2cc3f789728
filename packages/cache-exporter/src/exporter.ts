import { ExpositionWriter, expositionBody, reloadRefused } from '@cachemon/core';
import type { ExpositionBody, Logger } from '@cachemon/core';
import { TopologyWatcher } from '@cachemon/arcus';
import type { CacheNode, Resolver, Topology } from '@cachemon/arcus';
import type { Registry } from 'prom-client';
import type { CacheExporterConfig } from './config.js';
import { prefixSelectionFor } from './config.js';
import { CacheCollector, CollectionDeadline } from './collector.js';
import { QosScheduler } from './qos.js';
import { sameItems } from './lists.js';
import { GzipBody, gzippedExpositionBody } from './metrics/gzip-body.js';
import { NodeMetricsRenderer } from './metrics/render.js';
import { PrefixAggregator } from './metrics/prefixes.js';
import { SelfMetrics } from './self-metrics.js';
import { VERSION } from './version.js';

export interface CacheExporterOptions {
  readonly logger: Logger;
  /** Where the exporter's own cachemon_* metrics live; served after the node series. */
  readonly registry: Registry;
  readonly qosIntervalMs: number;
  readonly zkSessionTimeoutMs?: number;
  readonly resolver?: Resolver;
  /** The process_* and nodejs_* metrics (createProcessMetrics), appended to every /metrics body. */
  readonly processMetrics?: () => Promise<string>;
}

/** The cache exporter without its HTTP shell: discovery, shared collection, QoS, rendering, reload. */
export class CacheExporter {
  private config: CacheExporterConfig;
  /** Reads the topology scrapes collect. */
  private watcher: TopologyWatcher;
  /** What `watcher` reads (its topology's ensemble name is the renderer's). */
  private watched: WatchedEnsemble;
  /** A reload's new ensemble servers until their first topology is read, while the old watcher keeps serving. */
  private pending:
    | (WatchedEnsemble & { readonly name: string; readonly watcher: TopologyWatcher; readonly warn: NodeJS.Timeout })
    | undefined;
  private readonly collector: CacheCollector;
  private readonly qos: QosScheduler;
  private readonly prefixes = new PrefixAggregator();
  private renderer: NodeMetricsRenderer;
  readonly self: SelfMetrics;
  /** Service codes of `serviceCodes` the last topology did not have (warned about once). */
  private missingServiceCodes: readonly string[] = [];
  /** Set by endCollections: collections end at once. */
  private ending = false;
  /** The collection running for each path; scrapes that arrive meanwhile share it. */
  private readonly flights = new Map<
    string,
    { readonly body: Promise<ExpositionBody>; readonly deadline: CollectionDeadline }
  >();
  private topologyRead: () => void = () => undefined;
  private readonly firstTopology = new Promise<void>((resolve) => (this.topologyRead = resolve));

  constructor(
    config: CacheExporterConfig,
    private readonly options: CacheExporterOptions,
  ) {
    this.config = config;
    this.self = new SelfMetrics(options.registry, {
      version: VERSION,
      ensemble: config.ensemble.name,
      configFile: config.file,
    });
    this.collector = new CacheCollector({ logger: options.logger });
    this.qos = new QosScheduler({
      intervalMs: options.qosIntervalMs,
      simple: config.simpleQos,
      logger: options.logger,
    });
    this.watcher = this.createWatcher(config);
    this.watched = { servers: config.ensemble.servers, serviceCodes: config.serviceCodes };
    this.self.zookeeperConnected.set(0);
    this.self.ensembleSwitchPending.set(0);
    this.renderer = new NodeMetricsRenderer(config.ensemble.name);
  }

  get topology(): Topology {
    return this.watcher.topology;
  }

  /** The ensemble whose topology is served: the config's, or the previous one while a reload's new servers are not read yet. */
  get ensembleName(): string {
    return this.renderer.ensemble;
  }

  start(): void {
    this.watcher.start();
    this.qos.start();
  }

  /**
   * Resolves once a topology is served: read from the servers the exporter started with, or from
   * those of a reload (a start with a wrong server list, put right by a reload, gets ready too).
   */
  serving(): Promise<void> {
    return this.firstTopology;
  }

  /** Shutting down: collections in flight end now with what has arrived, and any started later at once. */
  endCollections(): void {
    this.ending = true;
    for (const flight of this.flights.values()) flight.deadline.bringForward(Date.now());
  }

  close(): void {
    this.dropPending();
    this.watcher.close();
    this.qos.stop();
    this.collector.close();
  }

  private createWatcher(config: CacheExporterConfig): TopologyWatcher {
    const watcher = new TopologyWatcher({
      servers: config.ensemble.servers,
      serviceCodes: config.serviceCodes,
      logger: this.options.logger,
      ...(this.options.zkSessionTimeoutMs ? { sessionTimeoutMs: this.options.zkSessionTimeoutMs } : {}),
      ...(this.options.resolver ? { resolver: this.options.resolver } : {}),
    });
    let expirations = 0;
    watcher.on('state', (state: TopologyWatcher['state']) => {
      if (watcher !== this.watcher) return;
      this.self.zookeeperConnected.set(state.connected ? 1 : 0);
      if (state.sessionExpirations > expirations) {
        this.self.zookeeperExpirations.inc(state.sessionExpirations - expirations);
        expirations = state.sessionExpirations;
      }
    });
    watcher.on('topology', (topology: Topology) => {
      if (watcher === this.pending?.watcher) this.promotePending();
      if (watcher !== this.watcher) return;
      this.onTopology(topology);
    });
    return watcher;
  }

  /** The reloaded ensemble's first topology has been read: it replaces the one served so far. */
  private promotePending(): void {
    const pending = this.pending!;
    this.pending = undefined;
    clearTimeout(pending.warn);
    const old = this.watcher;
    this.watcher = pending.watcher;
    this.watched = { servers: pending.servers, serviceCodes: pending.serviceCodes };
    old.close();
    this.rename(pending.name);
    this.self.zookeeperConnected.set(pending.watcher.state.connected ? 1 : 0);
    this.self.ensembleSwitchPending.set(0);
    this.options.logger.info(
      { servers: pending.servers },
      'reloaded ensemble read; its topology replaces the previous one',
    );
  }

  /** Gives up a reloaded ensemble not read yet (closing, or another reload changed the servers again). */
  private dropPending(): void {
    const pending = this.pending;
    if (pending === undefined) return;
    this.pending = undefined;
    clearTimeout(pending.warn);
    pending.watcher.close();
    this.self.ensembleSwitchPending.set(0);
  }

  /** The ensemble label of every series (the node series and the exporter's own). */
  private rename(name: string): void {
    if (name === this.renderer.ensemble) return;
    this.renderer = new NodeMetricsRenderer(name);
    this.self.setEnsemble(name);
  }

  private onTopology(topology: Topology): void {
    this.topologyRead();
    const live = topology.nodes.filter((n) => n.live).length;
    this.self.topologyUpdated.set(Date.now() / 1000);
    this.self.topologyNodes.set({ state: 'live' }, live);
    this.self.topologyNodes.set({ state: 'down' }, topology.nodes.length - live);
    this.self.topologyProblems.set(topology.problems.length);
    for (const problem of topology.problems) this.options.logger.warn({ problem }, 'znode not understood; skipped');
    this.options.logger.info(
      { serviceCodes: topology.serviceCodes.length, live, down: topology.nodes.length - live },
      'topology updated',
    );
    this.collector.retain(topology.nodes);
    this.prefixes.retain(topology.nodes);
    const missing = (this.config.serviceCodes ?? []).filter((code) => !topology.serviceCodes.includes(code));
    if (missing.join('\n') !== this.missingServiceCodes.join('\n')) {
      this.missingServiceCodes = missing;
      if (missing.length > 0) {
        this.options.logger.warn(
          { missing },
          'service codes in serviceCodes are not in the ensemble (neither in cache_list nor in cache_server_mapping): nothing is collected for them; check their spelling',
        );
      }
    }
    this.qos.setNodes(topology.nodes);
  }

  /** GET /metrics. Concurrent scrapes share one collection (and its body). */
  metrics(deadline: number): Promise<ExpositionBody> {
    return this.join('/metrics', deadline, (collection) => {
      // QoS probes falling due now wait until the nodes have answered (QosScheduler).
      this.qos.hold();
      return this.collectMetrics(collection).finally(() => this.qos.release());
    });
  }

  /** GET /metrics/prefixes, shared the same way. */
  prefixMetrics(deadline: number): Promise<ExpositionBody> {
    return this.join('/metrics/prefixes', deadline, async (collection) => {
      const topology = this.watcher.topology;
      const config = this.config;
      // The ensemble the topology is of (the old name while a reload's new servers are not read yet).
      const ensemble = this.renderer.ensemble;
      const sums = this.prefixes.newSums();
      await this.collector.collectPrefixes(topology.nodes, (svc) => prefixSelectionFor(config, svc), collection, sums);
      const writer = new ExpositionWriter();
      this.prefixes.render(ensemble, sums, writer);
      return expositionBody(Buffer.from(writer.toString()));
    });
  }

  /** Joins the collection running for `path`, or starts one; an earlier deadline brings its end forward. */
  private join(
    path: string,
    requested: number,
    collect: (deadline: CollectionDeadline) => Promise<ExpositionBody>,
  ): Promise<ExpositionBody> {
    const deadline = this.ending ? Date.now() : requested;
    const running = this.flights.get(path);
    if (running) {
      this.self.sharedScrapes.inc({ path });
      running.deadline.bringForward(deadline);
      return running.body;
    }
    const end = this.self.scrapeDuration.startTimer({ path });
    const collection = new CollectionDeadline(deadline);
    const body = collect(collection).finally(() => {
      collection.cancel();
      if (this.flights.get(path)?.body === body) this.flights.delete(path);
      end();
    });
    this.flights.set(path, { body, deadline: collection });
    return body;
  }

  private async collectMetrics(deadline: CollectionDeadline): Promise<ExpositionBody> {
    const topology = this.watcher.topology;
    const renderer = this.renderer;
    const started = performance.now();
    const slabClasses = this.config.slabClasses;
    const collecting = this.collector.collectStats(
      topology.nodes,
      deadline,
      (node, reply) => renderer.acceptStats(node, reply),
      (node, reply) => renderer.acceptSlabs(node, reply, slabClasses),
    );
    const processText = this.readProcessMetrics();
    const snapshots = await collecting;
    const collected = performance.now();
    // Compressed as it is written: the whole text (26 KB a node) is never held at once.
    const writer = new GzipBody();
    for (const s of snapshots) {
      if (!s.up && s.reason)
        this.self.nodeErrors.inc({ service_code: s.node.serviceCode, node: s.node.node, reason: s.reason });
    }
    renderer.render(snapshots, writer, this.qosOf);
    const rendered = performance.now();
    if (processText) writer.text(await processText);
    // Read last, so that the scrapes that joined this collection are counted in its body.
    writer.text(await this.options.registry.metrics());
    const gzipped = writer.finish();
    if (this.options.logger.isLevelEnabled('debug')) {
      this.options.logger.debug(
        {
          nodes: snapshots.length,
          series: writer.sampleCount,
          bytes: writer.byteLength,
          gzippedBytes: gzipped.length,
          collectMs: Math.round((collected - started) * 10) / 10,
          renderMs: Math.round((rendered - collected) * 10) / 10,
          totalMs: Math.round((performance.now() - started) * 10) / 10,
        },
        'scrape collected',
      );
    }
    return gzippedExpositionBody(gzipped);
  }

  /** The process metrics, read while the nodes answer (after the requests have left, at the next tick). */
  private readProcessMetrics(): Promise<string> | undefined {
    const read = this.options.processMetrics;
    if (read === undefined) return undefined;
    return new Promise((resolve, reject) => setImmediate(() => void read().then(resolve, reject)));
  }

  /** A node's latest QoS results. */
  private readonly qosOf = (node: CacheNode) => this.qos.snapshot(node.node);

  /**
   * Applies a new, already validated config. Everything but `listen` takes effect at once, except
   * new ensemble servers: they get a watcher of their own, and the topology read so far (with its
   * ensemble name) is served until theirs has been read (`cachemon_ensemble_switch_pending`).
   */
  reload(next: CacheExporterConfig): { restartNeeded: string[] } {
    const restartNeeded: string[] = [];
    if (next.listen !== this.config.listen) restartNeeded.push('listen');
    if (JSON.stringify(next.log) !== JSON.stringify(this.config.log)) {
      const { level, ...rest } = next.log;
      const { level: _old, ...oldRest } = this.config.log;
      if (JSON.stringify(rest) !== JSON.stringify(oldRest)) restartNeeded.push('log (except level)');
      this.options.logger.level = level;
    }
    const previous = this.config;
    // What runs: the listen address and the log block but for its level stay until a restart.
    this.config = { ...next, listen: previous.listen, log: { ...previous.log, level: next.log.level } };
    this.qos.setSimple(next.simpleQos);
    const wanted: WatchedEnsemble = { servers: next.ensemble.servers, serviceCodes: next.serviceCodes };
    if (sameItems(wanted.servers, this.watched.servers)) {
      // The servers being read (a rename, other service codes, or back from a switch not done).
      this.dropPending();
      this.rename(next.ensemble.name);
      if (!sameItems(wanted.serviceCodes, this.watched.serviceCodes)) this.watcher.setServiceCodes(wanted.serviceCodes);
      this.watched = wanted;
    } else if (this.pending !== undefined && sameItems(wanted.servers, this.pending.servers)) {
      if (!sameItems(wanted.serviceCodes, this.pending.serviceCodes))
        this.pending.watcher.setServiceCodes(wanted.serviceCodes);
      this.pending = { ...this.pending, ...wanted, name: next.ensemble.name };
    } else {
      this.dropPending();
      const watcher = this.createWatcher(next);
      const warn = setTimeout(() => {
        this.options.logger.warn(
          { servers: next.ensemble.servers, serving: this.watched.servers, waitedMs: SWITCH_WARN_MS },
          'the reloaded ensemble servers have not been read yet; still serving the topology of the previous servers',
        );
      }, SWITCH_WARN_MS);
      warn.unref();
      this.pending = { ...wanted, name: next.ensemble.name, watcher, warn };
      this.self.ensembleSwitchPending.set(1);
      watcher.start();
    }
    this.self.reload.succeeded(next.file);
    return { restartNeeded };
  }

  reloadFailed(err: unknown): void {
    reloadRefused(err, this.self.reload, this.options.logger);
  }
}

/** What a topology watcher is made for. */
interface WatchedEnsemble {
  readonly servers: readonly string[];
  readonly serviceCodes: readonly string[] | undefined;
}

/** How long a reloaded ensemble may go unread before a warning says the previous one is still served. */
const SWITCH_WARN_MS = 10_000;
