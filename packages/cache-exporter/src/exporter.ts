import { ExpositionBuffer, ExpositionWriter, errorMessage, gzipBody } from '@cachemon/core';
import type { Logger } from '@cachemon/core';
import { TopologyWatcher } from '@cachemon/arcus';
import type { Resolver, Topology } from '@cachemon/arcus';
import type { Registry } from 'prom-client';
import type { CacheExporterConfig } from './config.js';
import { prefixSelectionFor } from './config.js';
import { CacheCollector } from './collector.js';
import { QosScheduler } from './qos.js';
import { NodeMetricsRenderer } from './metrics/render.js';
import { PrefixAggregator } from './metrics/prefixes.js';
import { SelfMetrics } from './self-metrics.js';
import { VERSION } from './version.js';

/**
 * The body of a scrape, shared by every scrape of the same path that arrived while it was being
 * collected. /metrics bodies live on a pooled buffer: a fresh multi-megabyte buffer per scrape is
 * external memory, and V8 answers its growth with full (mark-compact) collections. Everyone who
 * got the body calls release() once it is sent.
 */
export interface MetricsBody {
  readonly bytes: Buffer;
  /** The body gzipped, compressed once for every scrape that shares it. */
  gzipped(): Buffer;
  release(): void;
}

/** A collected body; `backing`, when set, is a pooled buffer it lives on. */
interface Collected {
  readonly bytes: Buffer;
  readonly backing?: Buffer;
}

interface Flight {
  readonly promise: Promise<Collected>;
  /** Scrapes that have the body and have not released it yet. */
  users: number;
  gzipped?: Buffer;
}

export interface CacheExporterOptions {
  readonly logger: Logger;
  /** Where the exporter's own cachemon_* metrics live; served after the node series. */
  readonly registry: Registry;
  readonly qosIntervalMs: number;
  readonly zkSessionTimeoutMs?: number;
  readonly resolver?: Resolver;
  /** The process_* and nodejs_* metrics (createSelfRegistry), appended to every /metrics body. */
  readonly processMetrics?: () => Promise<string>;
}

/**
 * The cache exporter without its HTTP shell: discovery (watch), collection (on scrape, shared by
 * concurrent scrapes), QoS (background), rendering, reload.
 */
export class CacheExporter {
  private config: CacheExporterConfig;
  private watcher: TopologyWatcher;
  private readonly collector: CacheCollector;
  private readonly qos: QosScheduler;
  private readonly prefixes = new PrefixAggregator();
  private renderer: NodeMetricsRenderer;
  readonly self: SelfMetrics;
  /** The collection running for each path, with the scrapes waiting for it. */
  private readonly flights = new Map<string, Flight>();
  /** Output buffers of finished scrapes, reused by the next ones. */
  private readonly spareBuffers: Buffer[] = [];
  /** Size of the last /metrics body: the next buffer starts that large and rarely grows. */
  private lastMetricsBytes = 64 * 1024;

  constructor(config: CacheExporterConfig, private readonly options: CacheExporterOptions) {
    this.config = config;
    this.self = new SelfMetrics(options.registry, { version: VERSION, ensemble: () => this.config.ensemble.name });
    this.collector = new CacheCollector({ logger: options.logger });
    this.qos = new QosScheduler({ intervalMs: options.qosIntervalMs, simple: config.simpleQos, logger: options.logger });
    this.watcher = this.createWatcher(config);
    this.renderer = new NodeMetricsRenderer(config.ensemble.name);
  }

  get topology(): Topology {
    return this.watcher.topology;
  }

  get currentConfig(): CacheExporterConfig {
    return this.config;
  }

  start(): void {
    this.watcher.start();
    this.qos.start();
  }

  /** Resolves once the first topology has been read. */
  synced(timeoutMs?: number): Promise<void> {
    return this.watcher.synced(timeoutMs);
  }

  close(): void {
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
      if (watcher !== this.watcher) return;
      this.onTopology(topology);
    });
    this.self.zookeeperConnected.set(0);
    return watcher;
  }

  private onTopology(topology: Topology): void {
    const live = topology.nodes.filter((n) => n.live).length;
    this.self.topologyUpdated.set(Date.now() / 1000);
    this.self.topologyNodes.set({ state: 'live' }, live);
    this.self.topologyNodes.set({ state: 'down' }, topology.nodes.length - live);
    this.self.topologyProblems.set(topology.problems.length);
    for (const problem of topology.problems) this.options.logger.warn({ problem }, 'znode not understood; skipped');
    this.options.logger.info(
      { ensemble: this.config.ensemble.name, serviceCodes: topology.serviceCodes.length, live, down: topology.nodes.length - live },
      'topology updated',
    );
    this.collector.retain(topology.nodes);
    this.qos.setNodes(topology.nodes);
  }

  /** GET /metrics. Concurrent scrapes share one collection (and its body). */
  metrics(deadline: number): Promise<MetricsBody> {
    return this.join('/metrics', () => this.collectMetrics(deadline));
  }

  /** GET /metrics/prefixes, shared the same way. */
  prefixMetrics(deadline: number): Promise<MetricsBody> {
    return this.join('/metrics/prefixes', async () => {
      const topology = this.watcher.topology;
      const config = this.config;
      const sums = this.prefixes.newSums();
      await this.collector.collectPrefixes(topology.nodes, (svc) => prefixSelectionFor(config, svc), deadline, sums);
      const writer = new ExpositionWriter();
      this.prefixes.render(config.ensemble.name, sums, writer);
      return { bytes: Buffer.from(writer.toString()) };
    });
  }

  /** Joins the collection running for `path`, or starts one. */
  private async join(path: string, collect: () => Promise<Collected>): Promise<MetricsBody> {
    let flight = this.flights.get(path);
    if (flight) {
      flight.users++;
      this.self.sharedScrapes.inc({ path });
    } else {
      const end = this.self.scrapeDuration.startTimer({ path });
      const promise = collect().finally(() => {
        if (this.flights.get(path) === flight) this.flights.delete(path);
        end();
      });
      flight = { promise, users: 1 };
      this.flights.set(path, flight);
    }
    const shared = flight;
    const { bytes, backing } = await shared.promise;
    let released = false;
    return {
      bytes,
      gzipped: () => (shared.gzipped ??= gzipBody(bytes)),
      release: () => {
        if (released) return;
        released = true;
        // One spare: scrapes of one path come one after the other; a second body is rare.
        if (--shared.users === 0 && backing !== undefined && this.spareBuffers.length === 0) this.spareBuffers.push(backing);
      },
    };
  }

  private async collectMetrics(deadline: number): Promise<Collected> {
    const topology = this.watcher.topology;
    const renderer = this.renderer;
    const started = performance.now();
    const collecting = this.collector.collectStats(topology.nodes, deadline, (node, reply) => renderer.acceptStats(node, reply));
    const processText = this.readProcessMetrics();
    const snapshots = await collecting;
    const collected = performance.now();
    const writer = new ExpositionBuffer(this.lastMetricsBytes + 64 * 1024, this.spareBuffers.pop());
    for (const s of snapshots) {
      if (!s.up && s.reason) this.self.nodeErrors.inc({ service_code: s.node.serviceCode, node: s.node.node, reason: s.reason });
    }
    renderer.render(snapshots, writer, (node) => this.qos.snapshot(node.node));
    const rendered = performance.now();
    if (processText) writer.text(await processText);
    // Read last, so that the scrapes that joined this collection are counted in its body.
    writer.text(await this.options.registry.metrics());
    const bytes = writer.toBuffer();
    this.lastMetricsBytes = bytes.length;
    if (this.options.logger.isLevelEnabled('debug')) {
      this.options.logger.debug(
        {
          nodes: snapshots.length,
          series: writer.sampleCount,
          bytes: bytes.length,
          collectMs: Math.round((collected - started) * 10) / 10,
          renderMs: Math.round((rendered - collected) * 10) / 10,
        },
        'scrape collected',
      );
    }
    return { bytes, backing: writer.backing };
  }

  /**
   * The process metrics, read while the nodes answer: they do not depend on the scrape, and their
   * reading (/proc, an event-loop turn) would otherwise come after the last reply. Started after
   * the requests have left: the writes are flushed at the next tick, this runs after it.
   */
  private readProcessMetrics(): Promise<string> | undefined {
    const read = this.options.processMetrics;
    if (read === undefined) return undefined;
    return new Promise((resolve, reject) => setImmediate(() => read().then(resolve, reject)));
  }

  /**
   * Applies a new, already validated config. Everything but `listen` takes effect at once; a new
   * ensemble gets a new watcher (its first topology replaces the old one when read).
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
    this.config = { ...next, listen: previous.listen };
    if (next.ensemble.name !== previous.ensemble.name) this.renderer = new NodeMetricsRenderer(next.ensemble.name);
    this.qos.setSimple(next.simpleQos);
    const sameEnsemble =
      next.ensemble.name === previous.ensemble.name &&
      JSON.stringify(next.ensemble.servers) === JSON.stringify(previous.ensemble.servers);
    if (!sameEnsemble) {
      const old = this.watcher;
      this.watcher = this.createWatcher(next);
      this.watcher.start();
      old.close();
    } else if (JSON.stringify(next.serviceCodes) !== JSON.stringify(previous.serviceCodes)) {
      this.watcher.setServiceCodes(next.serviceCodes);
    }
    this.self.reload.succeeded();
    return { restartNeeded };
  }

  reloadFailed(err: unknown): void {
    this.self.reload.failed();
    this.options.logger.error({ error: errorMessage(err) }, 'configuration reload refused; the running configuration stays');
  }
}
