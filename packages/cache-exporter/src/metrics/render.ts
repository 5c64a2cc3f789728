import { escapeLabelValue, formatValue } from '@cachemon/core';
import type { ExpositionBuffer } from '@cachemon/core';
import { parseStats, scanStats } from '@cachemon/arcus';
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
  STATS_TEXT_FIELDS,
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

/**
 * One node's `stats` reply of the current scrape, rendered: its sample lines, family by family.
 * Made by NodeMetricsRenderer.acceptStats; the object is the node's own and is rewritten by the
 * node's next reply, so it is valid until then (one /metrics collection runs at a time).
 */
export interface RenderedStats {
  readonly plan: StatsPlan;
  /** Sample lines; [0, length) is this reply's. */
  readonly bytes: Buffer;
  readonly length: number;
  /** Per family index of the plan: start, end and sample count of its lines in `bytes`. */
  readonly segments: Uint32Array;
  readonly version: string;
  readonly libevent: string;
}

/** What one scrape learned about one node. */
export interface NodeSnapshot {
  readonly node: CacheNode;
  readonly up: boolean;
  /** Why it is down: not_registered, timeout, unreachable, protocol, error_reply, closed. */
  readonly reason?: string;
  readonly durationSeconds?: number;
  /** Its `stats` reply of this scrape (acceptStats). */
  readonly stats?: RenderedStats;
  /** Last `stats settings` / `stats zookeeper` (refreshed less often; kept while the node is up). */
  readonly settings?: StatsEntries;
  readonly zookeeper?: StatsEntries;
  readonly qos?: QosSnapshot;
}

/*
 * How /metrics is written fast. A scrape of 500 nodes has ~87,000 series. Parsing every `stats`
 * reply into strings and building a string per sample cost more than talking to the nodes, and
 * the garbage (~450 objects per node per scrape, half of them kept until the next scrape) made
 * the young-generation collections copy megabytes on every scrape. Instead:
 *
 * - A *plan* per distinct `stats` field list (every node of one server version has the same list,
 *   in the same order): the field names as bytes, which family each position belongs to, and its
 *   scale. Plans are shared by the nodes with that list.
 * - Per node, the `name{labels} ` prefix of each position, encoded once into one Buffer (with an
 *   offsets table), kept while the topology's node object lives.
 * - A reply is read as bytes, as it arrives: its names are compared with the plan's, byte for
 *   byte, and each sample is the prefix copied next to the server's own number text. Only a
 *   reply whose field list differs from the node's plan is parsed into strings (once, to find or
 *   make its plan). Nothing per line is allocated.
 * - The body is then, family by family and node by node, one copy of each node's segment.
 */

/** How a node's `stats` field list is rendered. Shared by every node with the same list. */
interface StatsPlan {
  readonly names: readonly string[];
  /** The names as bytes, `nameOffsets[i]..nameOffsets[i + 1]` each. */
  readonly nameBytes: Buffer;
  readonly nameOffsets: Uint32Array;
  /** The plan's families, in the order of their first field. */
  readonly families: readonly FamilySpec[];
  readonly familyIndex: ReadonlyMap<FamilySpec, number>;
  /** Positions of each family's fields. */
  readonly positions: ReadonlyArray<readonly number[]>;
  readonly scales: ReadonlyArray<number | undefined>;
  readonly scaled: number;
  /** Positions of the text fields that make arcus_version_info, or -1. */
  readonly versionAt: number;
  readonly libeventAt: number;
  /** `name{labels} ` of each position for a node's label text ('' for positions not rendered). */
  readonly prefixTexts: (base: string, braced: string) => string[];
}

interface NodeSeries {
  readonly base: string;
  readonly braced: string;
  readonly upLines: readonly [string, string];
  readonly registeredLines: readonly [string, string];
  /** Prefixes of the series with one extra label (reason, probe, setting type). */
  readonly labelled: Map<string, string>;
  plan: StatsPlan | undefined;
  prefixes: Buffer;
  offsets: Uint32Array;
  /** Value ranges of the reply being rendered: start and end per position. */
  values: Uint32Array;
  stats: RenderedStats | undefined;
  versionLine: { version: string; libevent: string; line: string } | undefined;
  /** Lines of settings, zookeeper and QoS, kept while their sources are the same objects. */
  aux: { settings?: StatsEntries; zookeeper?: StatsEntries; qos?: QosSnapshot; lines: ReadonlyArray<readonly [FamilySpec, string]> } | undefined;
}

/**
 * Renders the node series of /metrics for one ensemble. Keeps, per node, what repeats from one
 * scrape to the next (label texts, encoded series prefixes, the byte area its samples are written
 * into); per distinct stats field list, the plan.
 */
export class NodeMetricsRenderer {
  private readonly plans = new Map<string, StatsPlan>();
  /** Stats families in the order they were first seen, across plans: each is written once. */
  private readonly statsFamilyOrder: FamilySpec[] = [];
  private readonly series = new WeakMap<CacheNode, NodeSeries>();

  constructor(readonly ensemble: string) {}

  /**
   * Renders one node's `stats` reply (its bytes, as framed) into the node's own byte area and
   * returns it. Throws CachemonError NODE_ERROR_REPLY or NODE_PROTOCOL when the bytes are not a
   * stats reply; the node's previous rendering is then no longer valid.
   */
  acceptStats(node: CacheNode, reply: Buffer): RenderedStats {
    const series = this.nodeSeries(node);
    if (series.plan === undefined || !readValues(series, series.plan, reply)) {
      // A new node or a field list of its own: parse once (this also checks the whole reply).
      this.usePlan(series, this.findPlan(parseStats(reply).map(([name]) => name)));
      if (!readValues(series, series.plan!, reply)) throw new Error('stats plan does not match the reply it was made from');
    }
    return writeSamples(series, series.plan!, reply);
  }

  /** Writes the node series of /metrics: state, stats, settings and QoS, family by family. */
  render(snapshots: readonly NodeSnapshot[], out: ExpositionBuffer): void {
    const series = snapshots.map((snapshot) => this.nodeSeries(snapshot.node));

    const state = new Lines();
    snapshots.forEach((snapshot, i) => {
      const s = series[i]!;
      state.add(UP, s.upLines[snapshot.up ? 1 : 0]);
      state.add(NODE_REGISTERED, s.registeredLines[snapshot.node.live ? 1 : 0]);
      if (!snapshot.up && snapshot.reason !== undefined) {
        state.add(NODE_ERROR, `${labelledPrefix(s, NODE_ERROR, 'reason', snapshot.reason)}1\n`);
      }
      if (snapshot.durationSeconds !== undefined) {
        state.add(NODE_SCRAPE_DURATION, `${NODE_SCRAPE_DURATION.name}${s.braced} ${formatValue(snapshot.durationSeconds)}\n`);
      }
      if (snapshot.up && snapshot.stats) {
        const line = versionLine(s, snapshot.stats);
        if (line !== undefined) state.add(VERSION_INFO, line);
      }
    });
    state.writeAllTo(out);

    for (const family of this.statsFamilyOrder) {
      let headed = false;
      for (const snapshot of snapshots) {
        const stats = snapshot.up ? snapshot.stats : undefined;
        if (stats === undefined) continue;
        const index = stats.plan.familyIndex.get(family);
        if (index === undefined) continue;
        const start = stats.segments[index * 3]!;
        const end = stats.segments[index * 3 + 1]!;
        if (end === start) continue;
        if (!headed) {
          out.family(family.name, family.type, family.help);
          headed = true;
        }
        out.bytes(stats.bytes, start, end, stats.segments[index * 3 + 2]!);
      }
    }

    const rest = new Lines();
    snapshots.forEach((snapshot, i) => {
      for (const [family, line] of auxLines(series[i]!, snapshot)) rest.add(family, line);
    });
    rest.writeAllTo(out);
  }

  private nodeSeries(node: CacheNode): NodeSeries {
    let series = this.series.get(node);
    if (series === undefined) {
      const base = nodeLabelText(this.ensemble, node);
      const braced = `{${base}}`;
      series = {
        base,
        braced,
        upLines: [`${UP.name}${braced} 0\n`, `${UP.name}${braced} 1\n`],
        registeredLines: [`${NODE_REGISTERED.name}${braced} 0\n`, `${NODE_REGISTERED.name}${braced} 1\n`],
        labelled: new Map(),
        plan: undefined,
        prefixes: EMPTY,
        offsets: new Uint32Array(1),
        values: new Uint32Array(0),
        stats: undefined,
        versionLine: undefined,
        aux: undefined,
      };
      this.series.set(node, series);
    }
    return series;
  }

  private findPlan(names: readonly string[]): StatsPlan {
    const key = names.join('\n');
    let plan = this.plans.get(key);
    if (plan === undefined) {
      plan = makePlan(names);
      this.plans.set(key, plan);
      for (const family of plan.families) if (!this.statsFamilyOrder.includes(family)) this.statsFamilyOrder.push(family);
    }
    return plan;
  }

  private usePlan(series: NodeSeries, plan: StatsPlan): void {
    const texts = plan.prefixTexts(series.base, series.braced);
    const offsets = new Uint32Array(texts.length + 1);
    let at = 0;
    texts.forEach((text, i) => {
      offsets[i] = at;
      at += Buffer.byteLength(text);
    });
    offsets[texts.length] = at;
    series.plan = plan;
    series.prefixes = Buffer.from(texts.join(''));
    series.offsets = offsets;
    series.values = new Uint32Array(plan.names.length * 2);
  }
}

const EMPTY = Buffer.alloc(0);

function makePlan(names: readonly string[]): StatsPlan {
  const families: FamilySpec[] = [];
  const familyIndex = new Map<FamilySpec, number>();
  const positions: number[][] = [];
  const scales: Array<number | undefined> = [];
  const rules = names.map((name) => ruleForStat(name));
  const seen = new Set<string>();
  let scaled = 0;
  rules.forEach((rule, position) => {
    const name = names[position]!;
    scales.push(rule.kind === 'field' ? rule.scale : undefined);
    if (rule.kind === 'field' && rule.scale !== undefined) scaled++;
    // Text fields go to arcus_version_info; a field the server repeats is rendered once.
    if (STATS_TEXT_FIELDS.has(name) || seen.has(name)) return;
    seen.add(name);
    let index = familyIndex.get(rule.family);
    if (index === undefined) {
      index = families.length;
      families.push(rule.family);
      familyIndex.set(rule.family, index);
      positions.push([]);
    }
    positions[index]!.push(position);
  });
  const rendered = new Set(positions.flat());
  const nameOffsets = new Uint32Array(names.length + 1);
  let at = 0;
  names.forEach((name, i) => {
    nameOffsets[i] = at;
    at += Buffer.byteLength(name);
  });
  nameOffsets[names.length] = at;
  return {
    names,
    nameBytes: Buffer.from(names.join('')),
    nameOffsets,
    families,
    familyIndex,
    positions,
    scales,
    scaled,
    versionAt: names.indexOf('version'),
    libeventAt: names.indexOf('libevent'),
    prefixTexts: (base, braced) =>
      rules.map((rule, position) => {
        if (!rendered.has(position)) return '';
        return rule.kind === 'field' ? `${rule.family.name}${braced} ` : `${rule.family.name}${withLabel(base, rule.label, rule.value)} `;
      }),
  };
}

/**
 * Pass one over a reply: checks that its field names are the plan's, in order, and records where
 * each value is. False when they differ (the reply is then parsed to find its plan).
 */
function readValues(series: NodeSeries, plan: StatsPlan, reply: Buffer): boolean {
  const names = plan.nameBytes;
  const nameOffsets = plan.nameOffsets;
  const count = plan.names.length;
  const values = series.values;
  let position = 0;
  const complete = scanStats(reply, (nameStart, nameEnd, valueStart, valueEnd) => {
    if (position === count) return false;
    const expected = nameOffsets[position]!;
    const length = nameOffsets[position + 1]! - expected;
    if (nameEnd - nameStart !== length) return false;
    for (let i = 0; i < length; i++) if (reply[nameStart + i] !== names[expected + i]) return false;
    values[position * 2] = valueStart;
    values[position * 2 + 1] = valueEnd;
    position++;
    return true;
  });
  return complete && position === count;
}

/** Pass two: the samples, family by family, into the node's byte area. */
function writeSamples(series: NodeSeries, plan: StatsPlan, reply: Buffer): RenderedStats {
  const prefixes = series.prefixes;
  const offsets = series.offsets;
  const values = series.values;
  // Every value is at most its bytes in the reply; a scaled one at most a float's shortest text.
  const capacity = prefixes.length + reply.length + plan.scaled * 32;
  let bytes = series.stats?.bytes;
  if (bytes === undefined || bytes.length < capacity) bytes = Buffer.allocUnsafeSlow(capacity + (capacity >> 2));
  const segments = series.stats?.plan === plan ? (series.stats.segments as Uint32Array) : new Uint32Array(plan.families.length * 3);
  let at = 0;
  for (let index = 0; index < plan.families.length; index++) {
    segments[index * 3] = at;
    let samples = 0;
    for (const position of plan.positions[index]!) {
      const valueStart = values[position * 2]!;
      const valueEnd = values[position * 2 + 1]!;
      // The server's own number text is valid exposition as it is; skip what is not a number.
      if (!isDecimal(reply, valueStart, valueEnd)) continue;
      const start = offsets[position]!;
      const end = offsets[position + 1]!;
      prefixes.copy(bytes, at, start, end);
      at += end - start;
      const scale = plan.scales[position];
      if (scale === undefined) {
        for (let i = valueStart; i < valueEnd; i++) bytes[at++] = reply[i]!;
      } else {
        const text = formatValue(Number(reply.toString("latin1", valueStart, valueEnd)) * scale);
        for (let i = 0; i < text.length; i++) bytes[at++] = text.charCodeAt(i);
      }
      bytes[at++] = 0x0a;
      samples++;
    }
    segments[index * 3 + 1] = at;
    segments[index * 3 + 2] = samples;
  }
  const text = (position: number) => (position < 0 ? '' : reply.toString('utf8', values[position * 2], values[position * 2 + 1]));
  series.stats = { plan, bytes, length: at, segments, version: text(plan.versionAt), libevent: text(plan.libeventAt) };
  return series.stats;
}

/**
 * True when bytes [start, end) are a decimal number as servers print them and the exposition
 * format takes them: `-?digits[.digits][e[+-]digits]` (`.5` and `5.` too).
 */
export function isDecimal(bytes: Buffer, start: number, end: number): boolean {
  let i = start;
  if (i < end && bytes[i] === 0x2d) i++;
  let digits = 0;
  while (i < end && bytes[i]! >= 0x30 && bytes[i]! <= 0x39) {
    i++;
    digits++;
  }
  if (i < end && bytes[i] === 0x2e) {
    i++;
    while (i < end && bytes[i]! >= 0x30 && bytes[i]! <= 0x39) {
      i++;
      digits++;
    }
  }
  if (digits === 0) return false;
  if (i < end && (bytes[i] === 0x65 || bytes[i] === 0x45)) {
    i++;
    if (i < end && (bytes[i] === 0x2b || bytes[i] === 0x2d)) i++;
    const exponentStart = i;
    while (i < end && bytes[i]! >= 0x30 && bytes[i]! <= 0x39) i++;
    if (i === exponentStart) return false;
  }
  return i === end;
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

function versionLine(series: NodeSeries, stats: RenderedStats): string | undefined {
  const { version, libevent } = stats;
  if (version === '' && libevent === '') return undefined;
  const cached = series.versionLine;
  if (cached !== undefined && cached.version === version && cached.libevent === libevent) return cached.line;
  const line = `${VERSION_INFO.name}{version="${escapeLabelValue(version)}",libevent="${escapeLabelValue(libevent)}",${series.base}} 1\n`;
  series.versionLine = { version, libevent, line };
  return line;
}

/** Settings, zookeeper and QoS lines of a node; rebuilt only when one of their sources changed. */
function auxLines(series: NodeSeries, snapshot: NodeSnapshot): ReadonlyArray<readonly [FamilySpec, string]> {
  const settings = snapshot.up ? snapshot.settings : undefined;
  const zookeeper = snapshot.up ? snapshot.zookeeper : undefined;
  const qos = snapshot.node.live ? snapshot.qos : undefined;
  const cached = series.aux;
  if (cached !== undefined && cached.settings === settings && cached.zookeeper === zookeeper && cached.qos === qos) return cached.lines;
  const lines: Array<readonly [FamilySpec, string]> = [];
  if (settings) addSettings(lines, series, SETTINGS, settings);
  if (zookeeper) addSettings(lines, series, ZOOKEEPER_STATS, zookeeper);
  if (qos) {
    for (const result of qos.results) {
      lines.push([QOS_SUCCESS, `${labelledPrefix(series, QOS_SUCCESS, 'probe', result.probe)}${result.ok ? 1 : 0}\n`]);
      if (result.ok) lines.push([QOS_LATENCY, `${labelledPrefix(series, QOS_LATENCY, 'probe', result.probe)}${formatValue(result.seconds)}\n`]);
    }
    lines.push([QOS_TIMESTAMP, `${QOS_TIMESTAMP.name}${series.braced} ${formatValue(qos.at / 1000)}\n`]);
  }
  series.aux = { ...(settings ? { settings } : {}), ...(zookeeper ? { zookeeper } : {}), ...(qos ? { qos } : {}), lines };
  return lines;
}

function addSettings(lines: Array<readonly [FamilySpec, string]>, series: NodeSeries, rules: ReadonlyMap<string, SettingRule>, entries: StatsEntries): void {
  for (const [name, raw] of entries) {
    const rule = rules.get(name);
    if (!rule) continue;
    const value = rule.parse(raw);
    if (value === undefined) continue;
    const prefix = rule.label ? labelledPrefix(series, rule.family, rule.label[0], rule.label[1]) : `${rule.family.name}${series.braced} `;
    lines.push([rule.family, `${prefix}${formatValue(value)}\n`]);
  }
}

/** Whole sample lines of the small families (a few per node), grouped by family. */
class Lines {
  private readonly families = new Map<FamilySpec, string[]>();

  add(family: FamilySpec, line: string): void {
    const lines = this.families.get(family);
    if (lines === undefined) this.families.set(family, [line]);
    else lines.push(line);
  }

  writeAllTo(out: ExpositionBuffer): void {
    for (const [family, lines] of this.families) {
      out.family(family.name, family.type, family.help).text(lines.join('')).countSamples(lines.length);
    }
  }
}
