/** The daemons' cachemon_* metrics, on registries of their own so servers in one process never share series. */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { errorMessage } from './errors.js';
import { markReported } from './signals.js';
import type { ConfigFileIdentity } from './config.js';
import type { Logger } from './log.js';

/**
 * The reload health every daemon with a config file exposes, and which file content it runs on.
 * Starts as "loaded now", from `file` when the config came from one.
 */
export class ReloadMetrics {
  readonly successful: Gauge;
  readonly timestamp: Gauge;
  readonly reloads: Counter<'result'>;
  readonly info: Gauge<'path' | 'sha256'>;

  constructor(registry: Registry, file?: ConfigFileIdentity, nowMs: number = Date.now()) {
    const registers = [registry];
    this.successful = new Gauge({
      name: 'cachemon_config_last_reload_successful',
      help: 'Whether the last configuration reload succeeded.',
      registers,
    });
    this.timestamp = new Gauge({
      name: 'cachemon_config_last_reload_success_timestamp_seconds',
      help: 'When the configuration was last loaded successfully.',
      registers,
    });
    this.reloads = new Counter({
      name: 'cachemon_config_reloads_total',
      help: 'Configuration reloads (reload endpoint, SIGHUP), by result (success, failure).',
      labelNames: ['result'],
      registers,
    });
    this.info = new Gauge({
      name: 'cachemon_config_info',
      help: 'The configuration file the daemon runs on, as last loaded successfully (value 1): its absolute path and the SHA-256 of the bytes it parsed.',
      labelNames: ['path', 'sha256'],
      registers,
    });
    this.successful.set(1);
    this.loaded(file, nowMs);
  }

  /** `file`: where the new config came from; a config from no file leaves no `cachemon_config_info`. */
  succeeded(file: ConfigFileIdentity | undefined, nowMs: number = Date.now()): void {
    this.successful.set(1);
    this.loaded(file, nowMs);
    this.reloads.inc({ result: 'success' });
  }

  failed(): void {
    this.successful.set(0);
    this.reloads.inc({ result: 'failure' });
  }

  private loaded(file: ConfigFileIdentity | undefined, nowMs: number): void {
    this.timestamp.set(nowMs / 1000);
    // One series: the file now running replaces the one before (a moved file changes the path).
    this.info.reset();
    if (file !== undefined) this.info.set({ path: file.path, sha256: file.sha256 }, 1);
  }
}

export function createReloadMetrics(registry: Registry, file?: ConfigFileIdentity, nowMs?: number): ReloadMetrics {
  return new ReloadMetrics(registry, file, nowMs);
}

/**
 * Reads the next config for a reload. When it cannot be read or is invalid: recorded, logged,
 * rethrown; the caller keeps its running config.
 */
export function loadForReload<T>(load: () => T, metrics: ReloadMetrics, logger: Logger): T {
  try {
    return load();
  } catch (err) {
    reloadRefused(err, metrics, logger);
    throw err;
  }
}

/**
 * A refused reload of the configuration (or of the web config, `what`): recorded, logged, and
 * marked so the SIGHUP handler does not log it a second time.
 */
export function reloadRefused(err: unknown, metrics: ReloadMetrics, logger: Logger, what = 'configuration'): void {
  metrics.failed();
  logger.error({ error: errorMessage(err) }, `${what} reload refused; the running ${what} stays`);
  markReported(err);
}

/**
 * Reads the web config file again for a reload (HttpServer.reloadWebConfig). When it is refused:
 * recorded, logged, rethrown; the running web config stays.
 */
export async function reloadWebConfigFor(
  server: { reloadWebConfig(): Promise<void> },
  metrics: ReloadMetrics,
  logger: Logger,
): Promise<void> {
  try {
    await server.reloadWebConfig();
  } catch (err) {
    reloadRefused(err, metrics, logger, 'web config');
    throw err;
  }
}

/** `cachemon_build_info` (value 1): version, Node.js version, component, and any labels the daemon adds. */
export function registerBuildInfo(registry: Registry, labels: () => Readonly<Record<string, string>>): void {
  const names = [
    'version',
    'nodejs',
    'component',
    ...Object.keys(labels()).filter((k) => !['version', 'nodejs', 'component'].includes(k)),
  ];
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
export function createScrapeMetrics(registry: Registry): {
  readonly duration: Histogram<'path'>;
  readonly shared: Counter<'path'>;
} {
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
