/**
 * The daemons' process_* and nodejs_* metrics: prom-client's default set (same names, help, types
 * and labels, so dashboards made for it work), without `nodejs_eventloop_lag_stddev_seconds`,
 * written straight to exposition text.
 *
 * Why not prom-client's collectDefaultMetrics: reading its ~30 gauges through a registry took
 * ~0.7 ms of the event loop per scrape (1-1.5 ms under load), most of it the registry's generic
 * per-metric and per-label machinery rather than the readings, which take ~0.1 ms (one
 * /proc/self/status, the /proc/self/fd count, V8's heap statistics). An exporter reads them while
 * its targets answer, so that time delayed the answers' handling. The set is fixed, so it is
 * written with the exposition writer directly (bench/coordination-exporter README: "What a scrape
 * is made of").
 *
 * `nodejs_eventloop_lag_stddev_seconds` is left out: Node works out a standard deviation by
 * walking every bucket of its event-loop histogram, ~0.6 ms per scrape. min, max, mean and
 * p50/p90/p99 describe the spread.
 */
import { closeSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { constants as perfConstants, monitorEventLoopDelay, PerformanceObserver, type IntervalHistogram } from 'node:perf_hooks';
import { getHeapSpaceStatistics, getHeapStatistics, type HeapSpaceInfo } from 'node:v8';
import { ExpositionWriter, renderLabels } from './exposition.js';

/** prom-client's buckets for nodejs_gc_duration_seconds. */
const GC_BUCKETS = [0.001, 0.01, 0.1, 1, 2, 5];
const GC_KINDS: Readonly<Record<number, string>> = {
  [perfConstants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [perfConstants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [perfConstants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [perfConstants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

/** The nodejs_heap_space_* families: name, help, and the value from V8's statistics of one space. */
const HEAP_SPACE_FAMILIES: ReadonlyArray<readonly [string, string, (space: HeapSpaceInfo) => number]> = [
  ['nodejs_heap_space_size_total_bytes', 'Process heap space size total from Node.js in bytes.', (s) => s.space_size],
  ['nodejs_heap_space_size_used_bytes', 'Process heap space size used from Node.js in bytes.', (s) => s.space_used_size],
  ['nodejs_heap_space_size_available_bytes', 'Process heap space size available from Node.js in bytes.', (s) => s.space_available_size],
];

interface GcKind {
  /** Cumulative counts per bucket of GC_BUCKETS (+Inf is `count`). */
  readonly buckets: number[];
  sum: number;
  count: number;
}

/**
 * How many file descriptors the process has open. Linux 6.2 and later give the count as the size
 * of /proc/self/fd: one stat(2), ~3 us, where listing the directory takes ~60 us with the ~120
 * descriptors of an exporter of 100 nodes, ~230 us at 500 (bench/core/process-metrics.mjs; it is
 * read on every scrape). Older kernels give 0 there: then the listing, less the descriptor it used
 * itself (as prom-client counts).
 */
export function countOpenFds(): number {
  const size = statSync('/proc/self/fd').size;
  return size > 0 ? size : readdirSync('/proc/self/fd').length - 1;
}

/** Counts of `items` by `key` (prom-client's grouping of resources, handles and requests); items without one are left out. */
function countBy<T>(items: readonly T[], key: (item: T) => string | undefined): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) {
    const name = key(item);
    if (name !== undefined) counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return counts;
}

const constructorName = (item: unknown): string | undefined => (item as { constructor?: { name?: string } } | null)?.constructor?.name;

/** One family of one unlabelled sample. */
function single(out: ExpositionWriter, name: string, type: 'gauge' | 'counter', help: string, value: number): void {
  out.family(name, type, help).sample('', value);
}

/** A family of `type` label values, then its total. */
function grouped(out: ExpositionWriter, name: string, help: string, totalHelp: string, counts: ReadonlyMap<string, number>, total: number): void {
  out.family(name, 'gauge', help);
  for (const [type, count] of counts) out.sample(renderLabels({ type }), count);
  single(out, `${name}_total`, 'gauge', totalHelp, total);
}

/**
 * One buffer for /proc/self/status (~1.5 KB; the fields read are in its first kilobyte). Read with
 * one read(2) into it: readFileSync takes ~0.3 ms for a procfs file (its size reads as 0, so it
 * reads in 64 KB chunks until a read returns nothing, and the kernel writes the text out again for
 * that second read) against ~0.04 ms.
 */
const statusBuffer = Buffer.allocUnsafeSlow(8192);

/** /proc/self/status as text; undefined where there is no procfs. */
function readStatusText(): string | undefined {
  let fd: number;
  try {
    fd = openSync('/proc/self/status', 'r');
  } catch {
    return undefined;
  }
  try {
    const n = readSync(fd, statusBuffer, 0, statusBuffer.length, 0);
    // Filled up: a status larger than expected, read whole the slow way.
    return n < statusBuffer.length ? statusBuffer.toString('latin1', 0, n) : readFileSync('/proc/self/status', 'latin1');
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** VmRSS, VmSize and VmData of /proc/self/status, in bytes (undefined where there is no procfs). */
function readStatus(): { rss: number; virtual: number; data: number } | undefined {
  const status = readStatusText();
  if (status === undefined) return undefined;
  const kb = (field: string): number => {
    const at = status.indexOf(`\n${field}:`);
    return at < 0 ? Number.NaN : Number.parseInt(status.slice(at + field.length + 2, status.indexOf('\n', at + 1)).trim(), 10) * 1024;
  };
  return { rss: kb('VmRSS'), virtual: kb('VmSize'), data: kb('VmData') };
}

/** `Max open files` of /proc/self/limits (soft limit), as prom-client reads it: once. */
function readMaxFds(): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const value = Number(line?.split(/ {2,}/)[1]);
    return Number.isFinite(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

export class ProcessMetrics {
  readonly #startTime = Math.round(Date.now() / 1000 - process.uptime());
  readonly #maxFds = readMaxFds();
  /** nodejs_version_info's labels, prom-client's. */
  readonly #versionLabels: string;
  readonly #gc = new Map<string, GcKind>();
  readonly #observer: PerformanceObserver;
  readonly #delay: IntervalHistogram;
  /** nodejs_eventloop_lag_seconds: how long an immediate waited, measured at one read and shown at the next. */
  #lag = 0;

  constructor() {
    const [major, minor, patch] = process.versions.node.split('.');
    this.#versionLabels = renderLabels({ version: process.version, major: major!, minor: minor!, patch: patch! });
    this.#observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) this.#observeGc((entry as { detail?: { kind?: number } }).detail, entry.duration / 1000);
    });
    this.#observer.observe({ entryTypes: ['gc'] });
    this.#delay = monitorEventLoopDelay({ resolution: 10 });
    this.#delay.enable();
  }

  /** The process metrics as exposition text; resets the event-loop statistics (each read covers the time since the last). */
  text(): string {
    const out = new ExpositionWriter();
    const cpu = process.cpuUsage();
    const user = cpu.user / 1e6;
    const system = cpu.system / 1e6;
    single(out, 'process_cpu_user_seconds_total', 'counter', 'Total user CPU time spent in seconds.', user);
    single(out, 'process_cpu_system_seconds_total', 'counter', 'Total system CPU time spent in seconds.', system);
    single(out, 'process_cpu_seconds_total', 'counter', 'Total user and system CPU time spent in seconds.', user + system);
    single(out, 'process_start_time_seconds', 'gauge', 'Start time of the process since unix epoch in seconds.', this.#startTime);
    const status = readStatus();
    single(out, 'process_resident_memory_bytes', 'gauge', 'Resident memory size in bytes.', status?.rss ?? process.memoryUsage.rss());
    if (status !== undefined) {
      single(out, 'process_virtual_memory_bytes', 'gauge', 'Virtual memory size in bytes.', status.virtual);
      single(out, 'process_heap_bytes', 'gauge', 'Process heap size in bytes.', status.data);
    }
    if (process.platform === 'linux') {
      let fds: number | undefined;
      try {
        fds = countOpenFds();
      } catch {
        // no procfs: left out, as prom-client does
      }
      if (fds !== undefined) single(out, 'process_open_fds', 'gauge', 'Number of open file descriptors.', fds);
    }
    if (this.#maxFds !== undefined) single(out, 'process_max_fds', 'gauge', 'Maximum number of open file descriptors.', this.#maxFds);

    const resources = process.getActiveResourcesInfo();
    grouped(
      out,
      'nodejs_active_resources',
      'Number of active resources that are currently keeping the event loop alive, grouped by async resource type.',
      'Total number of active resources.',
      countBy(resources, (type) => type),
      resources.length,
    );
    const internals = process as unknown as { _getActiveHandles?: () => unknown[]; _getActiveRequests?: () => unknown[] };
    const handles = internals._getActiveHandles?.() ?? [];
    grouped(
      out,
      'nodejs_active_handles',
      'Number of active libuv handles grouped by handle type. Every handle type is C++ class name.',
      'Total number of active handles.',
      countBy(handles, constructorName),
      handles.length,
    );
    const requests = internals._getActiveRequests?.() ?? [];
    grouped(
      out,
      'nodejs_active_requests',
      'Number of active libuv requests grouped by request type. Every request type is C++ class name.',
      'Total number of active requests.',
      countBy(requests, constructorName),
      requests.length,
    );

    const heap = getHeapStatistics();
    single(out, 'nodejs_heap_size_total_bytes', 'gauge', 'Process heap size from Node.js in bytes.', heap.total_heap_size);
    single(out, 'nodejs_heap_size_used_bytes', 'gauge', 'Process heap size used from Node.js in bytes.', heap.used_heap_size);
    single(out, 'nodejs_external_memory_bytes', 'gauge', 'Node.js external memory size in bytes.', (heap as { external_memory?: number }).external_memory ?? process.memoryUsage().external);
    const spaces = getHeapSpaceStatistics().map((s) => ({ labels: renderLabels({ space: s.space_name.replace(/_space$/, '') }), s }));
    for (const [name, help, value] of HEAP_SPACE_FAMILIES) {
      out.family(name, 'gauge', help);
      for (const { labels, s } of spaces) out.sample(labels, value(s));
    }
    out.family('nodejs_version_info', 'gauge', 'Node.js version info.').sample(this.#versionLabels, 1);

    out.family('nodejs_gc_duration_seconds', 'histogram', 'Garbage collection duration by kind, one of major, minor, incremental or weakcb.');
    for (const [kind, gc] of this.#gc) {
      for (let b = 0; b < GC_BUCKETS.length; b++) out.sample(renderLabels({ le: String(GC_BUCKETS[b]), kind }), gc.buckets[b]!, '_bucket');
      out.sample(renderLabels({ le: '+Inf', kind }), gc.count, '_bucket');
      const labels = renderLabels({ kind });
      out.sample(labels, gc.sum, '_sum');
      out.sample(labels, gc.count, '_count');
    }
    this.#eventLoopLag(out);
    return out.toString();
  }

  /** As prom-client's registry: a promise of the text. */
  metrics(): Promise<string> {
    return Promise.resolve(this.text());
  }

  /** Stops observing (the event-loop sampler and the GC observer). */
  close(): void {
    this.#observer.disconnect();
    this.#delay.disable();
  }

  #observeGc(detail: { kind?: number } | undefined, seconds: number): void {
    const kind = detail?.kind === undefined ? undefined : GC_KINDS[detail.kind];
    if (kind === undefined) return;
    let gc = this.#gc.get(kind);
    if (gc === undefined) this.#gc.set(kind, (gc = { buckets: GC_BUCKETS.map(() => 0), sum: 0, count: 0 }));
    for (let b = 0; b < GC_BUCKETS.length; b++) if (seconds <= GC_BUCKETS[b]!) gc.buckets[b]!++;
    gc.sum += seconds;
    gc.count++;
  }

  /** nodejs_eventloop_lag_*: the statistics of the 10 ms sampler since the last read, then reset. */
  #eventLoopLag(out: ExpositionWriter): void {
    const start = performance.now();
    setImmediate(() => {
      this.#lag = (performance.now() - start) / 1000;
    });
    const h = this.#delay;
    // Before its first sample the histogram's min is a huge placeholder and its mean NaN: 0 instead.
    const recorded = h.count > 0;
    const seconds = (ns: number): number => (recorded ? ns / 1e9 : 0);
    single(out, 'nodejs_eventloop_lag_seconds', 'gauge', 'Lag of event loop in seconds.', this.#lag);
    single(out, 'nodejs_eventloop_lag_min_seconds', 'gauge', 'The minimum recorded event loop delay.', seconds(h.min));
    single(out, 'nodejs_eventloop_lag_max_seconds', 'gauge', 'The maximum recorded event loop delay.', seconds(h.max));
    single(out, 'nodejs_eventloop_lag_mean_seconds', 'gauge', 'The mean of the recorded event loop delays.', seconds(h.mean));
    single(out, 'nodejs_eventloop_lag_p50_seconds', 'gauge', 'The 50th percentile of the recorded event loop delays.', seconds(h.percentile(50)));
    single(out, 'nodejs_eventloop_lag_p90_seconds', 'gauge', 'The 90th percentile of the recorded event loop delays.', seconds(h.percentile(90)));
    single(out, 'nodejs_eventloop_lag_p99_seconds', 'gauge', 'The 99th percentile of the recorded event loop delays.', seconds(h.percentile(99)));
    h.reset();
  }
}

/** The process metrics of a daemon (a sampler and a GC observer of their own per instance). */
export function createProcessMetrics(): ProcessMetrics {
  return new ProcessMetrics();
}
