/**
 * /metrics of the coordination exporter. Names follow the widely used ZooKeeper exporter
 * (dabealu/zookeeper-exporter): every `mntr` key under its own name with a `zk_host` label,
 * `zk_up`, `zk_server_leader`, and `zk_version{version}`, so its dashboards and alerts work here.
 * On top of that: counters are typed as counters (mntr-catalog.ts), keys that carry labels keep them
 * (a server configured with ZooKeeper's Prometheus metrics provider prints `zk_readlatency{quantile="0.5"}`),
 * text values become labels of info-style gauges, and why a server is not read is a metric of its own.
 */
import { ExpositionWriter, renderLabels, type MetricType } from '@cachemon/core';
import type { MntrEntry } from './mntr.js';
import { COUNTER_KEYS, COUNTER_SET_NAMES, SUMMARY_NAMES, SUMMARY_SET_NAMES, TEXT_KEYS } from './mntr-catalog.js';

/** What one server said this scrape. */
export type ServerStatus = 'ok' | 'unreachable' | 'timeout' | 'not_whitelisted' | 'not_serving' | 'protocol';
export const SERVER_STATUSES: readonly ServerStatus[] = ['ok', 'unreachable', 'timeout', 'not_whitelisted', 'not_serving', 'protocol'];

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
 * counter or gauge for a numeric mntr key (`name` without labels). ZooKeeper's default metrics
 * provider prints a counter as `zk_<name>`, a summary as `zk_{avg,min,max,cnt,sum}_<name>` (and
 * `zk_p{50,95,99,999}_<name>`), a summary set member as `zk_<stat>_<member>_<name>`, a counter set
 * member (3.9+) as `zk_<member>_<name>`; only counters and the cnt and sum of summaries only grow.
 */
export function metricType(name: string): MetricType {
  if (COUNTER_KEYS.has(name)) return 'counter';
  const rest = name.startsWith('zk_') ? name.slice(3) : name;
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

interface Sample {
  /** Rendered label set, `{zk_host="...",...}`. */
  readonly labels: string;
  readonly value: number;
}

/**
 * Label texts of numeric series, per `zk_host` by key as printed: the same ~500 per server every
 * scrape. Bounded: a host's map is cleared when it grows past LABEL_CACHE_LIMIT (keys that come and go).
 */
const labelCache = new Map<string, Map<string, string>>();
const LABEL_CACHE_LIMIT = 100_000;

function labelsOf(host: string): Map<string, string> {
  let labels = labelCache.get(host);
  if (labels === undefined) labelCache.set(host, (labels = new Map()));
  else if (labels.size >= LABEL_CACHE_LIMIT) labels.clear();
  return labels;
}

function withEntryLabels(host: string, entry: MntrEntry): Record<string, string> {
  const labels: Record<string, string> = { zk_host: host };
  for (const [name, value] of entry.labels) if (name !== 'zk_host') labels[name] = value;
  return labels;
}

/** Type and help of numeric families by name, worked out once. */
const familyCache = new Map<string, { type: MetricType; help: string }>();

function numericFamily(name: string): { type: MetricType; help: string } {
  let meta = familyCache.get(name);
  if (meta === undefined) {
    if (familyCache.size >= LABEL_CACHE_LIMIT) familyCache.clear();
    meta = { type: metricType(name), help: `ZooKeeper mntr ${name}.` };
    familyCache.set(name, meta);
  }
  return meta;
}

/** Writes every server's series, family by family. */
export function renderServers(readings: readonly ServerReading[], out: ExpositionWriter): void {
  const families = new Map<string, { type: MetricType; help: string; samples: Sample[] }>();
  const add = (name: string, type: MetricType, help: string, labels: string, value: number): void => {
    let family = families.get(name);
    if (family === undefined) families.set(name, (family = { type, help, samples: [] }));
    family.samples.push({ labels, value });
  };

  for (const reading of readings) {
    const hostLabels = renderLabels({ zk_host: reading.host });
    add('zk_up', 'gauge', '1 when the server answered mntr with metrics, else 0.', hostLabels, reading.status === 'ok' ? 1 : 0);
    for (const status of SERVER_STATUSES) {
      add(
        'zk_mntr_status',
        'gauge',
        'Why the server was or was not read: 1 for its status of this scrape (ok, unreachable, timeout, not_whitelisted, not_serving, protocol).',
        renderLabels({ zk_host: reading.host, status }),
        reading.status === status ? 1 : 0,
      );
    }
    if (reading.status !== 'ok') continue;
    const cached = labelsOf(reading.host);
    for (const entry of reading.entries) {
      // Text keys stay labels even when their text looks like a number (zk_observer_master_id).
      if (entry.value !== undefined && !TEXT_KEYS.has(entry.name)) {
        const meta = numericFamily(entry.name);
        let labels = cached.get(entry.key);
        if (labels === undefined) cached.set(entry.key, (labels = renderLabels(withEntryLabels(reading.host, entry))));
        add(entry.name, meta.type, meta.help, labels, entry.value);
        continue;
      }
      const label = TEXT_LABEL.get(entry.name) ?? 'value';
      const labels = renderLabels({ ...withEntryLabels(reading.host, entry), [label]: entry.text });
      add(entry.name, 'gauge', `ZooKeeper mntr ${entry.name}, as the ${label} label; always 1.`, labels, 1);
      if (entry.name === 'zk_server_state') {
        add('zk_server_leader', 'gauge', '1 when the server is the ensemble leader, else 0.', hostLabels, entry.text === 'leader' ? 1 : 0);
      }
    }
  }

  for (const [name, family] of families) {
    out.family(name, family.type, family.help);
    for (const sample of family.samples) out.sample(sample.labels, sample.value);
  }
}
