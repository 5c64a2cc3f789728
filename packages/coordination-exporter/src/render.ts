/**
 * /metrics: every server's `mntr` keys, named for Prometheus (names.ts) with `zk_host`, beside
 * `zk_up`, `zk_mntr_status`, `zk_server_leader`; text values become info gauges.
 */
import { familyHead, formatValue, renderLabels, type MetricType } from '@cachemon/core';
import type { MntrEntry } from './mntr.js';
import { TEXT_KEYS } from './mntr-catalog.js';
import { replyNames, shapeEntry } from './names.js';

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

/** One sample of a server, with the family it belongs to. */
interface Sample {
  /** The family. */
  readonly name: string;
  /** The sample's own name (a summary's `<family>_sum`, ...). */
  readonly sample: string;
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
  /** Entries that could not be exposed (a series twice once named, an `le` label). */
  readonly skipped: number;
}

const HELP_UP = '1 when the server answered mntr with metrics, else 0.';
const HELP_STATUS =
  'Why the server was or was not read: 1 for its status of this scrape (ok, leader_only, unreachable, timeout, not_whitelisted, not_serving, protocol, unresolved).';
const HELP_LEADER = '1 when the server is the ensemble leader, else 0.';

/** One server's series. */
export function prepareServer(reading: ServerReading): PreparedServer {
  const host = reading.host;
  const samples: Sample[] = [];
  const add = (
    name: string,
    type: MetricType,
    help: string,
    labels: Record<string, string>,
    value: string,
    sample = name,
  ): void => {
    samples.push({ name, sample, type, help, line: `${sample}${renderLabels(labels)} ${value}\n` });
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
    const state = reading.status === 'leader_only' ? 'leader' : undefined;
    return { host, status: reading.status, state, samples, skipped: 0 };
  }
  let state: string | undefined;
  let skipped = 0;
  const names = replyNames(reading.entries);
  /** Series written, so that two entries named alike once shaped give one. */
  const series = new Set<string>();
  for (const entry of reading.entries) {
    // Text keys stay labels even when their text looks like a number (zk_observer_master_id).
    if (entry.value !== undefined && !TEXT_KEYS.has(entry.name)) {
      const shaped = shapeEntry(entry, names);
      if (shaped === undefined) continue;
      const labels: Record<string, string> = { zk_host: host };
      if (typeof shaped !== 'string') for (const [label, value] of shaped.labels) labels[label] = value;
      const line = typeof shaped === 'string' ? '' : `${shaped.name}${renderLabels(labels)}`;
      if (typeof shaped === 'string' || series.has(line)) {
        skipped++;
        continue;
      }
      series.add(line);
      add(shaped.family, shaped.type, shaped.help, labels, formatValue(shaped.value), shaped.name);
      continue;
    }
    const labels = withEntryLabels(host, entry);
    const label = TEXT_LABEL.get(entry.name) ?? 'value';
    const help = `ZooKeeper mntr ${entry.name}, as the ${label} label; always 1.`;
    add(entry.name, 'gauge', help, { ...labels, ...textLabels(entry.name, label, entry.text) }, '1');
    if (entry.name === 'zk_server_state' && state === undefined) {
      state = entry.text;
      leader(state === 'leader');
    }
  }
  if (state === undefined) leader(false);
  return { host, status: 'ok', state, samples, skipped };
}

/**
 * Series family by family, in order of first appearance. A family keeps the first type seen, and a
 * sample name belongs to one family: a sample that would break either (a gauge named like another
 * server's summary `_count`) is left out, so that the body stays one a scraper takes.
 */
export function writeServers(servers: readonly PreparedServer[]): string {
  const families = new Map<string, { type: MetricType; lines: string[] }>();
  const owner = new Map<string, string>();
  for (const server of servers) {
    for (const sample of server.samples) {
      let family = families.get(sample.name);
      if (family === undefined) {
        if (owner.has(sample.name) || (sample.sample !== sample.name && families.has(sample.sample))) continue;
        family = { type: sample.type, lines: [familyHead(sample.name, sample.type, sample.help)] };
        families.set(sample.name, family);
        owner.set(sample.name, sample.name);
      } else if (family.type !== sample.type) {
        continue;
      }
      const taken = owner.get(sample.sample);
      if (taken !== undefined && taken !== sample.name) continue;
      owner.set(sample.sample, sample.name);
      family.lines.push(sample.line);
    }
  }
  return [...families.values()].map((family) => family.lines.join('')).join('');
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
