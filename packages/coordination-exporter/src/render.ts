/**
 * /metrics with the names of dabealu/zookeeper-exporter (each `mntr` key with `zk_host`, `zk_up`,
 * `zk_server_leader`, `zk_version`), so its dashboards and alerts work; besides, counters are typed,
 * labelled keys keep their labels, text values become info gauges, and read failures are a metric.
 */
import { familyHead, formatValue, renderLabels, type MetricType } from '@cachemon/core';
import type { MntrEntry } from './mntr.js';
import { COUNTER_KEYS, COUNTER_SET_NAMES, SUMMARY_NAMES, SUMMARY_SET_NAMES, TEXT_KEYS } from './mntr-catalog.js';

/** What one server said this scrape. */
export type ServerStatus =
  'ok' | 'leader_only' | 'unreachable' | 'timeout' | 'not_whitelisted' | 'not_serving' | 'protocol' | 'unresolved';
export const SERVER_STATUSES: readonly ServerStatus[] = [
  'ok',
  'leader_only',
  'unreachable',
  'timeout',
  'not_whitelisted',
  'not_serving',
  'protocol',
  'unresolved',
];

/** Statuses of a server that is up: it answered mntr with metrics, or it is a leader that serves no clients. */
export function isUp(status: ServerStatus): boolean {
  return status === 'ok' || status === 'leader_only';
}

export interface ServerReading {
  /** `host:port` as the exporter addresses the server: the `zk_host` label. */
  readonly host: string;
  readonly status: ServerStatus;
  /** The mntr entries when status is ok. */
  readonly entries: readonly MntrEntry[];
}

/** Text keys rendered as info gauges, and the label their text goes to. */
const TEXT_LABEL: ReadonlyMap<string, string> = new Map([
  ['zk_version', 'version'],
  ['zk_server_state', 'state'],
  ['zk_peer_state', 'state'],
]);

/** Summary statistics that only grow (count and sum); the rest (avg, min, max, pNN) go up and down. */
const MONOTONIC_STATS = ['cnt', 'sum'];

/**
 * counter or gauge for an mntr key. The default provider prints a counter `zk_<name>`, a summary
 * `zk_{avg,min,max,cnt,sum,p50..p999}_<name>`, a set member `zk_<stat>_<member>_<name>`; only
 * counters and a summary's cnt and sum grow.
 */
export function metricType(name: string): MetricType {
  if (COUNTER_KEYS.has(name)) return 'counter';
  const rest = name.startsWith('zk_') ? name.slice(3) : name;
  // A server with ZooKeeper's Prometheus metrics provider prints Prometheus names: `_total` counters
  // (its JVM and process metrics), a summary as `<name>{quantile=...}`, `<name>_count`, `<name>_sum`.
  if (rest.endsWith('_total')) return 'counter';
  for (const suffix of ['_count', '_sum']) {
    if (!rest.endsWith(suffix)) continue;
    const base = rest.slice(0, -suffix.length);
    if (SUMMARY_NAMES.has(base) || SUMMARY_SET_NAMES.has(base)) return 'counter';
  }
  const underscore = rest.indexOf('_');
  if (underscore > 0 && MONOTONIC_STATS.includes(rest.slice(0, underscore))) {
    const base = rest.slice(underscore + 1);
    if (SUMMARY_NAMES.has(base) || endsWithMember(base, SUMMARY_SET_NAMES)) return 'counter';
  }
  return endsWithMember(rest, COUNTER_SET_NAMES) ? 'counter' : 'gauge';
}

/** True when `key` is `<member>_<name>` for one of `names`. */
function endsWithMember(key: string, names: ReadonlySet<string>): boolean {
  for (const name of names) if (key.length > name.length + 1 && key.endsWith(`_${name}`)) return true;
  return false;
}

/** One sample of a server, with the family it belongs to. */
interface Sample {
  readonly name: string;
  readonly type: MetricType;
  readonly help: string;
  /** `name{labels} value\n` */
  readonly line: string;
}

/** One server's series of this scrape, worked out as its answer arrives. */
export interface PreparedServer {
  readonly host: string;
  readonly status: ServerStatus;
  /** Its zk_server_state (leader, follower, observer, standalone) when it answered with metrics. */
  readonly state: string | undefined;
  readonly samples: readonly Sample[];
}

const HELP_UP = '1 when the server answered mntr with metrics, else 0.';
const HELP_STATUS =
  'Why the server was or was not read: 1 for its status of this scrape (ok, leader_only, unreachable, timeout, not_whitelisted, not_serving, protocol, unresolved).';
const HELP_LEADER = '1 when the server is the ensemble leader, else 0.';

/** One server's series. */
export function prepareServer(reading: ServerReading): PreparedServer {
  const host = reading.host;
  const samples: Sample[] = [];
  const add = (name: string, type: MetricType, help: string, labels: Record<string, string>, value: string): void => {
    samples.push({ name, type, help, line: `${name}${renderLabels(labels)} ${value}\n` });
  };
  add('zk_up', 'gauge', HELP_UP, { zk_host: host }, isUp(reading.status) ? '1' : '0');
  for (const status of SERVER_STATUSES) {
    add('zk_mntr_status', 'gauge', HELP_STATUS, { zk_host: host, status }, reading.status === status ? '1' : '0');
  }
  const leader = (isLeader: boolean): void =>
    add('zk_server_leader', 'gauge', HELP_LEADER, { zk_host: host }, isLeader ? '1' : '0');
  if (reading.status !== 'ok') {
    // Written for every server, so that `max(zk_server_leader) == 0` also holds when no server answers.
    leader(reading.status === 'leader_only');
    return { host, status: reading.status, state: reading.status === 'leader_only' ? 'leader' : undefined, samples };
  }
  let state: string | undefined;
  for (const entry of reading.entries) {
    const labels = withEntryLabels(host, entry);
    // Text keys stay labels even when their text looks like a number (zk_observer_master_id).
    if (entry.value !== undefined && !TEXT_KEYS.has(entry.name)) {
      add(entry.name, metricType(entry.name), `ZooKeeper mntr ${entry.name}.`, labels, formatValue(entry.value));
      continue;
    }
    const label = TEXT_LABEL.get(entry.name) ?? 'value';
    const help = `ZooKeeper mntr ${entry.name}, as the ${label} label; always 1.`;
    add(entry.name, 'gauge', help, { ...labels, ...textLabels(entry.name, label, entry.text) }, '1');
    if (entry.name === 'zk_server_state' && state === undefined) {
      state = entry.text;
      leader(state === 'leader');
    }
  }
  if (state === undefined) leader(false);
  return { host, status: 'ok', state, samples };
}

/** Series family by family, in order of first appearance; a name keeps the first type seen. */
export function writeServers(servers: readonly PreparedServer[]): string {
  const families = new Map<string, string[]>();
  for (const server of servers) {
    for (const sample of server.samples) {
      let lines = families.get(sample.name);
      if (lines === undefined) families.set(sample.name, (lines = [familyHead(sample.name, sample.type, sample.help)]));
      lines.push(sample.line);
    }
  }
  return [...families.values()].map((lines) => lines.join('')).join('');
}

/** Every server's series, family by family. */
export function renderServers(readings: readonly ServerReading[]): string {
  return writeServers(readings.map(prepareServer));
}

/**
 * The labels of a text key's series. zk_version's `version` is the release alone (`3.8.0`), as the
 * widely used ZooKeeper exporter has it, so its dashboards group servers by it; `build` keeps the
 * whole text (`3.8.0-<commit>, built on <date>`).
 */
function textLabels(name: string, label: string, text: string): Record<string, string> {
  if (name !== 'zk_version') return { [label]: text };
  return { [label]: /^(\d+\.\d+\.\d+)/.exec(text)?.[1] ?? text, build: text };
}

function withEntryLabels(host: string, entry: MntrEntry): Record<string, string> {
  const labels: Record<string, string> = { zk_host: host };
  for (const [name, value] of entry.labels) if (name !== 'zk_host') labels[name] = value;
  return labels;
}
