/**
 * The daemons' own metrics. A fresh registry (not prom-client's global one) so tests and several
 * servers in one process never see each other's series.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { errorMessage } from './errors.js';
import type { Logger } from './log.js';

/**
 * Registry with prom-client's process_* and nodejs_* metrics. Daemons keep their cachemon_* ones
 * in a registry of their own: the process metrics do not depend on a scrape (reading them takes
 * /proc reads and an event-loop turn), so a daemon can start reading them while it waits for what
 * the scrape does depend on.
 *
 * The nodejs_eventloop_lag_* family is prom-client's, measured the same way (perf_hooks'
 * monitorEventLoopDelay, every 10 ms), without `nodejs_eventloop_lag_stddev_seconds`: Node works
 * out a standard deviation by walking every bucket of its histogram, ~0.6 ms per scrape, as much as
 * all the other process metrics together. min, max, mean and p50/p90/p99 describe the spread.
 * (A sampler of our own, with running sums, cost more: a JavaScript timer every 10 ms is ~0.7 % of
 * a core more than the native one, idle.)
 */
export function createSelfRegistry(): Registry {
  const registry = new Registry();
  // prom-client's own histogram would sample every 10 ms beside ours: once in 24 days instead.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 2 ** 31 - 1 });
  for (const name of PROM_CLIENT_LAG_NAMES) registry.removeSingleMetric(name);
  registerEventLoopLag(registry);
  return registry;
}

/** prom-client's event loop lag family, replaced by registerEventLoopLag's. */
const PROM_CLIENT_LAG_NAMES = [
  'nodejs_eventloop_lag_seconds',
  'nodejs_eventloop_lag_min_seconds',
  'nodejs_eventloop_lag_max_seconds',
  'nodejs_eventloop_lag_mean_seconds',
  'nodejs_eventloop_lag_stddev_seconds',
  'nodejs_eventloop_lag_p50_seconds',
  'nodejs_eventloop_lag_p90_seconds',
  'nodejs_eventloop_lag_p99_seconds',
];

/** nodejs_eventloop_lag_* as prom-client has them (but the standard deviation), read and reset per scrape. */
function registerEventLoopLag(registry: Registry): void {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  const registers = [registry];
  // A registry reads its metrics in the order they were registered: this one, which sets the
  // statistics, comes first. As prom-client: the lag itself is how long an immediate waits,
  // measured at one scrape and shown at the next.
  const lag: Gauge = new Gauge({
    name: 'nodejs_eventloop_lag_seconds',
    help: 'Lag of event loop in seconds.',
    registers,
    collect() {
      const start = performance.now();
      setImmediate(() => lag.set((performance.now() - start) / 1000));
      // Before its first sample the histogram's min is a huge placeholder and its mean NaN (prom-client
      // reports them as they are): 0 instead.
      const recorded = histogram.count > 0;
      const seconds = (ns: number): number => (recorded ? ns / 1e9 : 0);
      stats.min.set(seconds(histogram.min));
      stats.max.set(seconds(histogram.max));
      stats.mean.set(seconds(histogram.mean));
      stats.p50.set(seconds(histogram.percentile(50)));
      stats.p90.set(seconds(histogram.percentile(90)));
      stats.p99.set(seconds(histogram.percentile(99)));
      histogram.reset();
    },
  });
  const gauge = (name: string, help: string): Gauge => new Gauge({ name, help, registers });
  const stats = {
    min: gauge('nodejs_eventloop_lag_min_seconds', 'The minimum recorded event loop delay.'),
    max: gauge('nodejs_eventloop_lag_max_seconds', 'The maximum recorded event loop delay.'),
    mean: gauge('nodejs_eventloop_lag_mean_seconds', 'The mean of the recorded event loop delays.'),
    p50: gauge('nodejs_eventloop_lag_p50_seconds', 'The 50th percentile of the recorded event loop delays.'),
    p90: gauge('nodejs_eventloop_lag_p90_seconds', 'The 90th percentile of the recorded event loop delays.'),
    p99: gauge('nodejs_eventloop_lag_p99_seconds', 'The 99th percentile of the recorded event loop delays.'),
  };
}

/** The reload health every daemon with a config file exposes. Starts as "loaded now". */
export class ReloadMetrics {
  readonly successful: Gauge;
  readonly timestamp: Gauge;
  readonly reloads: Counter<'result'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.successful = new Gauge({ name: 'cachemon_config_last_reload_successful', help: 'Whether the last configuration reload succeeded.', registers });
    this.timestamp = new Gauge({ name: 'cachemon_config_last_reload_success_timestamp_seconds', help: 'When the configuration was last loaded successfully.', registers });
    this.reloads = new Counter({
      name: 'cachemon_config_reloads_total',
      help: 'Configuration reloads (reload endpoint, SIGHUP), by result (success, failure).',
      labelNames: ['result'],
      registers,
    });
    this.successful.set(1);
    this.timestamp.set(Date.now() / 1000);
  }

  succeeded(nowMs: number = Date.now()): void {
    this.successful.set(1);
    this.timestamp.set(nowMs / 1000);
    this.reloads.inc({ result: 'success' });
  }

  failed(): void {
    this.successful.set(0);
    this.reloads.inc({ result: 'failure' });
  }
}

export function createReloadMetrics(registry: Registry): ReloadMetrics {
  return new ReloadMetrics(registry);
}

/**
 * Reads the next config for a reload. When it cannot be read or is invalid: recorded, logged,
 * rethrown; the caller keeps its running config.
 */
export function loadForReload<T>(load: () => T, metrics: ReloadMetrics, logger: Logger): T {
  try {
    return load();
  } catch (err) {
    metrics.failed();
    logger.error({ error: errorMessage(err) }, 'configuration reload refused; the running configuration stays');
    throw err;
  }
}

/** `cachemon_build_info` (value 1): version, Node.js version, component, and any labels the daemon adds. */
export function registerBuildInfo(registry: Registry, labels: () => Readonly<Record<string, string>>): void {
  const names = ['version', 'nodejs', 'component', ...Object.keys(labels()).filter((k) => !['version', 'nodejs', 'component'].includes(k))];
  new Gauge({
    name: 'cachemon_build_info',
    help: 'Build of the daemon (value 1).',
    labelNames: names,
    registers: [registry],
    collect() {
      this.reset();
      this.set({ nodejs: process.version, ...labels() }, 1);
    },
  });
}

/** How long scrapes take and how many joined one already running, by path: every exporter's. */
export function createScrapeMetrics(registry: Registry): { readonly duration: Histogram<'path'>; readonly shared: Counter<'path'> } {
  const registers = [registry];
  return {
    duration: new Histogram({
      name: 'cachemon_scrape_duration_seconds',
      help: 'Time to collect and render a scrape, by path.',
      labelNames: ['path'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    shared: new Counter({
      name: 'cachemon_scrapes_shared_total',
      help: 'Scrapes answered by joining a collection already in flight, by path.',
      labelNames: ['path'],
      registers,
    }),
  };
}
