/**
 * ZooKeeper `mntr` keys that are counters, summary parts or text; anything else is a gauge. From
 * 3.8's ServerMetrics.java and DefaultMetricsProvider, plus the 3.4/3.5 and 3.9 names (key
 * spelling: see names.ts). Legacy gauges look like summary parts (zk_avg_latency), so a key is
 * one only when its rest is in SUMMARY_NAMES, tried first (`quorum_ack_latency` ends like the set
 * `ack_latency`), or ends with `_` and a SUMMARY_SET_NAMES entry.
 */

/**
 * Full mntr keys of plain counters: ServerMetrics' getCounter(...) of 3.8, the ServerStats
 * values registered as gauges that only ever increment, and 3.4/3.5 and 3.9+ counters.
 * zk_add_dead_watcher_stall_time accumulates stall time, so it is a counter despite its name;
 * zk_uptime only grows too, but is an elapsed time, kept a gauge.
 */
export const COUNTER_KEYS: ReadonlySet<string> = new Set<string>([
  // ServerMetrics.getCounter(...) -- 3.8
  'zk_looking_count',
  'zk_diff_count',
  'zk_snap_count',
  'zk_commit_count',
  'zk_connection_request_count',
  'zk_connection_rejected',
  'zk_bytes_received_count',
  'zk_unrecoverable_error_count',
  'zk_add_dead_watcher_stall_time',
  'zk_dead_watchers_queued',
  'zk_dead_watchers_cleared',
  'zk_response_packet_cache_hits',
  'zk_response_packet_cache_misses',
  'zk_response_packet_get_children_cache_hits',
  'zk_response_packet_get_children_cache_misses',
  'zk_ensemble_auth_success',
  'zk_ensemble_auth_fail',
  'zk_ensemble_auth_skip',
  'zk_prep_processor_request_queued',
  'zk_outstanding_changes_queued',
  'zk_outstanding_changes_removed',
  'zk_revalidate_count',
  'zk_connection_drop_count',
  'zk_connection_revalidate_count',
  'zk_sessionless_connections_expired',
  'zk_stale_sessions_expired',
  'zk_request_commit_queued',
  'zk_throttled_ops',
  'zk_learner_proposal_received_count',
  'zk_learner_commit_received_count',
  'zk_sync_processor_request_queued',
  'zk_proposal_count',
  'zk_quit_leading_due_to_disloyal_voter',
  'zk_stale_requests',
  'zk_stale_requests_dropped',
  'zk_stale_replies',
  'zk_request_throttle_wait_count',
  'zk_large_requests_rejected',
  'zk_digest_mismatches_count',
  'zk_unsuccessful_handshake',
  'zk_insecure_admin_count',
  'zk_tls_handshake_exceeded',
  'zk_cnxn_closed_without_zk_server_running',
  'zk_skip_learner_request_to_next_processor_count',
  'zk_requests_not_forwarded_to_commit_processor',
  'zk_response_bytes',
  'zk_watch_bytes',
  // ServerStats monotonic values exposed through registerGauge(...)
  'zk_packets_received',
  'zk_packets_sent',
  'zk_auth_failed_count',
  'zk_non_mtls_remote_conn_count',
  'zk_non_mtls_local_conn_count',
  // 3.4 / 3.5 legacy MonitorCommand
  'zk_fsync_threshold_exceed_count',
  // 3.9+ (admin snapshot / restore commands)
  'zk_snapshot_error_count',
  'zk_snapshot_rate_limited_count',
  'zk_restore_error_count',
  'zk_restore_rate_limited_count',
]);

/** Base names of counter sets (3.9+), printed as zk_<key>_<name>. */
export const COUNTER_SET_NAMES: ReadonlySet<string> = new Set<string>([
  'quota_exceeded_error_per_namespace', // 3.9+, QuotaMetricsUtils
]);

/** Base names of plain summaries; the ADVANCED ones also print the pNN parts. */
export const SUMMARY_NAMES: ReadonlySet<string> = new Set<string>([
  // DetailLevel.BASIC (AvgMinMaxCounter)
  'fsynctime',
  'snapshottime',
  'dbinittime',
  'follower_sync_time',
  'observer_sync_time',
  'election_time',
  'connection_token_deficit',
  'inflight_snap_count',
  'inflight_diff_count',
  'node_created_watch_count',
  'node_deleted_watch_count',
  'node_changed_watch_count',
  'node_children_watch_count',
  'prep_processor_queue_size',
  'prep_process_time',
  'proposal_process_time',
  'unavailable_time',
  'leader_unavailable_time',
  'requests_in_session_queue',
  'pending_session_queue_size',
  'reads_after_write_in_session_queue',
  'reads_issued_from_session_queue',
  'session_queues_drained',
  'time_waiting_empty_pool_in_commit_processor_read_ms',
  'write_batch_time_in_commit_processor',
  'concurrent_request_processing_in_commit_processor',
  'read_commit_proc_req_queued',
  'write_commit_proc_req_queued',
  'commit_commit_proc_req_queued',
  'read_commit_proc_issued',
  'write_commit_proc_issued',
  'commit_process_time',
  'startup_txns_loaded',
  'startup_txns_load_time',
  'startup_snap_load_time',
  'sync_processor_queue_size',
  'sync_process_time',
  'sync_processor_batch_size',
  'netty_queued_buffer_capacity',
  'learner_request_processor_queue_size',
  'socket_closing_time',
  // DetailLevel.ADVANCED (AvgMinMaxPercentileCounter, adds p50/p95/p99/p999)
  'readlatency',
  'updatelatency',
  'propagation_latency',
  'dead_watchers_cleaner_latency',
  'prep_processor_queue_time_ms',
  'close_session_prep_time',
  'read_commitproc_time_ms',
  'write_commitproc_time_ms',
  'local_write_committed_time_ms',
  'server_write_committed_time_ms',
  'om_proposal_process_time_ms',
  'om_commit_process_time_ms',
  'read_final_proc_time_ms',
  'write_final_proc_time_ms',
  'proposal_latency',
  'proposal_ack_creation_latency',
  'commit_propagation_latency',
  'sync_processor_queue_and_flush_time_ms',
  'sync_processor_queue_time_ms',
  'sync_processor_queue_flush_time_ms',
  'quorum_ack_latency',
  'request_throttle_queue_time_ms',
  'jvm_pause_time_ms',
  // 3.9+ (admin restore command)
  'restore_time',
]);

/** Base names of summary sets (printed as zk_<part>_<key>_<name>). */
export const SUMMARY_SET_NAMES: ReadonlySet<string> = new Set<string>([
  'write_per_namespace', // BASIC, key = top-level znode
  'read_per_namespace', // BASIC, key = top-level znode
  'learner_handler_qp_size', // BASIC, key = learner sid (leader / observer master)
  'learner_handler_qp_time_ms', // ADVANCED, key = learner sid
  'ack_latency', // ADVANCED, key = acking sid (leader; every ackLoggingFrequency-th zxid)
]);

/** Keys whose value is text; zk_observer_master_id is an identifier (or "null"), so a label. */
export const TEXT_KEYS: ReadonlySet<string> = new Set<string>([
  // An unknown key with a text value is skipped (mntr.ts): a release that adds one is still read.
  'zk_version',
  'zk_server_state',
  'zk_peer_state',
  'zk_observer_master_id',
]);
