/**
 * Catalog of ZooKeeper `mntr` keys: which ones are counters, which belong to
 * summaries / summary sets, which carry text, and which only a leader prints.
 * Anything the exporter finds that is not classified here is a gauge.
 *
 * Sources: Apache ZooKeeper 3.8 (repository apache/zookeeper; the test fixtures
 * are real 3.8.0 replies). ServerMetrics.java was read at commit e4c175fb; that
 * copy lacks OBSERVER_SYNC_TIME ("observer_sync_time", BASIC), which 3.8.0
 * prints and Observer.java records, so it was added from the fixtures. Files read:
 *   zookeeper-server/src/main/java/org/apache/zookeeper/server/ServerMetrics.java
 *       every getCounter / getSummary / getSummarySet call with its DetailLevel
 *   zookeeper-server/src/main/java/org/apache/zookeeper/metrics/impl/DefaultMetricsProvider.java
 *       DefaultMetricsContext.getSummary/getSummarySet/dump
 *   zookeeper-server/src/main/java/org/apache/zookeeper/server/metric/SimpleCounter.java
 *   zookeeper-server/src/main/java/org/apache/zookeeper/server/metric/AvgMinMaxCounter.java
 *   zookeeper-server/src/main/java/org/apache/zookeeper/server/metric/AvgMinMaxCounterSet.java
 *   zookeeper-server/src/main/java/org/apache/zookeeper/server/metric/AvgMinMaxPercentileCounter.java
 *   zookeeper-server/src/main/java/org/apache/zookeeper/server/metric/AvgMinMaxPercentileCounterSet.java
 *   zookeeper-server/src/main/java/org/apache/zookeeper/server/metric/SimpleCounterSet.java (3.9+ only)
 *   zookeeper-server/src/main/java/org/apache/zookeeper/server/command/MonitorCommand.java
 *       (the 4lw `mntr`; admin/Commands.java MonitorCommand feeds the same two sources)
 *   zookeeper-server/src/main/java/org/apache/zookeeper/server/ZooKeeperServer.java
 *       registerMetrics() gauges, dumpMonitorValues()
 *   zookeeper-server/src/main/java/org/apache/zookeeper/server/quorum/QuorumZooKeeperServer.java
 *   zookeeper-server/src/main/java/org/apache/zookeeper/server/quorum/LeaderZooKeeperServer.java
 *   zookeeper-server/src/main/java/org/apache/zookeeper/server/quorum/ObserverZooKeeperServer.java
 *   zookeeper-server/src/main/java/org/apache/zookeeper/server/ServerStats.java
 *   zookeeper-metrics-providers/zookeeper-prometheus-metrics/src/main/java/org/apache/zookeeper/metrics/prometheus/PrometheusMetricsProvider.java
 *   3.4/3.5 legacy: the `MonitorCommand` inner class of NIOServerCnxn/NettyServerCnxn (3.4)
 *
 * ---------------------------------------------------------------------------
 * How mntr builds a line (3.6 - 3.8)
 * ---------------------------------------------------------------------------
 * command/MonitorCommand.commandRun():
 *     zkServer.dumpMonitorValues(this::print);                         // text values
 *     ServerMetrics.getMetrics().getMetricsProvider().dump(this::print); // all metrics
 * and output(key, value) does
 *     pw.print("zk_"); pw.print(key); pw.print("\t"); pw.println(value);
 * Long/Integer values are printed as integers, other Numbers as
 * `((Number) value).doubleValue() + ""` (e.g. "0.0"), anything else via toString().
 *
 * dumpMonitorValues(): ZooKeeperServer puts "version" and "server_state";
 * QuorumZooKeeperServer adds "peer_state"; ObserverZooKeeperServer adds
 * "observer_master_id". Everything else comes from the MetricsProvider.
 *
 * DefaultMetricsProvider (the default, used for the fixtures) dumps, in this
 * order: gauges (null values skipped), counters, BASIC summaries, ADVANCED
 * summaries, BASIC summary sets, ADVANCED summary sets.
 *   - getCounter(name)                 -> SimpleCounter(name)
 *   - getSummary(name, BASIC)          -> AvgMinMaxCounter(name)
 *   - getSummary(name, ADVANCED)       -> AvgMinMaxPercentileCounter(name)
 *   - getSummarySet(name, BASIC)       -> AvgMinMaxCounterSet(name)
 *   - getSummarySet(name, ADVANCED)    -> AvgMinMaxPercentileCounterSet(name)
 *
 * Key spelling (exact Java):
 *   SimpleCounter.values():               m.put(name, this.getCount());
 *       -> zk_<name>                                        counter
 *   AvgMinMaxCounter.values():
 *       m.put("avg_" + name, this.getAvg());                -> zk_avg_<name>   gauge
 *       m.put("min_" + name, this.getMin());                -> zk_min_<name>   gauge
 *       m.put("max_" + name, this.getMax());                -> zk_max_<name>   gauge
 *       m.put("cnt_" + name, this.getCount());              -> zk_cnt_<name>   counter
 *       m.put("sum_" + name, this.getTotal());              -> zk_sum_<name>   counter
 *   AvgMinMaxPercentileCounter.values(): m.putAll(counter.values()) (the five
 *   above, same name) and then
 *       m.put("p50_" + name, ...);  m.put("p95_" + name, ...);
 *       m.put("p99_" + name, ...);  m.put("p999_" + name, ...);
 *       -> zk_p50_<name>, zk_p95_<name>, zk_p99_<name>, zk_p999_<name>   gauges
 *   AvgMinMaxCounterSet / AvgMinMaxPercentileCounterSet.getCounterForKey(key):
 *       counters.putIfAbsent(key, new AvgMinMaxCounter(key + "_" + name));
 *       (Percentile variant: new AvgMinMaxPercentileCounter(key + "_" + name))
 *     so the set key is put between the part prefix and the set name:
 *       -> zk_avg_<key>_<name>, zk_min_<key>_<name>, zk_max_<key>_<name>,
 *          zk_cnt_<key>_<name>, zk_sum_<key>_<name>
 *          (+ zk_p50_/p95_/p99_/p999_<key>_<name> for ADVANCED sets)
 *     e.g. zk_avg_1_learner_handler_qp_size, zk_p99_2_learner_handler_qp_time_ms,
 *          zk_cnt_zookeeper_write_per_namespace.
 *     Keys: learner_handler_qp_* and ack_latency use Long.toString(sid) (the
 *     learner's server id); read/write_per_namespace use the top-level znode
 *     name (PathUtils/DataTree getTopNamespace), which may itself contain "_".
 *     A set has no lines until its first data point.
 *
 * Monotonic parts: cnt_ and sum_ only increase (every recorded value is a
 * duration, size or count >= 0) and, like SimpleCounters, are reset to 0 only
 * by `srst` / admin stat_reset (ServerStats.reset() -> ServerMetrics.resetAll())
 * or a restart -> counters. avg_, min_, max_ and pNN_ are gauges.
 *
 * Parsing pitfalls for the exporter:
 *   - Legacy gauges look like summary parts but are NOT summaries:
 *     zk_avg_latency, zk_min_latency, zk_max_latency, zk_min/max_proposal_size,
 *     zk_min/max_client_response_size, zk_max_file_descriptor_count.
 *     Only treat zk_<part>_<rest> as a summary part when <rest> is in
 *     SUMMARY_NAMES, or ends with "_" + a SUMMARY_SET_NAMES entry.
 *   - Match SUMMARY_NAMES before SUMMARY_SET_NAMES: the plain summary
 *     "quorum_ack_latency" ends with "_ack_latency" and would otherwise be read
 *     as set "ack_latency" with key "quorum".
 *
 * Labels: with the DefaultMetricsProvider no mntr key in 3.6 - 3.8 carries
 * `{label="value"}` syntax (the fixtures confirm). Labels appear only when the
 * server runs with metricsProvider.className=...PrometheusMetricsProvider
 * (3.6+): then MonitorCommand dumps that provider instead, whose dump() walks
 * the Prometheus CollectorRegistry and builds each key in buildKeyForDump():
 *     keyBuilder.append(sample.name); ... append('{') ... labelName + "=\"" +
 *     labelValue + '"' ... append('}')
 * giving e.g. zk_readlatency{quantile="0.5"}, zk_readlatency_count,
 * zk_readlatency_sum, zk_write_per_namespace{key="zookeeper",quantile="0.5"}
 * (set label is LABEL = "key"), plus the JVM hotspot collectors
 * (DefaultExports) when exportJvmInfo=true. In that mode there are no
 * avg_/min_/max_/cnt_/sum_/pNN_ keys and every value is printed as a double.
 * This catalog describes the default-provider format only.
 *
 * Not in 3.8, added in 3.9 (listed here so a 3.9 server is not mis-typed):
 *   DefaultMetricsProvider gains counter sets and gauge sets:
 *     SimpleCounterSet.add(): new SimpleCounter(k + "_" + name) -> zk_<key>_<name>
 *     gauge sets in dump():   sink.accept(key + "_" + name, ...) -> zk_<key>_<name>
 *   QuotaMetricsUtils: counter set "quota_exceeded_error_per_namespace";
 *   gauge sets quota_{count,bytes}_{limit,usage}_per_namespace (gauges, so not
 *   listed). Admin snapshot/restore: counters snapshot_error_count,
 *   snapshot_rate_limited_count, restore_error_count, restore_rate_limited_count
 *   and summary restore_time.
 */

/**
 * Full mntr keys of plain counters (monotonic between restarts / `srst`).
 *
 * 1. Every ServerMetrics metricsContext.getCounter(...) of 3.8 (SimpleCounter,
 *    printed as zk_<name>).
 * 2. ServerStats values registered as *gauges* in ZooKeeperServer.registerMetrics()
 *    whose backing AtomicLong only ever increments (reset only by srst):
 *    packets_received/packets_sent (incrementPacketsReceived/Sent),
 *    auth_failed_count (incrementAuthFailedCount),
 *    non_mtls_remote_conn_count / non_mtls_local_conn_count
 *    (incrementNonMTLS{Remote,Local}ConnCount, never decremented).
 * 3. 3.4/3.5 legacy: fsync_threshold_exceed_count (ServerStats, printed directly
 *    by the old MonitorCommand; gone from 3.6+ mntr).
 * 4. 3.9+ counters (absent from 3.8 output).
 *
 * zk_add_dead_watcher_stall_time is a SimpleCounter of accumulated stall time
 * (ms), so it is a counter despite its name. zk_uptime and zk_leader_uptime
 * only grow too, but they are elapsed times, kept as gauges.
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

/**
 * Base names of counter sets. 3.6 - 3.8 have none: their MetricsContext has no
 * getCounterSet and DefaultMetricsProvider no counterSets map. From 3.9 on
 * SimpleCounterSet prints one counter per key as zk_<key>_<name>
 * (new SimpleCounter(k + "_" + name)), e.g.
 * zk_myapp_quota_exceeded_error_per_namespace.
 */
export const COUNTER_SET_NAMES: ReadonlySet<string> = new Set<string>([
  'quota_exceeded_error_per_namespace', // 3.9+, QuotaMetricsUtils
]);

/**
 * Base names of plain summaries (printed as zk_{avg,min,max,cnt,sum}_<name>;
 * the DetailLevel.ADVANCED ones, marked "A", also print
 * zk_{p50,p95,p99,p999}_<name>).
 */
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
  'readlatency', // A
  'updatelatency', // A
  'propagation_latency', // A
  'dead_watchers_cleaner_latency', // A
  'prep_processor_queue_time_ms', // A
  'close_session_prep_time', // A
  'read_commitproc_time_ms', // A
  'write_commitproc_time_ms', // A
  'local_write_committed_time_ms', // A
  'server_write_committed_time_ms', // A
  'om_proposal_process_time_ms', // A
  'om_commit_process_time_ms', // A
  'read_final_proc_time_ms', // A
  'write_final_proc_time_ms', // A
  'proposal_latency', // A
  'proposal_ack_creation_latency', // A
  'commit_propagation_latency', // A
  'sync_processor_queue_and_flush_time_ms', // A
  'sync_processor_queue_time_ms', // A
  'sync_processor_queue_flush_time_ms', // A
  'quorum_ack_latency', // A
  'request_throttle_queue_time_ms', // A
  'jvm_pause_time_ms', // A
  // 3.9+ (admin restore command)
  'restore_time',
]);

/**
 * Base names of summary sets (printed as zk_<part>_<key>_<name>, see header).
 */
export const SUMMARY_SET_NAMES: ReadonlySet<string> = new Set<string>([
  'write_per_namespace', // BASIC, key = top-level znode
  'read_per_namespace', // BASIC, key = top-level znode
  'learner_handler_qp_size', // BASIC, key = learner sid (leader / observer master)
  'learner_handler_qp_time_ms', // ADVANCED, key = learner sid
  'ack_latency', // ADVANCED, key = acking sid (leader; every ackLoggingFrequency-th zxid)
]);

/**
 * Keys whose value is not a number.
 *   zk_version            Version.getFullVersion(), e.g. "3.8.0-<sha>, built on ..."
 *   zk_server_state       ServerStats.getServerState(): leader/follower/observer/standalone/read-only
 *   zk_peer_state         QuorumPeer.getDetailedPeerState(), e.g. "leading - broadcast"
 *   zk_observer_master_id Observer.getLearnerMasterId(): the server id an observer
 *                         syncs from -- an identifier, not a measurement, and printed
 *                         as "null" when unknown; expose as a label, not a sample.
 */
export const TEXT_KEYS: ReadonlySet<string> = new Set<string>([
  'zk_version',
  'zk_server_state',
  'zk_peer_state',
  'zk_observer_master_id',
]);

/**
 * Keys only a leader prints: only LeaderZooKeeperServer.registerMetrics()
 * registers them (all but synced_observers through gaugeWithLeader(...), which
 * returns null while there is no leader; DefaultMetricsProvider skips null
 * gauges). All are gauges.
 * zk_followers is the 3.4/3.5 name of today's zk_learners.
 * (The learner_handler_qp_* and ack_latency set lines are also leader-side but
 * their names depend on the learner ids; zk_peer_state and zk_quorum_size are
 * printed by every quorum member but not by a standalone server.)
 */
export const LEADER_ONLY_KEYS: ReadonlySet<string> = new Set<string>([
  'zk_learners',
  'zk_synced_followers',
  'zk_synced_non_voting_followers',
  'zk_synced_observers',
  'zk_pending_syncs',
  'zk_leader_uptime',
  'zk_last_proposal_size',
  'zk_max_proposal_size',
  'zk_min_proposal_size',
  'zk_followers',
]);
