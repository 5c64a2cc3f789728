import { escapeLabelValue, formatValue } from '@cachemon/core';
import type { ExpositionBuffer } from '@cachemon/core';
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

/*
 * How /metrics is written fast. A scrape of 500 nodes has ~87,000 series; building a string per
 * sample and joining them cost more than talking to the nodes. Instead:
 *
 * - A *plan* per distinct `stats` field list (every node of one server version has the same list,
 *   in the same order): which family each position belongs to, and its scale. Plans are shared by
 *   all nodes with that list.
 * - Per node, the `name{labels} ` prefix of each position, encoded once into one Buffer (with an
 *   offsets table), kept while the topology's node object lives.
 * - Writing is then, family by family and node by node, a byte copy of the prefix and the
 *   server's own number text.
 */

interface StatsPlan {
  readonly names: readonly string[];
  readonly families: ReadonlyMap<FamilySpec, readonly number[]>;
  readonly scales: ReadonlyArray<number | undefined>;
  readonly prefixTexts: (base: string, braced: string) => string[];
}

const plans: StatsPlan[] = [];
/** Stats families in the order they were first seen, across plans: each is written once. */
const statsFamilyOrder: FamilySpec[] = [];

function findPlan(stats: StatsEntries): StatsPlan {
  for (const plan of plans) if (sameNames(plan.names, stats)) return plan;
  const names = stats.map(([name]) => name);
  const families = new Map<FamilySpec, number[]>();
  const scales: Array<number | undefined> = [];
  const rules = names.map((name) => ruleForStat(name));
  rules.forEach((rule, position) => {
    scales.push(rule.kind === 'field' ? rule.scale : undefined);
    const name = names[position]!;
    // Text fields go to arcus_version_info, not to a sample of their own.
    if (name === 'version' || name === 'libevent') return;
    let positions = families.get(rule.family);
    if (!positions) families.set(rule.family, (positions = []));
    positions.push(position);
    if (!statsFamilyOrder.includes(rule.family)) statsFamilyOrder.push(rule.family);
  });
  const plan: StatsPlan = {
    names,
    families,
    scales,
    prefixTexts: (base, braced) =>
      rules.map((rule) =>
        rule.kind === 'field' ? `${rule.family.name}${braced} ` : `${rule.family.name}${withLabel(base, rule.label, rule.value)} `,
      ),
  };
  plans.push(plan);
  return plan;
}

function sameNames(names: readonly string[], stats: StatsEntries): boolean {
  if (names.length !== stats.length) return false;
  for (let i = 0; i < names.length; i++) if (names[i] !== stats[i]![0]) return false;
  return true;
}

interface NodeSeries {
  readonly ensemble: string;
  readonly base: string;
  readonly braced: string;
  plan: StatsPlan | undefined;
  prefixes: Buffer;
  offsets: Uint32Array;
  /** Prefixes of the series with one extra label (reason, probe, setting type). */
  readonly labelled: Map<string, string>;
}

const seriesCache = new WeakMap<CacheNode, NodeSeries>();

function nodeSeries(ensemble: string, node: CacheNode): NodeSeries {
  let cached = seriesCache.get(node);
  if (cached === undefined || cached.ensemble !== ensemble) {
    const base = nodeLabelText(ensemble, node);
    cached = {
      ensemble,
      base,
      braced: `{${base}}`,
      plan: undefined,
      prefixes: Buffer.alloc(0),
      offsets: new Uint32Array(1),
      labelled: new Map(),
    };
    seriesCache.set(node, cached);
  }
  return cached;
}

function usePlan(series: NodeSeries, stats: StatsEntries): StatsPlan {
  if (series.plan !== undefined && sameNames(series.plan.names, stats)) return series.plan;
  const plan = findPlan(stats);
  const texts = plan.prefixTexts(series.base, series.braced);
  const offsets = new Uint32Array(texts.length + 1);
  const joined = texts.join('');
  let at = 0;
  texts.forEach((text, i) => {
    offsets[i] = at;
    at += Buffer.byteLength(text);
  });
  offsets[texts.length] = at;
  series.plan = plan;
  series.prefixes = Buffer.from(joined);
  series.offsets = offsets;
  return plan;
}

function labelledPrefix(series: NodeSeries, family: FamilySpec, label: string, value: string): string {
  const key = `${family.name}\u0000${label}\u0000${value}`;
  let prefix = series.labelled.get(key);
  if (prefix === undefined) {
    prefix = `${family.name}${withLabel(series.base, label, value)} `;
    series.labelled.set(key, prefix);
  }
  return prefix;
}

/** Whole sample lines of the small families (a few per node), grouped by family. */
class Lines {
  private readonly families = new Map<FamilySpec, string[]>();

  add(family: FamilySpec, line: string): void {
    const lines = this.families.get(family);
    if (lines === undefined) this.families.set(family, [line]);
    else lines.push(line);
  }

  writeTo(out: ExpositionBuffer, family: FamilySpec): void {
    const lines = this.families.get(family);
    if (!lines) return;
    out.family(family.name, family.type, family.help).text(lines.join('')).countSamples(lines.length);
  }

  writeAllTo(out: ExpositionBuffer): void {
    for (const family of this.families.keys()) this.writeTo(out, family);
  }
}

interface Prepared {
  readonly snapshot: NodeSnapshot;
  readonly series: NodeSeries;
  readonly plan: StatsPlan | undefined;
}

/** Renders the node series of /metrics. Pure: snapshots in, exposition bytes out. */
export function renderNodeMetrics(ensemble: string, snapshots: readonly NodeSnapshot[], out: ExpositionBuffer): void {
  const prepared: Prepared[] = snapshots.map((snapshot) => {
    const series = nodeSeries(ensemble, snapshot.node);
    const plan = snapshot.up && snapshot.stats ? usePlan(series, snapshot.stats) : undefined;
    return { snapshot, series, plan };
  });

  const state = new Lines();
  for (const { snapshot, series } of prepared) {
    const { braced } = series;
    state.add(UP, `${UP.name}${braced} ${snapshot.up ? 1 : 0}\n`);
    state.add(NODE_REGISTERED, `${NODE_REGISTERED.name}${braced} ${snapshot.node.live ? 1 : 0}\n`);
    if (!snapshot.up && snapshot.reason !== undefined) {
      state.add(NODE_ERROR, `${labelledPrefix(series, NODE_ERROR, 'reason', snapshot.reason)}1\n`);
    }
    if (snapshot.durationSeconds !== undefined) {
      state.add(NODE_SCRAPE_DURATION, `${NODE_SCRAPE_DURATION.name}${braced} ${formatValue(snapshot.durationSeconds)}\n`);
    }
    if (snapshot.up && snapshot.stats) addVersion(state, series, snapshot.stats);
  }
  state.writeAllTo(out);

  for (const family of statsFamilyOrder) writeStatsFamily(out, family, prepared);

  const rest = new Lines();
  for (const { snapshot, series } of prepared) {
    if (snapshot.up && snapshot.settings) addSettings(rest, series, SETTINGS, snapshot.settings);
    if (snapshot.up && snapshot.zookeeper) addSettings(rest, series, ZOOKEEPER_STATS, snapshot.zookeeper);
    if (snapshot.node.live && snapshot.qos) {
      for (const result of snapshot.qos.results) {
        rest.add(QOS_SUCCESS, `${labelledPrefix(series, QOS_SUCCESS, 'probe', result.probe)}${result.ok ? 1 : 0}\n`);
        if (result.ok) rest.add(QOS_LATENCY, `${labelledPrefix(series, QOS_LATENCY, 'probe', result.probe)}${formatValue(result.seconds)}\n`);
      }
      rest.add(QOS_TIMESTAMP, `${QOS_TIMESTAMP.name}${series.braced} ${formatValue(snapshot.qos.at / 1000)}\n`);
    }
  }
  rest.writeAllTo(out);
}

function writeStatsFamily(out: ExpositionBuffer, family: FamilySpec, prepared: readonly Prepared[]): void {
  let headed = false;
  for (const { snapshot, series, plan } of prepared) {
    const positions = plan?.families.get(family);
    if (!positions) continue;
    const stats = snapshot.stats!;
    for (const position of positions) {
      const raw = stats[position]![1];
      // The server's own number text is valid exposition as it is; skip what is not a number.
      if (raw === '' || Number.isNaN(Number(raw))) continue;
      if (!headed) {
        out.family(family.name, family.type, family.help);
        headed = true;
      }
      const scale = plan!.scales[position];
      out.sample(
        series.prefixes,
        series.offsets[position]!,
        series.offsets[position + 1]!,
        scale === undefined ? raw : formatValue(Number(raw) * scale),
      );
    }
  }
}

function addVersion(lines: Lines, series: NodeSeries, stats: StatsEntries): void {
  let version = '';
  let libevent = '';
  for (const [name, raw] of stats) {
    if (name === 'version') version = raw;
    else if (name === 'libevent') libevent = raw;
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
