import type { CacheNode } from '@cachemon/arcus';
import { AsciiConnection, runQosProbes } from '@cachemon/arcus';
import type { CollectorLogger } from './collector.js';
import type { QosSnapshot } from './metrics/render.js';

export interface QosSchedulerOptions {
  readonly intervalMs: number;
  readonly simple: boolean;
  readonly logger: CollectorLogger;
}

/**
 * Probes every live node once per interval, on a connection of its own, keeping the latest result
 * for the scrape. Probes wait while a collection runs (hold() to release()): timed in its burst they
 * would measure the exporter's event loop. A node whose previous probes still run is skipped.
 */
export class QosScheduler {
  private intervalMs: number;
  private simple: boolean;
  private readonly logger: CollectorLogger;
  private readonly connections = new Map<string, AsciiConnection>();
  private readonly results = new Map<string, QosSnapshot>();
  private readonly running = new Set<string>();
  private nodes: readonly CacheNode[] = [];
  /** Addresses of the live nodes of the last topology. */
  private live: ReadonlySet<string> = new Set();
  private tick: NodeJS.Timeout | undefined;
  /** The timers of rounds still starting their nodes' probes (one a round; two only if a round overruns). */
  private pending = new Set<NodeJS.Timeout>();
  /** Collections running (hold()); probes falling due meanwhile wait in `deferred`. */
  private holds = 0;
  private readonly deferred = new Set<CacheNode>();

  constructor(options: QosSchedulerOptions) {
    this.intervalMs = options.intervalMs;
    this.simple = options.simple;
    this.logger = options.logger;
  }

  setSimple(simple: boolean): void {
    this.simple = simple;
  }

  setNodes(nodes: readonly CacheNode[]): void {
    this.nodes = nodes.filter((n) => n.live);
    const live = new Set(this.nodes.map((n) => n.node));
    this.live = live;
    for (const [address, connection] of this.connections) {
      if (!live.has(address)) {
        connection.close();
        this.connections.delete(address);
        this.results.delete(address);
      }
    }
    for (const node of this.deferred) if (!live.has(node.node)) this.deferred.delete(node);
  }

  /** A collection starts: probes that fall due wait until release(). */
  hold(): void {
    this.holds++;
  }

  /** A collection ended: once none runs, the probes that fell due meanwhile start. */
  release(): void {
    if (this.holds === 0) return;
    this.holds--;
    if (this.holds > 0 || this.deferred.size === 0) return;
    const due = [...this.deferred];
    this.deferred.clear();
    for (const node of due) void this.probe(node);
  }

  snapshot(address: string): QosSnapshot | undefined {
    return this.results.get(address);
  }

  start(): void {
    if (this.tick || this.intervalMs <= 0) return;
    this.round();
    this.tick = setInterval(() => this.round(), this.intervalMs);
    this.tick.unref();
  }

  stop(): void {
    if (this.tick) clearInterval(this.tick);
    this.tick = undefined;
    for (const timer of this.pending) clearInterval(timer);
    this.pending.clear();
    this.deferred.clear();
    for (const connection of this.connections.values()) connection.close();
    this.connections.clear();
  }

  /** Starts node i's probes at i x (80 % of the interval / N), so the last finishes before the next round; one timer a round. */
  private round(): void {
    const nodes = this.nodes;
    if (nodes.length === 0) return;
    const step = (this.intervalMs * 0.8) / nodes.length;
    const started = performance.now();
    let next = 0;
    const due = (): void => {
      const now = performance.now();
      while (next < nodes.length && started + next * step <= now) {
        const node = nodes[next++]!;
        if (this.holds > 0) this.deferred.add(node);
        else void this.probe(node);
      }
      if (next < nodes.length) return;
      clearInterval(timer);
      this.pending.delete(timer);
    };
    const timer = setInterval(due, Math.max(1, step));
    timer.unref();
    this.pending.add(timer);
    due();
  }

  private async probe(node: CacheNode): Promise<void> {
    // A node that left the topology after its probe was scheduled: no connection to it again.
    if (this.running.has(node.node) || !this.live.has(node.node)) return;
    this.running.add(node.node);
    try {
      let connection = this.connections.get(node.node);
      if (!connection) {
        connection = new AsciiConnection(node.node);
        this.connections.set(node.node, connection);
      }
      if (connection.retryAt > Date.now()) return;
      const deadline = Date.now() + Math.min(this.intervalMs, 2000);
      const results = await runQosProbes(connection, { simple: this.simple, deadline });
      if (this.live.has(node.node)) this.results.set(node.node, { at: Date.now(), results });
    } catch (err) {
      this.logger.debug({ node: node.node, error: String(err) }, 'QoS probes failed');
    } finally {
      this.running.delete(node.node);
    }
  }
}
