import { escapeLabelValue } from '@cachemon/core';
import type { ExpositionWriter } from '@cachemon/core';
import type { CacheNode } from '@cachemon/arcus';
import type { FamilySpec } from './catalog.js';
import {
  NODE_ERROR,
  NODE_REGISTERED,
  NODE_SCRAPE_DURATION,
  QOS_LATENCY,
  QOS_SUCCESS,
  QOS_TIMESTAMP,
  SETTINGS,
  STATS_TEXT_FIELDS,
  UP,
  VERSION_INFO,
  ZOOKEEPER_STATS,
  ruleForStat,
} from './catalog.js';
import type { SettingRule } from './catalog.js';
import { nodeLabelText, withLabel } from './labels.js';

export type StatsEntries = ReadonlyArray<readonly [string, string]>;

export interface QosSnapshot {
  /** Date.now() when the probes ran. */
  readonly at: number;
  readonly results: ReadonlyArray<{ readonly probe: string; readonly ok: boolean; readonly seconds: number }>;
}

/** What one scrape learned about one node. */
export interface NodeSnapshot {
  readonly node: CacheNode;
  readonly up: boolean;
  /** Why it is down: not_registered, timeout, unreachable, protocol, error_reply, closed. */
  readonly reason?: string;
  readonly durationSeconds?: number;
  readonly stats?: StatsEntries;
  /** Last `stats settings` / `stats zookeeper` (refreshed less often; kept while the node is up). */
  readonly settings?: StatsEntries;
  readonly zookeeper?: StatsEntries;
  readonly qos?: QosSnapshot;
}

/** Samples grouped by family so each family's HELP/TYPE is written once for all nodes. */
class Buckets {
  private readonly families = new Map<FamilySpec, { labels: string[]; values: number[] }>();

  add(family: FamilySpec, labelText: string, value: number): void {
    let bucket = this.families.get(family);
    if (bucket === undefined) {
      bucket = { labels: [], values: [] };
      this.families.set(family, bucket);
    }
    bucket.labels.push(labelText);
    bucket.values.push(value);
  }

  writeTo(writer: ExpositionWriter): void {
    for (const [family, bucket] of this.families) {
      writer.family(family.name, family.type, family.help);
      const { labels, values } = bucket;
      for (let i = 0; i < labels.length; i++) writer.sample(labels[i]!, values[i]!);
    }
  }
}

/** Renders the node series of /metrics. Pure: snapshots in, exposition text out. */
export function renderNodeMetrics(ensemble: string, snapshots: readonly NodeSnapshot[], writer: ExpositionWriter): void {
  const buckets = new Buckets();
  for (const snapshot of snapshots) {
    const base = nodeLabelText(ensemble, snapshot.node);
    const braced = `{${base}}`;
    buckets.add(UP, braced, snapshot.up ? 1 : 0);
    buckets.add(NODE_REGISTERED, braced, snapshot.node.live ? 1 : 0);
    if (!snapshot.up && snapshot.reason !== undefined) {
      buckets.add(NODE_ERROR, withLabel(base, 'reason', snapshot.reason), 1);
    }
    if (snapshot.durationSeconds !== undefined) buckets.add(NODE_SCRAPE_DURATION, braced, snapshot.durationSeconds);
    if (snapshot.up && snapshot.stats) addStats(buckets, base, braced, snapshot.stats);
    if (snapshot.up && snapshot.settings) addSettings(buckets, base, braced, SETTINGS, snapshot.settings);
    if (snapshot.up && snapshot.zookeeper) addSettings(buckets, base, braced, ZOOKEEPER_STATS, snapshot.zookeeper);
    if (snapshot.node.live && snapshot.qos) {
      for (const result of snapshot.qos.results) {
        const labels = withLabel(base, 'probe', result.probe);
        buckets.add(QOS_SUCCESS, labels, result.ok ? 1 : 0);
        if (result.ok) buckets.add(QOS_LATENCY, labels, result.seconds);
      }
      buckets.add(QOS_TIMESTAMP, braced, snapshot.qos.at / 1000);
    }
  }
  buckets.writeTo(writer);
}

function addStats(buckets: Buckets, base: string, braced: string, stats: StatsEntries): void {
  let version = '';
  let libevent = '';
  for (const [name, raw] of stats) {
    const value = Number(raw);
    if (raw === '' || Number.isNaN(value)) {
      if (name === 'version') version = raw;
      else if (name === 'libevent') libevent = raw;
      // Other text fields (none in ARCUS 1.15 stats) carry no number to export.
      continue;
    }
    if (STATS_TEXT_FIELDS.has(name)) {
      if (name === 'version') version = raw;
      continue;
    }
    const rule = ruleForStat(name);
    if (rule.kind === 'field') {
      buckets.add(rule.family, braced, rule.scale === undefined ? value : value * rule.scale);
    } else {
      buckets.add(rule.family, withLabel(base, rule.label, rule.value), value);
    }
  }
  if (version !== '' || libevent !== '') {
    buckets.add(VERSION_INFO, `{version="${escapeLabelValue(version)}",libevent="${escapeLabelValue(libevent)}",${base}}`, 1);
  }
}

function addSettings(
  buckets: Buckets,
  base: string,
  braced: string,
  rules: ReadonlyMap<string, SettingRule>,
  entries: StatsEntries,
): void {
  for (const [name, raw] of entries) {
    const rule = rules.get(name);
    if (!rule) continue;
    const value = rule.parse(raw);
    if (value === undefined) continue;
    buckets.add(rule.family, rule.label ? withLabel(base, rule.label[0], rule.label[1]) : braced, value);
  }
}
