import type { MetricType } from '@cachemon/core';
import { family } from './family.js';
import type { FamilySpec } from './family.js';
import {
  PREFIX_BYTES,
  PREFIX_COLLECTED,
  PREFIX_COMMAND_HITS,
  PREFIX_COMMANDS,
  PREFIX_ITEMS,
  PREFIX_NODES,
  PREFIX_OTHER,
} from './prefix-catalog.js';

export type { FamilySpec } from './family.js';
export * from './prefix-catalog.js';

// ---- node state -------------------------------------------------------------------------------

export const UP = family(
  'arcus_up',
  'gauge',
  'Whether the cache node answered stats within the scrape deadline (1) or not (0).',
  'stats',
);
export const NODE_REGISTERED = family(
  'arcus_node_registered',
  'gauge',
  'Whether the node has a live (ephemeral) registration in cache_list; 0 for a mapped node that is not registered, which is down.',
  'ZooKeeper cache_list and cache_server_mapping',
);
export const NODE_SCRAPE_DURATION = family(
  'arcus_node_scrape_duration_seconds',
  'gauge',
  'Time the node took to answer stats in this scrape.',
  'exporter',
);
export const NODE_ERROR = family(
  'arcus_node_last_error_info',
  'gauge',
  'Why the node is down (1 for the current reason): not_registered, timeout, unreachable, protocol, error_reply, closed. A node that failed moments ago is not contacted again until its backoff (0.5-5 s) ends and keeps its last reason.',
  'exporter',
  ['reason'],
);
export const VERSION_INFO = family(
  'arcus_version_info',
  'gauge',
  'Server version (value 1).',
  'stats version, libevent',
  ['version', 'libevent'],
);

// ---- stats: explicit fields -------------------------------------------------------------------

export interface FieldRule {
  readonly family: FamilySpec;
  /** Multiply the raw value (e.g. milliseconds to seconds). */
  readonly scale?: number;
}

function field(name: string, type: MetricType, help: string, stat: string, scale?: number): [string, FieldRule] {
  const rule: FieldRule = { family: family(name, type, help, `stats ${stat}`) };
  return [stat, scale === undefined ? rule : { ...rule, scale }];
}

export const STATS_FIELDS: ReadonlyMap<string, FieldRule> = new Map([
  field('arcus_process_id', 'gauge', 'Process id of the server; changes on restart.', 'pid'),
  field('arcus_uptime_seconds', 'gauge', 'Seconds since the server started.', 'uptime'),
  field('arcus_time_seconds', 'gauge', "Server's clock, Unix seconds.", 'time'),
  // The server says bits; promtool knows no `_bits` unit, so bytes (64 bits: 8).
  field('arcus_pointer_size_bytes', 'gauge', 'Pointer size of the server build.', 'pointer_size', 1 / 8),
  field(
    'arcus_heartbeats_total',
    'counter',
    'Heartbeats (set arcus:zk-ping) the server ran against itself.',
    'hb_count',
  ),
  field(
    'arcus_heartbeat_latency_seconds_total',
    'counter',
    'Sum of heartbeat latencies; divide its rate by the heartbeats rate for the mean.',
    'hb_latency',
    0.001,
  ),
  field('arcus_cpu_user_seconds_total', 'counter', 'User CPU time of the server process.', 'rusage_user'),
  field('arcus_cpu_system_seconds_total', 'counter', 'System CPU time of the server process.', 'rusage_system'),
  field('arcus_daemon_connections', 'gauge', 'Connections the server uses internally.', 'daemon_connections'),
  field('arcus_connections', 'gauge', 'Open client connections.', 'curr_connections'),
  field('arcus_connections_quit_total', 'counter', 'Connections closed by quit.', 'quit_connections'),
  field(
    'arcus_connections_rejected_total',
    'counter',
    'Connections rejected because of the connection limit.',
    'reject_connections',
  ),
  field('arcus_connections_total', 'counter', 'Connections opened.', 'total_connections'),
  field('arcus_connection_structures', 'gauge', 'Connection structures allocated.', 'connection_structures'),
  field('arcus_auth_errors_total', 'counter', 'Failed authentications.', 'auth_errors'),
  field('arcus_stat_prefixes', 'gauge', 'Prefixes with statistics kept.', 'stat_prefixes'),
  field('arcus_read_bytes_total', 'counter', 'Bytes read from the network.', 'bytes_read'),
  field('arcus_written_bytes_total', 'counter', 'Bytes written to the network.', 'bytes_written'),
  field('arcus_limit_bytes', 'gauge', 'Memory limit for items.', 'limit_maxbytes'),
  field('arcus_limit_connections', 'gauge', 'Connection limit.', 'limit_maxconns'),
  field('arcus_threads', 'gauge', 'Worker threads.', 'threads'),
  field(
    'arcus_connection_yields_total',
    'counter',
    'Times a connection yielded to others (reqs_per_event reached).',
    'conn_yields',
  ),
  field('arcus_prefixes', 'gauge', 'Prefixes holding items.', 'curr_prefixes'),
  field('arcus_items_reclaimed_total', 'counter', 'Expired items whose memory was reused.', 'reclaimed'),
  field('arcus_items_evicted_total', 'counter', 'Valid items evicted to free memory.', 'evictions'),
  field('arcus_out_of_memory_total', 'counter', 'Store requests that failed for lack of memory.', 'outofmemorys'),
  field('arcus_sticky_items', 'gauge', 'Sticky (never evicted) items.', 'sticky_items'),
  field('arcus_sticky_bytes', 'gauge', 'Bytes held by sticky items.', 'sticky_bytes'),
  field('arcus_sticky_limit_bytes', 'gauge', 'Memory limit for sticky items.', 'sticky_limit'),
  field('arcus_items', 'gauge', 'Items stored.', 'curr_items'),
  field('arcus_items_total', 'counter', 'Items stored since start.', 'total_items'),
  field('arcus_bytes', 'gauge', 'Bytes used by items.', 'bytes'),
  field('arcus_engine_limit_bytes', 'gauge', 'Memory limit of the storage engine.', 'engine_maxbytes'),
  field('arcus_engine_allocated_bytes', 'gauge', 'Memory the storage engine has allocated.', 'engine_malloced'),
]);

/** Non-numeric stats fields that are known and go into arcus_version_info or are ignored. */
export const STATS_TEXT_FIELDS: ReadonlySet<string> = new Set(['version', 'libevent']);

// ---- stats: per-command families (by name pattern) ---------------------------------------------

export const COMMANDS = family(
  'arcus_commands_total',
  'counter',
  'Commands received, by command (cmd_<command>).',
  'stats cmd_*',
  ['command'],
);
export const COMMAND_HITS = family(
  'arcus_command_hits_total',
  'counter',
  'Commands that found their item, by command (<command>_hits).',
  'stats *_hits',
  ['command'],
);
export const COMMAND_MISSES = family(
  'arcus_command_misses_total',
  'counter',
  'Commands that did not find their item, by command (<command>_misses).',
  'stats *_misses',
  ['command'],
);
export const COMMAND_ELEM_HITS = family(
  'arcus_command_elem_hits_total',
  'counter',
  'Collection commands that found their item and matching elements (<command>_elem_hits).',
  'stats *_elem_hits',
  ['command'],
);
export const COMMAND_NONE_HITS = family(
  'arcus_command_none_hits_total',
  'counter',
  'Collection commands that found their item but no matching element (<command>_none_hits).',
  'stats *_none_hits',
  ['command'],
);
export const COMMAND_OKS = family(
  'arcus_command_oks_total',
  'counter',
  'Commands that succeeded, for commands counted that way (<command>_oks).',
  'stats *_oks',
  ['command'],
);
export const COMMAND_BADVAL = family(
  'arcus_command_badval_total',
  'counter',
  'cas commands whose item changed meanwhile (cas_badval).',
  'stats cas_badval',
  ['command'],
);
export const OTHER_STAT = family(
  'arcus_stat',
  'untyped',
  'A numeric stats field this exporter has no specific metric for (newer servers, plain memcached), by field name.',
  'stats (other numeric fields)',
  ['field'],
);

export interface PatternRule {
  readonly family: FamilySpec;
  readonly label: string;
  readonly value: string;
}

const PATTERNS: ReadonlyArray<[RegExp, FamilySpec]> = [
  [/^cmd_(.+)$/, COMMANDS],
  [/^(.+)_elem_hits$/, COMMAND_ELEM_HITS],
  [/^(.+)_none_hits$/, COMMAND_NONE_HITS],
  [/^(.+)_hits$/, COMMAND_HITS],
  [/^(.+)_misses$/, COMMAND_MISSES],
  [/^(.+)_oks$/, COMMAND_OKS],
  [/^(cas)_badval$/, COMMAND_BADVAL],
];

export type StatRule = ({ readonly kind: 'field' } & FieldRule) | ({ readonly kind: 'labelled' } & PatternRule);

const ruleCache = new Map<string, StatRule>();

/** How a numeric stats field becomes a sample. Memoised: the field names repeat on every node. */
export function ruleForStat(name: string): StatRule {
  let rule = ruleCache.get(name);
  if (rule !== undefined) return rule;
  const explicit = STATS_FIELDS.get(name);
  if (explicit) {
    rule = { kind: 'field', ...explicit };
  } else {
    rule = { kind: 'labelled', family: OTHER_STAT, label: 'field', value: name };
    for (const [pattern, spec] of PATTERNS) {
      const match = pattern.exec(name);
      if (match) {
        rule = { kind: 'labelled', family: spec, label: 'command', value: match[1]! };
        break;
      }
    }
  }
  ruleCache.set(name, rule);
  return rule;
}

// ---- stats settings and stats zookeeper (refreshed less often than stats) ----------------------

export interface SettingRule {
  readonly family: FamilySpec;
  readonly label?: readonly [string, string];
  readonly parse: (value: string) => number | undefined;
}

const number = (value: string): number | undefined => {
  const n = Number(value);
  return value.trim() === '' || !Number.isFinite(n) ? undefined : n;
};
const flag =
  (on: string) =>
  (value: string): number | undefined =>
    value === on ? 1 : value === '' ? undefined : 0;
const yesNo = flag('yes');
const millis = (value: string): number | undefined => {
  const n = number(value);
  return n === undefined ? undefined : n / 1000;
};

const COLLECTION_MAX = family(
  'arcus_collection_max_elements',
  'gauge',
  'Most elements a collection item may hold, by collection type.',
  'stats settings max_<type>_size',
  ['type'],
);

function setting(
  section: 'settings' | 'zookeeper',
  stat: string,
  name: string,
  help: string,
  parse: SettingRule['parse'],
): [string, SettingRule] {
  return [stat, { family: family(name, 'gauge', help, `stats ${section} ${stat}`), parse }];
}

export const SETTINGS: ReadonlyMap<string, SettingRule> = new Map<string, SettingRule>([
  setting(
    'settings',
    'max_stats_prefixes',
    'arcus_max_stats_prefixes',
    'Prefix count above which stats prefixes and stats detail dump refuse to answer.',
    number,
  ),
  setting(
    'settings',
    'detail_enabled',
    'arcus_prefix_detail_enabled',
    'Whether per-prefix operation counting (stats detail) is on; prefix operation metrics need it.',
    flag('yes'),
  ),
  setting(
    'settings',
    'evictions',
    'arcus_evictions_enabled',
    'Whether the server evicts items when memory is full (0: it answers out of memory).',
    flag('on'),
  ),
  setting('settings', 'item_size_max', 'arcus_item_size_max_bytes', 'Largest item size.', number),
  setting('settings', 'max_element_bytes', 'arcus_element_max_bytes', 'Largest collection element size.', number),
  ...(['list', 'set', 'map', 'btree'] as const).map((type): [string, SettingRule] => [
    `max_${type}_size`,
    { family: COLLECTION_MAX, label: ['type', type], parse: number },
  ]),
  setting(
    'settings',
    'hb_timeout',
    'arcus_heartbeat_timeout_seconds',
    'Heartbeat latency counted as a failure.',
    millis,
  ),
  setting(
    'settings',
    'hb_failstop',
    'arcus_heartbeat_failstop_seconds',
    'Accumulated heartbeat failure time after which the server stops itself (0: never).',
    millis,
  ),
  setting('settings', 'maxbytes', 'arcus_max_bytes', 'Memory limit for items as configured (-m).', number),
  setting('settings', 'maxconns', 'arcus_max_connections', 'Connection limit as configured (-c).', number),
  setting('settings', 'tcpport', 'arcus_tcp_port', 'TCP port the server listens on.', number),
  setting('settings', 'udpport', 'arcus_udp_port', 'UDP port the server listens on (0: none).', number),
  setting(
    'settings',
    'sticky_limit',
    'arcus_sticky_max_bytes',
    'Memory limit for sticky items as configured (0: no sticky items).',
    number,
  ),
  setting('settings', 'verbosity', 'arcus_verbosity', 'Log verbosity (-v count).', number),
  setting(
    'settings',
    'oldest',
    'arcus_oldest_live_seconds',
    'Server time (seconds since start) before which items count as flushed by flush_all; 0: none.',
    number,
  ),
  setting(
    'settings',
    'growth_factor',
    'arcus_slab_growth_factor',
    'Chunk size ratio of consecutive slab classes (-f).',
    number,
  ),
  setting(
    'settings',
    'chunk_size',
    'arcus_slab_min_chunk_bytes',
    'Smallest space for key, value and flags (-n).',
    number,
  ),
  setting('settings', 'num_threads', 'arcus_configured_threads', 'Worker threads as configured (-t).', number),
  setting(
    'settings',
    'reqs_per_event',
    'arcus_requests_per_event',
    'Requests a connection may run before it yields to others (-R).',
    number,
  ),
  setting('settings', 'cas_enabled', 'arcus_cas_enabled', 'Whether CAS ids are kept (0: -C).', yesNo),
  setting('settings', 'tcp_backlog', 'arcus_tcp_backlog', 'Listen backlog (-b).', number),
  setting('settings', 'auth_enabled_sasl', 'arcus_sasl_enabled', 'Whether SASL authentication is on.', yesNo),
  setting('settings', 'auth_required_sasl', 'arcus_sasl_required', 'Whether SASL authentication is required.', yesNo),
  setting(
    'settings',
    'allow_detailed',
    'arcus_prefix_detail_allowed',
    'Whether stats detail on may switch per-prefix operation counting on.',
    yesNo,
  ),
  setting('settings', 'scrub_count', 'arcus_scrub_batch_items', 'Items the scrub command examines per step.', number),
  setting('settings', 'topkeys', 'arcus_topkeys', 'Keys tracked by the topkeys feature (0: off).', number),
]);

/**
 * `stats settings` fields whose values are words, not numbers: one arcus_settings_info series per
 * node carries them as labels. (umask is octal text, so it is a word too.)
 */
export const SETTINGS_INFO = family(
  'arcus_settings_info',
  'gauge',
  'The stats settings fields that are text (value 1), one label per field (those listed on ARCUS; the text fields of other servers likewise, when the field name is a valid label name other than a node label).',
  'stats settings (text fields)',
  [
    'inter',
    'domain_socket',
    'umask',
    'stat_key_prefix',
    'binding_protocol',
    'auth_sasl_engine',
    'logger',
    'ascii_extension',
  ],
);
/** Numeric or yes/no fields of `stats settings` without a metric of their own (newer servers, plain memcached). */
export const OTHER_SETTING = family(
  'arcus_setting',
  'gauge',
  'A numeric or boolean (1/0) stats settings field this exporter has no specific metric for, by field name.',
  'stats settings (other fields)',
  ['field'],
);
/** Words the servers print for a boolean setting. */
export const BOOLEAN_WORDS: ReadonlyMap<string, number> = new Map([
  ['yes', 1],
  ['no', 0],
  ['on', 1],
  ['off', 0],
  ['true', 1],
  ['false', 0],
]);
/** Settings that look numeric but are not numbers. */
export const TEXT_SETTINGS: ReadonlySet<string> = new Set(['umask']);

export const ZOOKEEPER_STATS: ReadonlyMap<string, SettingRule> = new Map<string, SettingRule>([
  setting(
    'zookeeper',
    'zk_connected',
    'arcus_zookeeper_connected',
    "Whether the server's own ZooKeeper session is connected.",
    flag('true'),
  ),
  setting(
    'zookeeper',
    'zk_ready',
    'arcus_zookeeper_ready',
    'Whether the server is registered and ready in ZooKeeper.',
    flag('true'),
  ),
  setting(
    'zookeeper',
    'zk_timeout',
    'arcus_zookeeper_session_timeout_seconds',
    "The server's ZooKeeper session timeout.",
    millis,
  ),
  setting(
    'zookeeper',
    'zk_failstop',
    'arcus_zookeeper_failstop',
    'Whether the server stops itself when its ZooKeeper session expires.',
    flag('on'),
  ),
]);

export const ZOOKEEPER_CLIENT_INFO = family(
  'arcus_zookeeper_client_info',
  'gauge',
  'Version of the ZooKeeper client library the server is built with (value 1).',
  'stats zookeeper zk_libversion',
  ['version'],
);

// ---- stats slabs (read with every stats) ------------------------------------------------------

function slabField(stat: string, name: string, help: string, labels?: readonly string[]): [string, FamilySpec] {
  return [stat, family(name, 'gauge', help, `stats slabs ${labels ? `<class>:${stat}` : stat}`, labels)];
}

/** Node totals of `stats slabs`: the small-memory (SM) allocator and the slab allocator. */
export const SLAB_TOTALS: ReadonlyMap<string, FamilySpec> = new Map([
  slabField('SM:used_num_classes', 'arcus_sm_used_classes', 'Small-memory allocator slot classes holding used slots.'),
  slabField('SM:free_num_classes', 'arcus_sm_free_classes', 'Small-memory allocator slot classes holding free slots.'),
  slabField('SM:used_min_classid', 'arcus_sm_used_min_class_id', 'Smallest slot class holding used slots.'),
  slabField(
    'SM:used_01p_classid',
    'arcus_sm_used_last_1pct_class_id',
    'Slot class from which the largest 1 % of the used space begins.',
  ),
  slabField('SM:used_max_classid', 'arcus_sm_used_max_class_id', 'Largest slot class holding used slots.'),
  slabField('SM:free_min_classid', 'arcus_sm_free_min_class_id', 'Smallest slot class holding free slots.'),
  slabField('SM:free_max_classid', 'arcus_sm_free_max_class_id', 'Largest slot class holding free slots.'),
  slabField('SM:used_total_space', 'arcus_sm_used_bytes', 'Bytes in used small-memory slots.'),
  slabField(
    'SM:used_01pct_space',
    'arcus_sm_used_last_1pct_bytes',
    'Bytes in used slots of the classes from SM:used_01p_classid up.',
  ),
  slabField('SM:free_small_space', 'arcus_sm_free_small_bytes', 'Bytes in free slots too small for most items.'),
  slabField('SM:free_bslot_space', 'arcus_sm_free_big_slot_bytes', 'Bytes in free big slots.'),
  slabField('SM:free_avail_space', 'arcus_sm_free_available_bytes', 'Free small-memory bytes available for new items.'),
  slabField('SM:free_chunk_space', 'arcus_sm_free_chunk_bytes', 'Bytes in free chunks of small-memory pages.'),
  slabField(
    'SM:free_limit_space',
    'arcus_sm_free_limit_bytes',
    'Free space below which the allocator is short of memory (0 until memory is nearly all allocated).',
  ),
  slabField(
    'SM:space_shortage_level',
    'arcus_sm_space_shortage_level',
    "The allocator's own view of memory shortage, 0 (none) to 100: a store evicts up to this many items first, and from 10 on the server also evicts in the background.",
  ),
  slabField('active_slabs', 'arcus_slab_active_classes', 'Slab classes with pages allocated.'),
  slabField('memory_limit', 'arcus_slab_memory_limit_bytes', 'Memory the slab allocator may allocate.'),
  slabField('total_malloced', 'arcus_slab_malloced_bytes', 'Memory allocated to slab pages.'),
]);
export const OTHER_SLAB_TOTAL = family(
  'arcus_slab_stat',
  'untyped',
  'A numeric node total of stats slabs this exporter has no specific metric for (newer servers), by field name.',
  'stats slabs (other totals)',
  ['field'],
);

const SLAB_CLASS = ['slab_class'] as const;
/** Per-class fields of `stats slabs` (`<class>:<field>`), collected with slabClasses on. */
export const SLAB_CLASS_FIELDS: ReadonlyMap<string, FamilySpec> = new Map([
  slabField('chunk_size', 'arcus_slab_chunk_size_bytes', 'Bytes of one chunk of the slab class.', SLAB_CLASS),
  slabField('chunks_per_page', 'arcus_slab_chunks_per_page', 'Chunks in one page of the slab class.', SLAB_CLASS),
  slabField('reserved_pages', 'arcus_slab_reserved_pages', 'Pages reserved for the slab class.', SLAB_CLASS),
  slabField('total_pages', 'arcus_slab_pages', 'Pages allocated to the slab class.', SLAB_CLASS),
  slabField('total_chunks', 'arcus_slab_chunks', 'Chunks allocated to the slab class.', SLAB_CLASS),
  slabField('used_chunks', 'arcus_slab_used_chunks', 'Chunks of the slab class holding data.', SLAB_CLASS),
  slabField('free_chunks', 'arcus_slab_free_chunks', 'Freed chunks of the slab class, ready for reuse.', SLAB_CLASS),
  slabField(
    'free_chunks_end',
    'arcus_slab_free_end_chunks',
    'Chunks at the end of the last page of the slab class, not used yet.',
    SLAB_CLASS,
  ),
  slabField(
    'mem_requested',
    'arcus_slab_requested_bytes',
    'Bytes the data in the slab class asked for (less than its chunks hold).',
    SLAB_CLASS,
  ),
]);
export const OTHER_SLAB_CLASS_STAT = family(
  'arcus_slab_class_stat',
  'untyped',
  'A numeric per-class field of stats slabs this exporter has no specific metric for (plain memcached: get_hits, cmd_set, ...), by slab class and field name; with slabClasses on.',
  'stats slabs <class>:<field> (other fields)',
  ['slab_class', 'field'],
);

// ---- QoS ---------------------------------------------------------------------------------------

export const QOS_LATENCY = family(
  'arcus_qos_latency_seconds',
  'gauge',
  'Latency of the last QoS probe of this kind (kv_set, kv_get; with simpleQos false also lop_*, sop_*, bop_*), measured until its expected reply.',
  'QoS probes',
  ['probe'],
);
export const QOS_SUCCESS = family(
  'arcus_qos_success',
  'gauge',
  'Whether the last QoS probe of this kind got its expected reply.',
  'QoS probes',
  ['probe'],
);
export const QOS_TIMESTAMP = family(
  'arcus_qos_last_run_timestamp_seconds',
  'gauge',
  'When the QoS probes of the node last ran (Unix seconds).',
  'QoS probes',
);

/** Families for the reference, in the order they appear there. */
export function allFamilies(): FamilySpec[] {
  const seen = new Map<string, FamilySpec>();
  const add = (spec: FamilySpec) => seen.has(spec.name) || seen.set(spec.name, spec);
  [UP, NODE_REGISTERED, NODE_SCRAPE_DURATION, NODE_ERROR, VERSION_INFO].forEach(add);
  for (const rule of STATS_FIELDS.values()) add(rule.family);
  [
    COMMANDS,
    COMMAND_HITS,
    COMMAND_MISSES,
    COMMAND_ELEM_HITS,
    COMMAND_NONE_HITS,
    COMMAND_OKS,
    COMMAND_BADVAL,
    OTHER_STAT,
  ].forEach(add);
  for (const rule of SETTINGS.values()) add(rule.family);
  [OTHER_SETTING, SETTINGS_INFO].forEach(add);
  for (const rule of ZOOKEEPER_STATS.values()) add(rule.family);
  add(ZOOKEEPER_CLIENT_INFO);
  [...SLAB_TOTALS.values(), OTHER_SLAB_TOTAL, ...SLAB_CLASS_FIELDS.values(), OTHER_SLAB_CLASS_STAT].forEach(add);
  [QOS_LATENCY, QOS_SUCCESS, QOS_TIMESTAMP].forEach(add);
  [
    PREFIX_ITEMS,
    PREFIX_BYTES,
    PREFIX_COMMANDS,
    PREFIX_COMMAND_HITS,
    PREFIX_OTHER,
    PREFIX_NODES,
    PREFIX_COLLECTED,
  ].forEach(add);
  return [...seen.values()];
}
