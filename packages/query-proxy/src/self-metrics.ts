import { Counter, Gauge, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import { createReloadMetrics, registerBuildInfo } from '@cachemon/core';
import type { ReloadMetrics } from '@cachemon/core';
import type { QueryProxyConfig } from './config.js';

/** Latency buckets: a cached dashboard query takes a millisecond, a 2-year range seconds. */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The query proxy's own health, `cachemon_*`, on its /metrics. */
export class ProxyMetrics {
  readonly requests: Counter<'endpoint' | 'decision'>;
  readonly requestDuration: Histogram<'endpoint'>;
  readonly groupDuration: Histogram<'group' | 'endpoint'>;
  readonly groupErrors: Counter<'group' | 'kind'>;
  readonly warnings: Counter<'endpoint'>;
  readonly replicaErrors: Counter<'group' | 'replica' | 'kind'>;
  readonly samplesFilled: Counter<'group'>;
  readonly reload: ReloadMetrics;

  constructor(registry: Registry, config: () => QueryProxyConfig, version: string) {
    const registers = [registry];
    registerBuildInfo(registry, () => ({ version, component: 'query-proxy' }));
    this.requests = new Counter({
      name: 'cachemon_query_proxy_requests_total',
      help: 'API requests by endpoint and route decision: single (one group, forwarded), several (asked each, merged), none (no group holds such series: empty), spanning (needs series of different groups: refused with a warning), invalid (refused: bad query or parameters).',
      labelNames: ['endpoint', 'decision'],
      registers,
    });
    this.requestDuration = new Histogram({
      name: 'cachemon_query_proxy_request_duration_seconds',
      help: 'Time to answer an API request, by endpoint (until the answer is complete).',
      labelNames: ['endpoint'],
      buckets: BUCKETS,
      registers,
    });
    this.groupDuration = new Histogram({
      name: 'cachemon_query_proxy_group_request_duration_seconds',
      help: "Time a server group took to answer, by group and endpoint (to the answer's headers when streamed, to its end when merged).",
      labelNames: ['group', 'endpoint'],
      buckets: BUCKETS,
      registers,
    });
    this.groupErrors = new Counter({
      name: 'cachemon_query_proxy_group_errors_total',
      help: 'Requests a server group did not answer, by group and kind: timeout, unavailable (every replica unreachable or failing), canceled (the client went away).',
      labelNames: ['group', 'kind'],
      registers,
    });
    this.warnings = new Counter({
      name: 'cachemon_query_proxy_answers_with_warnings_total',
      help: 'Answers that carried warnings (series in two groups, cross-group aggregation, a failed group with ignore_error, a spanning query), by endpoint.',
      labelNames: ['endpoint'],
      registers,
    });
    this.replicaErrors = new Counter({
      name: 'cachemon_query_proxy_replica_errors_total',
      help: 'Requests a replica (a target of a server group) failed, by group, replica and kind: timeout (no answer in its time), unavailable (refused, 5xx, broken off); whether or not another replica answered for the group.',
      labelNames: ['group', 'replica', 'kind'],
      registers,
    });
    this.samplesFilled = new Counter({
      name: 'cachemon_query_proxy_replica_samples_filled_total',
      help: "Samples of merged answers taken from a replica into another's hole (a restart, a lost scrape), by group.",
      labelNames: ['group'],
      registers,
    });
    this.reload = createReloadMetrics(registry, config().file);
    new Gauge({
      name: 'cachemon_query_proxy_server_group_replicas',
      help: 'Stores (replicas) configured in each server group.',
      labelNames: ['group'],
      registers,
      collect() {
        this.reset();
        for (const group of config().groups) this.set({ group: group.name }, group.targets.length);
      },
    });
  }
}
