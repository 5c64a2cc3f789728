/**
 * prom-client's default collectors without `nodejs_active_*_total` (promtool rejects a `_total`
 * gauge), and `nodejs_gc_duration_seconds` observed here: prom-client's sees one entry per batch.
 */
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { collectDefaultMetrics, Histogram, Registry } from 'prom-client';

const REJECTED_BY_PROMTOOL = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

const GC_KINDS: Readonly<Record<number, string>> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

export class ProcessMetrics {
  readonly #registry = new Registry();

  constructor() {
    collectDefaultMetrics({ register: this.#registry });
    for (const name of [...REJECTED_BY_PROMTOOL, 'nodejs_gc_duration_seconds']) this.#registry.removeSingleMetric(name);
    const gc = new Histogram({
      name: 'nodejs_gc_duration_seconds',
      help: 'Garbage collection duration by kind, one of major, minor, incremental or weakcb.',
      labelNames: ['kind'],
      buckets: [0.001, 0.01, 0.1, 1, 2, 5],
      registers: [this.#registry],
    });
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        const kind = GC_KINDS[(entry as { detail?: { kind?: number } }).detail?.kind ?? -1];
        if (kind !== undefined) gc.observe({ kind }, entry.duration / 1000);
      }
    }).observe({ entryTypes: ['gc'] });
  }

  /** The metrics as exposition text, read now (the event-loop statistics cover the time since the last read). */
  metrics(): Promise<string> {
    return this.#registry.metrics();
  }
}

/** The process metrics of a daemon (an event-loop sampler and a GC observer of their own per instance). */
export function createProcessMetrics(): ProcessMetrics {
  return new ProcessMetrics();
}
