/** The text of the `stats` family of answers, as pure functions of a double's state. */
import type { ServerState } from './state.js';

const MAXBYTES = 67108864;
const MAXCONNS = 1000;

/** `stats` fields in the order of ARCUS 1.15.0 (samples/01-stats.raw). */
const GENERAL_FIELDS = `pid uptime time version libevent pointer_size hb_count hb_latency rusage_user rusage_system
daemon_connections curr_connections quit_connections reject_connections total_connections connection_structures
cmd_get cmd_set cmd_incr cmd_decr cmd_delete cmd_cas cmd_flush cmd_flush_prefix cmd_auth
cmd_lop_create cmd_lop_insert cmd_lop_delete cmd_lop_get
cmd_sop_create cmd_sop_insert cmd_sop_delete cmd_sop_get cmd_sop_exist
cmd_mop_create cmd_mop_insert cmd_mop_update cmd_mop_delete cmd_mop_get
cmd_bop_create cmd_bop_insert cmd_bop_update cmd_bop_delete cmd_bop_get cmd_bop_count cmd_bop_position cmd_bop_pwg
cmd_bop_gbp cmd_bop_mget cmd_bop_smget cmd_bop_incr cmd_bop_decr cmd_getattr cmd_setattr
get_hits get_misses incr_hits incr_misses decr_hits decr_misses delete_hits delete_misses
cas_hits cas_badval cas_misses auth_errors
lop_create_oks lop_insert_misses lop_insert_hits lop_delete_misses lop_delete_elem_hits lop_delete_none_hits
lop_get_misses lop_get_elem_hits lop_get_none_hits
sop_create_oks sop_insert_misses sop_insert_hits sop_delete_misses sop_delete_elem_hits sop_delete_none_hits
sop_get_misses sop_get_elem_hits sop_get_none_hits sop_exist_misses sop_exist_hits
mop_create_oks mop_insert_misses mop_insert_hits mop_update_misses mop_update_elem_hits mop_update_none_hits
mop_delete_misses mop_delete_elem_hits mop_delete_none_hits mop_get_misses mop_get_elem_hits mop_get_none_hits
bop_create_oks bop_insert_misses bop_insert_hits bop_update_misses bop_update_elem_hits bop_update_none_hits
bop_delete_misses bop_delete_elem_hits bop_delete_none_hits bop_get_misses bop_get_elem_hits bop_get_none_hits
bop_count_misses bop_count_hits bop_position_misses bop_position_elem_hits bop_position_none_hits
bop_pwg_misses bop_pwg_elem_hits bop_pwg_none_hits bop_gbp_misses bop_gbp_elem_hits bop_gbp_none_hits
bop_mget_oks bop_smget_oks bop_incr_elem_hits bop_incr_none_hits bop_incr_misses
bop_decr_elem_hits bop_decr_none_hits bop_decr_misses
getattr_misses getattr_hits setattr_misses setattr_hits
stat_prefixes bytes_read bytes_written limit_maxbytes limit_maxconns threads conn_yields curr_prefixes
reclaimed evictions outofmemorys sticky_items curr_items total_items sticky_bytes bytes sticky_limit
engine_maxbytes engine_malloced`.split(/\s+/);

function rusage(micros: number): string {
  return `${Math.floor(micros / 1e6)}.${String(micros % 1e6).padStart(6, '0')}`;
}

/** Values that are not plain counters. */
function computed(state: ServerState): Record<string, string | number> {
  const now = state.clock();
  const cpu = process.cpuUsage();
  const engine = state.engine;
  return {
    pid: process.pid,
    uptime: Math.floor((now - state.startedAt) / 1000),
    time: Math.floor(now / 1000),
    version: state.settings.version,
    libevent: '2.1.12-stable',
    pointer_size: 64,
    hb_count: state.heartbeats,
    hb_latency: Math.round(state.heartbeatLatencyMs),
    rusage_user: rusage(cpu.user),
    rusage_system: rusage(cpu.system),
    daemon_connections: 1,
    curr_connections: state.connections.current,
    total_connections: state.connections.total,
    connection_structures: state.connections.peak + 1,
    stat_prefixes: state.detail.count,
    bytes_read: state.bytesRead,
    bytes_written: state.bytesWritten,
    limit_maxbytes: MAXBYTES,
    limit_maxconns: MAXCONNS,
    threads: 2,
    curr_prefixes: engine.prefixes.count,
    reclaimed: engine.reclaimed,
    curr_items: engine.currItems,
    total_items: engine.totalItems,
    bytes: engine.currBytes,
    engine_maxbytes: MAXBYTES,
    engine_malloced: engine.memory.mallocedBytes,
  };
}

function statLines(pairs: Iterable<readonly [string, string | number]>): string {
  let text = '';
  for (const [name, value] of pairs) text += `STAT ${name} ${value}\r\n`;
  return `${text}END\r\n`;
}

export function renderGeneralStats(state: ServerState): string {
  const values = computed(state);
  return statLines(GENERAL_FIELDS.map((name) => [name, values[name] ?? state.counters.get(name) ?? 0] as const));
}

export function renderSettings(state: ServerState): string {
  const s = state.settings;
  return statLines([
    ['maxbytes', MAXBYTES],
    ['maxconns', MAXCONNS],
    ['tcpport', s.port],
    ['udpport', 0],
    ['sticky_limit', 0],
    ['inter', s.host],
    ['verbosity', 1],
    ['oldest', 0],
    ['evictions', 'on'],
    ['domain_socket', 'NULL'],
    ['umask', 700],
    ['growth_factor', '1.25'],
    ['chunk_size', 48],
    ['num_threads', 2],
    ['stat_key_prefix', ':'],
    ['detail_enabled', state.detailEnabled ? 'yes' : 'no'],
    ['allow_detailed', 'yes'],
    ['reqs_per_event', 5],
    ['cas_enabled', 'yes'],
    ['tcp_backlog', 8192],
    ['binding_protocol', 'auto-negotiate'],
    ['auth_enabled_sasl', 'no'],
    ['auth_sasl_engine', 'none'],
    ['auth_required_sasl', 'no'],
    ['item_size_max', 1048576],
    ['max_list_size', 50000],
    ['max_set_size', 50000],
    ['max_map_size', 50000],
    ['max_btree_size', 50000],
    ['max_element_bytes', 16384],
    ['scrub_count', 96],
    ['max_stats_prefixes', s.maxStatsPrefixes],
    ['topkeys', 0],
    ['hb_timeout', 10000],
    ['hb_failstop', 60000],
    ['logger', 'standard error'],
    ['ascii_extension', 'scrub'],
  ]);
}

export function renderSlabs(state: ServerState): string {
  return statLines(state.engine.memory.slabStats(MAXBYTES));
}

export function renderZookeeper(state: ServerState): string {
  const zk = state.zookeeper;
  return statLines([
    ['zk_libversion', '3.5.9-p3'],
    ['zk_timeout', zk.timeoutMs],
    ['zk_failstop', 'on'],
    ['zk_connected', String(zk.connected)],
    ['zk_ready', String(zk.connected)],
  ]);
}

export const TOO_MANY_PREFIXES = 'CLIENT_ERROR invalid: too many prefixes\r\n';

/** `stats prefixes` */
export function renderPrefixes(state: ServerState): string {
  const prefixes = state.engine.prefixes;
  if (state.behavior === 'refuse-stats-prefixes' || prefixes.count > state.settings.maxStatsPrefixes)
    return TOO_MANY_PREFIXES;
  return `${prefixes
    .list()
    .map((p) => p.line())
    .join('')}END\r\n`;
}

/** `stats detail dump` */
export function renderDetailDump(state: ServerState): string {
  if (state.behavior === 'refuse-stats-prefixes' || state.detail.count > state.settings.maxStatsPrefixes)
    return TOO_MANY_PREFIXES;
  return `${state.detail.lines().join('')}END\r\n`;
}

/** `stats prefixlist item <p>...`: lines of the named prefixes that exist. */
export function renderPrefixListItems(state: ServerState, names: readonly string[]): string {
  return `${names.map((n) => state.engine.prefixes.find(n)?.line() ?? '').join('')}END\r\n`;
}

/** `stats prefixlist operation <p>...` */
export function renderPrefixListOperations(state: ServerState, names: readonly string[]): string {
  return `${names.map((n) => state.detail.line(n) ?? '').join('')}END\r\n`;
}
