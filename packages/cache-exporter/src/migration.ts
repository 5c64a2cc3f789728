/**
 * What each metric of prometheus/memcached_exporter is called here, for docs/metrics.md. The
 * generator checks every cachemon name against the catalogue, so a rename cannot leave this
 * table behind.
 */
export interface MigrationRow {
  /** memcached_exporter's family (or families with a common stem). */
  readonly theirs: string;
  /** Where they read it: stats, stats settings, stats items, stats slabs. */
  readonly from: string;
  /** The cachemon families carrying the same figure (checked against the catalogue); none: see `note`. */
  readonly ours: readonly string[];
  readonly note?: string;
}

const row = (theirs: string, from: string, ours: readonly string[], note?: string): MigrationRow =>
  note === undefined ? { theirs, from, ours } : { theirs, from, ours, note };

const ONLY_MEMCACHED = 'plain memcached only (ARCUS has no such field); its value is in `arcus_stat{field="<field>"}`';

export const MEMCACHED_EXPORTER_MIGRATION: readonly MigrationRow[] = [
  row('memcached_up', 'stats', ['arcus_up']),
  row('memcached_uptime_seconds', 'stats', ['arcus_uptime_seconds']),
  row('memcached_time_seconds', 'stats', ['arcus_time_seconds']),
  row('memcached_version{version}', 'stats', ['arcus_version_info'], 'labels `version` and `libevent`'),
  row('memcached_process_user_cpu_seconds_total', 'stats', ['arcus_cpu_user_seconds_total']),
  row('memcached_process_system_cpu_seconds_total', 'stats', ['arcus_cpu_system_seconds_total']),
  row('memcached_read_bytes_total', 'stats', ['arcus_read_bytes_total']),
  row('memcached_written_bytes_total', 'stats', ['arcus_written_bytes_total']),
  row('memcached_current_connections', 'stats', ['arcus_connections']),
  row(
    'memcached_max_connections',
    'stats settings',
    ['arcus_max_connections', 'arcus_limit_connections'],
    'the setting, and the same limit as `stats` reports it',
  ),
  row('memcached_connections_total', 'stats', ['arcus_connections_total']),
  row(
    'memcached_connections_rejected_total',
    'stats',
    ['arcus_connections_rejected_total'],
    'ARCUS names the field `reject_connections`; memcached\'s `rejected_connections` is in `arcus_stat{field="rejected_connections"}`',
  ),
  row('memcached_connections_yielded_total', 'stats', ['arcus_connection_yields_total']),
  row('memcached_connections_listener_disabled_total', 'stats', [], `\`listen_disabled_num\`: ${ONLY_MEMCACHED}`),
  row('memcached_accepting_connections', 'stats', [], `\`accepting_conns\`: ${ONLY_MEMCACHED}`),
  row('memcached_current_bytes', 'stats', ['arcus_bytes']),
  row('memcached_limit_bytes', 'stats', ['arcus_limit_bytes']),
  row(
    'memcached_commands_total{command,status}',
    'stats',
    ['arcus_commands_total', 'arcus_command_hits_total', 'arcus_command_misses_total', 'arcus_command_badval_total'],
    'status `hit` / `miss` are the hits and misses families by `command`; `cas` `badval` is `arcus_command_badval_total`; `set` and `flush` are `arcus_commands_total{command}` (cas commands not subtracted from `set`, as the server counts them)',
  ),
  row('memcached_current_items', 'stats', ['arcus_items']),
  row('memcached_items_total', 'stats', ['arcus_items_total']),
  row('memcached_items_evicted_total', 'stats', ['arcus_items_evicted_total']),
  row('memcached_items_reclaimed_total', 'stats', ['arcus_items_reclaimed_total']),
  row(
    'memcached_item_no_memory_total',
    'stats',
    ['arcus_out_of_memory_total'],
    'ARCUS counts refused stores in `outofmemorys`; memcached\'s `store_no_memory` is in `arcus_stat{field="store_no_memory"}`',
  ),
  row('memcached_item_too_large_total', 'stats', [], `\`store_too_large\`: ${ONLY_MEMCACHED}`),
  row('memcached_direct_reclaims_total', 'stats', [], `\`direct_reclaims\`: ${ONLY_MEMCACHED}`),
  row(
    'memcached_lru_crawler_starts_total, _reclaimed_total, _items_checked_total, _moves_to_cold_total, _moves_to_warm_total, _moves_within_lru_total',
    'stats',
    [],
    `the LRU crawler (\`lru_crawler_starts\`, \`crawler_reclaimed\`, \`crawler_items_checked\`, \`moves_*\`): ${ONLY_MEMCACHED}`,
  ),
  row(
    'memcached_malloced_bytes',
    'stats',
    ['arcus_slab_malloced_bytes'],
    'read from `stats slabs` `total_malloced`, where ARCUS and memcached 1.6 report it',
  ),
  row('memcached_extstore_*', 'stats', [], `external storage: ${ONLY_MEMCACHED}`),
  row(
    'memcached_proxy_*, memcached_round_robin_fallback_total, memcached_unexpected_napi_ids_total',
    'stats',
    [],
    `memcached's proxy mode: ${ONLY_MEMCACHED}`,
  ),
  row(
    'memcached_lru_crawler_enabled, _sleep, _to_crawl, _maintainer_thread, _hot_percent, _warm_percent, _hot_max_factor, _warm_max_factor',
    'stats settings',
    ['arcus_setting'],
    'memcached only: `arcus_setting{field="lru_crawler"}` (1/0), `lru_crawler_sleep`, `lru_crawler_tocrawl`, `lru_maintainer_thread`, `hot_lru_pct`, `warm_lru_pct`, `hot_max_factor`, `warm_max_factor`, as the server prints them',
  ),
  row(
    'memcached_slab_current_items, _items_age_seconds, _items_*_total, _hot_items, _warm_items, _cold_items, _temporary_items, _hot_age_seconds, _warm_age_seconds, _lru_hits_total',
    'stats items',
    [],
    'not collected: `stats items` is one more request per node and scrape with a series per class and field, and the memory view it gives is in the slab families; the evictions and reclaims it splits by class are in the node totals above',
  ),
  row(
    'memcached_slab_chunk_size_bytes{slab}',
    'stats slabs',
    ['arcus_slab_chunk_size_bytes'],
    'label `slab_class`; with slabClasses on, like every per-class family',
  ),
  row('memcached_slab_chunks_per_page', 'stats slabs', ['arcus_slab_chunks_per_page']),
  row('memcached_slab_current_pages', 'stats slabs', ['arcus_slab_pages']),
  row('memcached_slab_current_chunks', 'stats slabs', ['arcus_slab_chunks']),
  row('memcached_slab_chunks_used', 'stats slabs', ['arcus_slab_used_chunks']),
  row('memcached_slab_chunks_free', 'stats slabs', ['arcus_slab_free_chunks']),
  row('memcached_slab_chunks_free_end', 'stats slabs', ['arcus_slab_free_end_chunks']),
  row(
    'memcached_slab_mem_requested_bytes',
    'stats items',
    ['arcus_slab_requested_bytes'],
    'ARCUS reports `mem_requested` in `stats slabs`; memcached 1.6 only in `stats items`, so there it has none',
  ),
  row(
    'memcached_slab_commands_total{slab,command,status}',
    'stats slabs',
    ['arcus_slab_class_stat'],
    'memcached only (ARCUS has no per-class command counts): `arcus_slab_class_stat{slab_class,field="get_hits"}`, `cmd_set`, `delete_hits`, `incr_hits`, `decr_hits`, `cas_hits`, `cas_badval`, `touch_hits`',
  ),
];
