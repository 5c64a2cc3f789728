import { escapeLabelValue, formatValue } from '@cachemon/core';
import type { ExpositionWriter } from '@cachemon/core';
import type { CacheNode } from '@cachemon/arcus';
import type { FamilySpec, SettingRule } from './catalog.js';
import {
  NODE_ERROR,
  NODE_REGISTERED,
  NODE_SCRAPE_DURATION,
  QOS_LATENCY,
  QOS_SUCCESS,
  QOS_TIMESTAMP,
  SETTINGS,
  UP,
  VERSION_INFO,
  ZOOKEEPER_STATS,
  ruleForStat,
} from './catalog.js';
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

/** A series' `name{labels} ` prefix, and how its value is written. */
interface Series {
  readonly family: FamilySpec;
  readonly prefix: string;
  /** Multiply the raw value; undefined writes the server's own number text as it is. */
  readonly scale: number | undefined;
}

/**
 * Per node, the rendered prefix of each of its series, built on first use and kept while the node
 * object lives (topology objects are replaced only when the topology changes). A scrape of 100
 * nodes writes ~17,000 series; with the prefixes cached each costs one concatenation.
 */
interface NodeSeries {
  readonly ensemble: string;
  readonly base: string;
  readonly braced: string;
  readonly stats: Map<string, Series | null>;
  readonly other: Map<string, string>;
}

const seriesCache = new WeakMap<CacheNode, NodeSeries>();

function nodeSeries(ensemble: string, node: CacheNode): NodeSeries {
  let cached = seriesCache.get(node);
  if (cached === undefined || cached.ensemble !== ensemble) {
    const base = nodeLabelText(ensemble, node);
    cached = { ensemble, base, braced: `{${base}}`, stats: new Map(), other: new Map() };
    seriesCache.set(node, cached);
  }
  return cached;
}

function statsSeries(series: NodeSeries, name: string): Series {
  let found = series.stats.get(name);
  if (found === undefined) {
    const rule = ruleForStat(name);
    found =
      rule.kind === 'field'
        ? { family: rule.family, prefix: `${rule.family.name}${series.braced} `, scale: rule.scale }
        : { family: rule.family, prefix: `${rule.family.name}${withLabel(series.base, rule.label, rule.value)} `, scale: undefined };
    series.stats.set(name, found);
  }
  return found!;
}

/** Prefix of a series with one extra label, cached per node. */
function labelledPrefix(series: NodeSeries, family: FamilySpec, label: string, value: string): string {
  const key = `${family.name}\u0000${label}\u0000${value}`;
  let prefix = series.other.get(key);
  if (prefix === undefined) {
    prefix = `${family.name}${withLabel(series.base, label, value)} `;
    series.other.set(key, prefix);
  }
  return prefix;
}

/** Sample lines grouped by family so each family's HELP/TYPE is written once for all nodes. */
class Lines {
  private readonly families = new Map<FamilySpec, string[]>();

  add(family: FamilySpec, line: string): void {
    const lines = this.families.get(family);
    if (lines === undefined) this.families.set(family, [line]);
    else lines.push(line);
  }

  writeTo(writer: ExpositionWriter): void {
    for (const [family, lines] of this.families) writer.family(family.name, family.type, family.help).sampleLines(lines);
  }
}

/** Renders the node series of /metrics. Pure: snapshots in, exposition text out. */
export function renderNodeMetrics(ensemble: string, snapshots: readonly NodeSnapshot[], writer: ExpositionWriter): void {
  const lines = new Lines();
  for (const snapshot of snapshots) {
    const series = nodeSeries(ensemble, snapshot.node);
    const { braced } = series;
    lines.add(UP, `${UP.name}${braced} ${snapshot.up ? 1 : 0}\n`);
    lines.add(NODE_REGISTERED, `${NODE_REGISTERED.name}${braced} ${snapshot.node.live ? 1 : 0}\n`);
    if (!snapshot.up && snapshot.reason !== undefined) {
      lines.add(NODE_ERROR, `${labelledPrefix(series, NODE_ERROR, 'reason', snapshot.reason)}1\n`);
    }
    if (snapshot.durationSeconds !== undefined) {
      lines.add(NODE_SCRAPE_DURATION, `${NODE_SCRAPE_DURATION.name}${braced} ${formatValue(snapshot.durationSeconds)}\n`);
    }
    if (snapshot.up && snapshot.stats) addStats(lines, series, snapshot.stats);
    if (snapshot.up && snapshot.settings) addSettings(lines, series, SETTINGS, snapshot.settings);
    if (snapshot.up && snapshot.zookeeper) addSettings(lines, series, ZOOKEEPER_STATS, snapshot.zookeeper);
    if (snapshot.node.live && snapshot.qos) {
      for (const result of snapshot.qos.results) {
        lines.add(QOS_SUCCESS, `${labelledPrefix(series, QOS_SUCCESS, 'probe', result.probe)}${result.ok ? 1 : 0}\n`);
        if (result.ok) lines.add(QOS_LATENCY, `${labelledPrefix(series, QOS_LATENCY, 'probe', result.probe)}${formatValue(result.seconds)}\n`);
      }
      lines.add(QOS_TIMESTAMP, `${QOS_TIMESTAMP.name}${braced} ${formatValue(snapshot.qos.at / 1000)}\n`);
    }
  }
  lines.writeTo(writer);
}

function addStats(lines: Lines, series: NodeSeries, stats: StatsEntries): void {
  let version = '';
  let libevent = '';
  for (const [name, raw] of stats) {
    // The server's own number text is valid exposition as it is; a field that is not a number
    // (version, libevent) has no sample of its own.
    if (raw === '' || Number.isNaN(Number(raw))) {
      if (name === 'version') version = raw;
      else if (name === 'libevent') libevent = raw;
      continue;
    }
    const { family, prefix, scale } = statsSeries(series, name);
    lines.add(family, scale === undefined ? `${prefix}${raw}\n` : `${prefix}${formatValue(Number(raw) * scale)}\n`);
  }
  if (version !== '' || libevent !== '') {
    lines.add(
      VERSION_INFO,
      `${VERSION_INFO.name}{version="${escapeLabelValue(version)}",libevent="${escapeLabelValue(libevent)}",${series.base}} 1\n`,
    );
  }
}

function addSettings(lines: Lines, series: NodeSeries, rules: ReadonlyMap<string, SettingRule>, entries: StatsEntries): void {
  for (const [name, raw] of entries) {
    const rule = rules.get(name);
    if (!rule) continue;
    const value = rule.parse(raw);
    if (value === undefined) continue;
    const prefix = rule.label
      ? labelledPrefix(series, rule.family, rule.label[0], rule.label[1])
      : `${rule.family.name}${series.braced} `;
    lines.add(rule.family, `${prefix}${formatValue(value)}\n`);
  }
}
