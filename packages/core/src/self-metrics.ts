/**
 * The daemons' own metrics. A fresh registry (not prom-client's global one) so tests and several
 * servers in one process never see each other's series.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { errorMessage } from './errors.js';
import type { Logger } from './log.js';

/**
 * Registry with prom-client's process_* and nodejs_* metrics. Daemons keep their cachemon_* ones
 * in a registry of their own: the process metrics do not depend on a scrape (reading them takes
 * /proc reads and an event-loop turn), so a daemon can start reading them while it waits for what
 * the scrape does depend on.
 *
 * The nodejs_eventloop_lag_* family is prom-client's names and meaning, measured by
 * EventLoopLagSampler instead of prom-client's: reading the standard deviation of its HDR histogram
 * walks every bucket, ~0.6 ms per scrape, as much as all the other process metrics together.
 */
export function createSelfRegistry(): Registry {
  const registry = new Registry();
  // prom-client's own sampler would still fire every 10 ms: once in 24 days instead (its largest interval).
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 2 ** 31 - 1 });
  for (const name of Object.values(EVENT_LOOP_LAG_NAMES)) registry.removeSingleMetric(name);
  registerEventLoopLag(registry, new EventLoopLagSampler());
  return registry;
}

/** prom-client's event loop lag family, by statistic. */
const EVENT_LOOP_LAG_NAMES = {
  lag: 'nodejs_eventloop_lag_seconds',
  min: 'nodejs_eventloop_lag_min_seconds',
  max: 'nodejs_eventloop_lag_max_seconds',
  mean: 'nodejs_eventloop_lag_mean_seconds',
  stddev: 'nodejs_eventloop_lag_stddev_seconds',
  p50: 'nodejs_eventloop_lag_p50_seconds',
  p90: 'nodejs_eventloop_lag_p90_seconds',
  p99: 'nodejs_eventloop_lag_p99_seconds',
} as const;

/** Buckets of the sampler: 1 % apart from 10 µs, so ~1,600 cover up to 100 s. */
const LAG_BUCKET_RATIO = 1.01;
const LAG_BUCKET_FIRST_MS = 0.01;
const LAG_BUCKETS = Math.ceil(Math.log(100_000 / LAG_BUCKET_FIRST_MS) / Math.log(LAG_BUCKET_RATIO));

/**
 * Event loop delay as perf_hooks.monitorEventLoopDelay measures it: a timer every `resolutionMs`
 * records the time since it last fired (an idle loop records about the resolution itself). Counts
 * go to log-spaced buckets 1 % apart (percentiles within 0.5 %), sum and sum of squares give mean
 * and standard deviation exactly; reading them all takes a few microseconds.
 */
export class EventLoopLagSampler {
  readonly #buckets = new Uint32Array(LAG_BUCKETS);
  #count = 0;
  #sum = 0;
  #sumSquares = 0;
  #min = Number.POSITIVE_INFINITY;
  #max = 0;
  #last = performance.now();

  constructor(resolutionMs = 10) {
    if (resolutionMs > 0) {
      setInterval(() => {
        const now = performance.now();
        this.record(now - this.#last);
        this.#last = now;
      }, resolutionMs).unref();
    }
  }

  /** One delay, in milliseconds. */
  record(ms: number): void {
    const value = Math.max(0, ms);
    this.#count++;
    this.#sum += value;
    this.#sumSquares += value * value;
    if (value < this.#min) this.#min = value;
    if (value > this.#max) this.#max = value;
    const bucket = value <= LAG_BUCKET_FIRST_MS ? 0 : Math.floor(Math.log(value / LAG_BUCKET_FIRST_MS) / Math.log(LAG_BUCKET_RATIO));
    this.#buckets[Math.min(LAG_BUCKETS - 1, bucket)]!++;
  }

  get count(): number {
    return this.#count;
  }

  /** min, max, mean, stddev and percentiles in milliseconds; all 0 before the first record. */
  statistics(): { min: number; max: number; mean: number; stddev: number; p50: number; p90: number; p99: number } {
    const n = this.#count;
    if (n === 0) return { min: 0, max: 0, mean: 0, stddev: 0, p50: 0, p90: 0, p99: 0 };
    const mean = this.#sum / n;
    return {
      min: this.#min,
      max: this.#max,
      mean,
      stddev: Math.sqrt(Math.max(0, this.#sumSquares / n - mean * mean)),
      p50: this.#percentile(50),
      p90: this.#percentile(90),
      p99: this.#percentile(99),
    };
  }

  /** Starts a new period (a scrape reads, then resets, as prom-client does). */
  reset(): void {
    this.#buckets.fill(0);
    this.#count = 0;
    this.#sum = 0;
    this.#sumSquares = 0;
    this.#min = Number.POSITIVE_INFINITY;
    this.#max = 0;
  }

  /** The value at percentile `p`: the middle of its bucket, kept within the observed min and max. */
  #percentile(p: number): number {
    const rank = Math.max(1, Math.ceil((p / 100) * this.#count));
    let seen = 0;
    for (let i = 0; i < LAG_BUCKETS; i++) {
      seen += this.#buckets[i]!;
      if (seen >= rank) {
        const middle = i === 0 ? LAG_BUCKET_FIRST_MS / 2 : LAG_BUCKET_FIRST_MS * LAG_BUCKET_RATIO ** (i + 0.5);
        return Math.min(this.#max, Math.max(this.#min, middle));
      }
    }
    return this.#max;
  }
}

/** prom-client's nodejs_eventloop_lag_* gauges, from a sampler. */
function registerEventLoopLag(registry: Registry, sampler: EventLoopLagSampler): void {
  const registers = [registry];
  // A registry reads its metrics in the order they were registered: this one, which sets the
  // statistics, comes first. As prom-client: the lag itself is how long an immediate waits,
  // measured at one scrape and shown at the next.
  const lag: Gauge = new Gauge({
    name: EVENT_LOOP_LAG_NAMES.lag,
    help: 'Lag of event loop in seconds.',
    registers,
    collect() {
      const start = performance.now();
      setImmediate(() => lag.set((performance.now() - start) / 1000));
      const values = sampler.statistics();
      for (const key of Object.keys(stats) as Array<keyof typeof stats>) stats[key].set(values[key] / 1000);
      sampler.reset();
    },
  });
  const gauge = (name: string, help: string): Gauge => new Gauge({ name, help, registers });
  const stats = {
    min: gauge(EVENT_LOOP_LAG_NAMES.min, 'The minimum recorded event loop delay.'),
    max: gauge(EVENT_LOOP_LAG_NAMES.max, 'The maximum recorded event loop delay.'),
    mean: gauge(EVENT_LOOP_LAG_NAMES.mean, 'The mean of the recorded event loop delays.'),
    stddev: gauge(EVENT_LOOP_LAG_NAMES.stddev, 'The standard deviation of the recorded event loop delays.'),
    p50: gauge(EVENT_LOOP_LAG_NAMES.p50, 'The 50th percentile of the recorded event loop delays.'),
    p90: gauge(EVENT_LOOP_LAG_NAMES.p90, 'The 90th percentile of the recorded event loop delays.'),
    p99: gauge(EVENT_LOOP_LAG_NAMES.p99, 'The 99th percentile of the recorded event loop delays.'),
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
